//! The task table: every task's state, times, resources and error, as Ray's
//! task events keep them. It answers `tasks()` and `errors()`, feeds the
//! timeline (`wray timeline`), and finds the task to stop on `cancel`.
//!
//! A task lives in two forms. While it is pending or running it has a
//! [`TaskEntry`] (its own lock, its spec's link, its cancel token). When it
//! ends, the entry leaves the table and a compact finished record takes its
//! place: ids, the function and resources as shared interned strings, the
//! worker's shared name, times as nanoseconds since the node started, and
//! its error as a sequence number into the bounded error list (about 170
//! bytes, no heap of its own; see `finished_record_is_compact`). Its spans go
//! to one ring shared by all finished tasks.
//!
//! Retention is bounded as in Ray's GCS task events
//! (`RAY_task_events_max_num_task_in_gcs`, 100,000 by default): the last
//! [`MAX_FINISHED_TASKS`] finished records, the last [`MAX_FINISHED_SPANS`]
//! spans of finished tasks and the last [`MAX_ERRORS`] errors are kept, the
//! oldest dropped first. The counts of finished, failed and cancelled tasks
//! ([`TaskTable::counts`]) stay exact however many were dropped, and
//! [`TaskTable::finished_since`] lets a reader follow every finished task as
//! it comes (the session directory's `tasks-*.jsonl`).

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use wray_control_plane::{JobId, TaskId};

use crate::cancel_token::CancelToken;
use crate::error::TaskError;
use crate::id_map::{IdMap, IdSet};
use crate::proto::{Target, TaskSpec};
use crate::resources::Request;

/// Finished tasks copied out of the table per lock taken by the readers
/// of many ([`TaskTable::tasks`], [`TaskTable::finished_since`]): at about
/// 0.1 µs a record, the lock is held some 0.1 ms at a time. Holding it
/// while 10,000 rows were formatted (the session publisher, once a second)
/// stalled every task's start and end for milliseconds: the HTTP API's p99
/// latency at concurrency 64 went from 3.7 to 5.6 ms.
const COPY_CHUNK: usize = 1024;

mod entry;
mod finished;
mod rows;
/// Where a task ran as its row names it: its worker when it ran here
/// (`remote` false), else `None`; called with `!remote`, the node it ran on
/// (the record keeps either in one field).
pub(super) fn worker_here(remote: bool, worker: Option<&str>) -> Option<String> {
    worker.filter(|_| !remote).map(str::to_string)
}

#[cfg(test)]
mod tests;

pub(crate) use entry::QueuedTask;
pub use entry::TaskEntry;
use entry::TaskRecord;
use finished::{Copied, Finished, FinishedRecord, FinishedSpan, Table};
pub use rows::{FailedTask, SpanRow, TaskRow, TaskStatus};

/// The node's task table.
pub struct TaskTable {
    table: Mutex<Table>,
    finished: Mutex<Finished>,
    /// The node's start, the zero of the timeline.
    pub epoch: Instant,
    /// `epoch` on the wall clock: nanoseconds since the Unix epoch (what
    /// places one node's tasks among another's).
    pub epoch_unix_ns: u64,
}

impl Default for TaskTable {
    fn default() -> Self {
        Self {
            table: Mutex::default(),
            finished: Mutex::default(),
            epoch: Instant::now(),
            epoch_unix_ns: duration_nanos(
                SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default(),
            ),
        }
    }
}

/// What `cancel` found.
pub enum CancelTarget {
    /// The task has not started: here it is (as linked by
    /// [`TaskEntry::set_pending`]), to be taken.
    Queued(Arc<dyn Any + Send + Sync>),
    /// The task is running; its flag is set now.
    Running,
    /// The task is finished or unknown.
    Done,
}

impl TaskTable {
    /// Records task `spec`, about to be submitted, and hands its entry back
    /// to be kept with the spec (link it to its queued task with
    /// [`TaskEntry::set_pending`]).
    pub fn submitted(&self, spec: &TaskSpec, cancel: &CancelToken) -> Arc<TaskEntry> {
        let record = TaskRecord::new(
            spec.id,
            spec.parent,
            spec.label.clone(),
            spec.request.clone(),
        );
        let interruptible = !matches!(spec.target, Target::ActorCall { .. });
        let id = record.id;
        let entry = TaskEntry::new(record, cancel.clone(), interruptible);
        let mut table = self.table.lock();
        // A child recorded after its parent was cancelled is cancelled too
        // (see `cancel`): a cancelled task submits nothing that runs.
        let parent = spec.parent.and_then(|p| table.entries.get(&p));
        if parent.is_some_and(|p| p.cancel.is_cancelled()) {
            entry.cancel.cancel();
        }
        table.entries.insert(id, entry.clone());
        entry
    }

    /// Records a driver (`main`), running from now.
    pub fn driver_started(&self, id: TaskId) -> Arc<TaskEntry> {
        let record = TaskRecord::new(id, None, "main".to_string(), Request::default());
        let entry = TaskEntry::new(record, CancelToken::new(), false);
        entry.started();
        self.table.lock().entries.insert(id, entry.clone());
        entry
    }

    /// A submission rejected at once (unknown function, infeasible
    /// request): kept with the errors.
    pub(crate) fn failed_at_submission(&self, error: &TaskError) {
        let record = TaskRecord::new(error.task, None, error.function.clone(), Request::default());
        let entry = TaskEntry::new(record, CancelToken::new(), false);
        self.table.lock().entries.insert(error.task, entry.clone());
        self.ended(&entry, Some(error));
    }

    /// It ended: with `error`, cancelled (`cancelled`), or with its values.
    /// Its entry leaves the table and a compact finished record takes its
    /// place (see the module docs); a second call does nothing.
    pub fn ended(&self, entry: &TaskEntry, error: Option<&TaskError>) {
        let now = self.nanos(Instant::now());
        // The table's lock first, as every path does: a snapshot or a
        // children scan sees the task either in the table or finished.
        let mut table = self.table.lock();
        let mut r = entry.record.lock();
        if r.status.is_done() {
            return;
        }
        r.status = match error {
            None => TaskStatus::Finished,
            Some(e) if e.kind == crate::error::ErrorKind::Cancelled => TaskStatus::Cancelled,
            Some(_) => TaskStatus::Failed,
        };
        let spans = std::mem::take(&mut r.spans);
        let mut f = self.finished.lock();
        let f = &mut *f;
        // Numbered consecutively from here.
        let first_span = f.spans.added;
        let kept = u32::try_from(spans.len()).unwrap_or(u32::MAX);
        for s in spans {
            let span = FinishedSpan {
                name: f.interner.str(&s.name),
                start: self.nanos(s.start),
                end: s.end.map_or(now, |e| self.nanos(e)),
            };
            f.spans.push(span);
        }
        let record = FinishedRecord {
            id: r.id,
            parent: r.parent,
            function: f.interner.str(&r.function),
            resources: f.interner.request(&r.request),
            worker: r.worker.clone(),
            remote: r.remote,
            status: r.status,
            submitted: self.nanos(r.submitted),
            ready: r.ready.map(|t| self.nanos(t)),
            started: r.started.map(|t| self.nanos(t)),
            ended: now,
            first_span,
            spans: kept,
            dropped_spans: u32::try_from(r.dropped_spans).unwrap_or(u32::MAX),
            error: error.map(|e| {
                let function = f.interner.str(&r.function);
                f.errors.push(FailedTask {
                    time: SystemTime::now(),
                    task: r.id,
                    function,
                    error: e.clone(),
                    node: r.remote.then(|| r.worker.clone()).flatten(),
                })
            }),
        };
        *f.totals.entry(r.status).or_default() += 1;
        f.records.push(record);
        table.entries.remove(&r.id);
    }

    /// Forgets a task that did not run here after all and was never
    /// ended here (handed back to the node that owns it, which places it
    /// again): its entry leaves the table with no finished record.
    pub fn forget(&self, entry: &TaskEntry) {
        let id = entry.record.lock().id;
        let mut table = self.table.lock();
        if table
            .entries
            .get(&id)
            .is_some_and(|e| std::ptr::eq(Arc::as_ptr(e), entry))
        {
            table.entries.remove(&id);
        }
    }

    /// Finds task `id` to cancel it, setting its flag when it runs; with
    /// `recursive`, also the tasks it submitted, and theirs (returned after
    /// it). Children are found by scans of the table at cancel time, so
    /// that submission keeps no per-parent lists.
    ///
    /// A child submitted while this runs cannot escape: its parent's flag is
    /// set before each scan, and [`TaskTable::submitted`] cancels a child
    /// whose parent is cancelled already (under the table's lock), so a
    /// child is either seen by the next scan or cancelled as it is
    /// recorded. Scans repeat until one finds no new child.
    pub fn cancel(&self, id: TaskId, force: bool, recursive: bool) -> Vec<(TaskId, CancelTarget)> {
        let mut out = Vec::new();
        let mut seen = IdSet::default();
        let mut work = vec![id];
        loop {
            while let Some(id) = work.pop() {
                if seen.insert(id) {
                    out.push((id, self.cancel_one(id, force)));
                }
            }
            if !recursive {
                break;
            }
            let children = self.children();
            work.extend(
                seen.iter()
                    .filter_map(|p| children.get(p))
                    .flatten()
                    .filter(|c| !seen.contains(*c))
                    .copied(),
            );
            if work.is_empty() {
                break;
            }
        }
        out
    }

    /// Every task's children, by parent (one scan of the table and of the
    /// finished records kept).
    fn children(&self) -> IdMap<TaskId, Vec<TaskId>> {
        let mut children: IdMap<TaskId, Vec<TaskId>> = IdMap::default();
        let table = self.table.lock();
        for (child, entry) in &table.entries {
            if let Some(parent) = entry.parent {
                children.entry(parent).or_default().push(*child);
            }
        }
        // Finished tasks too: a running task's parent may have finished,
        // and a recursive cancel of its grandparent reaches it through it.
        for r in &self.finished.lock().records.items {
            if let Some(parent) = r.parent {
                children.entry(parent).or_default().push(r.id);
            }
        }
        children
    }

    /// Cancels task `id` alone: what it found. A running actor call is
    /// stopped only with `force` (stopping it kills its actor, as Ray's
    /// `force` kills the actor's worker process).
    fn cancel_one(&self, id: TaskId, force: bool) -> CancelTarget {
        let Some(entry) = self.table.lock().entries.get(&id).cloned() else {
            return CancelTarget::Done;
        };
        if entry.record.lock().status.is_done() {
            return CancelTarget::Done;
        }
        match entry.pending.get().and_then(Weak::upgrade) {
            Some(p) if p.waiting() => {
                entry.cancel.cancel();
                CancelTarget::Queued(p.into_any())
            }
            _ if entry.interruptible || force => {
                entry.cancel.cancel();
                CancelTarget::Running
            }
            _ => CancelTarget::Done,
        }
    }

    /// The tasks of job `job` not finished yet (to end them with the job).
    pub(crate) fn unfinished_of_job(&self, job: JobId) -> Vec<TaskId> {
        let entries: Vec<Arc<TaskEntry>> = self
            .table
            .lock()
            .entries
            .iter()
            .filter(|(id, _)| id.job() == job)
            .map(|(_, e)| e.clone())
            .collect();
        entries
            .iter()
            .filter(|e| !e.record.lock().status.is_done())
            .map(|e| e.record.lock().id)
            .collect()
    }

    /// Every task kept (pending, running, and the last
    /// [`MAX_FINISHED_TASKS`] finished), oldest submission first.
    ///
    /// The table is read a chunk at a time ([`COPY_CHUNK`]), never locked
    /// while rows are formatted: tasks submitted and ending meanwhile wait
    /// for one chunk's copy at most. The pending and running tasks are read
    /// first, the finished ones after: a task that ends in between is
    /// listed once, as finished.
    pub fn tasks(&self) -> Vec<TaskRow> {
        let live: Vec<Arc<TaskEntry>> = self.table.lock().entries.values().cloned().collect();
        let live: Vec<TaskRecord> = live.iter().map(|e| e.record.lock().clone()).collect();
        let mut finished = Vec::new();
        let mut from = 0;
        loop {
            let (chunk, next) = self.finished.lock().copy_since(from, COPY_CHUNK);
            if chunk.is_empty() {
                break;
            }
            finished.extend(chunk);
            from = next;
        }
        let ended: IdSet<TaskId> = finished.iter().map(Copied::id).collect();
        let mut all: Vec<TaskRow> = finished.into_iter().map(Copied::row).collect();
        all.extend(
            live.iter()
                .filter(|r| !ended.contains(&r.id))
                .map(|r| self.row(r)),
        );
        all.sort_by_key(|r| r.submitted_ns);
        all
    }

    /// The pending and running tasks, at most `limit` (the most recently
    /// submitted), oldest submission first.
    pub fn live(&self, limit: usize) -> Vec<TaskRow> {
        let entries: Vec<Arc<TaskEntry>> = self.table.lock().entries.values().cloned().collect();
        let mut live: Vec<(Instant, Arc<TaskEntry>)> = entries
            .into_iter()
            .filter_map(|e| {
                let r = e.record.lock();
                let submitted = (!r.status.is_done()).then_some(r.submitted);
                drop(r);
                submitted.map(|t| (t, e))
            })
            .collect();
        live.sort_by_key(|(t, _)| *t);
        let recent = &live[live.len().saturating_sub(limit)..];
        recent
            .iter()
            .map(|(_, e)| self.row(&e.record.lock()))
            .collect()
    }

    /// Finished tasks from number `from` on (numbered from 0 as they
    /// finish), at most `limit`, and the number after the last one given.
    /// Those dropped from the table already are skipped: the number
    /// returned, less `from` and the rows' count, is how many.
    ///
    /// Read a chunk at a time, as [`TaskTable::tasks`].
    pub fn finished_since(&self, from: u64, limit: usize) -> (Vec<TaskRow>, u64) {
        let mut rows = Vec::new();
        let mut next = from;
        while rows.len() < limit {
            let want = (limit - rows.len()).min(COPY_CHUNK);
            let (chunk, after) = self.finished.lock().copy_since(next, want);
            // `from` is the caller's: past the last record it reads nothing.
            if chunk.is_empty() {
                // Records dropped before `next` count as read.
                next = next.max(after);
                break;
            }
            next = after;
            rows.extend(chunk.into_iter().map(Copied::row));
        }
        (rows, next)
    }

    /// Tasks by state: the pending and running ones now, and every task
    /// that ended (exact, including those no longer kept).
    pub fn counts(&self) -> BTreeMap<TaskStatus, u64> {
        let table = self.table.lock();
        let mut counts = self.finished.lock().totals.clone();
        for e in table.entries.values() {
            *counts.entry(e.record.lock().status).or_default() += 1;
        }
        counts
    }

    /// Tasks running now (blocked in `get`/`wait` included).
    pub fn running(&self) -> u64 {
        let table = self.table.lock();
        let running = table
            .entries
            .values()
            .filter(|e| {
                matches!(
                    e.record.lock().status,
                    TaskStatus::Running | TaskStatus::Blocked
                )
            })
            .count();
        u64::try_from(running).unwrap_or(u64::MAX)
    }

    /// Failed tasks with their errors (the last [`MAX_ERRORS`]), oldest
    /// first.
    pub fn errors(&self) -> Vec<FailedTask> {
        self.finished.lock().errors.items.iter().cloned().collect()
    }

    /// Nanoseconds from the node's start to `t` (the timeline's clock).
    pub fn nanos(&self, t: Instant) -> u64 {
        duration_nanos(t.saturating_duration_since(self.epoch))
    }

    /// The snapshot row of a pending or running task.
    fn row(&self, r: &TaskRecord) -> TaskRow {
        TaskRow {
            task_id: r.id.to_string(),
            parent_task_id: r.parent.map(|p| p.to_string()),
            function: r.function.clone(),
            state: r.status,
            worker: worker_here(r.remote, r.worker.as_deref()),
            node: worker_here(!r.remote, r.worker.as_deref()),
            resources: r.request.to_string(),
            submitted_ns: self.nanos(r.submitted),
            ready_ns: r.ready.map(|t| self.nanos(t)),
            started_ns: r.started.map(|t| self.nanos(t)),
            ended_ns: None,
            spans: r
                .spans
                .iter()
                .map(|s| SpanRow {
                    name: s.name.clone(),
                    start_ns: self.nanos(s.start),
                    end_ns: s.end.map(|t| self.nanos(t)),
                })
                .collect(),
            dropped_spans: r.dropped_spans,
            error: None,
        }
    }
}

/// `d` in nanoseconds (saturating: 584 years).
fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
