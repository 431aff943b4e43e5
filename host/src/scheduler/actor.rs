//! Actor mailboxes: each actor's calls run one at a time in submission
//! order; its instance lives in the executor (keyed by actor id). A
//! [`Mailbox`] is generic over what it queues (the scheduler's queued task:
//! see `task::Actor`), so it depends on nothing else of the scheduler; the
//! scheduler kills actors and starts their next call
//! (`Scheduler::actor_died`, `Scheduler::run_actor_next`).
//!
//! An actor's queue holds its tasks in the order they were submitted (the
//! constructor first). The head runs once its object arguments exist and the
//! previous call has finished; a later call never overtakes an earlier one
//! whose arguments are still pending. The constructor waits in the node's
//! resource queue for the actor's request (none by default, as Ray's actors
//! use 0 CPUs while running); the actor then holds those resources until it
//! dies. A trap kills the actor (the instance may be in any state), as does
//! `kill-actor` and a host bug while a call runs: later calls fail with
//! `actor-died`, as in Ray, and its resources go back to the node. A method
//! returning an error value does not kill it.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::ActorId;

use crate::cancel_token::CancelToken;
use crate::error::{ErrorKind, TaskError};
use crate::proto::{Limits, TaskSpec};
use crate::resources::Allocation;

/// What a mailbox queues: a task that knows whether its arguments are
/// ready.
pub(crate) trait Queued {
    /// Whether every dependency is sealed.
    fn is_ready(&self) -> bool;
}

struct Inner<T> {
    queue: VecDeque<Arc<T>>,
    running: bool,
    /// Why the actor is dead, once it is.
    dead: Option<TaskError>,
    /// Its resources, from admission until it dies.
    allocation: Option<Allocation>,
    /// Whether its constructor got its resources.
    admitted: bool,
    /// The cancel token of the call running now.
    running_cancel: Option<CancelToken>,
}

/// One actor of a node: its identity, its queue and its state.
pub(crate) struct Mailbox<T> {
    pub id: ActorId,
    pub class: String,
    /// Content hash of its component.
    pub component: Arc<str>,
    /// Limits of each call (unless the call sets its own).
    pub limits: Limits,
    inner: Mutex<Inner<T>>,
}

impl<T: Queued> Mailbox<T> {
    pub fn new(id: ActorId, class: String, component: Arc<str>, limits: Limits) -> Self {
        Self {
            id,
            class,
            component,
            limits,
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                running: false,
                dead: None,
                allocation: None,
                admitted: false,
                running_cancel: None,
            }),
        }
    }

    /// Gives the actor its resources: its constructor may run now.
    pub fn admit(&self, allocation: Allocation) {
        let mut inner = self.inner.lock();
        inner.admitted = true;
        inner.allocation = Some(allocation);
    }

    /// What the actor holds of the node's resources.
    pub fn allocation(&self) -> Allocation {
        self.inner.lock().allocation.clone().unwrap_or_default()
    }

    /// Why the actor is dead, if it is.
    pub fn dead(&self) -> Option<TaskError> {
        self.inner.lock().dead.clone()
    }

    /// Marks the actor dead of `cause` and stops its running call: the
    /// resources it held, for the caller to give back (see
    /// `Scheduler::actor_died`); `None` when it was dead already.
    pub fn mark_dead(&self, cause: TaskError) -> Option<Option<Allocation>> {
        let mut inner = self.inner.lock();
        if inner.dead.is_some() {
            return None;
        }
        inner.dead = Some(cause);
        if let Some(token) = &inner.running_cancel {
            token.cancel();
        }
        Some(inner.allocation.take())
    }

    /// Appends a submitted task to the queue.
    pub fn enqueue(&self, task: Arc<T>) {
        self.inner.lock().queue.push_back(task);
    }

    /// Takes the head of the queue to run it, if it is ready and nothing is
    /// running: (the task, why the actor is dead if it is).
    pub fn take_next(&self) -> Option<(Arc<T>, Option<TaskError>)> {
        let mut inner = self.inner.lock();
        if inner.running || !inner.queue.front().is_some_and(|t| t.is_ready()) {
            return None;
        }
        if !inner.admitted && inner.dead.is_none() {
            return None; // the constructor waits for resources
        }
        let task = inner.queue.pop_front()?;
        inner.running = true;
        Some((task, inner.dead.clone()))
    }

    /// Gives up the call taken by [`Mailbox::take_next`] without running
    /// it (nothing can run it any more).
    pub fn abandon(&self) {
        self.inner.lock().running = false;
    }

    /// Ends the running call: `instance` (what it ran on, if it is to be
    /// kept) goes to `keep` unless the call killed the actor (`died`) or
    /// the actor died meanwhile; then returns what was not kept, for the
    /// caller to drop outside the lock (see `Scheduler::actor_died`). `keep` runs
    /// under the actor's lock, so a concurrent `die` either sees the
    /// instance kept (and drops it) or keeps it from being kept.
    pub fn end_call<I>(&self, died: bool, instance: Option<I>, keep: impl FnOnce(I)) -> Option<I> {
        let mut inner = self.inner.lock();
        inner.running = false;
        inner.running_cancel = None;
        match instance {
            Some(instance) if !died && inner.dead.is_none() => {
                keep(instance);
                None
            }
            other => other,
        }
    }

    /// Records `cancel` as the running task's, so that `kill` stops it; a
    /// kill that came first (between taking the task and now) cancels it
    /// at once.
    pub fn starting(&self, cancel: &CancelToken) {
        let mut inner = self.inner.lock();
        if inner.dead.is_some() {
            cancel.cancel();
        }
        inner.running_cancel = Some(cancel.clone());
    }

    /// The error of `task`, which cannot run because the actor died of
    /// `cause`.
    pub fn died_error(&self, task: &TaskSpec, cause: &TaskError) -> TaskError {
        TaskError::new(
            ErrorKind::ActorDied,
            task.label.clone(),
            task.id,
            format!("actor {} ({}) is dead: {cause}", self.id, self.class),
        )
    }
}
