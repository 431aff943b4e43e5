//! A task on this node: its [`TaskSpec`] with what it holds here (its
//! arguments' objects, its cancel token, its task-table entry, its actor's
//! mailbox), and its dependency count while it waits.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::ObjectId;

use crate::actor::{Mailbox, Queued};
use crate::cancel_token::CancelToken;
use crate::functions::InUse;
use crate::proto::{Scheduling, TaskSpec};
use crate::task_table::{QueuedTask, TaskEntry};

/// An actor's mailbox, queueing the scheduler's tasks.
pub type Actor = Mailbox<PendingTask>;

/// A submitted task: its spec (reached through `Deref`) and its live state
/// on this node.
pub struct Task {
    /// What it runs.
    pub spec: TaskSpec,
    /// What it holds until it finishes: its object arguments and the refs
    /// inside its value arguments (filled in by `Scheduler::submit`).
    pub holds: Vec<ObjectId>,
    /// Cancelled to stop it (`cancel`, `kill-actor`).
    pub cancel: CancelToken,
    /// Its entry in the task table (set at submission).
    pub entry: Option<Arc<TaskEntry>>,
    /// Its actor's mailbox (a constructor or a call).
    pub actor: Option<Arc<Actor>>,
    /// The tokio runtime its guest call runs on as a task (`None`: a
    /// worker thread); see `TaskOptions::on_caller_runtime`.
    pub runtime: Option<tokio::runtime::Handle>,
    /// Keeps its component's version loaded until it ends (see
    /// `functions.rs`).
    pub pin: Option<InUse>,
    /// The node it is forwarded to once its arguments are sealed (`None`:
    /// it runs here).
    pub remote: Option<String>,
    /// Times it was run again after the node running it died (an actor
    /// call's, bounded by its actor's `max_task_retries`).
    pub retries: u32,
    /// Where in a cluster it may run (its options').
    pub scheduling: Scheduling,
    /// A task another node forwarded here: how it is handed back to that
    /// node (its owner), naming the node to place it on instead, when
    /// another node has room first while it waits here (spillback).
    pub hand_back: Option<HandBack>,
}

/// Hands a forwarded task back to its owner: the id of the node that has
/// room for it now.
pub(crate) type HandBack = tokio::sync::oneshot::Sender<String>;

impl Task {
    /// A task for `spec`, of `actor` if any, holding nothing yet.
    pub fn new(spec: TaskSpec, actor: Option<Arc<Actor>>) -> Self {
        Self {
            spec,
            holds: Vec::new(),
            cancel: CancelToken::new(),
            entry: None,
            actor,
            runtime: None,
            pin: None,
            remote: None,
            retries: 0,
            scheduling: Scheduling::Default,
            hand_back: None,
        }
    }
}

impl std::ops::Deref for Task {
    type Target = TaskSpec;
    fn deref(&self) -> &TaskSpec {
        &self.spec
    }
}

impl std::ops::DerefMut for Task {
    fn deref_mut(&mut self) -> &mut TaskSpec {
        &mut self.spec
    }
}

/// A submitted task waiting for its dependencies, then to run.
pub struct PendingTask {
    /// The spec; `None` once a worker took it.
    pub spec: Mutex<Option<Task>>,
    /// Dependencies not sealed yet, plus one while submission is under way.
    pub missing: AtomicUsize,
    /// Whether every dependency is sealed (actor queues check this).
    pub ready: AtomicBool,
}

impl PendingTask {
    /// `spec` queued, waiting for its dependencies.
    pub fn new(spec: Task) -> Arc<Self> {
        Arc::new(Self {
            spec: Mutex::new(Some(spec)),
            missing: AtomicUsize::new(1),
            ready: AtomicBool::new(false),
        })
    }

    /// A task whose dependencies are all sealed already (a restarted
    /// actor's constructor, a call run again).
    pub fn ready(spec: Task) -> Arc<Self> {
        let task = Self::new(spec);
        task.dependency_done();
        task
    }

    /// Takes the spec to run it (only the first caller gets it).
    pub fn take(&self) -> Option<Task> {
        self.spec.lock().take()
    }

    /// Counts one dependency sealed; true when none is missing any more.
    pub fn dependency_done(&self) -> bool {
        if self.missing.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ready.store(true, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Whether its dependencies all exist (it may be queued for resources).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

impl QueuedTask for PendingTask {
    fn waiting(&self) -> bool {
        self.spec.lock().is_some()
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

impl Queued for PendingTask {
    fn is_ready(&self) -> bool {
        PendingTask::is_ready(self)
    }
}
