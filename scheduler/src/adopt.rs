//! Actors across nodes, the scheduler's side: an actor another node
//! created here ([`Scheduler::adopt_actor`]: its instance lives on this
//! node, its owner keeps a stub), and a stub of an actor living on
//! another node whose handle arrived here ([`Scheduler::follow_actor`]:
//! this node's calls go to that node). The cluster sends and answers the
//! calls (`cluster::actors`).

use std::sync::Arc;

use wray_control_plane::{ActorId, ObjectId, TaskId};

use crate::actor::{Home, Life, Restarts};
use crate::actor_table::MAX_STUBS;
use crate::calls_out::Watch;
use crate::core::Scheduler;
use crate::error::{ErrorKind, TaskError};
use crate::functions::InUse;
use crate::proto::{actor_handle_object, Limits, Target, TaskSpec};
use crate::task::{Actor, HandBack, Task};

/// A task another node sent here, submitted ([`Scheduler::adopt_task`]).
pub struct AdoptedTask<'a> {
    /// Its return objects, each held once for its owner (to be released
    /// once the answer shipped them, or they were handed back).
    pub held: Vec<ObjectId>,
    /// Its calls on actors living elsewhere, watched until it ends (see
    /// [`Scheduler::calls_ended`]).
    pub calls_out: Watch<'a>,
}

/// Why an actor another node sent is not created here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdoptRefused {
    /// The task is no actor constructor.
    #[error("task {0} is not an actor constructor")]
    NotConstructor(TaskId),
    /// The constructor is not its actor's own (its id is not the
    /// actor's, or it has returns).
    #[error("task {0} is not its actor's constructor")]
    NotOwnConstructor(TaskId),
    /// The actor (or a live stub of it) is here already.
    #[error("actor {actor} exists on node {node} already")]
    Exists {
        /// The actor.
        actor: ActorId,
        /// This node.
        node: String,
    },
    /// The node has as many live actors as it allows (`max_actors`).
    #[error("node {node} has {live} live actors, the most it allows (max_actors)")]
    TooMany {
        /// This node.
        node: String,
        /// Its live actors.
        live: usize,
    },
}

impl Scheduler {
    /// Submits here task `spec` (a function, or a call of `actor`, whose
    /// instance is here) that another node (its owner) sent: its return
    /// objects registered and held for the owner, its component's version
    /// `pin` kept while it runs, and its calls on actors elsewhere
    /// watched. `hand_back`: a function's way back to its owner, should
    /// another node have room first while it waits here (spillback).
    pub fn adopt_task(
        self: &Arc<Self>,
        spec: TaskSpec,
        actor: Option<Arc<Actor>>,
        pin: InUse,
        hand_back: Option<HandBack>,
    ) -> AdoptedTask<'_> {
        for id in &spec.returns {
            self.objects.register_pending(*id);
        }
        let held = spec
            .returns
            .iter()
            .copied()
            .filter(|id| self.objects.acquire(id))
            .collect();
        let calls_out = self.calls_out.watch(spec.id);
        let mut task = Task::new(spec, actor);
        task.pin = Some(pin);
        task.hand_back = hand_back;
        self.submit_registered(task);
        AdoptedTask { held, calls_out }
    }

    /// Waits until the constructor of `actor` (adopted here) ended: `None`
    /// when it is alive, else why it died (the node shutting down
    /// included).
    pub async fn actor_started(&self, actor: &Actor) -> Option<TaskError> {
        let mut life = actor.life();
        let ended = life
            .wait_for(|l| *l != Life::Starting)
            .await
            .map(|life| match &*life {
                Life::Dead(cause) => Some(cause.clone()),
                Life::Starting | Life::Alive => None,
            });
        ended.unwrap_or_else(|_| {
            Some(TaskError::new(
                ErrorKind::ActorDied,
                actor.class.clone(),
                actor.id,
                format!("node {} shut down", self.node_id),
            ))
        })
    }

    /// Creates here the actor whose constructor `spec` another node sent
    /// (its owner, which keeps a stub): registered, its constructor
    /// submitted as the actor's first task (it waits for the actor's
    /// resources here). `pin`: its component's version. `holders`: the
    /// nodes holding its handle, its owner first, with their stubs' counts
    /// (it lives on while some node does, see `Mailbox::held_by`); none
    /// for an actor created detached, which lives until killed.
    ///
    /// # Errors
    /// [`AdoptRefused`] when `spec` is no constructor, the actor exists here
    /// already (a live stub of it included; a dead one is forgotten), or
    /// the node has as many live actors as it allows.
    pub fn adopt_actor(
        self: &Arc<Self>,
        spec: TaskSpec,
        pin: InUse,
        holders: &[(String, u32)],
    ) -> Result<Arc<Actor>, AdoptRefused> {
        let Target::ActorCreate { actor: id, class } = &spec.target else {
            return Err(AdoptRefused::NotConstructor(spec.id));
        };
        if *id != spec.id || !spec.returns.is_empty() {
            return Err(AdoptRefused::NotOwnConstructor(spec.id));
        }
        // A dead stub is what is left here of a handle that came and went
        // (a `get_actor` of a task here): the actor restarting here
        // replaces it.
        self.actors.forget_dead_stub(id);
        if self.actors.get(id).is_some() {
            return Err(AdoptRefused::Exists {
                actor: *id,
                node: self.node_id.clone(),
            });
        }
        let live = self.actors.live();
        if live >= self.config.max_live_actors() {
            return Err(AdoptRefused::TooMany {
                node: self.node_id.clone(),
                live,
            });
        }
        let actor = Actor::new(*id, class.clone(), spec.component.clone(), spec.limits)
            .detached(holders.is_empty());
        let actor = Arc::new(actor);
        actor.keep(Some(pin.clone()));
        // No handle of it is here: the other nodes hold it.
        for (node, stubs) in holders {
            actor.held_by(node, *stubs);
        }
        if !holders.is_empty() {
            actor.release();
        }
        self.actors.insert(actor.clone());
        let mut task = Task::new(spec, Some(actor.clone()));
        task.pin = Some(pin);
        self.submit(task);
        Ok(actor)
    }

    /// Keeps a stub of actor `actor`, which lives on node `stub.node`, so
    /// that this node's calls go there: its handle arrived in a message
    /// or from the actor directory. The actor's node is told that this
    /// node holds it (and the call ends once it answered), so that it
    /// lives on while this node does; the stub goes once this node frees
    /// the handle object, and tells that node so. Nothing when the actor
    /// is known here already (a stub whose handles here went is followed
    /// afresh) or [`MAX_STUBS`] are kept.
    pub async fn follow_actor(self: &Arc<Self>, actor: ActorId, stub: Stub) {
        self.actors.forget_dead_stub(&actor);
        if self.actors.get(&actor).is_some() || self.actors.stubs() >= MAX_STUBS {
            return;
        }
        let node = stub.node.clone();
        let home = Home::new(stub.node, stub.owner);
        let mailbox = Actor::new(actor, stub.class, stub.component, stub.limits)
            .elsewhere(home)
            .with_restarts(stub.restarts);
        // Starting until a call reaches it there: its constructor may
        // still be on its way to its node (`cluster/src/actors.rs`).
        let mailbox = Arc::new(mailbox);
        self.actors.insert(mailbox);
        if let Some(remote) = self.remote() {
            if !remote.hold_actor(&node, actor).await {
                // Its calls say why when they fail there.
                tracing::debug!(%actor, node, "a handle's actor is not alive on its node");
            }
        }
        self.objects.watch_free(&actor_handle_object(actor));
    }

    /// Notes that a handle of `actor`, whose instance is here, arrived
    /// here in a message: it keeps the actor alive as a handle made here
    /// does, until freed.
    pub fn handle_returned(&self, actor: &Actor) {
        if actor.home.is_none() && !actor.detached {
            actor.held_here();
            self.objects.watch_free(&actor_handle_object(actor.id));
        }
    }
}

/// What a node needs to keep a stub of an actor living on another node
/// ([`Scheduler::follow_actor`]).
pub struct Stub {
    /// The node its instance lives on.
    pub node: String,
    /// Whether this node owns it from now on.
    pub owner: bool,
    /// Its class.
    pub class: String,
    /// The content hash of its component.
    pub component: Arc<str>,
    /// Its calls' limits.
    pub limits: Limits,
    /// Its restart policy (a stub follows a restarted actor).
    pub restarts: Restarts,
}
