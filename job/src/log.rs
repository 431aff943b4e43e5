//! [`JobLog`]: what a job's guests write to stdout and stderr, kept in a
//! bounded buffer that drops its oldest bytes rather than refuse a write
//! (a guest's `println!` panics when its stdout fails, so a full log must
//! never fail one), and that readers follow by byte offset.
//!
//! Offsets count every byte ever written, so a reader that fell behind
//! learns how many bytes it missed ([`LogChunk::dropped`]) and goes on
//! from the oldest byte still kept.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::sync::watch;
use wray_control_plane::JobId;

/// The bytes a log keeps unless told otherwise: 1 MiB.
pub const DEFAULT_LOG_BYTES: usize = 1 << 20;

/// A job's output (see the module docs). Cheap to share behind an `Arc`;
/// writers and readers never block each other for longer than a copy.
#[derive(Debug)]
pub struct JobLog {
    capacity: usize,
    state: watch::Sender<Buffer>,
}

#[derive(Debug, Default)]
struct Buffer {
    /// The kept bytes: those at offsets `start..start + bytes.len()`.
    bytes: VecDeque<u8>,
    /// Offset of `bytes[0]`: how many bytes were dropped.
    start: u64,
    /// No more bytes will come (the job ended).
    closed: bool,
}

impl Buffer {
    fn end(&self) -> u64 {
        self.start.saturating_add(len64(self.bytes.len()))
    }
}

/// `n` as a byte count in `u64` (saturating; lossless on 64-bit hosts).
fn len64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// What [`JobLog::read`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// The bytes from offset `next - bytes.len()`.
    pub bytes: Vec<u8>,
    /// Bytes between the offset asked for and the first one returned that
    /// were dropped before they were read.
    pub dropped: u64,
    /// The offset to read from next.
    pub next: u64,
    /// The log is closed and `next` is its end: nothing more will come.
    pub done: bool,
}

impl JobLog {
    /// An empty log keeping the last `capacity` bytes (at least 1).
    pub fn new(capacity: usize) -> Self {
        JobLog {
            capacity: capacity.max(1),
            state: watch::Sender::new(Buffer::default()),
        }
    }

    /// Appends `bytes`, dropping the oldest kept bytes past the capacity
    /// (of a write longer than the capacity, only its tail is kept). Never
    /// fails; a write after [`close`](Self::close) is dropped whole.
    pub fn write(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.state.send_modify(|b| {
            if b.closed {
                return;
            }
            let keep = bytes.len().min(self.capacity);
            let skipped = bytes.len() - keep;
            b.start = b.start.saturating_add(len64(skipped));
            // At most `b.bytes.len()`: `keep` is at most the capacity.
            let over = b
                .bytes
                .len()
                .saturating_add(keep)
                .saturating_sub(self.capacity);
            b.bytes.drain(..over);
            b.start = b.start.saturating_add(len64(over));
            b.bytes.extend(&bytes[skipped..]);
        });
    }

    /// Marks the end of the log: readers waiting on it return.
    pub fn close(&self) {
        self.state.send_modify(|b| b.closed = true);
    }

    /// Bytes written so far (dropped ones included): the log's end offset.
    pub fn written(&self) -> u64 {
        self.state.borrow().end()
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.state.borrow().closed
    }

    /// Up to `max` bytes from offset `from` (from the oldest kept byte when
    /// `from` was dropped; nothing when `from` is at or past the end).
    pub fn read(&self, from: u64, max: usize) -> LogChunk {
        let b = self.state.borrow();
        let first = from.clamp(b.start, b.end());
        let skip = usize::try_from(first - b.start).unwrap_or(usize::MAX);
        let bytes: Vec<u8> = b.bytes.iter().skip(skip).take(max).copied().collect();
        let next = first.saturating_add(len64(bytes.len()));
        LogChunk {
            dropped: first.saturating_sub(from),
            done: b.closed && next == b.end(),
            next,
            bytes,
        }
    }

    /// Returns once the log holds bytes past `offset` or is closed.
    pub async fn wait_past(&self, offset: u64) {
        let mut rx = self.state.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|b| b.closed || b.end() > offset).await;
    }
}

impl Default for JobLog {
    fn default() -> Self {
        JobLog::new(DEFAULT_LOG_BYTES)
    }
}

/// The logs of the jobs of this node that have one, by job: what their
/// guests write here, and what their guests on other nodes send back.
#[derive(Default)]
pub struct JobLogs(RwLock<HashMap<JobId, Arc<JobLog>>>);

impl JobLogs {
    /// Sends the output of every instance of `job` made from now on to
    /// `log`.
    pub fn insert(&self, job: JobId, log: Arc<JobLog>) {
        self.0.write().insert(job, log);
    }

    /// Forgets `job`'s log (its instances made afterwards write to the
    /// node's stdio).
    pub fn remove(&self, job: JobId) {
        self.0.write().remove(&job);
    }

    /// Whether `job` has a log here.
    pub fn has(&self, job: JobId) -> bool {
        self.0.read().contains_key(&job)
    }

    /// `job`'s log, if it has one here.
    pub fn get(&self, job: JobId) -> Option<Arc<JobLog>> {
        self.0.read().get(&job).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_drops_its_oldest_bytes_and_readers_learn_how_many() {
        let log = JobLog::new(8);
        log.write(b"abcdef");
        log.write(b"ghij");
        assert_eq!(log.written(), 10);
        let c = log.read(0, 100);
        assert_eq!(
            (c.bytes.as_slice(), c.dropped, c.next),
            (&b"cdefghij"[..], 2, 10)
        );
        let c = log.read(4, 3);
        assert_eq!((c.bytes.as_slice(), c.dropped, c.next), (&b"efg"[..], 0, 7));
        assert!(!c.done);
        // One write longer than the log keeps its tail.
        log.write(b"0123456789xy");
        let c = log.read(10, 100);
        assert_eq!(
            (c.bytes.as_slice(), c.dropped, c.next),
            (&b"456789xy"[..], 4, 22)
        );
    }

    #[test]
    fn reading_past_the_end_returns_nothing_and_done_only_once_closed() {
        let log = JobLog::new(16);
        log.write(b"hi");
        let c = log.read(u64::MAX, 10);
        assert_eq!((c.bytes.len(), c.next, c.done), (0, 2, false));
        log.close();
        log.write(b"late");
        let c = log.read(0, 10);
        assert_eq!((c.bytes.as_slice(), c.next, c.done), (&b"hi"[..], 2, true));
        assert!(log.is_closed());
    }

    #[test]
    fn a_waiting_reader_wakes_on_a_write_and_on_close() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let log = std::sync::Arc::new(JobLog::new(16));
        let writer = log.clone();
        rt.block_on(async {
            let waiting = tokio::spawn({
                let log = log.clone();
                async move { log.wait_past(0).await }
            });
            tokio::task::yield_now().await;
            assert!(!waiting.is_finished());
            writer.write(b"x");
            waiting.await.unwrap();
            let waiting = tokio::spawn({
                let log = log.clone();
                async move { log.wait_past(1).await }
            });
            tokio::task::yield_now().await;
            writer.close();
            waiting.await.unwrap();
        });
    }
}
