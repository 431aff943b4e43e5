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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use wray_control_plane::{JobId, TaskId};

pub use crate::bounds::{MAX_FINISHED_SPANS, MAX_FINISHED_TASKS, MAX_TASK_LABELS};
use crate::cancel_token::CancelToken;
use crate::error::TaskError;
use crate::id_map::{IdMap, IdSet};
use crate::resources::Request;
use crate::scheduler::task::PendingTask;

/// Failed tasks' errors kept for `errors()`.
pub const MAX_ERRORS: usize = 10_000;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    /// Whether the task has ended (finished, failed or cancelled).
    pub fn is_done(self) -> bool {
        matches!(
            self,
            TaskStatus::Finished | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// A named interval inside a running task (a `profile-begin`/`end` pair,
/// or a blocked `get`).
#[derive(Debug, Clone)]
struct Span {
    /// What it was.
    name: String,
    /// When it began.
    start: Instant,
    /// When it ended (`None`: still open).
    end: Option<Instant>,
}

/// A pending or running task as its entry keeps it.
#[derive(Debug, Clone)]
struct TaskRecord {
    /// Its id.
    id: TaskId,
    /// The task that submitted it (`None` for a driver).
    parent: Option<TaskId>,
    /// Function name, `Class.method` or `Class.new`.
    function: String,
    /// Where it is now.
    status: TaskStatus,
    /// Its resource request.
    request: Request,
    /// When it was submitted.
    submitted: Instant,
    /// When its arguments existed.
    ready: Option<Instant>,
    /// When it started running.
    started: Option<Instant>,
    /// The worker thread it ran on (its name).
    worker: Option<Arc<str>>,
    /// Its blocked intervals and profile spans (at most
    /// [`MAX_SPANS_PER_TASK`](crate::bounds::MAX_SPANS_PER_TASK)).
    spans: Vec<Span>,
    /// Spans not kept because the task had opened too many.
    dropped_spans: u64,
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
            worker: None,
            spans: Vec::new(),
            dropped_spans: 0,
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

/// One task as a snapshot shows it ([`TaskTable::tasks`], the session's
/// `tasks-*.jsonl`, the timeline): ids as hex, times in nanoseconds since
/// the node started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRow {
    /// Its id (32 hex digits).
    pub task_id: String,
    /// The task that submitted it (`None` for a driver).
    #[serde(default)]
    pub parent_task_id: Option<String>,
    /// Function name, `Class.method` or `Class.new`.
    pub function: String,
    /// Where it is.
    pub state: TaskStatus,
    /// The worker thread it ran on (its name).
    #[serde(default)]
    pub worker: Option<String>,
    /// Its resource request, in Ray's notation (`{CPU: 1}`).
    pub resources: String,
    /// When it was submitted.
    pub submitted_ns: u64,
    /// When its arguments existed.
    #[serde(default)]
    pub ready_ns: Option<u64>,
    /// When it started running.
    #[serde(default)]
    pub started_ns: Option<u64>,
    /// When it ended.
    #[serde(default)]
    pub ended_ns: Option<u64>,
    /// Its blocked intervals and profile spans, as far as they are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<SpanRow>,
    /// Spans it opened past [`MAX_SPANS_PER_TASK`] (counted, not kept).
    ///
    /// [`MAX_SPANS_PER_TASK`]: crate::bounds::MAX_SPANS_PER_TASK
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_spans: u64,
    /// Its error message, if it failed (`None` also when the error was
    /// dropped from the bounded error list).
    #[serde(default)]
    pub error: Option<String>,
}

/// A span of a [`TaskRow`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanRow {
    /// What it was (`get`, or a profile span's name).
    pub name: String,
    /// When it began, in nanoseconds since the node started.
    pub start_ns: u64,
    /// When it ended (`None`: still open).
    #[serde(default)]
    pub end_ns: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A finished task as the table keeps it: no heap of its own (the strings
/// are shared), about 170 bytes (see the module docs).
#[derive(Debug, Clone)]
struct FinishedRecord {
    id: TaskId,
    parent: Option<TaskId>,
    /// Interned function name.
    function: Arc<str>,
    /// Interned resource request, in Ray's notation.
    resources: Arc<str>,
    /// The worker thread's name (shared by all its tasks).
    worker: Option<Arc<str>>,
    status: TaskStatus,
    /// Nanoseconds since the node started.
    submitted: u64,
    ready: Option<u64>,
    started: Option<u64>,
    ended: u64,
    /// Sequence number of its first span in [`Finished::spans`].
    first_span: u64,
    /// Its spans there (from `first_span` on).
    spans: u32,
    /// Spans it opened past the per-task bound (saturating).
    dropped_spans: u32,
    /// Sequence number of its error in [`Finished::errors`].
    error: Option<u64>,
}

/// A span of a finished task: interned name, nanoseconds since the node
/// started.
#[derive(Debug, Clone)]
struct FinishedSpan {
    name: Arc<str>,
    start: u64,
    end: u64,
}

/// Shared copies of the strings finished records repeat (function names,
/// resource requests, span names), at most [`MAX_TASK_LABELS`] of each
/// kind; past it a record gets a copy of its own.
#[derive(Default)]
struct Interner {
    strings: HashSet<Arc<str>>,
    requests: HashMap<Request, Arc<str>>,
}

impl Interner {
    fn str(&mut self, s: &str) -> Arc<str> {
        if let Some(shared) = self.strings.get(s) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        if self.strings.len() < MAX_TASK_LABELS {
            self.strings.insert(shared.clone());
        }
        shared
    }

    fn request(&mut self, request: &Request) -> Arc<str> {
        if let Some(shared) = self.requests.get(request) {
            return shared.clone();
        }
        let shared = self.str(&request.to_string());
        if self.requests.len() < MAX_TASK_LABELS {
            self.requests.insert(request.clone(), shared.clone());
        }
        shared
    }
}

/// A ring of at most `max` items, numbered from 0 as they were added.
struct Ring<T> {
    items: VecDeque<T>,
    added: u64,
    max: usize,
}

impl<T> Ring<T> {
    fn new(max: usize) -> Self {
        Self {
            items: VecDeque::new(),
            added: 0,
            max,
        }
    }

    /// Adds `item` (dropping the oldest past the bound); its number.
    fn push(&mut self, item: T) -> u64 {
        if self.items.len() >= self.max {
            self.items.pop_front();
        }
        self.items.push_back(item);
        self.added += 1;
        self.added - 1
    }

    /// The number of the oldest item kept.
    fn first(&self) -> u64 {
        self.added - self.items.len() as u64
    }

    /// Item number `n`, if still kept.
    fn get(&self, n: u64) -> Option<&T> {
        let i = usize::try_from(n.checked_sub(self.first())?).ok()?;
        self.items.get(i)
    }
}

/// Pending and running tasks.
#[derive(Default)]
struct Table {
    entries: IdMap<TaskId, Arc<TaskEntry>>,
}

/// Finished tasks, their spans and errors (bounded), and exact totals.
struct Finished {
    records: Ring<FinishedRecord>,
    spans: Ring<FinishedSpan>,
    errors: Ring<(SystemTime, TaskError)>,
    /// Tasks ended, by final state (exact, never dropped).
    totals: BTreeMap<TaskStatus, u64>,
    interner: Interner,
}

impl Default for Finished {
    fn default() -> Self {
        Self {
            records: Ring::new(MAX_FINISHED_TASKS),
            spans: Ring::new(MAX_FINISHED_SPANS),
            errors: Ring::new(MAX_ERRORS),
            totals: BTreeMap::new(),
            interner: Interner::default(),
        }
    }
}

impl Finished {
    /// The snapshot row of `r`.
    fn row(&self, r: &FinishedRecord) -> TaskRow {
        let spans = (r.first_span..r.first_span + u64::from(r.spans))
            .filter_map(|n| self.spans.get(n))
            .map(|s| SpanRow {
                name: s.name.to_string(),
                start_ns: s.start,
                end_ns: Some(s.end),
            })
            .collect();
        TaskRow {
            task_id: r.id.to_string(),
            parent_task_id: r.parent.map(|p| p.to_string()),
            function: r.function.to_string(),
            state: r.status,
            worker: r.worker.as_deref().map(str::to_string),
            resources: r.resources.to_string(),
            submitted_ns: r.submitted,
            ready_ns: r.ready,
            started_ns: r.started,
            ended_ns: Some(r.ended),
            spans,
            dropped_spans: u64::from(r.dropped_spans),
            error: r
                .error
                .and_then(|n| self.errors.get(n))
                .map(|(_, e)| e.message.clone()),
        }
    }
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
    /// Its entry leaves the table and a compact finished record takes its
    /// place (see the module docs); a second call does nothing.
    pub(crate) fn ended(&self, entry: &TaskEntry, error: Option<&TaskError>) {
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
            status: r.status,
            submitted: self.nanos(r.submitted),
            ready: r.ready.map(|t| self.nanos(t)),
            started: r.started.map(|t| self.nanos(t)),
            ended: now,
            first_span,
            spans: kept,
            dropped_spans: u32::try_from(r.dropped_spans).unwrap_or(u32::MAX),
            error: error.map(|e| f.errors.push((SystemTime::now(), e.clone()))),
        };
        *f.totals.entry(r.status).or_default() += 1;
        f.records.push(record);
        table.entries.remove(&r.id);
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

    /// Every task kept (pending, running, and the last
    /// [`MAX_FINISHED_TASKS`] finished), oldest submission first.
    pub fn tasks(&self) -> Vec<TaskRow> {
        let table = self.table.lock();
        let mut all: Vec<TaskRow> = {
            let f = self.finished.lock();
            f.records.items.iter().map(|r| f.row(r)).collect()
        };
        all.extend(table.entries.values().map(|e| self.row(&e.record.lock())));
        drop(table);
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
    pub fn finished_since(&self, from: u64, limit: usize) -> (Vec<TaskRow>, u64) {
        let f = self.finished.lock();
        let start = from.max(f.records.first());
        let rows: Vec<TaskRow> = (start..f.records.added)
            .take(limit)
            .filter_map(|n| f.records.get(n))
            .map(|r| f.row(r))
            .collect();
        let next = start + rows.len() as u64;
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

    /// Errors of failed tasks (the last [`MAX_ERRORS`]), oldest first, with
    /// when they happened.
    pub fn errors(&self) -> Vec<(SystemTime, TaskError)> {
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
            worker: r.worker.as_deref().map(str::to_string),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// A task of `function` with `parent`, recorded as submitted (and, with
    /// `started`, as running).
    fn add(reg: &TaskTable, id: TaskId, parent: Option<TaskId>, function: &str) -> Arc<TaskEntry> {
        let record = TaskRecord::new(id, parent, function.to_string(), Request::one_cpu());
        let entry = TaskEntry::new(record, CancelToken::new(), true);
        reg.table.lock().entries.insert(id, entry.clone());
        entry
    }

    fn id(n: u64) -> TaskId {
        TaskId::from_parts(7, n)
    }

    #[test]
    fn finished_record_is_compact() {
        let reg = TaskTable::default();
        for n in 0..3 {
            let e = add(&reg, id(n), Some(id(100)), "noop");
            e.started();
            reg.ended(&e, None);
        }
        let f = reg.finished.lock();
        let records: Vec<&FinishedRecord> = f.records.items.iter().collect();
        assert_eq!(records.len(), 3);
        // Its strings are shared by every record: its heap of its own is
        // none, so its cost is its size (and its slot in the ring).
        for r in &records[1..] {
            assert!(Arc::ptr_eq(&r.function, &records[0].function));
            assert!(Arc::ptr_eq(&r.resources, &records[0].resources));
            assert_eq!(r.worker.is_some(), records[0].worker.is_some());
        }
        let size = std::mem::size_of::<FinishedRecord>();
        assert!(size <= 1024, "a finished record takes {size} bytes");
        assert!(std::mem::size_of::<FinishedSpan>() <= 64);
        // A running task's entry and the spec it links to are gone.
        assert!(reg.table.lock().entries.is_empty());
    }

    #[test]
    fn retention_is_bounded_and_totals_exact() {
        let reg = TaskTable::default();
        let n = MAX_FINISHED_TASKS as u64 + 1500;
        for i in 0..n {
            let e = add(&reg, id(i), None, "f");
            e.started();
            e.span_begin("load".to_string());
            let error = (i % 3 == 0).then(|| {
                let kind = if i % 2 == 0 {
                    ErrorKind::Cancelled
                } else {
                    ErrorKind::Application
                };
                TaskError::new(kind, "f", id(i), format!("error {i}"))
            });
            reg.ended(&e, error.as_ref());
        }
        let kept = reg.tasks();
        assert_eq!(kept.len(), MAX_FINISHED_TASKS);
        // The oldest went first.
        assert_eq!(kept[0].task_id, id(1500).to_string());
        assert_eq!(kept.last().unwrap().task_id, id(n - 1).to_string());
        let counts = reg.counts();
        let failed = (0..n).filter(|i| i % 3 == 0 && i % 2 == 1).count() as u64;
        let cancelled = (0..n).filter(|i| i % 6 == 0).count() as u64;
        assert_eq!(counts[&TaskStatus::Failed], failed);
        assert_eq!(counts[&TaskStatus::Cancelled], cancelled);
        assert_eq!(counts[&TaskStatus::Finished], n - failed - cancelled);
        assert_eq!(reg.errors().len(), MAX_ERRORS);
        let f = reg.finished.lock();
        assert_eq!(f.spans.items.len(), MAX_FINISHED_SPANS);
        assert!(f.interner.strings.len() <= MAX_TASK_LABELS);
        drop(f);
        // The last rows carry their span and, where kept, their error.
        let last = kept.last().unwrap();
        assert_eq!(last.spans.len(), 1);
        assert_eq!(last.spans[0].name, "load");
        let failed_row = kept.iter().rev().find(|r| r.state == TaskStatus::Failed);
        assert!(failed_row
            .unwrap()
            .error
            .as_deref()
            .unwrap()
            .starts_with("error "));
    }

    #[test]
    fn finished_since_gives_each_task_once_and_counts_the_dropped() {
        let reg = TaskTable::default();
        for i in 0..10 {
            let e = add(&reg, id(i), None, "f");
            reg.ended(&e, None);
        }
        let (rows, next) = reg.finished_since(0, 4);
        assert_eq!(next, 4);
        let ids: Vec<String> = rows.into_iter().map(|r| r.task_id).collect();
        assert_eq!(ids, (0..4).map(|i| id(i).to_string()).collect::<Vec<_>>());
        let (rows, next) = reg.finished_since(next, 100);
        assert_eq!((rows.len(), next), (6, 10));
        assert_eq!(reg.finished_since(next, 100), (Vec::new(), 10));
        // Once more than the table keeps have finished, a reader behind
        // skips those dropped.
        for i in 10..(MAX_FINISHED_TASKS as u64 + 20) {
            let e = add(&reg, id(i), None, "f");
            reg.ended(&e, None);
        }
        let (rows, next) = reg.finished_since(10, 5);
        assert_eq!(next, 25);
        assert_eq!(rows[0].task_id, id(20).to_string());
    }

    #[test]
    fn ending_twice_counts_once() {
        let reg = TaskTable::default();
        let e = add(&reg, id(1), None, "f");
        reg.ended(&e, None);
        let cancelled = TaskError::new(ErrorKind::Cancelled, "f", id(1), "late");
        reg.ended(&e, Some(&cancelled));
        assert_eq!(reg.counts()[&TaskStatus::Finished], 1);
        assert_eq!(reg.counts().get(&TaskStatus::Cancelled), None);
        assert!(reg.errors().is_empty());
    }

    #[test]
    fn recursive_cancel_reaches_grandchildren_through_a_finished_child() {
        let reg = TaskTable::default();
        let _grandparent = add(&reg, id(1), None, "g");
        let child = add(&reg, id(2), Some(id(1)), "c");
        let grandchild = add(&reg, id(3), Some(id(2)), "x");
        grandchild.started();
        reg.ended(&child, None);
        let found: Vec<TaskId> = reg
            .cancel(id(1), true)
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert!(found.contains(&id(3)), "{found:?}");
        assert!(grandchild.cancel.is_cancelled());
        // Live tasks show as such, finished ones with their end.
        let live = reg.live(10);
        assert_eq!(live.len(), 2);
        assert!(live.iter().all(|r| r.ended_ns.is_none()));
        assert_eq!(reg.counts()[&TaskStatus::Running], 1);
    }
}
