//! The local scheduler: a task runs when its object arguments exist and a
//! CPU slot is free, first come first served within those gates.
//!
//! - [`cpu`]: CPU slots, the ready queue, blocked tasks resuming.
//! - [`blocking`]: waiting for objects (`get`, `wait`).
//!
//! Submission registers the task's return objects as pending, subscribes to
//! each dependency, and queues the task when the last one is sealed: remote
//! functions on the CPU pool, actor tasks on their actor's own queue (actors
//! hold no CPU slot, as Ray's default actors use 0 CPUs while running).

pub(crate) mod blocking;
pub(crate) mod cpu;
pub(crate) mod submit;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{ErrorKind, TaskError};
use crate::object_store::{Object, Subscription};
use crate::runtime::Runtime;
use crate::task::{PendingTask, TaskSpec};

impl Runtime {
    /// Submits a task. Never blocks on the task itself.
    pub(crate) fn submit(self: &Arc<Self>, mut spec: TaskSpec) {
        for id in &spec.returns {
            self.objects.register_pending(*id);
        }
        spec.holds = spec.referenced();
        for id in &spec.holds {
            self.objects.acquire(id);
        }
        self.stats.submitted.fetch_add(1, Ordering::Relaxed);
        let deps: Vec<_> = spec.dependencies().collect();
        let actor = spec.actor().cloned();
        let label = spec.label.clone();
        let task = PendingTask::new(spec);
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
                Subscription::Pending => {}
                Subscription::Unknown => {
                    // Forged or foreign id: fail the task now rather than
                    // leave it waiting forever.
                    task.missing.fetch_sub(1, Ordering::AcqRel);
                    if let Some(spec) = task.take() {
                        let err = TaskError::new(
                            ErrorKind::InvalidArgument,
                            label,
                            spec.id,
                            format!(
                                "argument object {dep} does not exist on node {}",
                                self.node_id
                            ),
                        );
                        self.complete(&spec.returns, Err(err));
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
        let actor = task.spec.lock().as_ref().and_then(|s| s.actor().cloned());
        match actor {
            Some(actor) => actor.try_run(self),
            None => {
                let start = self.cpus.push_ready(task.clone());
                self.start(start);
            }
        }
    }

    /// Gives a CPU slot back and starts what can start.
    pub(crate) fn release_cpu(self: &Arc<Self>) {
        let start = self.cpus.release();
        self.start(start);
    }

    fn start(self: &Arc<Self>, tasks: Vec<Arc<PendingTask>>) {
        for task in tasks {
            let rt = self.clone();
            self.spawn_blocking(move || rt.run_function_task(task));
        }
    }

    /// Drops one hold on each of `ids` (a finished task's arguments).
    pub(crate) fn release_all(&self, ids: &[wray_control_plane::ObjectId]) {
        for id in ids {
            self.objects.release(id);
        }
    }

    /// Seals a finished task's return objects with its results, or all of
    /// them with its error.
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
