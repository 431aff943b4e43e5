//! [`Outbox`]: what a job's guests write on a node other than the job's
//! own, on its way to the job's log there. Each instance writes through a
//! [`RemoteWriter`], which keeps each task's first
//! [`TASK_OUTPUT_BYTES`] (stdout and stderr together; past them a marker
//! line says the rest was dropped, as `task_output` does for plain tasks)
//! and hands over whole lines only: a line is queued once its newline
//! comes, or when its task ends (a newline added). The outbox queues the
//! lines of every task of the job on this node, in order, at most
//! [`MAX_QUEUED`] bytes (past it, lines are dropped and counted); the
//! cluster's sender takes them in batches of whole lines
//! ([`Outbox::take`], at most [`MAX_BATCH`] bytes) and says when each
//! reached the job's node ([`Outbox::acked`]); [`Outbox::flush`] waits
//! for what was queued before it, so that a forwarded task's output is in
//! the job's log before its results are.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use wray_control_plane::TaskId;

use crate::bounds::TASK_OUTPUT_BYTES;
use crate::task_output::Stream;

/// The most bytes an outbox queues; past them, lines are dropped (and
/// counted) until the sender catches up: 1 MiB, a job log's default.
pub(crate) const MAX_QUEUED: usize = 1 << 20;

/// The most bytes of lines one batch carries: 256 KiB.
pub const MAX_BATCH: usize = 256 << 10;

/// One job's output on this node, for the job's node (see the module
/// docs).
#[derive(Debug)]
pub struct Outbox {
    /// The node whose job log takes it.
    node: String,
    state: Mutex<State>,
    /// Wakes the sender: lines were queued, or the outbox closed.
    wake: tokio::sync::Notify,
    /// How far (in [`State::queued`] bytes) the job's node has the
    /// output.
    acked: tokio::sync::watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<u8>,
    /// Bytes ever queued or dropped: the position after the last line.
    queued: u64,
    /// Bytes dropped since the last batch.
    dropped: u64,
    closed: bool,
}

/// What the sender takes from an outbox at once.
#[derive(Debug, PartialEq, Eq)]
pub struct Batch {
    /// Whole lines.
    pub bytes: Vec<u8>,
    /// Bytes dropped before them (the queue was full).
    pub dropped: u64,
    /// The position after them: [`Outbox::acked`] once delivered.
    pub through: u64,
}

impl Outbox {
    /// An empty outbox for the job log on node `node`.
    pub fn new(node: &str) -> Arc<Self> {
        Arc::new(Outbox {
            node: node.to_string(),
            state: Mutex::new(State::default()),
            wake: tokio::sync::Notify::new(),
            acked: tokio::sync::watch::Sender::new(0),
        })
    }

    /// The node whose job log takes it.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Queues whole lines `lines` (dropped and counted past
    /// [`MAX_QUEUED`], or once closed).
    fn push(&self, lines: &[u8]) {
        if lines.is_empty() {
            return;
        }
        let mut s = self.state.lock();
        if s.closed {
            return;
        }
        let len = lines.len() as u64;
        if s.queue.len().saturating_add(lines.len()) > MAX_QUEUED {
            s.dropped = s.dropped.saturating_add(len);
        } else {
            s.queue.extend(lines);
        }
        s.queued = s.queued.saturating_add(len);
        drop(s);
        self.wake.notify_one();
    }

    /// The next batch: whole lines, at most [`MAX_BATCH`] bytes (a longer
    /// line, past a task's bound only by its marker, goes whole); `None`
    /// when nothing is queued or dropped.
    pub fn take(&self) -> Option<Batch> {
        let mut s = self.state.lock();
        if s.queue.is_empty() && s.dropped == 0 {
            return None;
        }
        // The queue holds whole lines only: end at the last newline
        // within the batch (a longer line goes whole).
        let cut = if s.queue.len() <= MAX_BATCH {
            s.queue.len()
        } else {
            match s.queue.range(..MAX_BATCH).rposition(|b| *b == b'\n') {
                Some(i) => i + 1,
                None => s
                    .queue
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(s.queue.len(), |i| i + 1),
            }
        };
        let bytes: Vec<u8> = s.queue.drain(..cut).collect();
        let dropped = std::mem::take(&mut s.dropped);
        let through = s.queued.saturating_sub(s.queue.len() as u64);
        Some(Batch {
            bytes,
            dropped,
            through,
        })
    }

    /// The job's node has everything up to `through`.
    pub fn acked(&self, through: u64) {
        self.acked.send_if_modified(|at| {
            let moved = through > *at;
            if moved {
                *at = through;
            }
            moved
        });
    }

    /// Stops taking lines: the job ended here, or its node is gone.
    /// Waiters of [`Outbox::flush`] return.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.wake.notify_one();
        self.acked.send_modify(|_| {});
    }

    /// Whether it is closed.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Waits until lines are queued or the outbox closes (a wake-up that
    /// came before the wait counts).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn queued(&self) {
        self.wake.notified().await;
    }

    /// Waits (at most `limit`) until the job's node has every line queued
    /// before this call, or the outbox closes; whether it has them.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn flush(&self, limit: Duration) -> bool {
        let target = self.state.lock().queued;
        let mut rx = self.acked.subscribe();
        let done = tokio::time::timeout(limit, async {
            let _ = rx.wait_for(|at| *at >= target || self.is_closed()).await;
        })
        .await;
        done.is_ok() && *self.acked.borrow() >= target
    }
}

/// One instance's output into an [`Outbox`]: pointed at each task the
/// instance runs ([`RemoteWriter::begin`]), it keeps each task's first
/// [`TASK_OUTPUT_BYTES`] and queues whole lines. Its clones share one
/// state; the last one to go queues what is left of the last line.
#[derive(Debug, Clone)]
pub struct RemoteWriter(Arc<Mutex<Writer>>);

#[derive(Debug)]
struct Writer {
    outbox: Arc<Outbox>,
    task: TaskId,
    function: String,
    /// Bytes of the current task kept so far.
    written: usize,
    /// Whether the drop marker was queued for the current task.
    told: bool,
    /// The unfinished line of stdout, and of stderr.
    partial: [Vec<u8>; 2],
}

impl Writer {
    /// Queues the unfinished lines, each ended by a newline.
    fn end_lines(&mut self) {
        for p in &mut self.partial {
            if !p.is_empty() {
                p.push(b'\n');
                self.outbox.push(p);
                p.clear();
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.end_lines();
    }
}

impl RemoteWriter {
    /// Output of `task` (running `function`) into `outbox`.
    pub fn new(outbox: Arc<Outbox>, task: TaskId, function: &str) -> Self {
        RemoteWriter(Arc::new(Mutex::new(Writer {
            outbox,
            task,
            function: function.to_string(),
            written: 0,
            told: false,
            partial: [Vec::new(), Vec::new()],
        })))
    }

    /// From now on the output is `task`'s (running `function`), with its
    /// own bound; the last task's unfinished lines are queued.
    pub fn begin(&self, task: TaskId, function: &str) {
        let mut w = self.0.lock();
        w.end_lines();
        w.task = task;
        function.clone_into(&mut w.function);
        w.written = 0;
        w.told = false;
    }

    /// The current task ended: its unfinished lines are queued.
    pub fn end(&self) {
        self.0.lock().end_lines();
    }

    /// Records `bytes` written to `stream` by the current task.
    pub fn write(&self, stream: Stream, bytes: &[u8]) {
        let mut w = self.0.lock();
        let room = TASK_OUTPUT_BYTES.saturating_sub(w.written);
        let kept = &bytes[..bytes.len().min(room)];
        w.written = w.written.saturating_add(kept.len());
        let index = match stream {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        };
        if let Some(last) = kept.iter().rposition(|b| *b == b'\n') {
            let (lines, rest) = kept.split_at(last + 1);
            let outbox = w.outbox.clone();
            let partial = &mut w.partial[index];
            partial.extend_from_slice(lines);
            outbox.push(partial);
            partial.clear();
            partial.extend_from_slice(rest);
        } else {
            w.partial[index].extend_from_slice(kept);
        }
        if kept.len() < bytes.len() && !w.told {
            w.told = true;
            w.end_lines();
            let marker = format!(
                "[wray: task {} ({}) wrote more than {TASK_OUTPUT_BYTES} bytes; the rest of its \
                 output is dropped]\n",
                w.task, w.function
            );
            w.outbox.push(marker.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(n: u8) -> TaskId {
        TaskId([n; 16])
    }

    fn all(outbox: &Outbox) -> String {
        let mut out = Vec::new();
        while let Some(b) = outbox.take() {
            out.extend(b.bytes);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn only_whole_lines_are_queued_and_a_tasks_last_line_when_it_ends() {
        let outbox = Outbox::new("node-a");
        let w = RemoteWriter::new(outbox.clone(), task(1), "f");
        let other = RemoteWriter::new(outbox.clone(), task(2), "g");
        // eprintln! of a wasm guest writes a line in pieces.
        w.write(Stream::Stderr, b"task ");
        other.write(Stream::Stdout, b"other whole\n");
        w.write(Stream::Stderr, b"one");
        w.write(Stream::Stdout, b"out 1\nout 2\npart");
        w.write(Stream::Stderr, b" stderr\n");
        assert_eq!(all(&outbox), "other whole\nout 1\nout 2\ntask one stderr\n");
        w.begin(task(3), "h");
        assert_eq!(all(&outbox), "part\n");
        w.write(Stream::Stdout, b"unended");
        w.end();
        other.write(Stream::Stdout, b"last");
        drop(other);
        assert_eq!(all(&outbox), "unended\nlast\n");
    }

    #[test]
    fn a_task_keeps_its_first_bytes_and_a_marker_says_the_rest_went() {
        let outbox = Outbox::new("node-a");
        let w = RemoteWriter::new(outbox.clone(), task(1), "loud");
        let line = vec![b'x'; 1023];
        for _ in 0..(TASK_OUTPUT_BYTES / 1024 + 10) {
            w.write(Stream::Stdout, &line);
            w.write(Stream::Stdout, b"\n");
        }
        let text = all(&outbox);
        assert!(text.len() <= TASK_OUTPUT_BYTES + 200, "{}", text.len());
        assert_eq!(text.matches("rest of its output is dropped").count(), 1);
        assert!(text.contains("(loud)"));
        // The next task has a bound of its own.
        w.begin(task(2), "quiet");
        w.write(Stream::Stdout, b"fresh\n");
        assert_eq!(all(&outbox), "fresh\n");
    }

    #[test]
    fn a_full_outbox_drops_and_counts_and_batches_end_at_lines() {
        let outbox = Outbox::new("node-a");
        let line = [b'y'; 99];
        let mut chunk = line.to_vec();
        chunk.push(b'\n');
        for _ in 0..(MAX_QUEUED / 100 + 5) {
            outbox.push(&chunk);
        }
        let first = outbox.take().unwrap();
        assert!(first.bytes.len() <= MAX_BATCH && first.bytes.ends_with(b"\n"));
        assert_eq!(first.dropped, 500);
        let mut through = first.through;
        while let Some(b) = outbox.take() {
            assert!(b.bytes.ends_with(b"\n"));
            through = b.through;
        }
        assert_eq!(through, ((MAX_QUEUED / 100 + 5) * 100) as u64);
    }

    #[test]
    fn flush_waits_for_what_was_queued_before_it() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outbox = Outbox::new("node-a");
        rt.block_on(async {
            assert!(
                outbox.flush(Duration::from_millis(1)).await,
                "nothing queued"
            );
            outbox.push(b"line\n");
            assert!(!outbox.flush(Duration::from_millis(20)).await);
            let batch = outbox.take().unwrap();
            outbox.acked(batch.through);
            assert!(outbox.flush(Duration::from_millis(1)).await);
            outbox.push(b"more\n");
            outbox.close();
            assert!(
                !outbox.flush(Duration::from_secs(5)).await,
                "closed: returns"
            );
        });
    }
}
