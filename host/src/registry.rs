//! The task table: every task's state, times, resources and error, as Ray's
//! task events keep them. It answers `tasks()` and `errors()`, feeds the
//! timeline (`wray timeline`), and finds the task to stop on `cancel`.
//!
//! Records of finished tasks are kept up to [`MAX_FINISHED`] (the oldest go
//! first, as Ray's `task_events_max_num_task_in_gcs`); errors are kept up to
//! [`MAX_ERRORS`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use wray_control_plane::TaskId;

use crate::error::TaskError;
use crate::task::PendingTask;

/// Finished tasks kept in the table.
pub const MAX_FINISHED: usize = 100_000;
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
    /// Its resource request, in Ray's notation.
    pub request: String,
    /// When it was submitted.
    pub submitted: Instant,
    /// When its arguments existed.
    pub ready: Option<Instant>,
    /// When it started running.
    pub started: Option<Instant>,
    /// When it ended.
    pub ended: Option<Instant>,
    /// The worker thread it ran on (its name).
    pub worker: Option<String>,
    /// Its blocked intervals and profile spans.
    pub spans: Vec<Span>,
    /// Its error, if it failed.
    pub error: Option<TaskError>,
    /// Tasks it submitted (for recursive cancel).
    pub children: Vec<TaskId>,
}

/// What cancel needs of a live task.
struct Live {
    /// The queued task (to take its spec before it runs).
    pending: Weak<PendingTask>,
    /// Set to stop it while it runs.
    cancel: Arc<AtomicBool>,
    /// Whether a running task may be stopped by `cancel` (an actor call may
    /// not: stopping it would kill its actor; Ray leaves running actor
    /// tasks alone too).
    interruptible: bool,
}

#[derive(Default)]
struct Table {
    records: HashMap<TaskId, TaskRecord>,
    live: HashMap<TaskId, Live>,
    /// Finished tasks, oldest first.
    finished: VecDeque<TaskId>,
    errors: VecDeque<(SystemTime, TaskError)>,
}

/// The node's task table.
pub struct Registry {
    table: Mutex<Table>,
    /// The node's start, the zero of the timeline.
    pub epoch: Instant,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            table: Mutex::default(),
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

impl Registry {
    /// Records a submitted task (its spec is still in `pending`).
    pub(crate) fn submitted(&self, pending: &Arc<PendingTask>) {
        let (id, parent, function, request, cancel, interruptible) = {
            let guard = pending.spec.lock();
            let Some(spec) = guard.as_ref() else { return };
            (
                spec.id,
                spec.parent,
                spec.label.clone(),
                spec.request.to_string(),
                spec.cancel.clone(),
                !matches!(spec.kind, crate::task::TaskKind::ActorCall { .. }),
            )
        };
        let mut t = self.table.lock();
        if let Some(p) = parent.and_then(|p| t.records.get_mut(&p)) {
            p.children.push(id);
        }
        t.records.insert(
            id,
            TaskRecord {
                id,
                parent,
                function,
                status: TaskStatus::PendingArgs,
                request,
                submitted: Instant::now(),
                ready: None,
                started: None,
                ended: None,
                worker: None,
                spans: Vec::new(),
                error: None,
                children: Vec::new(),
            },
        );
        t.live.insert(
            id,
            Live {
                pending: Arc::downgrade(pending),
                cancel,
                interruptible,
            },
        );
    }

    /// Records a driver (`main`), running from now.
    pub(crate) fn driver_started(&self, id: TaskId) {
        let now = Instant::now();
        let worker = std::thread::current().name().map(str::to_string);
        self.table.lock().records.insert(
            id,
            TaskRecord {
                id,
                parent: None,
                function: "main".to_string(),
                status: TaskStatus::Running,
                request: "{}".to_string(),
                submitted: now,
                ready: Some(now),
                started: Some(now),
                ended: None,
                worker,
                spans: Vec::new(),
                error: None,
                children: Vec::new(),
            },
        );
    }

    fn update(&self, id: TaskId, f: impl FnOnce(&mut TaskRecord)) {
        if let Some(r) = self.table.lock().records.get_mut(&id) {
            f(r);
        }
    }

    /// Its arguments exist; it waits for resources.
    pub(crate) fn ready(&self, id: TaskId) {
        self.update(id, |r| {
            r.status = TaskStatus::Queued;
            r.ready = Some(Instant::now());
        });
    }

    /// It started on the current thread.
    pub(crate) fn started(&self, id: TaskId) {
        let worker = std::thread::current().name().map(str::to_string);
        self.update(id, |r| {
            r.status = TaskStatus::Running;
            let now = Instant::now();
            r.ready.get_or_insert(now);
            r.started = Some(now);
            r.worker = worker;
        });
    }

    /// It blocked in `get`/`wait` (`true`) or woke up (`false`).
    pub(crate) fn blocked(&self, id: TaskId, blocked: bool) {
        self.update(id, |r| {
            let now = Instant::now();
            if blocked {
                r.status = TaskStatus::Blocked;
                r.spans.push(Span {
                    name: "get".to_string(),
                    start: now,
                    end: None,
                });
            } else {
                r.status = TaskStatus::Running;
                if let Some(s) = r.spans.iter_mut().rev().find(|s| s.name == "get") {
                    s.end.get_or_insert(now);
                }
            }
        });
    }

    /// Opens a profile span in task `id`; returns its handle.
    pub(crate) fn span_begin(&self, id: TaskId, name: String) -> u32 {
        let mut handle = 0;
        self.update(id, |r| {
            handle = u32::try_from(r.spans.len()).unwrap_or(u32::MAX);
            r.spans.push(Span {
                name,
                start: Instant::now(),
                end: None,
            });
        });
        handle
    }

    /// Closes profile span `handle` of task `id`.
    pub(crate) fn span_end(&self, id: TaskId, handle: u32) {
        self.update(id, |r| {
            if let Some(s) = r.spans.get_mut(handle as usize) {
                s.end.get_or_insert_with(Instant::now);
            }
        });
    }

    /// A submission rejected at once (unknown function, infeasible
    /// request): kept with the errors.
    pub(crate) fn failed_at_submission(&self, error: &TaskError) {
        let now = Instant::now();
        self.table.lock().records.insert(
            error.task,
            TaskRecord {
                id: error.task,
                parent: None,
                function: error.function.clone(),
                status: TaskStatus::PendingArgs,
                request: String::new(),
                submitted: now,
                ready: None,
                started: None,
                ended: None,
                worker: None,
                spans: Vec::new(),
                error: None,
                children: Vec::new(),
            },
        );
        self.ended(error.task, Some(error));
    }

    /// It ended: with `error`, cancelled (`cancelled`), or with its values.
    pub(crate) fn ended(&self, id: TaskId, error: Option<&TaskError>) {
        let mut t = self.table.lock();
        t.live.remove(&id);
        let Some(r) = t.records.get_mut(&id) else {
            return;
        };
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
        if let Some(e) = error {
            r.error = Some(e.clone());
            t.errors.push_back((SystemTime::now(), e.clone()));
            if t.errors.len() > MAX_ERRORS {
                t.errors.pop_front();
            }
        }
        t.finished.push_back(id);
        while t.finished.len() > MAX_FINISHED {
            if let Some(old) = t.finished.pop_front() {
                t.records.remove(&old);
            }
        }
    }

    /// Finds task `id` to cancel it, setting its flag when it runs; with
    /// `recursive`, also the tasks it submitted (returned after it).
    pub(crate) fn cancel(&self, id: TaskId, recursive: bool) -> Vec<(TaskId, CancelTarget)> {
        let t = self.table.lock();
        let mut out = Vec::new();
        let mut work = vec![id];
        while let Some(id) = work.pop() {
            let target = match t.live.get(&id) {
                None => CancelTarget::Done,
                Some(live) => match live.pending.upgrade() {
                    Some(p) if p.spec.lock().is_some() => {
                        live.cancel.store(true, Ordering::Release);
                        CancelTarget::Queued(p)
                    }
                    _ if live.interruptible => {
                        live.cancel.store(true, Ordering::Release);
                        CancelTarget::Running
                    }
                    _ => CancelTarget::Done,
                },
            };
            out.push((id, target));
            if recursive {
                if let Some(r) = t.records.get(&id) {
                    work.extend(r.children.iter().copied());
                }
            }
        }
        out
    }

    /// Every task in the table, oldest submission first.
    pub fn tasks(&self) -> Vec<TaskRecord> {
        let t = self.table.lock();
        let mut all: Vec<TaskRecord> = t.records.values().cloned().collect();
        all.sort_by_key(|r| r.submitted);
        all
    }

    /// Errors of failed tasks, oldest first, with when they happened.
    pub fn errors(&self) -> Vec<(SystemTime, TaskError)> {
        self.table.lock().errors.iter().cloned().collect()
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
