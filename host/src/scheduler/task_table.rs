//! The task table: every task's state, times, resources and error, as Ray's
//! task events keep them. It answers `tasks()` and `errors()`, feeds the
//! timeline (`wray timeline`), and finds the task to stop on `cancel`.
//!
//! Records of finished tasks are kept up to [`MAX_FINISHED`] (the oldest go
//! first, as Ray's `task_events_max_num_task_in_gcs`); errors are kept up to
//! [`MAX_ERRORS`].

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use wray_control_plane::{JobId, TaskId};

use crate::cancel_token::CancelToken;
use crate::error::TaskError;
use crate::id_map::{IdMap, IdSet};
use crate::resources::Request;
use crate::scheduler::task::PendingTask;

/// Finished tasks kept in the table.
pub const MAX_FINISHED: usize = 100_000;
/// Finished tasks evicted at once when there are too many.
const EVICT_BATCH: usize = 1024;
/// Failed tasks' errors kept for `errors()`.
pub const MAX_ERRORS: usize = 10_000;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    /// Waiting for its object arguments (Ray's `PENDING_ARGS_AVAIL`).
    PendingArgs,
    /// Ready, waiting for resources (Ray's `PENDING_NODE_ASSIGNMENT`).
    Queued,
    /// Running in an instance.
    Running,
    /// Running, blocked in `get`/`wait`.
    Blocked,
    /// Finished with its values.
    Finished,
    /// Finished with an error.
    Failed,
    /// Cancelled before or while it ran.
    Cancelled,
}

impl TaskStatus {
    fn is_done(self) -> bool {
        matches!(
            self,
            TaskStatus::Finished | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// A named interval inside a task (a `profile-begin`/`end` pair, or a
/// blocked `get`).
#[derive(Debug, Clone)]
pub struct Span {
    /// What it was.
    pub name: String,
    /// When it began.
    pub start: Instant,
    /// When it ended (`None`: still open).
    pub end: Option<Instant>,
}

/// One task as the table keeps it.
#[derive(Debug, Clone)]
pub struct TaskRecord {
    /// Its id.
    pub id: TaskId,
    /// The task that submitted it (`None` for a driver).
    pub parent: Option<TaskId>,
    /// Function name, `Class.method` or `Class.new`.
    pub function: String,
    /// Where it is now.
    pub status: TaskStatus,
    /// Its resource request.
    pub request: Request,
    /// When it was submitted.
    pub submitted: Instant,
    /// When its arguments existed.
    pub ready: Option<Instant>,
    /// When it started running.
    pub started: Option<Instant>,
    /// When it ended.
    pub ended: Option<Instant>,
    /// The worker thread it ran on (its name).
    pub worker: Option<Arc<str>>,
    /// Its blocked intervals and profile spans (at most
    /// [`MAX_SPANS_PER_TASK`](crate::bounds::MAX_SPANS_PER_TASK)).
    pub spans: Vec<Span>,
    /// Spans not kept because the task had opened too many.
    pub dropped_spans: u64,
    /// Its error, if it failed.
    pub error: Option<TaskError>,
}

impl TaskRecord {
    fn new(id: TaskId, parent: Option<TaskId>, function: String, request: Request) -> Self {
        let now = Instant::now();
        TaskRecord {
            id,
            parent,
            function,
            status: TaskStatus::PendingArgs,
            request,
            submitted: now,
            ready: None,
            started: None,
            ended: None,
            worker: None,
            spans: Vec::new(),
            dropped_spans: 0,
            error: None,
        }
    }
}

thread_local! {
    /// This thread's name, shared by every record of a task it runs.
    static THREAD_NAME: Option<Arc<str>> = std::thread::current().name().map(Arc::from);
}

/// One task's entry: its record (locked on its own, so that workers
/// updating different tasks never contend) and what `cancel` needs.
pub struct TaskEntry {
    record: Mutex<TaskRecord>,
    /// The queued task (to take its spec before it runs), set right after
    /// the entry is made.
    pending: std::sync::OnceLock<Weak<PendingTask>>,
    /// Cancelled to stop it while it runs.
    cancel: CancelToken,
    /// The task that submitted it (read without the record's lock, when a
    /// recursive cancel looks for children).
    parent: Option<TaskId>,
    /// Whether a running task may be stopped by `cancel` (an actor call may
    /// not: stopping it would kill its actor; Ray leaves running actor
    /// tasks alone too).
    interruptible: bool,
}

impl std::fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TaskEntry({})", self.record.lock().id)
    }
}

impl TaskEntry {
    fn new(record: TaskRecord, cancel: CancelToken, interruptible: bool) -> Arc<Self> {
        Arc::new(TaskEntry {
            parent: record.parent,
            record: Mutex::new(record),
            pending: std::sync::OnceLock::new(),
            cancel,
            interruptible,
        })
    }

    /// Links the entry to its queued task (once).
    pub(crate) fn set_pending(&self, pending: &Arc<PendingTask>) {
        let _ = self.pending.set(Arc::downgrade(pending));
    }

    /// Its arguments exist; it waits for resources.
    pub(crate) fn ready(&self) {
        let mut r = self.record.lock();
        r.status = TaskStatus::Queued;
        r.ready = Some(Instant::now());
    }

    /// It started on the current thread.
    pub(crate) fn started(&self) {
        let worker = THREAD_NAME.with(Clone::clone);
        let now = Instant::now();
        let mut r = self.record.lock();
        r.status = TaskStatus::Running;
        r.ready.get_or_insert(now);
        r.started = Some(now);
        r.worker = worker;
    }

    /// It blocked in `get`/`wait` (`true`) or woke up (`false`).
    pub(crate) fn blocked(&self, blocked: bool) {
        let now = Instant::now();
        let mut r = self.record.lock();
        if blocked {
            r.status = TaskStatus::Blocked;
            push_span(&mut r, "get".to_string(), now);
        } else {
            r.status = TaskStatus::Running;
            if let Some(s) = r.spans.iter_mut().rev().find(|s| s.name == "get") {
                s.end.get_or_insert(now);
            }
        }
    }

    /// Opens a profile span named `name` (cut to
    /// [`MAX_SPAN_NAME`](crate::bounds::MAX_SPAN_NAME) bytes); returns its
    /// handle (`u32::MAX`: not kept, the task has too many).
    pub(crate) fn span_begin(&self, name: String) -> u32 {
        let name = crate::bounds::truncate(name, crate::bounds::MAX_SPAN_NAME);
        let mut r = self.record.lock();
        push_span(&mut r, name, Instant::now())
    }

    /// Closes profile span `handle` (an unknown handle is ignored).
    pub(crate) fn span_end(&self, handle: u32) {
        if let Some(s) = self.record.lock().spans.get_mut(handle as usize) {
            s.end.get_or_insert_with(Instant::now);
        }
    }
}

/// Adds a span to `r` unless it has [`MAX_SPANS_PER_TASK`] already (then
/// it is only counted); returns its index (`u32::MAX` when not kept).
///
/// [`MAX_SPANS_PER_TASK`]: crate::bounds::MAX_SPANS_PER_TASK
fn push_span(r: &mut TaskRecord, name: String, start: Instant) -> u32 {
    if r.spans.len() >= crate::bounds::MAX_SPANS_PER_TASK {
        r.dropped_spans += 1;
        return u32::MAX;
    }
    r.spans.push(Span {
        name,
        start,
        end: None,
    });
    u32::try_from(r.spans.len() - 1).unwrap_or(u32::MAX)
}

#[derive(Default)]
struct Table {
    entries: IdMap<TaskId, Arc<TaskEntry>>,
}

#[derive(Default)]
struct Finished {
    /// Finished tasks, oldest first.
    order: VecDeque<TaskId>,
    errors: VecDeque<(SystemTime, TaskError)>,
}

/// The node's task table.
pub struct TaskTable {
    table: Mutex<Table>,
    finished: Mutex<Finished>,
    /// The node's start, the zero of the timeline.
    pub epoch: Instant,
}

impl Default for TaskTable {
    fn default() -> Self {
        Self {
            table: Mutex::default(),
            finished: Mutex::default(),
            epoch: Instant::now(),
        }
    }
}

/// What `cancel` found.
pub(crate) enum CancelTarget {
    /// The task has not started: here it is, to be taken.
    Queued(Arc<PendingTask>),
    /// The task is running; its flag is set now.
    Running,
    /// The task is finished or unknown.
    Done,
}

impl TaskTable {
    /// Records task `spec`, about to be submitted, and hands its entry back
    /// to be kept with the spec (link it to its queued task with
    /// [`TaskEntry::set_pending`]).
    pub(crate) fn submitted(&self, spec: &crate::scheduler::task::Task) -> Arc<TaskEntry> {
        let record = TaskRecord::new(
            spec.id,
            spec.parent,
            spec.label.clone(),
            spec.request.clone(),
        );
        let interruptible = !matches!(spec.target, crate::proto::Target::ActorCall { .. });
        let id = record.id;
        let entry = TaskEntry::new(record, spec.cancel.clone(), interruptible);
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
    pub(crate) fn driver_started(&self, id: TaskId) -> Arc<TaskEntry> {
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
    pub(crate) fn ended(&self, entry: &TaskEntry, error: Option<&TaskError>) {
        let id = {
            let mut r = entry.record.lock();
            if r.status.is_done() {
                return;
            }
            let now = Instant::now();
            r.ended = Some(now);
            for s in &mut r.spans {
                s.end.get_or_insert(now);
            }
            r.status = match error {
                None => TaskStatus::Finished,
                Some(e) if e.kind == crate::error::ErrorKind::Cancelled => TaskStatus::Cancelled,
                Some(_) => TaskStatus::Failed,
            };
            r.error = error.cloned();
            r.id
        };
        let evicted = {
            let mut f = self.finished.lock();
            if let Some(e) = error {
                f.errors.push_back((SystemTime::now(), e.clone()));
                if f.errors.len() > MAX_ERRORS {
                    f.errors.pop_front();
                }
            }
            f.order.push_back(id);
            // Evicted in batches, so that the table is locked once per
            // EVICT_BATCH finished tasks.
            if f.order.len() >= MAX_FINISHED + EVICT_BATCH {
                f.order.drain(..EVICT_BATCH).collect()
            } else {
                Vec::new()
            }
        };
        if !evicted.is_empty() {
            let mut t = self.table.lock();
            for old in evicted {
                t.entries.remove(&old);
            }
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
    pub(crate) fn cancel(&self, id: TaskId, recursive: bool) -> Vec<(TaskId, CancelTarget)> {
        let mut out = Vec::new();
        let mut seen = IdSet::default();
        let mut work = vec![id];
        loop {
            while let Some(id) = work.pop() {
                if seen.insert(id) {
                    out.push((id, self.cancel_one(id)));
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

    /// Every task's children, by parent (one scan of the table).
    fn children(&self) -> IdMap<TaskId, Vec<TaskId>> {
        let mut children: IdMap<TaskId, Vec<TaskId>> = IdMap::default();
        for (child, entry) in &self.table.lock().entries {
            if let Some(parent) = entry.parent {
                children.entry(parent).or_default().push(*child);
            }
        }
        children
    }

    /// Cancels task `id` alone: what it found.
    fn cancel_one(&self, id: TaskId) -> CancelTarget {
        let Some(entry) = self.table.lock().entries.get(&id).cloned() else {
            return CancelTarget::Done;
        };
        if entry.record.lock().status.is_done() {
            return CancelTarget::Done;
        }
        match entry.pending.get().and_then(Weak::upgrade) {
            Some(p) if p.spec.lock().is_some() => {
                entry.cancel.cancel();
                CancelTarget::Queued(p)
            }
            _ if entry.interruptible => {
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

    /// Every task in the table, oldest submission first.
    pub fn tasks(&self) -> Vec<TaskRecord> {
        let entries: Vec<Arc<TaskEntry>> = self.table.lock().entries.values().cloned().collect();
        let mut all: Vec<TaskRecord> = entries.iter().map(|e| e.record.lock().clone()).collect();
        all.sort_by_key(|r| r.submitted);
        all
    }

    /// Errors of failed tasks, oldest first, with when they happened.
    pub fn errors(&self) -> Vec<(SystemTime, TaskError)> {
        self.finished.lock().errors.iter().cloned().collect()
    }

    /// Microseconds from the node's start to `t` (the timeline's clock).
    pub fn micros(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.epoch).as_secs_f64() * 1e6
    }

    /// Microseconds of `d`.
    pub fn duration_micros(d: Duration) -> f64 {
        d.as_secs_f64() * 1e6
    }
}
