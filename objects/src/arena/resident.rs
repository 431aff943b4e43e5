//! Which chunks of the arena's file hold pages, and giving freed ones back
//! to the kernel.
//!
//! The file is sparse: a [`COMMIT_CHUNK`] gets its pages (`posix_fallocate`)
//! the first time a block covers it, so that a file system that fills up
//! fails that allocation instead of raising SIGBUS on a write. Pages freed
//! by objects stay in the file for reuse (a put over them runs at memcpy
//! speed), up to a bound: past `keep_freed` bytes of committed
//! chunks that no block touches, the highest such chunks are punched out of
//! the file (`fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`, the
//! file's size unchanged) and marked uncommitted, so that a block allocated
//! over them later allocates their pages again first. First fit allocates
//! from the bottom of the arena, so the top chunks are the ones least
//! likely to be reused soon.
//!
//! Punched with `fallocate` on the descriptor rather than
//! `madvise(MADV_REMOVE)` on the mapping: on tmpfs the kernel does the same
//! for both (`MADV_REMOVE` calls `vfs_fallocate` with `PUNCH_HOLE`), but
//! `fallocate` names a range of the file, whatever maps it, and works on
//! the other file systems `--object-store-dir` may name (ext4, xfs, btrfs).
//! Huge pages are never punched: the memfd's pages were reserved for the
//! arena when it was mapped, and a hole gives a page and its reservation
//! back to the pool, where another process may take it; the node reserved
//! them (`nr_hugepages`) for its store.
//!
//! The invariant kept here: a chunk that a live block touches is committed
//! (its block committed it, and only chunks lying wholly inside a free run
//! are punched), so an uncommitted chunk is always wholly free, and
//! `free_resident` is the bytes of committed chunks lying wholly inside a
//! free run.

use std::collections::BTreeMap;
use std::ops::Range;

/// Bytes of the file allocated at once when a block first covers them, and
/// the unit in which freed pages are given back.
pub(crate) const COMMIT_CHUNK: usize = 2 << 20;

/// Most bytes punched under one hold of the arena's lock (a punch frees
/// pages at a few GB/s: about 10 ms), so that an allocation waits no longer.
const PUNCH_BATCH: usize = 64 << 20;

/// Default of `Arena::set_keep_freed`: 128 MiB of freed pages stay resident
/// for reuse. Above the 80 MiB of Ray's `do_put` arrays and the 64 MiB of
/// the latency benchmark, so that loops putting such objects never give
/// pages back; a freed 512 MiB object leaves at most this much.
pub const DEFAULT_KEEP_FREED: usize = 128 << 20;

/// The chunks of one arena's file.
pub(super) struct Chunks {
    /// One bit per chunk: set while its pages are allocated (empty for an
    /// arena that needs no commit: huge pages, reserved when mapped).
    committed: Vec<u64>,
    /// Bytes of the file.
    capacity: usize,
    /// Bytes of committed chunks.
    resident: usize,
    /// Bytes of committed chunks lying wholly inside a free run.
    free_resident: usize,
    /// Bytes punched out of the file since it was made.
    punched: u64,
    /// Most bytes of `free_resident` kept before punching.
    keep_freed: usize,
    /// Cleared when the file system refuses a punch: pages are then kept.
    can_punch: bool,
}

impl Chunks {
    /// The chunks of a file of `capacity` bytes, none committed; with
    /// `commit` false (huge pages), nothing is tracked or punched.
    pub(super) fn new(capacity: usize, commit: bool) -> Self {
        let words = if commit {
            capacity.div_ceil(COMMIT_CHUNK).div_ceil(64)
        } else {
            0
        };
        Self {
            committed: vec![0; words],
            capacity,
            resident: 0,
            free_resident: 0,
            punched: 0,
            keep_freed: DEFAULT_KEEP_FREED,
            can_punch: commit,
        }
    }

    /// Sets the most bytes of freed pages kept resident.
    pub(super) fn set_keep_freed(&mut self, bytes: usize) {
        self.keep_freed = bytes;
    }

    /// Bytes of the file holding pages (the whole capacity on huge pages,
    /// reserved when the file was mapped).
    pub(super) fn resident(&self) -> usize {
        if self.committed.is_empty() {
            self.capacity
        } else {
            self.resident
        }
    }

    /// Bytes of committed chunks no block touches.
    pub(super) fn free_resident(&self) -> usize {
        self.free_resident
    }

    /// Bytes punched out of the file since it was made.
    pub(super) fn punched(&self) -> u64 {
        self.punched
    }

    fn is_committed(&self, chunk: usize) -> bool {
        self.committed
            .get(chunk / 64)
            .is_some_and(|w| w & (1 << (chunk % 64)) != 0)
    }

    fn set(&mut self, chunk: usize, on: bool) {
        if let Some(w) = self.committed.get_mut(chunk / 64) {
            if on {
                *w |= 1 << (chunk % 64);
            } else {
                *w &= !(1 << (chunk % 64));
            }
        }
    }

    /// Bytes of `chunk` (the last one may be short).
    fn len_of(&self, chunk: usize) -> usize {
        let start = chunk * COMMIT_CHUNK;
        (start + COMMIT_CHUNK).min(self.capacity) - start
    }

    /// Chunks lying wholly inside `run` and overlapping `part` (both byte
    /// ranges of the file, `part` non-empty and inside `run`).
    fn wholly_free(&self, run: Range<usize>, part: Range<usize>) -> Range<usize> {
        let first = run.start.div_ceil(COMMIT_CHUNK);
        let end = if run.end >= self.capacity {
            self.capacity.div_ceil(COMMIT_CHUNK)
        } else {
            run.end / COMMIT_CHUNK
        };
        let (lo, hi) = (part.start / COMMIT_CHUNK, (part.end - 1) / COMMIT_CHUNK + 1);
        first.max(lo)..end.min(hi)
    }

    /// Allocates the file's pages under `offset..offset + size` that are
    /// not committed (`posix_fallocate` on `fd`, by runs of whole chunks).
    /// Chunks committed here lie wholly inside a free run until the block
    /// is taken ([`Chunks::taken`]): they count as free and resident.
    pub(super) fn commit(&mut self, fd: i32, offset: usize, size: usize) -> std::io::Result<()> {
        if self.committed.is_empty() {
            return Ok(());
        }
        // A block's span within the arena; an empty one commits nothing.
        let Some(end) = offset.checked_add(size).filter(|_| size > 0) else {
            return Ok(());
        };
        let last = (end - 1) / COMMIT_CHUNK;
        let mut chunk = offset / COMMIT_CHUNK;
        while chunk <= last {
            if self.is_committed(chunk) {
                chunk += 1;
                continue;
            }
            // A run of chunks not committed.
            let start = chunk;
            while chunk <= last && !self.is_committed(chunk) {
                chunk += 1;
            }
            let from = start * COMMIT_CHUNK;
            let to = (chunk * COMMIT_CHUNK).min(self.capacity);
            // SAFETY: a plain syscall on the arena's own descriptor; the
            // range lies inside the file (capacity bytes long).
            let rc = unsafe {
                libc::posix_fallocate(fd, from as libc::off_t, (to - from) as libc::off_t)
            };
            if rc != 0 {
                return Err(std::io::Error::from_raw_os_error(rc));
            }
            for c in start..chunk {
                self.set(c, true);
            }
            self.resident += to - from;
            self.free_resident += to - from;
        }
        Ok(())
    }

    /// A block `block` was taken from the free run `run`: the chunks that
    /// were wholly free under it are not any more. Returns the bytes of
    /// freed pages it reuses.
    pub(super) fn taken(&mut self, run: Range<usize>, block: Range<usize>) -> usize {
        let mut reused = 0;
        for c in self.wholly_free(run, block) {
            if self.is_committed(c) {
                reused += self.len_of(c);
            }
        }
        self.free_resident -= reused;
        reused
    }

    /// `released` was given back, and is now part of the free run `run`:
    /// the chunks under it lying wholly inside `run` are free.
    pub(super) fn freed(&mut self, run: Range<usize>, released: Range<usize>) {
        for c in self.wholly_free(run, released) {
            if self.is_committed(c) {
                self.free_resident += self.len_of(c);
            }
        }
    }

    /// Whether more freed bytes are resident than kept.
    pub(super) fn over_bound(&self) -> bool {
        self.can_punch && self.free_resident > self.keep_freed
    }

    /// Punches committed chunks lying wholly inside the free `runs` out of
    /// `fd`, highest first, until no more than the bound stays resident or
    /// [`PUNCH_BATCH`] bytes are punched. A refused punch (a file system
    /// without hole punching) is logged once and ends punching for good.
    /// Returns the bytes punched.
    pub(super) fn punch(&mut self, fd: i32, runs: &BTreeMap<usize, usize>) -> usize {
        let mut budget = PUNCH_BATCH;
        for (&offset, &len) in runs.iter().rev() {
            let run = offset..offset + len;
            let chunks = self.wholly_free(run.clone(), run);
            let mut end = chunks.end;
            while end > chunks.start {
                if !self.over_bound() || budget == 0 {
                    return PUNCH_BATCH - budget;
                }
                if !self.is_committed(end - 1) {
                    end -= 1;
                    continue;
                }
                // A run of committed chunks ending at `end`, within what is
                // over the bound and the batch.
                let mut start = end;
                let mut bytes = 0;
                while start > chunks.start
                    && self.is_committed(start - 1)
                    && bytes < budget
                    && self.free_resident.saturating_sub(bytes) > self.keep_freed
                {
                    start -= 1;
                    bytes += self.len_of(start);
                }
                let from = start * COMMIT_CHUNK;
                let flags = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
                // SAFETY: a plain syscall on the arena's own descriptor; the
                // range lies inside the file and no block touches it.
                let rc = unsafe {
                    libc::fallocate(fd, flags, from as libc::off_t, bytes as libc::off_t)
                };
                if rc != 0 {
                    let e = std::io::Error::last_os_error();
                    tracing::warn!(
                        "object store: cannot give freed pages back ({e}); keeping them"
                    );
                    self.can_punch = false;
                    return PUNCH_BATCH - budget;
                }
                for c in start..end {
                    self.set(c, false);
                }
                self.resident -= bytes;
                self.free_resident -= bytes;
                self.punched = self.punched.saturating_add(bytes as u64);
                budget = budget.saturating_sub(bytes);
                end = start;
            }
        }
        PUNCH_BATCH - budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wholly_free_chunks_are_those_inside_the_run() {
        let c = Chunks::new(5 * COMMIT_CHUNK + 4096, true);
        let ch = COMMIT_CHUNK;
        // A run from mid-chunk 0 to mid-chunk 3: chunks 1 and 2 lie inside.
        assert_eq!(c.wholly_free(ch / 2..3 * ch + 1, ch / 2..3 * ch + 1), 1..3);
        // Only those overlapping the part count.
        assert_eq!(c.wholly_free(0..4 * ch, 2 * ch..2 * ch + 1), 2..3);
        // The short last chunk is whole when the run reaches the end.
        assert_eq!(c.wholly_free(4 * ch..c.capacity, 4 * ch..c.capacity), 4..6);
        assert_eq!(c.len_of(5), 4096);
        // A run inside one chunk holds no whole chunk.
        assert!(c.wholly_free(4096..8192, 4096..8192).is_empty());
    }
}
