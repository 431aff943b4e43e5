//! The shared-memory arena large objects live in: one file (under
//! `/dev/shm` by default) of fixed capacity, mapped once by the host, carved
//! into page-aligned blocks.
//!
//! The file is sized once and never shrunk (a mapped file that shrinks
//! raises SIGBUS, which would kill the node), and blocks are page-aligned so
//! that a block can be mapped straight into a guest's linear memory
//! (`mmap(MAP_FIXED)` over a window of the guest's memory: zero-copy).
//! Allocation is first fit over a free list ordered by offset, with
//! neighbours merged on free.
//!
//! With huge pages asked for ([`Arena::create`]'s `huge_pages`), the arena
//! is a `memfd` on the kernel's 2 MiB hugetlb pages instead
//! (`MFD_HUGETLB | MFD_HUGE_2MB`), and every block and guest window is
//! aligned to 2 MiB: a 1 GiB object then spans 512 page-table entries
//! instead of 262,144. Where the kernel has too few huge pages reserved
//! (`/proc/sys/vm/nr_hugepages`), the arena falls back to 4 KiB pages with
//! one log line.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::MmapRaw;
use parking_lot::Mutex;

/// Host page size in bytes: the unit of blocks and of guest windows.
pub const PAGE: usize = 4096;

/// Huge page size in bytes (x86-64 and aarch64 `MFD_HUGE_2MB`).
pub const HUGE_PAGE: usize = 2 << 20;

/// What went wrong creating the arena or a block.
#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    /// The backing file could not be created, sized or mapped.
    #[error("cannot create the object store file in {dir}: {source}")]
    Create {
        /// Directory of the file.
        dir: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// No free run of pages is large enough.
    #[error("object store full: {requested} bytes requested, {free} of {capacity} bytes free (largest free block {largest} bytes)")]
    Full {
        /// Bytes asked for.
        requested: usize,
        /// Bytes free in all.
        free: usize,
        /// Capacity of the store.
        capacity: usize,
        /// Largest contiguous free block.
        largest: usize,
    },
}

struct FreeList {
    /// Free runs: offset -> length, both in bytes and page-aligned.
    runs: BTreeMap<usize, usize>,
    free: usize,
}

/// The arena: a mapped file and its free list.
pub struct Arena {
    file: File,
    path: PathBuf,
    /// Whether `path` is a file of ours to delete (not a memfd's).
    owns_path: bool,
    map: MmapRaw,
    capacity: usize,
    /// Unit of blocks: [`PAGE`] or [`HUGE_PAGE`].
    page: usize,
    free: Mutex<FreeList>,
}

/// A block of the arena holding one object; freed when dropped.
pub struct Block {
    arena: Arc<Arena>,
    offset: usize,
    /// Bytes of the object (the block spans whole pages).
    len: usize,
}

/// `n` rounded up to whole pages of `page` bytes (at least one).
fn round_up(n: usize, page: usize) -> usize {
    n.div_ceil(page).max(1) * page
}

/// A memfd of `capacity` bytes on 2 MiB huge pages, mapped (which reserves
/// the pages: it fails when too few are free).
fn huge_file(capacity: usize) -> std::io::Result<(File, MmapRaw)> {
    use std::os::fd::FromRawFd;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = std::ffi::CString::new(format!("wray-objects-{}-{n}", std::process::id()))
        .map_err(std::io::Error::other)?;
    let flags = libc::MFD_CLOEXEC | libc::MFD_HUGETLB | libc::MFD_HUGE_2MB;
    // SAFETY: a valid NUL-terminated name and flags; the fd is checked.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let file = unsafe { File::from_raw_fd(fd) };
    file.set_len(capacity as u64)?;
    let map = MmapRaw::map_raw(&file)?;
    Ok((file, map))
}

impl Arena {
    /// Creates the backing file `wray-objects-<pid>-<n>` in `dir`, sized to
    /// `capacity` bytes (rounded up to pages), and maps it. With
    /// `huge_pages`, tries a memfd on 2 MiB huge pages first (`dir` unused)
    /// and, where the kernel cannot give that many, logs why and goes on
    /// with 4 KiB pages.
    ///
    /// # Errors
    /// [`ArenaError::Create`] when the file cannot be made or mapped.
    pub fn create(dir: &Path, capacity: usize, huge_pages: bool) -> Result<Arc<Self>, ArenaError> {
        if huge_pages {
            let capacity = round_up(capacity, HUGE_PAGE);
            match huge_file(capacity) {
                Ok((file, map)) => {
                    use std::os::fd::AsRawFd;
                    let path = PathBuf::from(format!(
                        "/proc/{}/fd/{}",
                        std::process::id(),
                        file.as_raw_fd()
                    ));
                    tracing::info!("object store: {capacity} bytes on 2 MiB huge pages");
                    return Ok(Self::new(file, path, false, map, capacity, HUGE_PAGE));
                }
                Err(e) => tracing::warn!(
                    "object store: no {} MiB of 2 MiB huge pages ({e}; see \
                     /proc/sys/vm/nr_hugepages); using 4 KiB pages",
                    capacity >> 20
                ),
            }
        }
        let err = |source| ArenaError::Create {
            dir: dir.display().to_string(),
            source,
        };
        let capacity = round_up(capacity, PAGE);
        let file = tempfile::Builder::new()
            .prefix(&format!("wray-objects-{}-", std::process::id()))
            .tempfile_in(dir)
            .map_err(err)?;
        let (file, path) = file.keep().map_err(|e| err(e.error))?;
        file.set_len(capacity as u64).map_err(err)?;
        let map = MmapRaw::map_raw(&file).map_err(err)?;
        Ok(Self::new(file, path, true, map, capacity, PAGE))
    }

    fn new(
        file: File,
        path: PathBuf,
        owns_path: bool,
        map: MmapRaw,
        capacity: usize,
        page: usize,
    ) -> Arc<Self> {
        let mut runs = BTreeMap::new();
        runs.insert(0, capacity);
        Arc::new(Self {
            file,
            path,
            owns_path,
            map,
            capacity,
            page,
            free: Mutex::new(FreeList {
                runs,
                free: capacity,
            }),
        })
    }

    /// Size in bytes of the pages blocks are made of ([`PAGE`], or
    /// [`HUGE_PAGE`] on huge pages): blocks and guest windows are aligned
    /// to it.
    pub fn page_size(&self) -> usize {
        self.page
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes not allocated.
    pub fn free_bytes(&self) -> usize {
        self.free.lock().free
    }

    /// The backing file's path (for `/proc/self/maps` checks and tools); on
    /// huge pages, the memfd's `/proc/<pid>/fd/<n>`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Raw fd of the backing file (for mapping blocks into guests).
    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// Allocates a block for an object of `len` bytes.
    ///
    /// # Errors
    /// [`ArenaError::Full`] naming the sizes when no free run fits.
    pub fn alloc(self: &Arc<Self>, len: usize) -> Result<Block, ArenaError> {
        let size = round_up(len, self.page);
        let mut free = self.free.lock();
        let found = free
            .runs
            .iter()
            .find(|(_, l)| **l >= size)
            .map(|(o, l)| (*o, *l));
        let Some((offset, run)) = found else {
            return Err(ArenaError::Full {
                requested: len,
                free: free.free,
                capacity: self.capacity,
                largest: free.runs.values().copied().max().unwrap_or(0),
            });
        };
        free.runs.remove(&offset);
        if run > size {
            free.runs.insert(offset + size, run - size);
        }
        free.free -= size;
        Ok(Block {
            arena: self.clone(),
            offset,
            len,
        })
    }

    fn release(&self, offset: usize, len: usize) {
        let mut size = round_up(len, self.page);
        let mut start = offset;
        let mut free = self.free.lock();
        free.free += size;
        // Merge with the run before and the run after.
        if let Some((&o, &l)) = free.runs.range(..start).next_back() {
            if o + l == start {
                free.runs.remove(&o);
                start = o;
                size += l;
            }
        }
        if let Some(&l) = free.runs.get(&(start + size)) {
            free.runs.remove(&(start + size));
            size += l;
        }
        free.runs.insert(start, size);
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if self.owns_path {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Block {
    /// The object's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the block lies inside the mapping (alloc never hands out
        // more than the capacity), the mapping lives as long as `arena`,
        // and no one writes a block after its object is sealed.
        unsafe { std::slice::from_raw_parts(self.arena.map.as_ptr().add(self.offset), self.len) }
    }

    /// The block's bytes, writable (only before its object is sealed).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` means no other reference to
        // this block's bytes exists in the host.
        unsafe {
            std::slice::from_raw_parts_mut(self.arena.map.as_mut_ptr().add(self.offset), self.len)
        }
    }

    /// Offset of the block in the file (page-aligned).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Length of the object in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the object is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the block spans (whole pages).
    pub fn span(&self) -> usize {
        round_up(self.len, self.arena.page)
    }

    /// The arena the block belongs to.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Shrinks the object to `len` bytes (at most its current length),
    /// giving whole pages past it back.
    pub fn truncate(&mut self, len: usize) {
        let len = len.min(self.len);
        let page = self.arena.page;
        let (old, new) = (round_up(self.len, page), round_up(len, page));
        if new < old {
            self.arena.release(self.offset + new, old - new);
        }
        self.len = len;
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        self.arena.release(self.offset, self.len);
    }
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Block({}+{})", self.offset, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_page_aligned_blocks_and_merges_on_free() {
        let dir = tempfile::tempdir().unwrap();
        let arena = Arena::create(dir.path(), 16 * PAGE, false).unwrap();
        assert_eq!(arena.page_size(), PAGE);
        let mut a = arena.alloc(1).unwrap();
        let b = arena.alloc(PAGE + 1).unwrap();
        assert_eq!((a.offset(), b.offset()), (0, PAGE));
        assert_eq!(arena.free_bytes(), 13 * PAGE);
        a.bytes_mut().copy_from_slice(b"x");
        assert_eq!(a.bytes(), b"x");
        let err = arena.alloc(14 * PAGE).unwrap_err().to_string();
        assert!(err.contains("object store full"), "{err}");
        drop(a);
        drop(b);
        assert_eq!(arena.free_bytes(), 16 * PAGE);
        // Everything merged back into one run.
        let all = arena.alloc(16 * PAGE).unwrap();
        assert_eq!(all.offset(), 0);
        drop(all);
        let mut t = arena.alloc(8 * PAGE).unwrap();
        t.truncate(PAGE);
        assert_eq!(arena.free_bytes(), 15 * PAGE);
        let path = arena.path().to_path_buf();
        drop(t);
        drop(arena);
        assert!(!path.exists());
    }

    #[test]
    fn huge_pages_or_a_fallback_give_a_working_arena() {
        let dir = tempfile::tempdir().unwrap();
        // Whether or not this machine has huge pages reserved, the arena
        // works; its page size says which it got.
        let arena = Arena::create(dir.path(), 3 * HUGE_PAGE, true).unwrap();
        let page = arena.page_size();
        assert!(page == PAGE || page == HUGE_PAGE, "{page}");
        let mut a = arena.alloc(10).unwrap();
        a.bytes_mut().copy_from_slice(b"0123456789");
        let b = arena.alloc(1).unwrap();
        assert_eq!((b.offset(), b.span()), (page, page));
        assert_eq!(a.bytes(), b"0123456789");
        drop((a, b));
        assert_eq!(arena.free_bytes(), arena.capacity());
    }
}
