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
//! Freed pages stay in the file for reuse, up to a bound
//! ([`Arena::set_keep_freed`], [`DEFAULT_KEEP_FREED`]): past it, the highest
//! freed 2 MiB chunks that no block touches are punched out of the file
//! (`fallocate(FALLOC_FL_PUNCH_HOLE)`) and their pages go back to the
//! kernel; a block allocated over them later allocates them again first.
//! A block is freed only when nothing maps it (a guest's window pins its
//! object), so nothing is ever punched under a live object.
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
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use memmap2::MmapRaw;
use parking_lot::{Mutex, MutexGuard};

/// How long freed pages stay over the bound, with no allocation reusing
/// freed pages meanwhile, before they are given back (default of
/// [`Arena::set_punch_delay`]): a loop of puts frees a block and
/// allocates it again well within it (an 800 MiB put takes under 200 ms),
/// so it never pays for a punch and a refault; jemalloc waits 10 s
/// (`dirty_decay_ms`), this store 1 s because its blocks are large.
pub const PUNCH_DELAY: Duration = Duration::from_secs(1);

/// Host page size in bytes: the unit of blocks and of guest windows.
pub const PAGE: usize = 4096;

/// Huge page size in bytes (x86-64 and aarch64 `MFD_HUGE_2MB`).
pub const HUGE_PAGE: usize = 2 << 20;

mod resident;
mod trimmer;

use resident::Chunks;
#[cfg(test)]
use resident::COMMIT_CHUNK;
pub use resident::DEFAULT_KEEP_FREED;
use trimmer::Trimmer;

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
    /// Which chunks of the file hold pages.
    chunks: Chunks,
    /// Since when more freed pages than the bound have been resident.
    over_since: Option<Instant>,
    /// How long they may stay so before they are punched.
    delay: Duration,
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
    /// The thread giving freed pages back after the delay (started the
    /// first time they pass the bound).
    trimmer: OnceLock<Arc<Trimmer>>,
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
        Arc::new(Self {
            file,
            path,
            map,
            capacity,
            page,
            free: Mutex::new(FreeList {
                runs,
                free: capacity,
                chunks: Chunks::new(capacity, commit),
                over_since: None,
                delay: PUNCH_DELAY,
            }),
            trimmer: OnceLock::new(),
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

    /// Sets the most bytes of freed pages the file keeps for reuse
    /// (default [`DEFAULT_KEEP_FREED`]): past it, freed 2 MiB chunks that no
    /// block touches are punched out of the file, highest first. Applies
    /// from the next free; on huge pages nothing is punched (the pages were
    /// reserved for the arena when it was mapped).
    pub fn set_keep_freed(&self, bytes: usize) {
        self.free.lock().chunks.set_keep_freed(bytes);
    }

    /// Sets how long freed pages may stay over the bound before they are
    /// given back (default [`PUNCH_DELAY`]; zero: at once, on the freeing
    /// thread).
    pub fn set_punch_delay(&self, delay: Duration) {
        let mut free = self.free.lock();
        free.delay = delay;
        if let (Some(since), Some(t)) = (free.over_since, self.trimmer.get()) {
            t.schedule(since + delay);
        }
    }

    /// Bytes of the file holding pages now: blocks in use, freed pages kept
    /// for reuse, and the free parts of chunks a block touches (the whole
    /// capacity on huge pages).
    pub fn resident_bytes(&self) -> usize {
        self.free.lock().chunks.resident()
    }

    /// Bytes of freed pages kept for reuse: whole 2 MiB chunks that hold
    /// pages and that no block touches.
    pub fn free_resident_bytes(&self) -> usize {
        self.free.lock().chunks.free_resident()
    }

    /// Bytes of freed pages given back to the kernel since the arena was
    /// made.
    pub fn punched_bytes(&self) -> u64 {
        self.free.lock().chunks.punched()
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
        free.chunks
            .commit(self.fd(), offset, size)
            .map_err(|source| ArenaError::Commit {
                requested: len,
                source,
            })?;
        let reused = free
            .chunks
            .taken(offset..offset + run, offset..offset + size);
        // Freed pages in use again: what is still over the bound waits a
        // whole delay from now (a loop of puts never pays for a punch).
        if !free.chunks.over_bound() {
            free.over_since = None;
        } else if reused > 0 && free.over_since.is_some() {
            free.over_since = Some(Instant::now());
        }
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

    fn release(self: &Arc<Self>, offset: usize, size: usize) {
        let released = size;
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
        free.chunks
            .freed(start..start + size, offset..offset + released);
        if !free.chunks.over_bound() || free.over_since.is_some() {
            return;
        }
        // Past the bound: give freed chunks back after the delay (if they
        // are not reused by then), or at once.
        let now = Instant::now();
        if !free.delay.is_zero() {
            let trimmer = match self.trimmer.get() {
                Some(t) => Some(t.clone()),
                None => match Trimmer::start({
                    let arena = Arc::downgrade(self);
                    move || arena.upgrade().map(|a| a.trim_due()).is_some()
                }) {
                    Ok(t) => Some(self.trimmer.get_or_init(|| t).clone()),
                    Err(e) => {
                        tracing::warn!("object store: no trimmer thread ({e}); punching at once");
                        None
                    }
                },
            };
            if let Some(t) = trimmer {
                free.over_since = Some(now);
                t.schedule(now + free.delay);
                return;
            }
        }
        self.punch_over(&mut free);
    }

    /// Punches freed chunks over the bound, a batch per hold of the lock
    /// (an allocation waits for one batch at most).
    fn punch_over(&self, free: &mut MutexGuard<'_, FreeList>) {
        while free.chunks.over_bound() {
            let FreeList { runs, chunks, .. } = &mut **free;
            if chunks.punch(self.fd(), runs) == 0 {
                break;
            }
            MutexGuard::bump(free);
        }
        free.over_since = None;
    }

    /// The trimmer's look: punches what has stayed over the bound for the
    /// delay, or asks for a later look.
    fn trim_due(&self) {
        let mut free = self.free.lock();
        match free.over_since {
            Some(since) if free.chunks.over_bound() => {
                let due = since + free.delay;
                if Instant::now() >= due {
                    self.punch_over(&mut free);
                } else if let Some(t) = self.trimmer.get() {
                    t.schedule(due);
                }
            }
            _ => free.over_since = None,
        }
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

impl Drop for Arena {
    fn drop(&mut self) {
        if let Some(t) = self.trimmer.get() {
            t.close();
        }
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
        let resident = arena.resident_bytes();
        assert_eq!(
            resident,
            2 * COMMIT_CHUNK,
            "the block's two chunks are allocated"
        );
        assert_eq!(arena.free_resident_bytes(), 0);
        drop(a);
        assert_eq!(arena.free_resident_bytes(), 2 * COMMIT_CHUNK);
        let _b = arena.alloc(10).unwrap();
        assert_eq!(arena.resident_bytes(), 2 * COMMIT_CHUNK);
        assert_eq!(arena.free_resident_bytes(), COMMIT_CHUNK);
    }

    /// Bytes the file holds pages for (`st_blocks` are 512-byte units).
    fn allocated(arena: &Arena) -> u64 {
        use std::os::unix::fs::MetadataExt;
        arena.file.metadata().unwrap().blocks() * 512
    }

    #[test]
    fn freed_pages_go_back_to_the_kernel_past_the_bound() {
        const MIB: usize = 1 << 20;
        // tmpfs, as a node's store (a temporary directory elsewhere).
        let shm = Path::new("/dev/shm");
        let dir = tempfile::tempdir().unwrap();
        let dir = if shm.is_dir() { shm } else { dir.path() };
        let arena = Arena::create(dir, 320 * MIB, false).unwrap();
        arena.set_keep_freed(32 * MIB);
        arena.set_punch_delay(Duration::ZERO);
        // A live object in the first chunk, then a large one after it.
        let mut live = arena.alloc(4).unwrap();
        live.bytes_mut().copy_from_slice(b"live");
        let mut big = arena.alloc(256 * MIB as u64).unwrap();
        big.bytes_mut().fill(0xab);
        let before = allocated(&arena);
        assert!(before >= 256 * MIB as u64, "{before}");
        let offset = big.offset();
        drop(big);
        // At most the bound of freed pages stays, plus the chunk the live
        // object touches (never punched).
        let after = allocated(&arena);
        assert!(after <= (32 + 2) * MIB as u64, "{} MiB left", after >> 20);
        assert!(arena.free_resident_bytes() <= 32 * MIB);
        assert_eq!(arena.resident_bytes() as u64, after);
        assert!(arena.punched_bytes() >= 222 * MIB as u64);
        assert_eq!(live.bytes(), b"live");
        // A block over the punched span gets its pages again before any
        // write (no SIGBUS on a full file system: an error instead).
        let mut again = arena.alloc(256 * MIB as u64).unwrap();
        assert_eq!(again.offset(), offset);
        assert!(allocated(&arena) >= 256 * MIB as u64);
        for (i, b) in again.bytes_mut().iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        assert!(again
            .bytes()
            .iter()
            .enumerate()
            .all(|(i, b)| *b == (i % 251) as u8));
        let mut small = arena.alloc(10).unwrap();
        small.bytes_mut().copy_from_slice(b"0123456789");
        assert_eq!(small.bytes(), b"0123456789");
        drop((again, small, live));
        assert!(allocated(&arena) <= 32 * MIB as u64);
        assert_eq!(arena.free_bytes(), arena.capacity());
    }

    #[test]
    fn freed_pages_under_the_bound_stay_for_reuse() {
        let dir = tempfile::tempdir().unwrap();
        let arena = Arena::create(dir.path(), 8 * COMMIT_CHUNK, false).unwrap();
        arena.set_keep_freed(4 * COMMIT_CHUNK);
        arena.set_punch_delay(Duration::ZERO);
        let a = arena.alloc(4 * COMMIT_CHUNK as u64).unwrap();
        drop(a);
        // At the bound: kept, nothing punched.
        assert_eq!(arena.free_resident_bytes(), 4 * COMMIT_CHUNK);
        assert_eq!(arena.punched_bytes(), 0);
        // Past it: the highest chunks go first, down to the bound.
        let a = arena.alloc(3 * COMMIT_CHUNK as u64).unwrap();
        let b = arena.alloc(3 * COMMIT_CHUNK as u64).unwrap();
        assert_eq!(arena.resident_bytes(), 6 * COMMIT_CHUNK);
        drop((a, b));
        assert_eq!(arena.free_resident_bytes(), 4 * COMMIT_CHUNK);
        assert_eq!(arena.punched_bytes(), 2 * COMMIT_CHUNK as u64);
        let lowest = arena.alloc(4 * COMMIT_CHUNK as u64).unwrap();
        assert_eq!(lowest.offset(), 0);
        assert_eq!(
            arena.free_resident_bytes(),
            0,
            "the kept chunks are the lowest"
        );
    }

    #[test]
    fn freed_pages_go_back_after_the_delay_unless_reused() {
        let dir = tempfile::tempdir().unwrap();
        let arena = Arena::create(dir.path(), 16 * COMMIT_CHUNK, false).unwrap();
        arena.set_keep_freed(COMMIT_CHUNK);
        arena.set_punch_delay(Duration::from_secs(3600));
        // A loop of puts reuses its pages: nothing is punched.
        for _ in 0..20 {
            let mut a = arena.alloc(8 * COMMIT_CHUNK as u64).unwrap();
            a.bytes_mut().fill(1);
        }
        assert_eq!(arena.punched_bytes(), 0);
        assert_eq!(arena.free_resident_bytes(), 8 * COMMIT_CHUNK);
        // Left free, they go back after the delay, down to the bound.
        arena.set_punch_delay(Duration::from_millis(10));
        let deadline = Instant::now() + Duration::from_secs(30);
        while arena.free_resident_bytes() > COMMIT_CHUNK {
            assert!(Instant::now() < deadline, "not punched after 30 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(arena.punched_bytes(), 7 * COMMIT_CHUNK as u64);
        assert_eq!(allocated(&arena), COMMIT_CHUNK as u64);
        let mut a = arena.alloc(8 * COMMIT_CHUNK as u64).unwrap();
        a.bytes_mut().fill(2);
        assert!(a.bytes().iter().all(|b| *b == 2));
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
