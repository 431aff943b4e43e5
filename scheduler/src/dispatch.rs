//! Submission and dispatch: a task's return objects registered, its
//! dependencies subscribed, then (once they are sealed) the resource queue
//! or its actor's mailbox; started work handed to the [`Executor`]; results
//! sealed when it ends.
//!
//! [`Executor`]: crate::exec::Executor

use std::sync::atomic::Ordering;
use std::sync::Arc;

use wray_control_plane::ObjectId;

use crate::core::Scheduler;
use crate::error::TaskError;
use crate::objects::{Object, Subscription};
use crate::proto::{Arg, ErrorKind, Request, Scheduling, Target};
use crate::queue::{Movable, Start};
use crate::remote::Placement;
use crate::resources::Allocation;
use crate::task::{HandBack, PendingTask, Task};
use crate::task_table::TaskEntry;

impl Scheduler {
    /// Submits a task. Never blocks on the task itself.
    pub fn submit(self: &Arc<Self>, spec: Task) {
        for id in &spec.returns {
            self.objects.register_pending(*id);
        }
        self.submit_registered(spec);
    }

    /// [`Scheduler::submit`] of `spec`, whose return objects are
    /// registered as pending already.
    pub(super) fn submit_registered(self: &Arc<Self>, mut spec: Task) {
        spec.holds = spec.referenced();
        // Held only where they exist (`submit_*` refused ids the caller may
        // not name; an id freed meanwhile is not held, and not released).
        spec.holds.retain(|id| self.objects.acquire(id));
        self.stats.submitted.fetch_add(1, Ordering::Relaxed);
        // A task that leaves this node (forwarded, or a call of an actor
        // living elsewhere) also waits for the refs inside its value
        // arguments: the other node gets what they name only if it is
        // sealed here when the task is sent (`cluster::transfer::ship`).
        let leaves = spec.remote.is_some() || spec.actor.as_ref().is_some_and(|a| a.home.is_some());
        let deps: Vec<_> = if leaves {
            spec.holds.clone()
        } else {
            spec.dependencies().collect()
        };
        let actor = spec.actor.clone();
        let label = spec.label.clone();
        let entry = self.tasks.submitted(&spec, &spec.cancel);
        spec.entry = Some(entry.clone());
        let task = PendingTask::new(spec);
        entry.set_pending(&task);
        if let Some(actor) = &actor {
            // Queued at once so calls run in submission order.
            actor.enqueue(task.clone());
        }
        for dep in deps {
            task.missing.fetch_add(1, Ordering::AcqRel);
            let weak = Arc::downgrade(self);
            let t = task.clone();
            let waiter = Box::new(move || {
                if let Some(rt) = weak.upgrade() {
                    rt.dependency_sealed(&t);
                }
            });
            match self.objects.subscribe(&dep, waiter) {
                Subscription::Ready => {
                    task.missing.fetch_sub(1, Ordering::AcqRel);
                }
                Subscription::Pending(_) => {}
                Subscription::Unknown => {
                    // Forged or foreign id: fail the task now rather than
                    // leave it waiting forever.
                    task.missing.fetch_sub(1, Ordering::AcqRel);
                    if let Some(spec) = task.take() {
                        let err = TaskError::new(
                            ErrorKind::NotFound,
                            label,
                            spec.id,
                            format!(
                                "argument object {dep} does not exist on node {}",
                                self.node_id
                            ),
                        );
                        self.finish(&spec, Err(err));
                        self.release_all(&spec.holds);
                    }
                    // An actor call stays queued: the actor skips it (its
                    // spec is gone) and moves on.
                    task.ready.store(true, Ordering::Release);
                    if let Some(actor) = &actor {
                        self.run_actor_next(actor);
                    }
                    return;
                }
            }
        }
        self.dependency_sealed(&task);
    }

    fn dependency_sealed(self: &Arc<Self>, task: &Arc<PendingTask>) {
        if !task.dependency_done() {
            return;
        }
        let (id, actor, request, remote, placing, job) = {
            let spec = task.spec.lock();
            let Some(spec) = spec.as_ref() else {
                return; // cancelled
            };
            // A stub's constructor goes to its home node as its calls do
            // (the resources it holds are that node's).
            let actor = match &spec.target {
                Target::ActorCall { .. } => spec.actor.clone(),
                Target::ActorCreate { .. } => spec.actor.clone().filter(|a| a.home.is_some()),
                Target::Function { .. } => None,
            };
            (
                spec.entry.clone(),
                actor,
                spec.request.clone(),
                spec.remote.clone(),
                self.placing(spec),
                spec.id.job(),
            )
        };
        if let Some(entry) = id {
            entry.ready();
        }
        if let Some(node) = remote {
            self.forward_or_fail(task, node, request);
            return;
        }
        if let Some(actor) = actor {
            // Calls run with their actor's resources, in its order.
            self.run_actor_next(&actor);
            return;
        }
        // Functions and actor constructors wait for resources: here, or
        // (a function in a cluster) on the node placed on now.
        let movable = match placing {
            Placing::Here(movable) => movable,
            Placing::Choose(scheduling, arg_bytes) => {
                match self.place(&request, &scheduling, arg_bytes, true, job) {
                    Ok(Placement::Here) => Movable::movable_own(&scheduling),
                    Ok(Placement::Node(node)) => {
                        self.forward_or_fail(task, node, request);
                        return;
                    }
                    Ok(Placement::Later) => {
                        // Only a cluster places so; one left meanwhile (the
                        // node shuts down) fails the task as a forward does.
                        match self.remote() {
                            Some(remote) => remote.park(task.clone(), request),
                            None => self.forward_or_fail(task, "a node with room".into(), request),
                        }
                        return;
                    }
                    Err((kind, message)) => {
                        if let Some(spec) = task.take() {
                            let err = TaskError::new(kind, spec.label.clone(), spec.id, message);
                            self.finish(&spec, Err(err));
                            self.release_all(&spec.holds);
                        }
                        return;
                    }
                }
            }
        };
        let start = self.pool.push_ready(task.clone(), request, movable);
        self.start(start);
    }

    /// How a ready task that neither goes to an actor nor was bound to a
    /// node is placed: a function of this node's, in a cluster, is placed
    /// now (with the bytes of its object arguments); anything else queues
    /// here (a task forwarded by a peer may be handed back to it).
    fn placing(&self, spec: &Task) -> Placing {
        if spec.hand_back.is_some() {
            return Placing::Here(Movable::Peer);
        }
        let function = matches!(spec.target, Target::Function { .. });
        if !function || self.remote().is_none() {
            return Placing::Here(Movable::No);
        }
        let arg_bytes = spec
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Object(id) => self.objects.get(id),
                Arg::Value(_) => None,
            })
            .fold(0u64, |sum, o| {
                sum.saturating_add(u64::try_from(o.size()).unwrap_or(u64::MAX))
            });
        Placing::Choose(spec.scheduling.clone(), arg_bytes)
    }

    /// Hands `task` to the cluster to run on `node`, or fails it when the
    /// node left its cluster meanwhile (it is shutting down).
    fn forward_or_fail(self: &Arc<Self>, task: &Arc<PendingTask>, node: String, request: Request) {
        match self.remote() {
            Some(remote) => remote.forward(task.clone(), node, request),
            None => {
                if let Some(spec) = task.take() {
                    let err = TaskError::new(
                        ErrorKind::System,
                        spec.label.clone(),
                        spec.id,
                        format!(
                            "node {} left its cluster before the task could be forwarded to {node}",
                            self.node_id
                        ),
                    );
                    self.finish(&spec, Err(err));
                    self.release_all(&spec.holds);
                }
            }
        }
    }

    /// Queues `task` here, its arguments sealed already (a task whose
    /// remote node was lost, or that was moved back: run again here).
    pub fn run_here(self: &Arc<Self>, mut task: Task) {
        task.remote = None;
        let request = task.request.clone();
        let movable = Movable::movable_own(&task.scheduling);
        let pending = PendingTask::new(task);
        let start = self.pool.push_ready(pending, request, movable);
        self.start(start);
    }

    /// Lets go of `task`, another node's task taken out of the queue to be
    /// handed back to it before it ran here (spillback): what it held
    /// here goes, its entry leaves the task table (its owner places it
    /// again), and it no longer counts as pending here. Returns how to
    /// tell its owner.
    pub fn hand_back(&self, mut task: Task) -> Option<HandBack> {
        let back = task.hand_back.take();
        if let Some(entry) = &task.entry {
            self.tasks.forget(entry);
        }
        self.release_all(&task.holds);
        self.stats.handed_back.fetch_add(1, Ordering::Relaxed);
        back
    }

    /// Gives `allocation` back and starts what can start.
    pub fn release_resources(self: &Arc<Self>, allocation: &Allocation) {
        let start = self.pool.release(allocation);
        self.start(start);
    }

    /// Starts tasks that got their resources: functions on a worker, actor
    /// constructors by admitting their actor.
    pub fn start(self: &Arc<Self>, tasks: Vec<Start>) {
        for Start { task, allocation } in tasks {
            let (actor, runtime) = match task.spec.lock().as_ref() {
                Some(s) if matches!(s.target, Target::ActorCreate { .. }) => {
                    (s.actor.clone(), None)
                }
                Some(s) => (None, s.runtime.clone()),
                None => (None, None),
            };
            match actor {
                Some(actor) => {
                    actor.admit(allocation);
                    self.run_actor_next(&actor);
                }
                None => match self.executor() {
                    Some(executor) => executor.run_function(task, allocation, runtime),
                    // The node is going away: nothing runs any more.
                    None => drop(self.pool.release(&allocation)),
                },
            }
        }
    }

    /// Drops one hold on each of `ids` (a finished task's arguments).
    pub fn release_all(&self, ids: &[ObjectId]) {
        for id in ids {
            self.objects.release(id);
        }
    }

    /// Records how task `spec` ended and seals its return objects with its
    /// results, or all of them with its error.
    pub fn finish(&self, spec: &Task, result: Result<Vec<Object>, TaskError>) {
        self.settle(spec.entry.as_ref(), &spec.returns, result);
    }

    /// [`Scheduler::finish`] of a task whose spec is gone (its run took
    /// it): its task-table `entry` and its `returns`.
    pub fn settle(
        &self,
        entry: Option<&Arc<TaskEntry>>,
        returns: &[ObjectId],
        result: Result<Vec<Object>, TaskError>,
    ) {
        if let Some(entry) = entry {
            self.tasks.ended(entry, result.as_ref().err());
        }
        self.complete(returns, result);
    }

    /// Seals `returns` with a task's results, or all of them with its
    /// error.
    pub fn complete(&self, returns: &[ObjectId], result: Result<Vec<Object>, TaskError>) {
        match result {
            Ok(values) => {
                self.stats.finished.fetch_add(1, Ordering::Relaxed);
                for (id, value) in returns.iter().zip(values) {
                    self.objects.seal(*id, value);
                }
            }
            Err(err) => {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(task = %err.task, function = %err.function, "task failed: {}", err.message);
                for id in returns {
                    self.objects.seal(*id, Object::Error(err.clone()));
                }
            }
        }
    }
}

/// How a ready task is placed (see `Scheduler::placing`).
enum Placing {
    /// Queued here, movable as said.
    Here(Movable),
    /// Placed by the cluster's policy under this strategy, its object
    /// arguments weighing this many bytes.
    Choose(Scheduling, u64),
}

impl Movable {
    /// A function this node owns, queued here under `scheduling`: it may
    /// move to another node unless it is bound to one.
    fn movable_own(scheduling: &Scheduling) -> Movable {
        match scheduling {
            Scheduling::Default | Scheduling::Spread => Movable::Own,
            Scheduling::Node { .. } => Movable::No,
        }
    }
}
