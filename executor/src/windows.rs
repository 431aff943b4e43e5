//! Windows: regions of a guest's linear memory with object pages mapped over
//! them (`mmap(MAP_FIXED)`), and the store wrapper that puts zero pages back
//! over every window before an instance's memory is released.
//!
//! A window is a kernel mapping, and a process may have only
//! `vm.max_map_count` of them; the host's own allocations need their share,
//! and an `mmap` that fails for want of one would fail the host. So windows
//! are bounded twice: [`MAX_WINDOWS_PER_INSTANCE`] per instance and a
//! node-wide budget (a share of `vm.max_map_count`); past either, the call
//! fails with an error for that task. A window must also lie at or above the
//! memory's initial size: below it is the module's data, which wasmtime
//! restores from its memory image when the instance slot is reused (a
//! window there would leave zero pages where that data belongs, for the
//! next instance of the component).
//!
//! Putting zero pages back can only fail if the kernel refuses the mapping
//! (out of memory, or of mappings). The instance's memory then still shows
//! an object: its store is *tainted* and never dropped, so that wasmtime
//! never hands its slot to another instance; the task fails, the node goes
//! on, and the leak is logged.

use std::io;
use std::sync::Arc;

use wray_control_plane::ObjectId;

use crate::bounds::{MAX_CREATING_PER_INSTANCE, MAX_WINDOWS_PER_INSTANCE};
use crate::guest_bytes::GuestBytes;
use crate::id_map::IdMap;
use crate::objects::arena::{round_up, Block, PAGE};
use crate::objects::data::{Budget, Charge};
use crate::objects::Object;

mod refusal;
pub use refusal::WindowError;

/// A window with something of the host's mapped over it.
#[derive(Debug)]
pub struct Window {
    addr: usize,
    len: usize,
    /// Its place in the node's window budget.
    _charge: Charge,
}

/// An object a task is making (`reserve` or `create`, not yet sealed).
pub(crate) struct Creating {
    /// Its block of the arena.
    pub block: Block,
    /// The window it is mapped over (`create`), none for `reserve`.
    pub window: Option<Window>,
}

/// What one instance has mapped.
#[derive(Default)]
pub struct Windows {
    /// Objects mapped for reading, pinned (their blocks cannot be reused
    /// while mapped).
    reading: Vec<(Window, Arc<Object>)>,
    /// Objects being made, by id.
    creating: IdMap<ObjectId, Creating>,
    /// Regions given fresh zero pages on huge pages by `zero`
    /// ([`Windows::zero_pages`]): kernel mappings of their own until they
    /// get ordinary zero pages back with the others.
    zeroed: Vec<Window>,
    /// A window could not be given zero pages back: the instance's memory
    /// must never be reused.
    tainted: bool,
}

/// `mmap`s `len` bytes of `fd` at `offset` over `addr`.
///
/// # Safety
/// `addr..addr + len` must be page-aligned memory of the calling instance
/// that nothing in the host is borrowing.
pub(crate) unsafe fn map_file(
    addr: usize,
    len: usize,
    fd: i32,
    offset: usize,
    shared: bool,
) -> io::Result<()> {
    let flags = libc::MAP_FIXED
        | if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
    let offset =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: the caller guarantees the range.
    unsafe { mmap_fixed(addr, len, flags, fd, offset) }?;
    if shared {
        // A window for a new object is written in full right away: make its
        // pages present and writable in one call (a write fault per page
        // costs more than the copy). Best effort: older kernels lack it.
        // A read mapping stays lazy, so mapping costs the same at any size.
        // SAFETY: the range was just mapped.
        unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) };
    }
    Ok(())
}

/// Puts fresh zero pages over `addr..addr + len` (as linear memory had).
///
/// # Safety
/// As [`map_file`].
pub(crate) unsafe fn map_zero(addr: usize, len: usize) -> io::Result<()> {
    let flags = libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    // SAFETY: as above.
    unsafe { mmap_fixed(addr, len, flags, -1, 0) }
}

/// Regions of `zero` smaller than this (2 MiB, one huge page) are written
/// with zeros: below it a `memset` costs less than the `mmap`, the TLB
/// flush and the page faults that fresh pages bring.
pub(crate) const ZERO_PAGES_MIN: usize = 2 << 20;

/// Writes zeros over `addr..addr + len`, page by page, leaving alone the
/// pages (or parts of pages) that already read as zeros.
///
/// A page never written reads as zeros without costing memory (the
/// kernel's shared zero page, or no page yet); writing zeros over it would
/// make it a private page that stays resident in the instance's pooled
/// slot. wasmtime's reset counts every resident private page of a slot as
/// written (without userfaultfd write-protection, the kernel's
/// `PAGEMAP_SCAN` cannot tell a page written by this instance from one
/// kept from an earlier one), so it would be reset by `memset` after every
/// later instance of the component in that slot, up to
/// `linear_memory_keep_resident` (8 MiB by default), until the slot forgets
/// it (vendor/README.md, change 5). Measured: an 80 MiB
/// zeroed allocation starting low in the heap wrote the 3 MiB below the
/// memory's initial size this way, and later trivial tasks of the
/// component ran at a third of their rate (docs/benchmarks.md, "A slot
/// forgets what one instance left resident"). A page with data costs a read
/// of its first non-zero bytes more than a plain `memset`.
///
/// # Safety
/// `addr..addr + len` must be memory the host may read and write now.
unsafe fn write_zeros(addr: usize, len: usize) {
    let end = addr.saturating_add(len);
    let mut at = addr;
    while at < end {
        let next = round_up(at.saturating_add(1), PAGE).map_or(end, |n| n.min(end));
        // SAFETY: `at..next` lies inside the caller's range.
        let part = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, next - at) };
        if !is_zero(part) {
            part.fill(0);
        }
        at = next;
    }
}

/// Whether every byte of `bytes` is zero; stops at the first 64 bytes
/// that are not.
fn is_zero(bytes: &[u8]) -> bool {
    // SAFETY: every bit pattern is a valid `u128`.
    let (head, words, tail) = unsafe { bytes.align_to::<u128>() };
    head.iter().chain(tail).all(|b| *b == 0)
        && words
            .chunks(4)
            .all(|c| c.iter().fold(0, |acc, w| acc | w) == 0)
}

/// `mmap(addr, len, READ | WRITE, flags, fd, offset)`, with `MAP_FIXED` in
/// `flags`: replaces exactly `addr..addr + len`.
///
/// # Safety
/// As [`map_file`].
unsafe fn mmap_fixed(
    addr: usize,
    len: usize,
    flags: i32,
    fd: i32,
    offset: libc::off_t,
) -> io::Result<()> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: the caller guarantees the range.
    let p = unsafe { libc::mmap(addr as *mut libc::c_void, len, prot, flags, fd, offset) };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl Window {
    /// Address of its first byte.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it maps no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Gives the window zero pages back.
    ///
    /// # Errors
    /// The kernel refused the mapping (see the module's doc).
    fn zero(&self) -> io::Result<()> {
        // SAFETY: the window was validated when it was mapped and the
        // instance's memory is still alive (this runs before the store is
        // dropped).
        unsafe { map_zero(self.addr, self.len) }.inspect_err(|e| {
            tracing::error!("cannot unmap a guest window at {:#x}: {e}", self.addr);
        })
    }
}

impl Windows {
    /// Windows mapped now, less the reading windows lying inside
    /// `start..end` (a window mapped there replaces them).
    fn count_outside(&self, start: usize, end: usize) -> usize {
        let inside = |w: &Window| w.addr >= start && w.addr.saturating_add(w.len) <= end;
        self.reading.iter().filter(|(w, _)| !inside(w)).count()
            + self
                .creating
                .values()
                .filter(|c| c.window.is_some())
                .count()
            + self.zeroed.iter().filter(|w| !inside(w)).count()
    }

    /// Whether an object is mapped, or being made, over any byte of
    /// `start..end`.
    fn maps_object_in(&self, start: usize, end: usize) -> bool {
        let overlaps = |w: &Window| w.addr < end && start < w.addr.saturating_add(w.len);
        self.reading.iter().any(|(w, _)| overlaps(w))
            || self
                .creating
                .values()
                .filter_map(|c| c.window.as_ref())
                .any(overlaps)
    }

    /// Whether no object is mapped or being made (regions given zero
    /// pages show nothing, and do not count).
    pub fn is_empty(&self) -> bool {
        self.reading.is_empty() && self.creating.is_empty()
    }

    /// Whether a window could not be given zero pages back.
    pub fn is_tainted(&self) -> bool {
        self.tainted
    }

    /// Checks `list` as a window for `need` bytes on pages of `page` bytes,
    /// in the memory of this instance (whose module data ends at offset
    /// `initial`), and reserves its place in the instance's and the node's
    /// (`budget`) window budgets.
    ///
    /// # Errors
    /// [`WindowError`], for an `invalid-argument` error: the window is misaligned,
    /// too small or lies below the memory's initial size, or a budget is
    /// spent.
    pub fn admit(
        &self,
        initial: usize,
        budget: &Arc<Budget>,
        list: GuestBytes,
        need: u64,
        page: usize,
    ) -> Result<Window, WindowError> {
        let (addr, len) = (list.addr(), list.len());
        if list.offset() < initial {
            return Err(WindowError::BelowData {
                initial,
                offset: list.offset(),
            });
        }
        if addr % page != 0 || len % page.min(PAGE) != 0 {
            return Err(WindowError::Misaligned {
                offset: list.offset(),
                len,
                page,
            });
        }
        let span = usize::try_from(need)
            .ok()
            .and_then(|n| round_up(n, page))
            .filter(|span| *span <= len)
            .ok_or(WindowError::TooSmall { len, need, page })?;
        self.charge(budget, addr, span)
    }

    /// A window over `addr..addr + len`, its place taken in the instance's
    /// and the node's (`budget`) window budgets.
    ///
    /// # Errors
    /// [`WindowError::InstanceFull`] or [`WindowError::NodeFull`]: which
    /// budget is spent.
    fn charge(&self, budget: &Arc<Budget>, addr: usize, len: usize) -> Result<Window, WindowError> {
        if self.count_outside(addr, addr.saturating_add(len)) >= MAX_WINDOWS_PER_INSTANCE {
            return Err(WindowError::InstanceFull);
        }
        let charge = budget
            .take(1)
            .ok_or_else(|| WindowError::NodeFull(budget.limit()))?;
        Ok(Window {
            addr,
            len,
            _charge: charge,
        })
    }

    /// `zero`: fills `list` (in the memory of this instance, whose module
    /// data ends at offset `initial`) with zeros. Its whole pages at or
    /// above `initial`, when they are at least [`ZERO_PAGES_MIN`] bytes and
    /// no object is mapped over them, get fresh zero pages, marked for huge
    /// pages (`MADV_HUGEPAGE`: a read of a 2 MiB run then maps the kernel's
    /// huge zero page, one fault where there would be 512); everything else
    /// is written. Those pages are a window of their own, counted in the
    /// budgets, until [`Windows::unmap_all`] gives them ordinary zero pages
    /// back; where a budget is spent the region is written instead.
    ///
    /// # Errors
    /// The kernel refused the mapping and the region could not be given
    /// zero pages back either (the instance is tainted now); `list` does
    /// not lie in memory (never, for a [`GuestBytes`]).
    pub(crate) fn zero_pages(
        &mut self,
        initial: usize,
        budget: &Arc<Budget>,
        list: GuestBytes,
    ) -> io::Result<()> {
        let (addr, len) = (list.addr(), list.len());
        // Host addresses. GuestBytes lies inside the memory, so neither
        // fails; checked all the same. The module's data ends at `floor`.
        let (Some(end), Some(base)) = (addr.checked_add(len), addr.checked_sub(list.offset()))
        else {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        };
        let floor = base.saturating_add(initial);
        let stop = end - end % PAGE;
        let pages = round_up(addr.max(floor), PAGE)
            .filter(|start| stop.saturating_sub(*start) >= ZERO_PAGES_MIN)
            .filter(|start| !self.maps_object_in(*start, stop))
            .and_then(|start| Some((start, self.charge(budget, start, stop - start).ok()?)));
        let Some((start, w)) = pages else {
            // SAFETY: `list` is bytes of this instance's memory, which the
            // guest, suspended in this call, lent to the host.
            unsafe { write_zeros(addr, len) };
            return Ok(());
        };
        // SAFETY: as above, the head and the tail of `list` around `w`
        // (`addr <= start` and `stop <= end` by construction).
        unsafe {
            write_zeros(addr, start - addr);
            write_zeros(stop, end - stop);
        }
        // SAFETY: `w` is whole pages of `list`, at or above the memory's
        // initial size, with no object mapped over them.
        if let Err(e) = unsafe { map_zero(w.addr, w.len) } {
            // Half replaced, perhaps: ordinary zero pages, or taint.
            self.zero(&w)?;
            tracing::debug!("zero pages refused ({e}); the region was zeroed all the same");
            return Ok(());
        }
        // Best effort: without transparent huge pages the region is zero
        // pages all the same, on 4 KiB pages.
        // SAFETY: `w` was just mapped, by this instance alone.
        unsafe { libc::madvise(w.addr as *mut libc::c_void, w.len, libc::MADV_HUGEPAGE) };
        // No object lies there (checked above): only earlier zeroed windows.
        self.replaced_by(&w);
        self.zeroed.push(w);
        Ok(())
    }

    /// Whether the instance may start making one more object.
    pub(crate) fn may_create(&self) -> Result<(), WindowError> {
        if self.creating.len() >= MAX_CREATING_PER_INSTANCE {
            return Err(WindowError::Creating);
        }
        Ok(())
    }

    /// Records an object mapped over `window` for reading (pinned until
    /// unmapped).
    pub(crate) fn add_reading(&mut self, window: Window, object: Arc<Object>) {
        self.reading.push((window, object));
    }

    /// Forgets the reading windows lying inside `window`, which was just
    /// mapped or copied over them (the kernel replaced their pages): their
    /// objects are no longer pinned and their budget places come back, so
    /// reading objects one after another through one buffer needs one
    /// window, not one per object.
    pub(crate) fn replaced_by(&mut self, window: &Window) {
        let (start, end) = (window.addr, window.addr.saturating_add(window.len));
        let inside = |w: &Window| w.addr >= start && w.addr.saturating_add(w.len) <= end;
        self.reading.retain(|(w, _)| !inside(w));
        self.zeroed.retain(|w| !inside(w));
    }

    /// Records an object being made.
    pub(crate) fn add_creating(&mut self, id: ObjectId, creating: Creating) {
        self.creating.insert(id, creating);
    }

    /// The object `id` being made, taken out of the table (put it back with
    /// [`Windows::add_creating`] if it is not sealed).
    pub(crate) fn take_creating(&mut self, id: &ObjectId) -> Option<Creating> {
        self.creating.remove(id)
    }

    /// Gives zero pages back over `window`; a failure taints the instance.
    ///
    /// # Errors
    /// The kernel refused (the instance is tainted now).
    pub fn zero(&mut self, window: &Window) -> io::Result<()> {
        window.zero().inspect_err(|_| self.tainted = true)
    }

    /// Unmaps every reading window lying inside `start..end`.
    ///
    /// # Errors
    /// A window could not be given zero pages back (the instance is tainted
    /// now).
    pub(crate) fn unmap_inside(&mut self, start: usize, end: usize) -> io::Result<()> {
        let mut result = Ok(());
        let mut kept = Vec::with_capacity(self.reading.len());
        for (w, object) in self.reading.drain(..) {
            if w.addr >= start && w.addr.saturating_add(w.len) <= end {
                if let Err(e) = w.zero() {
                    self.tainted = true;
                    result = Err(e);
                }
            } else {
                kept.push((w, object));
            }
        }
        self.reading = kept;
        result
    }

    /// Gives every window zero pages back; objects being created and never
    /// sealed are dropped (their blocks freed) and returned.
    pub(crate) fn unmap_all(&mut self) -> Vec<ObjectId> {
        let zeroed = std::mem::take(&mut self.zeroed);
        for w in std::mem::take(&mut self.reading)
            .into_iter()
            .map(|(w, _)| w)
            .chain(zeroed)
        {
            if w.zero().is_err() {
                self.tainted = true;
            }
        }
        let creating: Vec<(ObjectId, Creating)> = self.creating.drain().collect();
        creating
            .into_iter()
            .map(|(id, c)| {
                if let Some(w) = &c.window {
                    if w.zero().is_err() {
                        self.tainted = true;
                    }
                }
                id
            })
            .collect()
    }
}

/// The `/proc/self/pagemap` entry of the page at `addr` (bit 63: present;
/// bit 56: mapped exclusively, a private page of this process, which a
/// write makes it and the kernel's zero page never is). For tests of what
/// is resident.
///
/// # Errors
/// The file cannot be read (no procfs), or `addr`'s entry lies past what
/// a file offset can name.
#[cfg(test)]
pub(crate) fn pagemap_entry(addr: usize) -> io::Result<u64> {
    let pagemap = std::fs::File::open("/proc/self/pagemap")?;
    let mut entry = [0u8; 8];
    let at = (addr / PAGE)
        .checked_mul(entry.len())
        .and_then(|at| u64::try_from(at).ok())
        .ok_or_else(|| io::Error::other(format!("no pagemap entry for {addr:#x}")))?;
    std::os::unix::fs::FileExt::read_exact_at(&pagemap, &mut entry, at)?;
    Ok(u64::from_ne_bytes(entry))
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    use super::*;

    /// `pages` pages of anonymous memory standing in for linear memory,
    /// unmapped on drop.
    struct Memory {
        base: usize,
        len: usize,
    }

    impl Memory {
        fn new(pages: usize) -> Self {
            let len = pages * PAGE;
            let prot = libc::PROT_READ | libc::PROT_WRITE;
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
            // SAFETY: a fresh anonymous mapping, owned by this value.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, -1, 0) };
            assert_ne!(p, libc::MAP_FAILED);
            Memory {
                base: p as usize,
                len,
            }
        }

        /// `len` bytes at `offset` of it, as a guest's list.
        fn list(&self, offset: usize, len: usize) -> GuestBytes {
            GuestBytes::for_test(self.base + offset, offset, len)
        }

        fn byte(&self, offset: usize) -> u8 {
            // SAFETY: inside the mapping, which lives as long as `self`.
            unsafe { *((self.base + offset) as *const u8) }
        }
    }

    impl Drop for Memory {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`.
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
        }
    }

    #[test]
    fn a_window_is_refused_below_the_module_data_misaligned_or_too_small() {
        let memory = Memory::new(8);
        let (windows, budget) = (Windows::default(), Budget::new(16));
        let initial = 2 * PAGE;
        let admit = |offset, len, need| {
            windows.admit(initial, &budget, memory.list(offset, len), need, PAGE)
        };
        let err = admit(PAGE, PAGE, 1).unwrap_err().to_string();
        assert!(err.contains("may not lie below offset 8192"), "{err}");
        let err = admit(2 * PAGE + 1, PAGE, 1).unwrap_err().to_string();
        assert!(err.contains("not aligned"), "{err}");
        let err = admit(2 * PAGE, PAGE, PAGE as u64 + 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("too small"), "{err}");
        // A fit takes whole pages, only as many as the object needs.
        let w = admit(2 * PAGE, 4 * PAGE, PAGE as u64 + 1).unwrap();
        assert_eq!((w.addr(), w.len()), (memory.base + 2 * PAGE, 2 * PAGE));
        assert_eq!(budget.used(), 1);
    }

    #[test]
    fn the_node_budget_bounds_windows_and_a_window_mapped_over_others_frees_theirs() {
        let memory = Memory::new(8);
        let (mut windows, budget) = (Windows::default(), Budget::new(2));
        let object = Arc::new(Object::empty());
        for page in 0..2 {
            let w = windows
                .admit(0, &budget, memory.list(page * PAGE, PAGE), 1, PAGE)
                .unwrap();
            windows.add_reading(w, object.clone());
        }
        let err = windows
            .admit(0, &budget, memory.list(4 * PAGE, PAGE), 1, PAGE)
            .unwrap_err()
            .to_string();
        assert!(err.contains("the node has 2 windows mapped"), "{err}");
        // One window over both: they are replaced, their places come back.
        let over = memory.list(0, 2 * PAGE);
        let budget_wide = Budget::new(1);
        let w = windows
            .admit(0, &budget_wide, over, 2 * PAGE as u64, PAGE)
            .unwrap();
        windows.replaced_by(&w);
        assert_eq!(budget.used(), 0);
        assert_eq!(Arc::strong_count(&object), 1, "no longer pinned");
    }

    /// A file of one page of 7s, mapped over the second page of `memory`
    /// as a reading window (not yet recorded in `windows`).
    fn map_sevens(memory: &Memory, windows: &Windows, budget: &Arc<Budget>) -> (File, Window) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7u8; PAGE]).unwrap();
        let w = windows
            .admit(0, budget, memory.list(PAGE, PAGE), PAGE as u64, PAGE)
            .unwrap();
        // SAFETY: the window lies in `memory`, which nothing borrows.
        unsafe { map_file(w.addr(), w.len(), file.as_raw_fd(), 0, false) }.unwrap();
        (file, w)
    }

    #[test]
    fn a_mapped_file_is_read_through_the_window_and_zero_pages_come_back() {
        let memory = Memory::new(4);
        let (mut windows, budget) = (Windows::default(), Budget::new(4));
        let (_file, w) = map_sevens(&memory, &windows, &budget);
        assert_eq!((memory.byte(PAGE), memory.byte(2 * PAGE - 1)), (7, 7));
        assert_eq!(memory.byte(0), 0, "outside the window");
        windows.add_reading(w, Arc::new(Object::empty()));
        assert!(windows.unmap_all().is_empty(), "nothing was being made");
        assert_eq!(memory.byte(PAGE), 0, "zero pages again");
        assert!(!windows.is_tainted());
        assert_eq!(budget.used(), 0);
    }

    impl Memory {
        fn fill(&self, value: u8) {
            // SAFETY: the whole mapping, which nothing borrows.
            unsafe { std::ptr::write_bytes(self.base as *mut u8, value, self.len) };
        }

        fn count(&self, value: u8, offset: usize, len: usize) -> usize {
            (offset..offset + len)
                .filter(|o| self.byte(*o) == value)
                .count()
        }

        /// Whether the page at `offset` is a private page of this process
        /// (present and exclusive: [`pagemap_entry`]).
        fn written(&self, offset: usize) -> bool {
            let entry = pagemap_entry(self.base + offset).expect("pagemap readable");
            entry & (1 << 63) != 0 && entry & (1 << 56) != 0
        }
    }

    #[test]
    fn zero_writes_only_the_pages_that_do_not_read_as_zeros() {
        let pages = 8;
        let memory = Memory::new(pages);
        // No huge page may put untouched pages beside written ones.
        // SAFETY: the test's own mapping.
        unsafe {
            libc::madvise(
                memory.base as *mut libc::c_void,
                memory.len,
                libc::MADV_NOHUGEPAGE,
            )
        };
        // SAFETY: inside the mapping, which nothing borrows.
        unsafe {
            *((memory.base + 3 * PAGE + 100) as *mut u8) = 9;
            std::ptr::write_bytes((memory.base + 5 * PAGE) as *mut u8, 9, PAGE);
        }
        let (mut windows, budget) = (Windows::default(), Budget::new(4));
        // All below the module's data: written, not paged; untouched pages
        // stay unwritten (a pooled slot would keep every page written here
        // resident, and reset it after every later instance).
        let (at, len) = (10, pages * PAGE - 20);
        windows
            .zero_pages(pages * PAGE, &budget, memory.list(at, len))
            .unwrap();
        assert_eq!(memory.count(0, at, len), len);
        assert_eq!((windows.zeroed.len(), budget.used()), (0, 0));
        let written: Vec<usize> = (0..pages).filter(|p| memory.written(p * PAGE)).collect();
        assert_eq!(written, [3, 5], "only the pages that held data");
    }

    #[test]
    fn zero_fills_a_region_by_pages_above_the_module_data_and_by_writing_elsewhere() {
        let pages = 4 * ZERO_PAGES_MIN / PAGE;
        let memory = Memory::new(pages);
        let (mut windows, budget) = (Windows::default(), Budget::new(4));
        let initial = PAGE + 100;
        memory.fill(9);
        // Unaligned at both ends, starting below the module's data: every
        // byte of it zero, none outside it; its whole pages above the data
        // are one window.
        let (at, len) = (10, 2 * ZERO_PAGES_MIN + 333);
        windows
            .zero_pages(initial, &budget, memory.list(at, len))
            .unwrap();
        assert_eq!(memory.count(0, at, len), len);
        assert_eq!(memory.count(9, 0, at), at);
        assert_eq!(memory.byte(at + len), 9);
        assert_eq!(windows.zeroed.len(), 1);
        let w = &windows.zeroed[0];
        let paged = 2 * ZERO_PAGES_MIN - 2 * PAGE;
        assert_eq!((w.addr, w.len), (memory.base + 2 * PAGE, paged));
        // Zeroed again (an allocator reusing the same memory): the new
        // window replaces the one inside it, and its budget place comes back.
        memory.fill(9);
        windows
            .zero_pages(initial, &budget, memory.list(at, len))
            .unwrap();
        assert_eq!(memory.count(0, at, len), len);
        assert_eq!((windows.zeroed.len(), budget.used()), (1, 1));
        // Too small for pages: written, no window.
        memory.fill(9);
        windows
            .zero_pages(
                initial,
                &budget,
                memory.list(3 * ZERO_PAGES_MIN, ZERO_PAGES_MIN - 1),
            )
            .unwrap();
        assert_eq!(
            memory.count(0, 3 * ZERO_PAGES_MIN, ZERO_PAGES_MIN - 1),
            ZERO_PAGES_MIN - 1
        );
        assert_eq!(budget.used(), 1);
        // Released: ordinary zero pages, every place back, not tainted.
        assert!(windows.unmap_all().is_empty());
        assert_eq!((budget.used(), windows.is_tainted()), (0, false));
        assert_eq!(memory.count(0, 2 * PAGE, paged), paged);
    }

    #[test]
    fn zero_writes_over_an_object_window_and_where_a_budget_is_spent() {
        let pages = 4 * ZERO_PAGES_MIN / PAGE;
        let memory = Memory::new(pages);
        let (mut windows, budget) = (Windows::default(), Budget::new(1));
        let (file, w) = map_sevens(&memory, &windows, &budget);
        windows.add_reading(w, Arc::new(Object::empty()));
        memory.fill(9);
        // Over the mapped object: written (the guest's private copy of the
        // page), the object's window kept.
        let len = 2 * ZERO_PAGES_MIN;
        windows.zero_pages(0, &budget, memory.list(0, len)).unwrap();
        assert_eq!(memory.count(0, 0, len), len);
        assert_eq!((windows.reading.len(), windows.zeroed.len()), (1, 0));
        // Away from it, but the node's budget is spent: written too.
        let at = 2 * ZERO_PAGES_MIN;
        windows
            .zero_pages(0, &budget, memory.list(at, len))
            .unwrap();
        assert_eq!(memory.count(0, at, len), len);
        assert_eq!(windows.zeroed.len(), 0);
        let mut first = [0u8; 1];
        std::os::unix::fs::FileExt::read_at(&file, &mut first, 0).unwrap();
        assert_eq!(first, [7], "the object is never written");
    }
}
