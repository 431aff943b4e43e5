//! Actors across nodes. An actor created with a request this node cannot
//! meet is created on the node the placement step picks; its creator (its
//! owner) keeps a stub (`scheduler::actor::Home`) whose mailbox orders
//! this node's calls and sends each to the actor's node, one at a time,
//! in submission order ([`Forwarder::run_actor_tasks`]): the same order
//! guarantee as Ray's (per caller). A handle travelling to a third node
//! in a task's arguments or results carries where its actor lives
//! (`handles::refs`), so that node keeps a stub of its own and calls the actor's
//! node directly (`handles::learn`).
//!
//! The owner's stub dying (killed, its last handle dropped, its job ended)
//! kills the actor on its node; the actor's node kills the actors of an
//! owner that died, unless they were created detached (`serve`). The
//! actor's node dying kills the actor: its stubs' calls fail with
//! `actor-died` naming the node (no restart: see docs/cluster.md).

use std::sync::Arc;

use wray_control_plane::ActorId;

use crate::cluster::forward::{Failure, Forwarder};
use crate::cluster::protocol::{encode, KillActor, KILL_ACTOR};
use crate::error::{ErrorKind, TaskError};
use crate::proto::Target;
use crate::scheduler::task::{Actor, PendingTask, Task};
use crate::scheduler::Scheduler;

impl Forwarder {
    /// Runs tasks of `actor` (a stub) on its node: `task`, then each next
    /// one ready by then, one at a time; then lets a released stub exit.
    pub(crate) async fn run_actor_tasks(
        self: Arc<Self>,
        actor: Arc<Actor>,
        task: Arc<PendingTask>,
        dead: Option<TaskError>,
    ) {
        let (Some(sched), Some(home)) = (self.sched.upgrade(), actor.home.clone()) else {
            actor.abandon();
            return;
        };
        let mut next = Some((task, dead));
        while let Some((task, dead)) = next.take() {
            let died = match (task.take(), dead) {
                (None, _) => None,
                (Some(spec), Some(cause)) => {
                    let error = actor.died_error(&spec, &cause);
                    sched.finish(&spec, Err(error));
                    sched.release_all(&spec.holds);
                    None
                }
                (Some(spec), None) => {
                    self.actor_task(&sched, &actor, &home.node, actor.detached, spec)
                        .await
                }
            };
            actor.end_call(died.is_some(), None::<()>, |_| {});
            if let Some(cause) = died {
                sched.actor_died(&actor, cause);
            }
            next = actor.take_next();
        }
        sched.exit_if_released(&actor);
    }

    /// Sends one task of `actor` to `node`, where it lives; its results
    /// are sealed here. Why the actor died, if it did.
    async fn actor_task(
        &self,
        sched: &Arc<Scheduler>,
        actor: &Actor,
        node: &str,
        detached: bool,
        spec: Task,
    ) -> Option<TaskError> {
        if let Some(entry) = &spec.entry {
            entry.started_on(node);
        }
        let create = matches!(spec.target, Target::ActorCreate { .. });
        let attempted = self.attempt(sched, &spec, node, create && detached).await;
        if create {
            // Counted as sent to `node` since it was placed there; that
            // node's record says what the actor holds from now on.
            self.unsend(node, &spec.request);
        }
        let failure = match attempted {
            Ok(Some(cause)) => return Some(cause),
            Ok(None) => {
                if create {
                    actor.constructed();
                }
                return None;
            }
            Err(failure) => failure,
        };
        let (kind, message) = match failure {
            Failure::Lost(why) => (
                ErrorKind::ActorDied,
                format!("{why}; the actor lived there (actors are not restarted)"),
            ),
            Failure::Cancelled => (
                ErrorKind::Cancelled,
                format!("cancelled with force while it ran on node {node}: its actor is killed"),
            ),
            Failure::Failed(why) => (ErrorKind::ActorDied, why),
        };
        let error = TaskError::new(kind, spec.label.clone(), spec.id, message);
        sched.finish(&spec, Err(error.clone()));
        sched.release_all(&spec.holds);
        Some(error)
    }

    /// Tells `node` to kill `actor` (best effort: a node that cannot be
    /// reached took its actors along, or will when its owner is seen
    /// dead).
    pub(crate) async fn send_kill(&self, node: &str, actor: ActorId, why: String) {
        let Some(peer) = self.view.get(node) else {
            return;
        };
        let Ok(body) = encode(&KillActor { actor, why }) else {
            return;
        };
        if let Err(e) = self
            .client
            .call(&peer.record.peer_address, KILL_ACTOR, body)
            .await
        {
            tracing::debug!(%actor, node, "killing an actor on its node: {e}");
        }
    }
}
