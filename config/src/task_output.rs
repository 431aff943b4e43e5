//! [`TaskOutputs`]: what plain tasks write to stdout and stderr on a node
//! that keeps it ([`Stdio::Capture`](crate::Stdio::Capture), what
//! `wray start` chooses). A plain task is one whose job has no log of its
//! own (`wray_host::JobLog`): an HTTP invocation, the tasks it
//! submits, the constructor and method calls of an actor made over HTTP.
//!
//! Each task keeps the first [`TASK_OUTPUT_BYTES`] it writes (stdout and
//! stderr together); the rest is counted and dropped, and a marker line
//! says so once. What is kept is
//! - written to the node's log as it comes, one tracing event per line
//!   (target `wray::guest`, level INFO, with the task id, the function and
//!   the stream), and
//! - kept in a node-wide table of recent outputs, bounded in tasks
//!   ([`MAX_TASK_OUTPUTS`]) and bytes ([`MAX_TASK_OUTPUTS_BYTES`]), the oldest dropped first,
//!   which `GET /v1/tasks/{id}/logs` and `wray logs TASK_ID` read.
//!
//! Writes never fail: a guest's `println!` panics when its stdout fails.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use wray_api::{TaskLogs, TaskOutputInfo};
use wray_control_plane::TaskId;

use crate::bounds::{MAX_TASK_OUTPUTS, MAX_TASK_OUTPUTS_BYTES, TASK_OUTPUT_BYTES};
use crate::id_map::IdMap;

/// Which stream a guest wrote to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// One task's kept output.
#[derive(Debug, Default)]
struct Entry {
    function: String,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    dropped: u64,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.stdout.len().saturating_add(self.stderr.len())
    }
}

/// The table of recent outputs (see the module docs).
#[derive(Default)]
struct Table {
    by_task: IdMap<TaskId, Entry>,
    /// Tasks in the order they first wrote, oldest first.
    order: VecDeque<TaskId>,
    /// Bytes kept, all entries together.
    bytes: usize,
}

impl Table {
    /// Drops the oldest entries until `more` bytes and one more entry fit,
    /// never `keep`'s.
    fn make_room(&mut self, keep: TaskId, more: usize, max_tasks: usize, max_bytes: usize) {
        while self.bytes.saturating_add(more) > max_bytes || self.order.len() > max_tasks {
            let Some(oldest) = self.order.front().copied() else {
                return;
            };
            if oldest == keep {
                if self.order.len() == 1 {
                    return;
                }
                // Keep the writer's own entry: drop the next oldest.
                self.order.rotate_left(1);
                continue;
            }
            self.order.pop_front();
            if let Some(e) = self.by_task.remove(&oldest) {
                self.bytes = self.bytes.saturating_sub(e.bytes());
            }
        }
    }
}

/// The node-wide table of plain tasks' output (see the module docs).
pub struct TaskOutputs {
    table: Mutex<Table>,
    per_task: usize,
    max_tasks: usize,
    max_bytes: usize,
}

impl std::fmt::Debug for TaskOutputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskOutputs")
            .field("per_task", &self.per_task)
            .field("max_tasks", &self.max_tasks)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for TaskOutputs {
    fn default() -> Self {
        Self::new(TASK_OUTPUT_BYTES, MAX_TASK_OUTPUTS, MAX_TASK_OUTPUTS_BYTES)
    }
}

impl TaskOutputs {
    /// A table keeping `per_task` bytes of each task, at most `max_tasks`
    /// tasks and `max_bytes` bytes in all (each at least 1).
    pub fn new(per_task: usize, max_tasks: usize, max_bytes: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            per_task: per_task.max(1),
            max_tasks: max_tasks.max(1),
            max_bytes: max_bytes.max(per_task).max(1),
        }
    }

    /// Bytes of output one task keeps.
    pub fn per_task(&self) -> usize {
        self.per_task
    }

    /// What `task` wrote, if the node still keeps it (as
    /// `GET /v1/tasks/{id}/logs` answers it).
    pub fn get(&self, task: TaskId) -> Option<TaskLogs> {
        let table = self.table.lock();
        let e = table.by_task.get(&task)?;
        Some(TaskLogs {
            task_id: task.to_string(),
            function: e.function.clone(),
            stdout: String::from_utf8_lossy(&e.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&e.stderr).into_owned(),
            dropped: e.dropped,
        })
    }

    /// The last `limit` tasks to begin writing whose output is kept, the
    /// latest first (as `GET /v1/logs` lists them).
    pub fn recent(&self, limit: usize) -> Vec<TaskOutputInfo> {
        let table = self.table.lock();
        table
            .order
            .iter()
            .rev()
            .filter_map(|task| {
                let e = table.by_task.get(task)?;
                let bytes = u64::try_from(e.bytes()).unwrap_or(u64::MAX);
                Some(TaskOutputInfo {
                    task_id: task.to_string(),
                    function: e.function.clone(),
                    bytes,
                    dropped: e.dropped,
                })
            })
            .take(limit)
            .collect()
    }

    /// Tasks whose output is kept, and their bytes in all.
    pub fn usage(&self) -> (usize, usize) {
        let table = self.table.lock();
        (table.order.len(), table.bytes)
    }

    /// Records that `writer`'s task wrote `bytes` to `stream`: what is
    /// within its bound is kept and logged, the rest counted.
    pub(crate) fn write(&self, writer: &mut Writer, stream: Stream, bytes: &[u8]) {
        let room = self.per_task.saturating_sub(writer.written);
        let (kept, rest) = bytes.split_at(bytes.len().min(room));
        writer.written = writer.written.saturating_add(kept.len());
        let dropped = u64::try_from(rest.len()).unwrap_or(u64::MAX);
        if kept.is_empty() && dropped == 0 {
            return;
        }
        {
            let mut table = self.table.lock();
            let table = &mut *table;
            if !table.by_task.contains_key(&writer.task) {
                table.order.push_back(writer.task);
            }
            table.make_room(writer.task, kept.len(), self.max_tasks, self.max_bytes);
            let entry = table.by_task.entry(writer.task).or_insert_with(|| Entry {
                function: writer.function.clone(),
                ..Entry::default()
            });
            match stream {
                Stream::Stdout => entry.stdout.extend_from_slice(kept),
                Stream::Stderr => entry.stderr.extend_from_slice(kept),
            }
            entry.dropped = entry.dropped.saturating_add(dropped);
            table.bytes = table.bytes.saturating_add(kept.len());
        }
        log_lines(writer, stream, kept);
        if dropped > 0 && !writer.told {
            writer.told = true;
            tracing::warn!(
                target: "wray::guest",
                task = %writer.task,
                function = %writer.function,
                "output past {} bytes is dropped (counted in GET /v1/tasks/{}/logs)",
                self.per_task,
                writer.task
            );
        }
    }
}

/// Writes `bytes` to the node's log, one event per line.
fn log_lines(writer: &Writer, stream: Stream, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let text = String::from_utf8_lossy(bytes);
    for line in text.strip_suffix('\n').unwrap_or(&text).split('\n') {
        tracing::info!(
            target: "wray::guest",
            task = %writer.task,
            function = %writer.function,
            stream = stream.name(),
            "{line}"
        );
    }
}

/// The task an instance runs now, and what it wrote so far: the state of
/// its stdout and stderr, reset when the instance starts its next task.
#[derive(Debug)]
pub(crate) struct Writer {
    task: TaskId,
    function: String,
    /// Bytes kept so far.
    written: usize,
    /// Whether the drop marker was logged.
    told: bool,
}

/// The output streams' view of the task an instance runs: shared by its
/// stdout, its stderr and its store, which points it at each new task.
#[derive(Debug, Clone)]
pub struct TaskWriter {
    outputs: Arc<TaskOutputs>,
    writer: Arc<Mutex<Writer>>,
}

impl TaskWriter {
    /// Output of `task` (running `function`) into `outputs`.
    pub fn new(outputs: Arc<TaskOutputs>, task: TaskId, function: &str) -> Self {
        Self {
            outputs,
            writer: Arc::new(Mutex::new(Writer {
                task,
                function: function.to_string(),
                written: 0,
                told: false,
            })),
        }
    }

    /// From now on the output is `task`'s (running `function`), with its
    /// own bound.
    pub fn begin(&self, task: TaskId, function: &str) {
        let mut w = self.writer.lock();
        w.task = task;
        function.clone_into(&mut w.function);
        w.written = 0;
        w.told = false;
    }

    /// Records `bytes` written to `stream` by the current task.
    pub fn write(&self, stream: Stream, bytes: &[u8]) {
        let mut w = self.writer.lock();
        self.outputs.write(&mut w, stream, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(n: u8) -> TaskId {
        TaskId([n; 16])
    }

    #[test]
    fn a_task_keeps_its_first_bytes_and_counts_the_rest() {
        let outputs = Arc::new(TaskOutputs::new(10, 8, 100));
        let w = TaskWriter::new(outputs.clone(), task(1), "f");
        w.write(Stream::Stdout, b"hello ");
        w.write(Stream::Stderr, b"world, and more");
        let out = outputs.get(task(1)).unwrap();
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str(), out.dropped),
            ("hello ", "worl", 11)
        );
        assert_eq!(out.function, "f");
        // The next task of the same instance has a bound of its own.
        w.begin(task(2), "g");
        w.write(Stream::Stdout, b"0123456789abc");
        let out = outputs.get(task(2)).unwrap();
        assert_eq!((out.stdout.as_str(), out.dropped), ("0123456789", 3));
        assert_eq!(outputs.get(task(1)).unwrap().stdout, "hello ");
    }

    #[test]
    fn the_table_drops_its_oldest_tasks_past_its_bounds() {
        // Bytes: 3 tasks of 10 bytes fit in 30.
        let outputs = Arc::new(TaskOutputs::new(10, 100, 30));
        for n in 0..5 {
            TaskWriter::new(outputs.clone(), task(n), "f").write(Stream::Stdout, &[b'x'; 10]);
        }
        assert_eq!(outputs.usage(), (3, 30));
        assert!(outputs.get(task(1)).is_none());
        assert!(outputs.get(task(2)).is_some() && outputs.get(task(4)).is_some());
        // Tasks: at most 2.
        let outputs = Arc::new(TaskOutputs::new(10, 2, 1000));
        for n in 0..4 {
            TaskWriter::new(outputs.clone(), task(n), "f").write(Stream::Stdout, b"x");
        }
        assert_eq!(outputs.usage(), (2, 2));
        assert!(outputs.get(task(1)).is_none() && outputs.get(task(3)).is_some());
    }

    #[test]
    fn a_writer_keeps_its_own_entry_while_others_come_and_go() {
        let outputs = Arc::new(TaskOutputs::new(10, 2, 20));
        let first = TaskWriter::new(outputs.clone(), task(1), "first");
        first.write(Stream::Stdout, b"a");
        for n in 2..6 {
            TaskWriter::new(outputs.clone(), task(n), "f").write(Stream::Stdout, &[b'x'; 10]);
        }
        first.write(Stream::Stdout, b"b");
        let out = outputs.get(task(1)).unwrap();
        assert!(out.stdout.ends_with('b'), "{out:?}");
        let (tasks, bytes) = outputs.usage();
        assert!(tasks <= 2 && bytes <= 20, "{tasks} {bytes}");
    }
}
