//! Actors across nodes. An actor created with a request this node cannot
//! meet is created on the node the placement step picks; its creator (its
//! owner) keeps a stub (`scheduler::actor::Home`) whose mailbox orders
//! this node's calls and sends each to the actor's node, one at a time,
//! in submission order ([`Forwarder::run_actor_tasks`]): the same order
//! guarantee as Ray's (per caller). A handle travelling to a third node
//! in a task's arguments or results carries where its actor lives
//! (`handles::refs`), so that node keeps a stub of its own and calls the
//! actor's node directly (`handles::learn`); the handle can arrive before
//! the actor's constructor reaches the actor's node, so such a stub asks
//! again while that node answers it has no such actor, up to
//! [`ARRIVAL_WAIT`] ([`Forwarder::attempt_arrived`]).
//!
//! An actor lives while any node holds its handle (Ray's borrowers, counted
//! per node on the actor's node): a node keeping a stub tells the actor's
//! node so (`HoldActor`) before the message that brought the handle is
//! done with (a task's arguments are held by its sender until the task
//! ends; its results by the node that sent them until the owner released
//! them), and lets go when its stub goes; a node seen dead lets go of all.
//! The owner's stub killed (or its job ended) kills the actor on its node.
//! The actor's node dying restarts the actor on another node when it was
//! created with `max_restarts` and has restarts left (Ray's actor
//! reconstruction; [`Forwarder::restart_or_fail`]): its owner kept its
//! constructor (the spec and its arguments' objects), sends it to a node
//! the actor's request fits, and the calls queued meanwhile run on the new
//! instance; the call that was running runs again if `max_task_retries`
//! allows, else fails with `actor-died`; a call that never reached the
//! node (its connection refused, its handshake failed) runs on the new
//! instance whatever `max_task_retries`, spending none. A node holding a handle but not
//! owning the actor looks for it on the other nodes (`ActorWhere`) once
//! its node is lost, and sends its calls there when the owner restarted
//! it ([`Forwarder::follow_restart`]). Otherwise its stubs' calls fail
//! with `actor-died` naming the node.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use wray_control_plane::{ActorId, ObjectId};

use crate::error::{ErrorKind, TaskError};
use crate::forward::{Failure, Forwarder, Kept};
use crate::proto::Target;
use crate::protocol::{call, method, ActorWhere, Encoded, HoldActor, KillActor};
use crate::scheduler::actor::{Home, Life};
use crate::scheduler::remote::{Infeasible, Local, Placement};
use crate::scheduler::task::{Actor, PendingTask, Task};
use crate::scheduler::Scheduler;

/// Why an actor's constructor is not placed again after its node could
/// not be reached.
#[derive(Debug, thiserror::Error)]
enum NotPlaced {
    /// The policy would keep it here, or wait: a stub cannot become a
    /// local actor.
    #[error("no other node can take the actor now")]
    NoOtherNode,
    /// No node could ever run it.
    #[error(transparent)]
    Infeasible(#[from] Infeasible),
}

/// Why an actor lost with its node is not restarted (shown after the
/// loss's cause).
#[derive(Debug, thiserror::Error)]
enum NoRestart {
    /// Created without `max_restarts`.
    #[error("the actor lived there (created without max_restarts)")]
    NotRestartable,
    /// Its `max_restarts` are spent.
    #[error("the actor lived there, restarted {restarted} times already (max_restarts {max})")]
    Spent {
        /// Restarts so far.
        restarted: u32,
        /// Its `max_restarts`.
        max: u32,
    },
    /// This node does not own it (it keeps no constructor).
    #[error("the actor lived there, and only the node that created it restarts it")]
    NotOwner,
    /// No other node has room for it now.
    #[error("not restarted: no other node fits it")]
    NoRoom,
    /// No node could ever run it.
    #[error("the actor lived there and is not restarted: {0}")]
    Infeasible(#[from] Infeasible),
}

/// How long a stub of an actor another node owns looks for the actor
/// restarted elsewhere after its node died (the owner restarts it once the
/// node's lease lapses: 4 s by default).
pub(crate) const FOLLOW_RESTART: std::time::Duration = std::time::Duration::from_secs(30);

/// How often it asks the other nodes meanwhile.
pub(crate) const RESTART_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a stub that has not yet reached its actor keeps asking the
/// actor's node for it: a handle can reach this node, in a task's
/// arguments, before the actor's constructor reaches the actor's node
/// (both sent by the owner, on different connections).
pub(crate) const ARRIVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The first pause between those asks; each next one doubles, up to
/// [`ARRIVAL_MAX_PAUSE`].
const ARRIVAL_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// The longest pause between those asks.
const ARRIVAL_MAX_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);

/// How one task of an actor living elsewhere ended.
enum Ended {
    /// It ran: its results (or its error) are sealed.
    Ran,
    /// The actor died there, of this (the task's error is sealed).
    Died(TaskError),
    /// The actor's node died or could not be reached: the task, not
    /// sealed yet, why, and whether it may have run there (`false`: its
    /// call failed before the node took it, so it runs on the restarted
    /// actor whatever its `max_task_retries`, and spends none).
    Lost(Box<Task>, String, bool),
}

impl Forwarder {
    /// Runs tasks of `actor` (a stub) on its node: `task`, then each next
    /// one ready by then, one at a time; then lets a released stub exit.
    pub(crate) async fn run_actor_tasks(
        self: Arc<Self>,
        actor: Arc<Actor>,
        task: Arc<PendingTask>,
        dead: Option<TaskError>,
    ) {
        let (Some(sched), Some(home)) = (self.sched.upgrade(), actor.home.as_ref()) else {
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
                (Some(spec), None) => match self.actor_task(&sched, &actor, home, spec).await {
                    Ended::Ran => None,
                    Ended::Died(cause) => Some(cause),
                    Ended::Lost(spec, why, sent) => {
                        let owner = self.kept.lock().contains_key(&actor.id);
                        if !owner && actor.restarts.max_restarts > 0 {
                            self.follow_restart(&sched, &actor, home, *spec, why, sent)
                                .await
                        } else {
                            self.restart_or_fail(&sched, &actor, home, *spec, why, sent)
                        }
                    }
                },
            };
            actor.end_call(died.is_some(), None::<()>, |_| {});
            if let Some(cause) = died {
                sched.actor_died(&actor, cause);
            }
            next = actor.take_next();
        }
        sched.exit_if_released(&actor);
    }

    /// Sends one task of `actor` to the node it lives on; its results are
    /// sealed here.
    async fn actor_task(
        &self,
        sched: &Arc<Scheduler>,
        actor: &Arc<Actor>,
        home: &Home,
        spec: Task,
    ) -> Ended {
        let mut node = home.node();
        let create = matches!(spec.target, Target::ActorCreate { .. });
        if create && actor.restarts.max_restarts > 0 {
            self.keep_constructor(sched, actor.id, &spec);
        }
        // Nodes its constructor could not reach: it goes elsewhere, not
        // spending a restart (it never ran there).
        let mut unreached = Vec::new();
        let attempted = loop {
            if let Some(entry) = &spec.entry {
                entry.started_on(&node);
            }
            let attempted = self
                .attempt_arrived(sched, actor, &spec, &node, create)
                .await;
            if create {
                // Counted as sent to `node` since it was placed there; that
                // node's record says what the actor holds from now on.
                self.unsend(&node, &spec.request);
            }
            match attempted {
                // Unreached, or its node began to drain before the owner
                // saw it: a new actor goes elsewhere, no restart spent.
                Err(Failure::Unsent(why) | Failure::Moved(why)) if create => {
                    unreached.push(node.clone());
                    match self.place_constructor_again(&spec, &unreached) {
                        Ok(next) => {
                            tracing::info!(actor = %actor.id, from = node, to = next, "placing an actor again: {why}");
                            self.moved(sched, actor, home, &next, &spec.request, false);
                            node = next;
                        }
                        Err(not) => break Err(Failure::Failed(format!("{why}; {not}"))),
                    }
                }
                other => break other,
            }
        };
        let failure = match attempted {
            Ok(Some(cause)) => return Ended::Died(cause),
            Ok(None) => {
                // Its constructor ended well, or a call reached it there.
                actor.constructed();
                return Ended::Ran;
            }
            Err(failure) => failure,
        };
        let (kind, message) = match failure {
            Failure::Unsent(why) => return Ended::Lost(Box::new(spec), why, false),
            // Its actor went with the draining node: a restart, as a loss.
            Failure::Lost(why) | Failure::Cut(why) => {
                return Ended::Lost(Box::new(spec), why, true)
            }
            Failure::Cancelled => (
                ErrorKind::Cancelled,
                format!("cancelled with force while it ran on node {node}: its actor is killed"),
            ),
            // Only a function waiting for resources is handed back.
            Failure::Failed(why) | Failure::Moved(why) | Failure::NoActor(why) => {
                // No node ran it to this end: this node's row is the task's.
                if let Some(entry) = &spec.entry {
                    entry.ended_here();
                }
                (ErrorKind::ActorDied, why)
            }
        };
        let error = TaskError::new(kind, spec.label.clone(), spec.id, message);
        sched.finish(&spec, Err(error.clone()));
        sched.release_all(&spec.holds);
        Ended::Died(error)
    }

    /// One attempt at `spec`, a task of `actor` (a stub), on `node`; a call
    /// on an actor this node has not reached yet is asked again, with
    /// growing pauses, while `node` answers that it has no such actor, for
    /// up to [`ARRIVAL_WAIT`]: the actor's constructor may still be on its
    /// way there.
    async fn attempt_arrived(
        &self,
        sched: &Arc<Scheduler>,
        actor: &Arc<Actor>,
        spec: &Task,
        node: &str,
        create: bool,
    ) -> Result<Option<TaskError>, Failure> {
        let since = std::time::Instant::now();
        let mut pause = ARRIVAL_FIRST_PAUSE;
        loop {
            let attempted = self
                .attempt(sched, spec, node, create && actor.detached)
                .await;
            let unreached = *actor.life().borrow() == Life::Starting;
            match attempted {
                Err(Failure::NoActor(why))
                    if !create && unreached && since.elapsed() < ARRIVAL_WAIT =>
                {
                    tracing::debug!(actor = %actor.id, "not on its node yet: {why}");
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        () = spec.cancel.cancelled() => return Err(Failure::Cancelled),
                    }
                    pause = pause.saturating_mul(2).min(ARRIVAL_MAX_PAUSE);
                }
                other => return other,
            }
        }
    }

    /// Keeps the constructor `spec` of `actor` for its restarts (once):
    /// the objects its arguments name stay held here until the actor
    /// dies for good ([`Forwarder::forget_constructor`]).
    fn keep_constructor(&self, sched: &Scheduler, actor: ActorId, spec: &Task) {
        let mut kept = self.kept.lock();
        if kept.contains_key(&actor) {
            return;
        }
        let holds: Vec<ObjectId> = spec
            .holds
            .iter()
            .copied()
            .filter(|id| sched.objects().acquire(id))
            .collect();
        kept.insert(
            actor,
            Kept {
                spec: spec.spec.clone(),
                holds,
                entry: spec.entry.clone(),
            },
        );
    }

    /// Drops the kept constructor of `actor` (it died for good, or was
    /// never restartable), letting its arguments' objects go.
    pub(crate) fn forget_constructor(&self, actor: ActorId) {
        let Some(kept) = self.kept.lock().remove(&actor) else {
            return;
        };
        if let Some(sched) = self.sched.upgrade() {
            sched.release_all(&kept.holds);
        }
    }

    /// The node of `actor` (a stub, `home`) was lost (`why`) while `spec`
    /// ran there: restarts the actor on another node if it has restarts
    /// left and this node kept its constructor (its owner), queueing
    /// `spec` to run again if it is a call with retries left or one that
    /// was never `sent` (it did not reach the node: it spends no retry;
    /// else it fails with `actor-died`); fails `spec` and the actor
    /// otherwise. Why the actor is dead, when it is.
    fn restart_or_fail(
        &self,
        sched: &Arc<Scheduler>,
        actor: &Arc<Actor>,
        home: &Home,
        mut spec: Task,
        why: String,
        sent: bool,
    ) -> Option<TaskError> {
        let lost = home.node();
        let (next, constructor) = match self.restart_target(actor, &lost) {
            Ok(target) => target,
            Err(not) => return Some(self.fail_lost(sched, &spec, &format!("{why}; {not}"))),
        };
        let policy = actor.restarts;
        let create = matches!(spec.target, Target::ActorCreate { .. });
        let (retry, failed) = if !create && (!sent || spec.retries < policy.max_task_retries) {
            if sent {
                spec.retries = spec.retries.saturating_add(1);
            }
            (Some(PendingTask::ready(spec)), None)
        } else {
            (None, Some(spec))
        };
        let request = constructor.request.clone();
        let Some(restarted) = actor.restart(PendingTask::ready(constructor), retry.clone()) else {
            // Killed meanwhile (or out of restarts): fail what was lost.
            let spec = failed.or_else(|| retry.and_then(|r| r.take()))?;
            return Some(self.fail_lost(sched, &spec, &why));
        };
        self.moved(sched, actor, home, &next, &request, true);
        tracing::warn!(
            actor = %actor.id,
            lost,
            next,
            "restarting an actor on another node ({restarted} of max_restarts {}): {why}",
            policy.max_restarts
        );
        if let Some(spec) = failed {
            if create {
                // Runs again from the kept constructor, which holds its
                // arguments' objects itself.
                sched.release_all(&spec.holds);
            } else {
                let message = format!(
                    "{why}; the call ran there and is not run again (max_task_retries {}); the \
                     actor restarts on node {next}",
                    policy.max_task_retries
                );
                let error =
                    TaskError::new(ErrorKind::ActorDied, spec.label.clone(), spec.id, message);
                sched.finish(&spec, Err(error));
                sched.release_all(&spec.holds);
            }
        }
        None
    }

    /// Restarts the idle actors this node owns (it kept their
    /// constructors) whose node died: `dead`, or any node not alive now
    /// (`None`, after deaths were missed). A busy one restarts as its
    /// running call is lost ([`Forwarder::restart_or_fail`]); one that
    /// cannot restart fails its next call saying why.
    pub(crate) fn restart_idle(&self, dead: Option<&str>) {
        let Some(sched) = self.sched.upgrade() else {
            return;
        };
        let owned: Vec<ActorId> = self.kept.lock().keys().copied().collect();
        for id in owned {
            let Some(actor) = sched.actors().get(&id) else {
                continue;
            };
            let Some(home) = actor.home.as_ref() else {
                continue;
            };
            let lost = home.node();
            let gone = match dead {
                Some(dead) => lost == dead,
                None => !self.is_alive(&lost),
            };
            if !gone || actor.dead().is_some() {
                continue;
            }
            let Ok((next, constructor)) = self.restart_target(&actor, &lost) else {
                continue;
            };
            let request = constructor.request.clone();
            let Some(restarted) = actor.restart_idle(PendingTask::ready(constructor)) else {
                continue; // busy: its call's loss restarts it
            };
            self.moved(&sched, &actor, home, &next, &request, true);
            tracing::warn!(
                actor = %id,
                lost,
                next,
                "restarting an idle actor on another node ({restarted} of max_restarts {}): \
                 its node died",
                actor.restarts.max_restarts
            );
            sched.run_actor_next(&actor);
        }
    }

    /// Notes that `actor` (a stub, `home`) lives on `next` from now on, its
    /// constructor asking `request` sent there (`restarted`: after its
    /// instance was lost, counted).
    fn moved(
        &self,
        sched: &Scheduler,
        actor: &Actor,
        home: &Home,
        next: &str,
        request: &crate::proto::Request,
        restarted: bool,
    ) {
        self.record_sent(next, request);
        home.moved(next.to_string());
        if let (Some(name), Some(names)) = (actor.name.get(), sched.names()) {
            names.moved(name, actor.id, next);
        }
        if restarted {
            self.actors_restarted.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Where the constructor `spec` goes after the nodes in `unreached`
    /// could not be reached: another node by its scheduling strategy
    /// (not this one: a stub cannot become a local actor), or why none.
    fn place_constructor_again(
        &self,
        spec: &Task,
        unreached: &[String],
    ) -> Result<String, NotPlaced> {
        let local = Local {
            feasible: false,
            fits_now: false,
            utilization: 1.0,
            arg_bytes: 0,
        };
        let mut skip = self.lacking_job_dirs(spec.id.job());
        skip.extend(unreached.iter().cloned());
        match self.choose(&spec.request, local, &spec.scheduling, &skip, false) {
            Ok(Placement::Node(next)) => Ok(next),
            Ok(Placement::Here | Placement::Later) => Err(NotPlaced::NoOtherNode),
            Err(m) => Err(m.into()),
        }
    }

    /// The node of `actor` (a stub here of an actor another node owns,
    /// created with `max_restarts`) was lost (`why`) while `spec` ran
    /// there: looks for the actor on the other live nodes (its owner
    /// restarts it), every [`RESTART_POLL`] for up to [`FOLLOW_RESTART`].
    /// Found, the stub's calls go there, `spec` first if `max_task_retries`
    /// allows or it was never `sent` (else it fails with `actor-died`);
    /// not found, `spec` fails and the actor is dead here. Why it is dead,
    /// when it is.
    async fn follow_restart(
        &self,
        sched: &Arc<Scheduler>,
        actor: &Arc<Actor>,
        home: &Home,
        mut spec: Task,
        why: String,
        sent: bool,
    ) -> Option<TaskError> {
        let lost = home.node();
        let deadline = std::time::Instant::now() + FOLLOW_RESTART;
        let request = Encoded::<method::ActorWhere>::new(ActorWhere { actor: actor.id });
        let found = loop {
            let here = |answer: crate::protocol::ActorHere| answer.here.then_some(());
            let found = self
                .first_answer(&request, Some(&lost), here)
                .await
                .map(|(node, ())| node);
            if found.is_some() || std::time::Instant::now() >= deadline || actor.dead().is_some() {
                break found;
            }
            tokio::time::sleep(RESTART_POLL).await;
        };
        let Some(next) = found else {
            let why = format!(
                "{why}; the actor lived there and was not found restarted on another node within \
                 {} s",
                FOLLOW_RESTART.as_secs()
            );
            return Some(self.fail_lost(sched, &spec, &why));
        };
        home.moved(next.clone());
        // Counted among the restarted instance's holders, as before.
        self.send_hold(&next, actor.id, true).await;
        if !sent || spec.retries < actor.restarts.max_task_retries {
            if sent {
                spec.retries = spec.retries.saturating_add(1);
            }
            actor.retry_first(PendingTask::ready(spec));
        } else {
            let message = format!(
                "{why}; the call ran there and is not run again (max_task_retries {}); the actor \
                 restarted on node {next}",
                actor.restarts.max_task_retries
            );
            let error = TaskError::new(ErrorKind::ActorDied, spec.label.clone(), spec.id, message);
            sched.finish(&spec, Err(error));
            sched.release_all(&spec.holds);
        }
        None
    }

    /// Where `actor`, lost with node `lost`, restarts, and its constructor
    /// to run there; else why it does not restart (appended to the cause).
    fn restart_target(&self, actor: &Arc<Actor>, lost: &str) -> Result<(String, Task), NoRestart> {
        let policy = actor.restarts;
        if policy.max_restarts == 0 {
            return Err(NoRestart::NotRestartable);
        }
        let restarted = actor.restarted();
        if restarted >= policy.max_restarts {
            return Err(NoRestart::Spent {
                restarted,
                max: policy.max_restarts,
            });
        }
        let constructor = self.kept.lock().get(&actor.id).map(|k| {
            let mut task = Task::new(k.spec.clone(), Some(actor.clone()));
            task.entry = k.entry.clone();
            task
        });
        let Some(constructor) = constructor else {
            return Err(NoRestart::NotOwner);
        };
        let local = Local {
            feasible: false,
            fits_now: false,
            utilization: 1.0,
            arg_bytes: 0,
        };
        let scheduling = crate::proto::Scheduling::Default;
        let mut skip = self.lacking_job_dirs(constructor.id.job());
        skip.push(lost.to_string());
        match self.choose(&constructor.request, local, &scheduling, &skip, false) {
            Ok(Placement::Node(next)) => Ok((next, constructor)),
            Ok(Placement::Here | Placement::Later) => Err(NoRestart::NoRoom),
            Err(m) => Err(m.into()),
        }
    }

    /// Fails `spec`, a task of an actor lost with its node: `actor-died`
    /// of `why`.
    fn fail_lost(&self, sched: &Scheduler, spec: &Task, why: &str) -> TaskError {
        let error = TaskError::new(ErrorKind::ActorDied, spec.label.clone(), spec.id, why);
        sched.finish(spec, Err(error.clone()));
        sched.release_all(&spec.holds);
        error
    }

    /// Tells `node` that this node holds a handle of `actor`, living
    /// there (`held`), or let go of it: whether it answered that the
    /// actor is alive there (false too when it could not be reached).
    pub(crate) async fn send_hold(&self, node: &str, actor: ActorId, held: bool) -> bool {
        let Some(peer) = self.view.get(node) else {
            return false;
        };
        let hold = HoldActor { actor, held };
        match call::<method::HoldActor>(&self.client, &peer.record.peer_address, hold).await {
            Ok(answer) => answer.alive,
            Err(e) => {
                tracing::debug!(%actor, node, held, "telling an actor's node of a handle: {e}");
                false
            }
        }
    }

    /// Tells `node` to kill `actor` (best effort: a node that cannot be
    /// reached took its actors along, or will when its owner is seen
    /// dead).
    pub(crate) async fn send_kill(&self, node: &str, actor: ActorId, why: String) {
        let Some(peer) = self.view.get(node) else {
            return;
        };
        let kill = KillActor { actor, why };
        if let Err(e) =
            call::<method::KillActor>(&self.client, &peer.record.peer_address, kill).await
        {
            tracing::debug!(%actor, node, "killing an actor on its node: {e}");
        }
    }
}
