//! The local scheduler: a task runs when its object arguments exist and its
//! resource request fits in what is free, first come first served within
//! those gates.
//!
//! - [`queue`]: the node's resources, the ready queue by scheduling class,
//!   blocked tasks resuming.
//! - [`blocking`]: waiting for objects (`get`, `wait`).
//! - [`submit`]: checking a submission against the function table and the
//!   node's totals.
//! - [`cancel`]: cancelling tasks and killing actors.
//!
//! Submission registers the task's return objects as pending, subscribes to
//! each dependency, and queues the task when the last one is sealed: remote
//! functions and actor constructors in the resource queue, actor calls on
//! their actor's own queue (they run with the actor's resources).

pub(crate) mod blocking;
pub(crate) mod cancel;
pub(crate) mod queue;
pub(crate) mod submit;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{ErrorKind, TaskError};
use crate::object_store::{Object, Subscription};
use crate::resources::Allocation;
use crate::runtime::Runtime;
use crate::scheduler::queue::Start;
use crate::task::{PendingTask, TaskKind, TaskSpec};

impl Runtime {
    /// Submits a task. Never blocks on the task itself.
    pub(crate) fn submit(self: &Arc<Self>, mut spec: TaskSpec) {
        for id in &spec.returns {
            self.objects.register_pending(*id);
        }
        spec.holds = spec.referenced();
        // Held only where they exist (`submit_*` refused ids the caller may
        // not name; an id freed meanwhile is not held, and not released).
        spec.holds.retain(|id| self.objects.acquire(id));
        self.stats.submitted.fetch_add(1, Ordering::Relaxed);
        let deps: Vec<_> = spec.dependencies().collect();
        let actor = spec.actor().cloned();
        let label = spec.label.clone();
        let entry = self.registry.submitted(&spec);
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
                Subscription::Ready(_) => {
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
                        actor.try_run(self);
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
        let (id, actor, request) = {
            let spec = task.spec.lock();
            let Some(spec) = spec.as_ref() else {
                return; // cancelled
            };
            let actor = match &spec.kind {
                TaskKind::ActorCall { actor, .. } => Some(actor.clone()),
                _ => None,
            };
            (spec.entry.clone(), actor, spec.request.clone())
        };
        if let Some(entry) = id {
            entry.ready();
        }
        match actor {
            // Calls run with their actor's resources, in its order.
            Some(actor) => actor.try_run(self),
            // Functions and actor constructors wait for resources.
            None => {
                let start = self.pool.push_ready(task.clone(), request);
                self.start(start);
            }
        }
    }

    /// Gives `allocation` back and starts what can start.
    pub(crate) fn release_resources(self: &Arc<Self>, allocation: &Allocation) {
        let start = self.pool.release(allocation);
        self.start(start);
    }

    /// Starts tasks that got their resources: functions on a worker, actor
    /// constructors by admitting their actor.
    pub(crate) fn start(self: &Arc<Self>, tasks: Vec<Start>) {
        for Start { task, allocation } in tasks {
            let actor = task.spec.lock().as_ref().and_then(|s| match &s.kind {
                TaskKind::ActorCreate { actor } => Some(actor.clone()),
                _ => None,
            });
            match actor {
                Some(actor) => {
                    actor.admit(allocation);
                    actor.try_run(self);
                }
                None => {
                    let rt = self.clone();
                    let light = !allocation
                        .cpu
                        .iter()
                        .any(|g| g.amount >= crate::resources::Quantity::ONE);
                    self.spawn_blocking(light, move || rt.run_function_task(task, allocation));
                }
            }
        }
    }

    /// Drops one hold on each of `ids` (a finished task's arguments).
    pub(crate) fn release_all(&self, ids: &[wray_control_plane::ObjectId]) {
        for id in ids {
            self.objects.release(id);
        }
    }

    /// Records how task `spec` ended and seals its return objects with its
    /// results, or all of them with its error.
    pub(crate) fn finish(&self, spec: &TaskSpec, result: Result<Vec<Object>, TaskError>) {
        if let Some(entry) = &spec.entry {
            self.registry.ended(entry, result.as_ref().err());
        }
        self.complete(&spec.returns, result);
    }

    /// Seals `returns` with a task's results, or all of them with its
    /// error.
    pub(crate) fn complete(
        &self,
        returns: &[wray_control_plane::ObjectId],
        result: Result<Vec<Object>, TaskError>,
    ) {
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
