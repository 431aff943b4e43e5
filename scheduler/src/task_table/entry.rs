//! A pending or running task's entry: its record (locked on its own), its
//! spans, its link to the queued task and its cancel token.

use std::any::Any;
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::Mutex;
use wray_control_plane::TaskId;

use super::rows::TaskStatus;
use crate::cancel_token::CancelToken;
use crate::resources::Request;

/// A named interval inside a running task (a `profile-begin`/`end` pair,
/// or a blocked `get`).
#[derive(Debug, Clone)]
pub(super) struct Span {
    /// What it was.
    pub(super) name: String,
    /// When it began.
    pub(super) start: Instant,
    /// When it ended (`None`: still open).
    pub(super) end: Option<Instant>,
}

/// A task queued in the scheduler, as the task table sees it (the table
/// links each entry to its queued task without depending on its type).
pub(crate) trait QueuedTask: Send + Sync {
    /// Whether no worker has taken it yet.
    fn waiting(&self) -> bool;
    /// Itself, for the scheduler to take back its own type.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// A pending or running task as its entry keeps it.
#[derive(Debug, Clone)]
pub(super) struct TaskRecord {
    /// Its id.
    pub(super) id: TaskId,
    /// The task that submitted it (`None` for a driver).
    pub(super) parent: Option<TaskId>,
    /// Function name, `Class.method` or `Class.new`.
    pub(super) function: String,
    /// Where it is now.
    pub(super) status: TaskStatus,
    /// Its resource request.
    pub(super) request: Request,
    /// When it was submitted.
    pub(super) submitted: Instant,
    /// When its arguments existed.
    pub(super) ready: Option<Instant>,
    /// When it started running.
    pub(super) started: Option<Instant>,
    /// The worker thread it ran on (its name); for a task sent to
    /// another node (`remote`), that node's id.
    pub(super) worker: Option<Arc<str>>,
    /// Whether it was sent to another node, which runs it and lists it:
    /// `worker` names that node.
    pub(super) remote: bool,
    /// Its blocked intervals and profile spans (at most
    /// [`MAX_SPANS_PER_TASK`](crate::bounds::MAX_SPANS_PER_TASK)).
    pub(super) spans: Vec<Span>,
    /// Spans not kept because the task had opened too many.
    pub(super) dropped_spans: u64,
}

impl TaskRecord {
    pub(super) fn new(
        id: TaskId,
        parent: Option<TaskId>,
        function: String,
        request: Request,
    ) -> Self {
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
            remote: false,
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
    pub(super) record: Mutex<TaskRecord>,
    /// The queued task (to take its spec before it runs), set right after
    /// the entry is made. Opaque to the table (it only hands it back to
    /// `cancel`), so the table does not depend on the scheduler's task type.
    pub(super) pending: std::sync::OnceLock<Weak<dyn QueuedTask>>,
    /// Cancelled to stop it while it runs.
    pub(super) cancel: CancelToken,
    /// The task that submitted it (read without the record's lock, when a
    /// recursive cancel looks for children).
    pub(super) parent: Option<TaskId>,
    /// Whether a running task may be stopped by `cancel` (an actor call may
    /// not: stopping it would kill its actor; Ray leaves running actor
    /// tasks alone too).
    pub(super) interruptible: bool,
}

impl std::fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TaskEntry({})", self.record.lock().id)
    }
}

impl TaskEntry {
    pub(super) fn new(record: TaskRecord, cancel: CancelToken, interruptible: bool) -> Arc<Self> {
        Arc::new(TaskEntry {
            parent: record.parent,
            record: Mutex::new(record),
            pending: std::sync::OnceLock::new(),
            cancel,
            interruptible,
        })
    }

    /// Links the entry to its queued task (once).
    pub(crate) fn set_pending<P: QueuedTask + 'static>(&self, pending: &Arc<P>) {
        let weak: Weak<P> = Arc::downgrade(pending);
        let weak: Weak<dyn QueuedTask> = weak;
        let _ = self.pending.set(weak);
    }

    /// Its arguments exist; it waits for resources.
    pub fn ready(&self) {
        let mut r = self.record.lock();
        r.status = TaskStatus::Queued;
        r.ready = Some(Instant::now());
    }

    /// It started on the current thread.
    pub fn started(&self) {
        let worker = THREAD_NAME.with(Clone::clone);
        let now = Instant::now();
        let mut r = self.record.lock();
        r.status = TaskStatus::Running;
        r.ready.get_or_insert(now);
        r.started = Some(now);
        r.worker = worker;
        r.remote = false;
    }

    /// It started on another node, `node` (a forwarded task, or its run
    /// again elsewhere): that node runs it and lists it; the task list
    /// names that node as the task's.
    pub fn started_on(&self, node: &str) {
        let now = Instant::now();
        let mut r = self.record.lock();
        r.status = TaskStatus::Running;
        r.ready.get_or_insert(now);
        r.started = Some(now);
        r.worker = Some(Arc::from(node));
        r.remote = true;
    }

    /// It ends here with an error of this node's own making (the node it
    /// was sent to refused it, or every node it ran on was lost): no other
    /// node lists it, so this node's row is the task's.
    pub fn ended_here(&self) {
        let mut r = self.record.lock();
        r.remote = false;
        r.worker = None;
    }

    /// It blocked in `get`/`wait` (`true`) or woke up (`false`).
    pub fn blocked(&self, blocked: bool) {
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
    pub fn span_begin(&self, name: String) -> u32 {
        let name = crate::bounds::truncate(name, crate::bounds::MAX_SPAN_NAME);
        let mut r = self.record.lock();
        push_span(&mut r, name, Instant::now())
    }

    /// Closes profile span `handle` (an unknown handle is ignored).
    pub fn span_end(&self, handle: u32) {
        // The handle comes from the guest: any value is only looked up.
        let Ok(index) = usize::try_from(handle) else {
            return;
        };
        if let Some(s) = self.record.lock().spans.get_mut(index) {
            s.end.get_or_insert_with(Instant::now);
        }
    }
}

/// Adds a span to `r` unless it has [`MAX_SPANS_PER_TASK`] already (then
/// it is only counted); returns its index (`u32::MAX` when not kept).
///
/// [`MAX_SPANS_PER_TASK`]: crate::bounds::MAX_SPANS_PER_TASK
pub(super) fn push_span(r: &mut TaskRecord, name: String, start: Instant) -> u32 {
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
