//! The shared-memory arena large objects live in: one file (under
//! `/dev/shm` by default) of fixed capacity, mapped once by the host, carved
//! into page-aligned blocks.
//!
//! The file has no name: it is made with `O_TMPFILE` (or unlinked at once
//! where a file system lacks it), so nothing is left in its directory after
//! any exit of the node, `SIGKILL` included, and two nodes never collide.
//! It is sized once and never shrunk (a mapped file that shrinks raises
//! SIGBUS, which would kill the node), and blocks are page-aligned so that a
//! block can be mapped straight into a guest's linear memory
//! (`mmap(MAP_FIXED)` over a window of the guest's memory: zero-copy).
//! Allocation is first fit over a free list ordered by offset, with
//! neighbours merged on free. Every size is checked arithmetic: a request
//! larger than the arena is refused before anything is rounded.
//!
//! The file is sparse, so a store larger than the free space of the file
//! system under it would die of SIGBUS on the first write past that space.
//! Two guards: [`Arena::create`] refuses a capacity above the file system's
//! free space, and the file's pages are allocated (`posix_fallocate`) the
//! first time a block covers them, before anyone writes there: a file system
//! that fills up later makes that allocation fail, and the object spills to
//! disk instead (an error, never a signal).
//!
//! With huge pages asked for ([`Arena::create`]'s `huge_pages`), the arena
//! is a `memfd` on the kernel's 2 MiB hugetlb pages instead
//! (`MFD_HUGETLB | MFD_HUGE_2MB`; mapping it reserves every page up front),
//! and every block and guest window is aligned to 2 MiB: a 1 GiB object then
//! spans 512 page-table entries instead of 262,144. Where the kernel has too
//! few huge pages reserved (`/proc/sys/vm/nr_hugepages`), the arena falls
//! back to 4 KiB pages with one log line.

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

/// Bytes of the file allocated at once when a block first covers them.
const COMMIT_CHUNK: usize = 2 << 20;

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
    /// The file system under the store has less free space than the store
    /// would use.
    #[error(
        "the object store of {capacity} bytes does not fit in {dir}, which has {available} bytes free"
    )]
    NoRoom {
        /// Bytes asked for.
        capacity: u64,
        /// Bytes free on the file system.
        available: u64,
        /// Directory of the file.
        dir: String,
    },
    /// No free run of pages is large enough.
    #[error("object store full: {requested} bytes requested, {free} of {capacity} bytes free (largest free block {largest} bytes)")]
    Full {
        /// Bytes asked for.
        requested: u64,
        /// Bytes free in all.
        free: usize,
        /// Capacity of the store.
        capacity: usize,
        /// Largest contiguous free block.
        largest: usize,
    },
    /// The file system under the store could not give the pages a block
    /// needs (it filled up since the node started).
    #[error("object store full: the file system has no room for {requested} more bytes: {source}")]
    Commit {
        /// Bytes asked for.
        requested: u64,
        /// The OS error.
        source: std::io::Error,
    },
}

struct FreeList {
    /// Free runs: offset -> length, both in bytes and page-aligned.
    runs: BTreeMap<usize, usize>,
    free: usize,
    /// One bit per [`COMMIT_CHUNK`] of the file: set once its pages are
    /// allocated (empty for an arena that needs no commit).
    committed: Vec<u64>,
}

/// The arena: a mapped file and its free list.
pub struct Arena {
    file: File,
    /// `/proc/<pid>/fd/<n>`: the file has no other name.
    path: PathBuf,
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

/// `n` rounded up to whole pages of `page` bytes (at least one), or `None`
/// when that overflows.
pub fn round_up(n: usize, page: usize) -> Option<usize> {
    n.max(1).div_ceil(page).checked_mul(page)
}

/// A memfd of `capacity` bytes on 2 MiB huge pages, mapped (which reserves
/// the pages: it fails when too few are free).
fn huge_file(capacity: usize) -> std::io::Result<(File, MmapRaw)> {
    use std::os::fd::FromRawFd;
    let name = c"wray-objects";
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

/// Bytes free for an unprivileged writer on the file system holding `dir`.
pub fn free_space(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: `statvfs` is plain data, for which all zeros is a value.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a valid NUL-terminated string and `stat` a writable
    // `statvfs` the kernel fills in.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

fn fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!(
        "/proc/{}/fd/{}",
        std::process::id(),
        file.as_raw_fd()
    ))
}

impl Arena {
    /// Creates the arena's nameless file in `dir`, sized to `capacity` bytes
    /// (rounded up to pages), and maps it. With `huge_pages`, tries a memfd
    /// on 2 MiB huge pages first (`dir` unused) and, where the kernel cannot
    /// give that many, logs why and goes on with 4 KiB pages.
    ///
    /// # Errors
    /// [`ArenaError::NoRoom`] when the file system under `dir` has less
    /// free space than `capacity`; [`ArenaError::Create`] when the file
    /// cannot be made or mapped.
    pub fn create(dir: &Path, capacity: usize, huge_pages: bool) -> Result<Arc<Self>, ArenaError> {
        let err = |source| ArenaError::Create {
            dir: dir.display().to_string(),
            source,
        };
        let too_large = || {
            err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a store of {capacity} bytes is too large"),
            ))
        };
        if huge_pages {
            let capacity = round_up(capacity, HUGE_PAGE).ok_or_else(too_large)?;
            match huge_file(capacity) {
                Ok((file, map)) => {
                    tracing::info!("object store: {capacity} bytes on 2 MiB huge pages");
                    let path = fd_path(&file);
                    return Ok(Self::new(file, path, map, capacity, HUGE_PAGE, false));
                }
                Err(e) => tracing::warn!(
                    "object store: no {} MiB of 2 MiB huge pages ({e}; see \
                     /proc/sys/vm/nr_hugepages); using 4 KiB pages",
                    capacity >> 20
                ),
            }
        }
        let capacity = round_up(capacity, PAGE).ok_or_else(too_large)?;
        let available = free_space(dir).map_err(err)?;
        if capacity as u64 > available {
            return Err(ArenaError::NoRoom {
                capacity: capacity as u64,
                available,
                dir: dir.display().to_string(),
            });
        }
        // O_TMPFILE where the file system has it: the file never has a name.
        let file = tempfile::tempfile_in(dir).map_err(err)?;
        file.set_len(capacity as u64).map_err(err)?;
        let map = MmapRaw::map_raw(&file).map_err(err)?;
        let path = fd_path(&file);
        Ok(Self::new(file, path, map, capacity, PAGE, true))
    }

    fn new(
        file: File,
        path: PathBuf,
        map: MmapRaw,
        capacity: usize,
        page: usize,
        commit: bool,
    ) -> Arc<Self> {
        let mut runs = BTreeMap::new();
        runs.insert(0, capacity);
        let chunks = if commit {
            capacity.div_ceil(COMMIT_CHUNK).div_ceil(64)
        } else {
            0
        };
        Arc::new(Self {
            file,
            path,
            map,
            capacity,
            page,
            free: Mutex::new(FreeList {
                runs,
                free: capacity,
                committed: vec![0; chunks],
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
    #[cfg(test)]
    pub fn free_bytes(&self) -> usize {
        self.free.lock().free
    }

    /// The backing file as `/proc/<pid>/fd/<n>` (for `/proc/self/maps`
    /// checks and tools; its link names the file system it lives on).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Raw fd of the backing file (for mapping blocks into guests).
    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// Allocates a block for an object of `len` bytes (a guest's number:
    /// anything up to `u64::MAX` is refused cleanly).
    ///
    /// # Errors
    /// [`ArenaError::Full`] naming the sizes when no free run fits (or `len`
    /// is larger than the arena); [`ArenaError::Commit`] when the file
    /// system cannot give the block's pages.
    pub fn alloc(self: &Arc<Self>, len: u64) -> Result<Block, ArenaError> {
        let mut free = self.free.lock();
        let full = |free: &FreeList| ArenaError::Full {
            requested: len,
            free: free.free,
            capacity: self.capacity,
            largest: free.runs.values().copied().max().unwrap_or(0),
        };
        let Some((bytes, size)) = usize::try_from(len)
            .ok()
            .filter(|l| *l <= self.capacity)
            .and_then(|l| Some((l, round_up(l, self.page)?)))
        else {
            return Err(full(&free));
        };
        let found = free
            .runs
            .iter()
            .find(|(_, l)| **l >= size)
            .map(|(o, l)| (*o, *l));
        let Some((offset, run)) = found else {
            return Err(full(&free));
        };
        self.commit(&mut free, offset, size)
            .map_err(|source| ArenaError::Commit {
                requested: len,
                source,
            })?;
        free.runs.remove(&offset);
        if run > size {
            free.runs.insert(offset + size, run - size);
        }
        free.free -= size;
        Ok(Block {
            arena: self.clone(),
            offset,
            len: bytes,
        })
    }

    /// Allocates the file's pages under `offset..offset + size` that no
    /// block has covered before (`posix_fallocate`, by whole chunks).
    fn commit(&self, free: &mut FreeList, offset: usize, size: usize) -> std::io::Result<()> {
        if free.committed.is_empty() {
            return Ok(());
        }
        let first = offset / COMMIT_CHUNK;
        let last = (offset + size - 1) / COMMIT_CHUNK;
        let mut chunk = first;
        while chunk <= last {
            if free.committed[chunk / 64] & (1 << (chunk % 64)) != 0 {
                chunk += 1;
                continue;
            }
            // A run of chunks not yet committed.
            let start = chunk;
            while chunk <= last && free.committed[chunk / 64] & (1 << (chunk % 64)) == 0 {
                chunk += 1;
            }
            let from = start * COMMIT_CHUNK;
            let to = (chunk * COMMIT_CHUNK).min(self.capacity);
            // SAFETY: a plain syscall on our own descriptor; the range lies
            // inside the file (capacity bytes long).
            let rc = unsafe {
                libc::posix_fallocate(self.fd(), from as libc::off_t, (to - from) as libc::off_t)
            };
            if rc != 0 {
                return Err(std::io::Error::from_raw_os_error(rc));
            }
            for c in start..chunk {
                free.committed[c / 64] |= 1 << (c % 64);
            }
        }
        Ok(())
    }

    fn release(&self, offset: usize, size: usize) {
        let mut size = size;
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

    /// Bytes the block of an object of `len` bytes spans.
    fn span_of(&self, len: usize) -> usize {
        // `len` never exceeds the capacity, a multiple of the page: no
        // overflow.
        round_up(len, self.page).unwrap_or(self.capacity)
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

    /// Whether the object is empty (0 bytes).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the block spans (whole pages).
    pub fn span(&self) -> usize {
        self.arena.span_of(self.len)
    }

    /// The arena the block belongs to.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Shrinks the object to `len` bytes (at most its current length),
    /// giving whole pages past it back.
    pub fn truncate(&mut self, len: usize) {
        let len = len.min(self.len);
        let (old, new) = (self.span(), self.arena.span_of(len));
        if new < old {
            self.arena.release(self.offset + new, old - new);
        }
        self.len = len;
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        self.arena.release(self.offset, self.span());
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
        // The file has no name in its directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut a = arena.alloc(1).unwrap();
        let b = arena.alloc(PAGE as u64 + 1).unwrap();
        assert_eq!((a.offset(), b.offset()), (0, PAGE));
        assert_eq!(arena.free_bytes(), 13 * PAGE);
        a.bytes_mut().copy_from_slice(b"x");
        assert_eq!(a.bytes(), b"x");
        let err = arena.alloc(14 * PAGE as u64).unwrap_err().to_string();
        assert!(err.contains("object store full"), "{err}");
        drop(a);
        drop(b);
        assert_eq!(arena.free_bytes(), 16 * PAGE);
        // Everything merged back into one run.
        let all = arena.alloc(16 * PAGE as u64).unwrap();
        assert_eq!(all.offset(), 0);
        drop(all);
        let mut t = arena.alloc(8 * PAGE as u64).unwrap();
        t.truncate(PAGE);
        assert_eq!(arena.free_bytes(), 15 * PAGE);
        drop(t);
        assert_eq!(arena.free_bytes(), 16 * PAGE);
    }

    #[test]
    fn sizes_from_a_guest_never_wrap() {
        let dir = tempfile::tempdir().unwrap();
        let arena = Arena::create(dir.path(), 16 * PAGE, false).unwrap();
        for len in [u64::MAX, u64::MAX - 4095, 1 << 63, 16 * PAGE as u64 + 1] {
            let err = arena.alloc(len).unwrap_err().to_string();
            assert!(err.contains("object store full"), "{len}: {err}");
        }
        // Nothing leaked: the whole arena is still one free run.
        assert_eq!(arena.free_bytes(), 16 * PAGE);
        assert_eq!(arena.alloc(16 * PAGE as u64).unwrap().len(), 16 * PAGE);
        assert_eq!(round_up(usize::MAX, PAGE), None);
        assert_eq!(round_up(0, PAGE), Some(PAGE));
    }

    #[test]
    fn a_store_larger_than_its_file_system_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_space(dir.path()).unwrap();
        let too_big = usize::try_from(free.saturating_add(1 << 30)).unwrap_or(usize::MAX / 2);
        let err = Arena::create(dir.path(), too_big, false)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("does not fit"), "{err}");
        assert!(err.contains("bytes free"), "{err}");
    }

    #[test]
    fn blocks_commit_the_file_s_pages_before_use() {
        let dir = tempfile::tempdir().unwrap();
        let arena = Arena::create(dir.path(), 3 * COMMIT_CHUNK, false).unwrap();
        let a = arena.alloc(COMMIT_CHUNK as u64 + 1).unwrap();
        let committed = arena.free.lock().committed[0];
        assert_eq!(committed, 0b11, "the block's two chunks are allocated");
        drop(a);
        let _b = arena.alloc(10).unwrap();
        assert_eq!(arena.free.lock().committed[0], 0b11);
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
