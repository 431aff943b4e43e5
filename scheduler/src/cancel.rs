//! Cancelling tasks (Ray's `ray.cancel`) and killing actors (`ray.kill`).
//!
//! A task not yet started is taken out of the queues and its return objects
//! sealed with a `cancelled` error at once. A running task has its cancel
//! flag set: the epoch callback stops it at the next tick (10 ms) while wasm
//! runs, and a task waiting in a host call (`get`, `wait`, a WASI sleep)
//! stops at once (see `executor/src/guard.rs`). A running actor call is left to
//! finish unless `force` is given: stopping it mid-call leaves its
//! instance's state half-updated, so it kills the actor (Ray's `force`
//! kills the worker process, the actor with it).

use std::sync::Arc;

use wray_control_plane::{ActorId, TaskId};

use crate::core::Scheduler;
use crate::error::{ErrorKind, TaskError};
use crate::proto::Target;
use crate::task::{Actor, PendingTask};
use crate::task_table::CancelTarget;

impl Scheduler {
    /// Cancels task `task` (and, with `recursive`, what it submitted).
    /// Returns false when `task` had already finished or is unknown.
    pub fn cancel(self: &Arc<Self>, task: TaskId, force: bool, recursive: bool) -> bool {
        let mut first = None;
        for (id, target) in self.tasks.cancel(task, force, recursive) {
            let live = match target {
                CancelTarget::Done => false,
                CancelTarget::Running => true,
                CancelTarget::Queued(pending) => {
                    let Ok(pending) = pending.downcast::<PendingTask>() else {
                        continue; // linked by `submit`: always a PendingTask
                    };
                    let removed = self.pool.remove(&pending);
                    match pending.take() {
                        Some(spec) => {
                            let error = TaskError::new(
                                ErrorKind::Cancelled,
                                spec.label.clone(),
                                spec.id,
                                "cancelled before it ran",
                            );
                            if let (Target::ActorCreate { .. }, Some(actor)) =
                                (&spec.target, &spec.actor)
                            {
                                self.actor_died(actor, error.clone());
                            }
                            self.finish(&spec, Err(error));
                            self.release_all(&spec.holds);
                            if let Some(actor) = &spec.actor {
                                // Its queue may now start the next call.
                                self.run_actor_next(actor);
                            }
                            true
                        }
                        // Taken by a worker in between: it runs, flagged.
                        None => !removed,
                    }
                }
            };
            first.get_or_insert((id, live));
        }
        first.is_some_and(|(id, live)| id == task && live)
    }

    /// Kills actor `id` on behalf of `by`; false when it was already dead or
    /// is unknown.
    pub fn kill_actor(self: &Arc<Self>, id: ActorId, by: &str) -> bool {
        let Some(actor) = self.actors.get(&id) else {
            return false;
        };
        let cause = TaskError::new(
            ErrorKind::ActorDied,
            format!("{}.kill", actor.class),
            id,
            format!("killed by {by}"),
        );
        self.end_actor(&actor, cause)
    }

    /// Ends `actor` of `cause`, as a kill does: its running call stopped,
    /// its queued calls failing with `actor-died`; false when it was
    /// already dead.
    pub fn end_actor(self: &Arc<Self>, actor: &Arc<Actor>, cause: TaskError) -> bool {
        let why = cause.message.clone();
        let id = actor.id;
        let killed = self.actor_died(actor, cause);
        // A stub's owner takes the actor along as it dies; another node
        // holding a handle kills it as Ray lets any handle's holder.
        if let (Some(home), Some(remote)) = (&actor.home, self.remote()) {
            if !home.owner {
                remote.kill_actor(&home.node(), id, why);
            }
        }
        if killed {
            // The constructor, if it has not run yet, never will.
            let _ = self.cancel(id, true, false);
            self.run_actor_next(actor);
        }
        killed
    }
}
