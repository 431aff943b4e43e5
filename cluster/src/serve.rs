//! What a node answers its peers ([`Service`], the channel's handler):
//! running a task another node forwarded (its objects received first,
//! its results shipped back and kept until the owner has them), reading
//! the bytes of an object it holds, and relayed HTTP requests (their
//! large answers read a chunk at a time: `relay_stream`).
//!
//! Every request is hostile input: the task must name a component this
//! node runs, its return ids must be its own (`task.return_object(i)`),
//! its request must fit this node, and its objects are bounded and
//! checked (see `transfer`) before anything is sealed.

mod methods;

use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;
use wray_control_plane::{ActorId, NodeState, NodeView, ObjectId, TaskId, MAX_RETURNS};
use wray_peer::{Blob, PeerClient, PeerHandler, PeerIdentity, RemoteError};

use crate::environments::{adopt, Adopting, JobState, OUTPUT_FLUSH};
use crate::error::{ErrorKind, TaskError};
use crate::handles;
use crate::id_map::{BoundedIdMap, IdMap};
use crate::objects::{Object, ObjectStore};
use crate::proto::{Target, TaskSpec};
use crate::protocol::{
    code, package_of_key, ActorWhere, CancelTask, HoldActor, JobEnded, JobOutput, KillActor, Ping,
    Pong, Release, RunTask, Shipment, TaskDone, WireError, MAX_KILL_REASON, MAX_OUTPUT_BYTES,
    MAX_PING_TASKS,
};
use crate::relay_stream::{token_of_key, Parked};
use crate::scheduler::functions::InUse;
use crate::scheduler::task::Actor;
use crate::scheduler::Scheduler;
use crate::transfer::{all_sealed, id_of_key, receive, ship, TransferError};

/// The most shipments a node keeps for owners at once; past it the
/// oldest is given back.
const MAX_SHIPMENTS: usize = 4_096;

/// The most actors whose owners a node remembers (as many as the live
/// actors a node allows by default); past it the oldest is forgotten, and
/// that actor no longer dies with its owner (it still exits once no live
/// node holds it).
const MAX_ACTOR_OWNERS: usize = 65_536;

/// Objects held on behalf of a peer, given back when dropped.
pub(crate) struct Held {
    objects: Arc<ObjectStore>,
    ids: Vec<ObjectId>,
}

impl Held {
    pub(crate) fn new(objects: Arc<ObjectStore>, ids: Vec<ObjectId>) -> Self {
        Held { objects, ids }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        for id in &self.ids {
            self.objects.release(id);
        }
    }
}

/// The node's answers to its peers.
pub(crate) struct Service {
    pub(crate) sched: Weak<Scheduler>,
    /// This node's id (read-only context, given at construction).
    node_id: String,
    /// This node's object store.
    objects: Arc<ObjectStore>,
    /// Loads a component the node does not know yet.
    pub(crate) loader: crate::Loader,
    pub(crate) client: PeerClient,
    pub(crate) view: NodeView,
    /// What was shipped to owners and is kept until they say they have it
    /// (or [`SHIPPED_KEEP`](crate::protocol::SHIPPED_KEEP) passes,
    /// or the owner dies: `fate`), by task, oldest first, with the owner.
    pub(super) shipped: Mutex<BoundedIdMap<TaskId, (String, Held)>>,
    /// The nodes that sent each job's tasks here: a job ends here when
    /// one of them says it ended (`jobs`).
    job_senders: crate::jobs::JobNodes,
    /// Holds of actors not here (yet), counted once their constructors
    /// arrive.
    early: Mutex<EarlyHolds>,
    /// Forwarded tasks (functions, actor constructors and calls) held
    /// here now, from their arrival until answered, by the node that sent
    /// them (their owner; bounded by the connections the server holds: one
    /// request each): what a `Ping` asks, what an owner's death cancels.
    pub(super) running: Mutex<IdMap<TaskId, Sent>>,
    /// The owner of each actor created here for another node, not
    /// detached: it dies with its owner (`fate`). Bounded by
    /// [`MAX_ACTOR_OWNERS`], the oldest forgotten first.
    pub(super) actor_owners: Mutex<BoundedIdMap<ActorId, String>>,
    /// This node's drain, once it stops (`drain`).
    pub(crate) drain: crate::draining::Drain,
    /// Tasks cancelled here because the node that owned them died.
    pub(crate) cancelled_owner_died: std::sync::atomic::AtomicU64,
    /// Tasks (functions and actor calls) other nodes sent here that ran
    /// here, their results answered: their owners are those nodes (a
    /// task handed back, or cut by a drain, is not counted).
    pub(crate) taken: std::sync::atomic::AtomicU64,
    /// Calls of a method id this node does not know, answered
    /// `UNKNOWN_METHOD`.
    pub(crate) unknown_methods: wray_peer::UnknownMethods,
    /// Runs a peer's relayed HTTP request, once the node's HTTP API
    /// serves.
    relay: crate::relay::RelaySlot,
    /// Relayed answers parked here for the nodes that asked to pull.
    parked: Parked,
    /// Object bytes sent and received (shared with the forwarder).
    pub(crate) traffic: Arc<crate::transfer::Traffic>,
    /// The jobs' environments, logs and working directories.
    pub(crate) jobs: JobState,
}

fn refused(code: u16, message: impl std::fmt::Display) -> RemoteError {
    RemoteError::new(code, message.to_string())
}

impl Service {
    pub(crate) fn new(
        loader: crate::Loader,
        sched: &Arc<Scheduler>,
        client: PeerClient,
        view: NodeView,
        relay: crate::relay::RelaySlot,
        traffic: Arc<crate::transfer::Traffic>,
        jobs: JobState,
    ) -> Arc<Self> {
        Arc::new(Service {
            traffic,
            jobs,
            loader,
            sched: Arc::downgrade(sched),
            node_id: sched.node_id().to_owned(),
            objects: sched.objects().clone(),
            client,
            view,
            relay,
            parked: Parked::default(),
            shipped: Mutex::new(BoundedIdMap::new(MAX_SHIPMENTS)),
            early: Mutex::new(Default::default()),
            job_senders: Default::default(),
            running: Mutex::new(Default::default()),
            actor_owners: Mutex::new(BoundedIdMap::new(MAX_ACTOR_OWNERS)),
            drain: Default::default(),
            cancelled_owner_died: Default::default(),
            taken: Default::default(),
            unknown_methods: Default::default(),
        })
    }

    fn sched(&self) -> Result<Arc<Scheduler>, RemoteError> {
        self.sched
            .upgrade()
            .ok_or_else(|| refused(code::UNAVAILABLE, "the node is shutting down"))
    }

    /// Runs a forwarded task here (a function, an actor's constructor or
    /// one of its calls); answers its results.
    async fn run(&self, peer: &PeerIdentity, request: RunTask) -> Result<TaskDone, RemoteError> {
        let sched = self.sched()?;
        let RunTask {
            mut spec,
            component_name,
            objects,
            actors,
            detached,
            env,
        } = request;
        let bad = |m: String| refused(code::BAD_REQUEST, m);
        check_returns(&spec).map_err(|e| bad(e.to_string()))?;
        // A draining node takes no new work (a function, a new actor):
        // its owner places it again.
        if self.drain.is_draining() && !matches!(spec.target, Target::ActorCall { .. }) {
            return Err(refused(code::MOVED, ""));
        }
        // Held here from now until answered: what a `Ping` asks.
        let call = !matches!(spec.target, Target::Function { .. });
        let _running = Running::new(&self.running, spec.id, &peer.node_id, call);
        // This node's own limits apply too: the smaller of each.
        spec.limits = spec
            .limits
            .within(sched.config().limits(), sched.config().fuel_metering);
        // A call goes to an actor whose instance is here.
        let actor = match &spec.target {
            Target::ActorCall { actor, method } => {
                let found = sched
                    .actors()
                    .get(actor)
                    .filter(|a| a.home.is_none() && a.component == spec.component);
                let Some(found) = found else {
                    return Err(refused(
                        code::NOT_FOUND,
                        format!("no actor {actor} on node {}", self.node_id),
                    ));
                };
                check_method(&sched, &found, method, spec.args.len())
                    .map_err(|e| bad(e.to_string()))?;
                Some(found)
            }
            Target::ActorCreate { .. } | Target::Function { .. } => None,
        };
        let pin = self.pin(&sched, &spec.component, component_name).await?;
        if actor.is_none() {
            sched
                .check_feasible_here(&spec.request)
                .map_err(|m| refused(code::UNAVAILABLE, format!("{m} (node {})", self.node_id)))?;
        }
        self.job_senders.note(spec.id.job(), &peer.node_id);
        let owner = self
            .view
            .get(&peer.node_id)
            .map(|n| n.record.peer_address)
            .ok_or_else(|| {
                bad(format!(
                    "node {} is not a live member of this cluster",
                    peer.node_id
                ))
            })?;
        // The job's environment, before anything of the job runs here.
        let job = spec.id.job();
        if let Some(env) = env {
            let on = Adopting {
                sched: &sched,
                jobs: &self.jobs,
                client: &self.client,
                view: &self.view,
            };
            adopt(on, job, env, &owner)
                .await
                .map_err(|m| refused(code::UNAVAILABLE, m))?;
        }
        let (args, _) = receive(
            &self.objects,
            &self.client,
            &self.traffic,
            &owner,
            objects,
            &[],
        )
        .await
        .map_err(|m| refused(code::UNAVAILABLE, m))?;
        handles::learn(&sched, &self.view, actors, &args).await;
        let args = Held::new(self.objects.clone(), args);
        if let Target::ActorCreate { .. } = &spec.target {
            let early = self.early.lock().take(&spec.id);
            let alive = |node: &str| self.view.state(node) == Some(NodeState::Alive);
            let holders = if detached {
                Vec::new()
            } else {
                let early = early.into_iter().filter(|(node, _)| alive(node));
                std::iter::once((peer.node_id.clone(), 1))
                    .chain(early)
                    .collect()
            };
            if !detached {
                self.actor_owners
                    .lock()
                    .insert(spec.id, peer.node_id.clone());
            }
            let created = sched
                .adopt_actor(spec, pin, &holders)
                .map_err(|m| refused(code::UNAVAILABLE, m))?;
            // Its owner died meanwhile: it goes with it.
            if !detached && self.owner_gone(&peer.node_id) {
                self.owner_died(&peer.node_id);
            }
            // The constructor holds its arguments now.
            drop(args);
            let died = sched
                .actor_started(&created)
                .await
                .map(|cause| WireError::from(&cause));
            self.flush_output(job).await;
            return Ok(TaskDone {
                objects: Vec::new(),
                actors: Vec::new(),
                actor_died: died,
                available: Some(sched.free_resources()),
                nothing_kept: true,
            });
        }
        let function = matches!(spec.target, Target::Function { .. });
        // The node started draining while the task's objects came.
        if function && self.drain.is_draining() {
            return Err(refused(code::MOVED, ""));
        }
        let returns = spec.returns.clone();
        let task_id = spec.id;
        // A function that waits here for resources while another node has
        // room is handed back to its owner (`spill`).
        let (hand_back, handed_back) = tokio::sync::oneshot::channel();
        let adopted = sched.adopt_task(spec, actor.clone(), pin, function.then_some(hand_back));
        let kept = Held::new(self.objects.clone(), adopted.held);
        let calls_out = adopted.calls_out;
        // The task holds its arguments now.
        drop(args);
        // Its owner died before the task was noted here: it goes now.
        if self.owner_gone(&peer.node_id) {
            self.owner_died(&peer.node_id);
        }
        let handed_back = async {
            match handed_back.await {
                Ok(node) => node,
                // It ran (or was cancelled) here: its results come.
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            // With what their values name, at any depth, made by then.
            () = all_sealed(&sched, &returns) => {}
            node = handed_back => {
                // It never ran here: its return objects go (sealed
                // unheld, they are freed).
                drop(kept);
                let gone = TaskError::new(
                    ErrorKind::System,
                    "moved".to_string(),
                    task_id,
                    format!("handed back to its owner for node {node}"),
                );
                for id in &returns {
                    self.objects.seal(*id, Object::Error(gone.clone()));
                }
                return Err(refused(code::MOVED, node));
            }
        }
        // Cut by this node's drain at its grace: run again elsewhere.
        if self.drain.was_cut(&task_id) {
            return Err(refused(
                code::CUT,
                format!(
                    "node {} stopped before the task ended (its grace of {} s ran out)",
                    self.node_id,
                    self.drain.grace().as_secs()
                ),
            ));
        }
        // Its owner died: nobody waits for its results (`fate`).
        if self.owner_gone(&peer.node_id) {
            return Err(refused(
                code::UNAVAILABLE,
                format!("the task's owner, node {}, died", peer.node_id),
            ));
        }
        // Its calls on actors living on other nodes are done (so queued
        // there) before it counts as finished, as they would be queued on
        // one node (`calls_out`).
        sched.calls_ended(calls_out).await;
        self.flush_output(job).await;
        // It ran here for its owner (counted: `ClusterStats::taken`).
        self.taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // It ran: a failure from here on is its answer's, not a refusal.
        let unsent = |m: TransferError| {
            refused(
                code::ANSWER_FAILED,
                format!("task {task_id} ran on node {}: {m}", self.node_id),
            )
        };
        let objects = ship(&self.objects, &returns).map_err(unsent)?;
        self.traffic.shipped(&objects);
        // The owner tells each actor's node that it holds the handles
        // among them before it releases these.
        let actors = handles::refs(&sched, &objects, true);
        // Every value inline and no actor handle: the owner has all of it
        // once it reads the answer, and nothing waits for its release.
        let nothing_kept = actors.is_empty()
            && objects
                .iter()
                .all(|o| !matches!(o.value, Shipment::Pull { .. }));
        let done = TaskDone {
            actors,
            objects,
            actor_died: actor.and_then(|a| a.dead()).as_ref().map(WireError::from),
            available: Some(sched.free_resources()),
            nothing_kept,
        };
        // An answer past the channel's bound on a body is refused as
        // `ANSWER_FAILED` as it is encoded (`dispatch`); what it shipped
        // is kept then until `SHIPPED_KEEP` passes.
        if !nothing_kept && !self.owner_gone(&peer.node_id) {
            self.keep(task_id, &peer.node_id, kept);
        }
        Ok(done)
    }

    /// Waits until the output of job `job`'s guests here so far reached
    /// the job's log on its node ([`OUTPUT_FLUSH`] at most): a task's
    /// output is in the log before its results are seen.
    async fn flush_output(&self, job: wray_control_plane::JobId) {
        if let Some(outbox) = self.jobs.envs.outbox(job) {
            if !outbox.flush(OUTPUT_FLUSH).await {
                tracing::debug!(%job, "a task's output did not reach its job's log in time");
            }
        }
    }

    /// Writes what a job's guests on node `peer` wrote into the job's
    /// log here; whether the job has a log here (open).
    fn write_output(&self, peer: &str, output: JobOutput) -> Result<bool, RemoteError> {
        let JobOutput {
            job,
            bytes,
            dropped,
        } = output;
        if bytes.len() > MAX_OUTPUT_BYTES {
            return Err(refused(
                code::BAD_REQUEST,
                format!(
                    "{} bytes of output in one message, the most is {MAX_OUTPUT_BYTES}",
                    bytes.len()
                ),
            ));
        }
        let Some(log) = self.jobs.logs.get(job).filter(|l| !l.is_closed()) else {
            return Ok(false);
        };
        if dropped > 0 {
            log.write(
                format!(
                    "[wray: {dropped} bytes of the job's output on node {peer} were dropped: \
                     it wrote faster than they could be sent]\n"
                )
                .as_bytes(),
            );
        }
        log.write(&bytes);
        Ok(true)
    }

    /// A use of component `hash`, loaded by `name` (from the function
    /// table) when this node does not have it yet.
    async fn pin(
        &self,
        sched: &Scheduler,
        hash: &str,
        name: Option<String>,
    ) -> Result<InUse, RemoteError> {
        let pinned = sched.pin_component(hash);
        let pinned = match (pinned, name) {
            (Some(pin), _) => Some(pin),
            // Deployed elsewhere a moment ago: this node has not followed
            // the deploy yet; the function table has it.
            (None, Some(name)) => {
                (self.loader)(name).await;
                sched.pin_component(hash)
            }
            (None, None) => None,
        };
        pinned.ok_or_else(|| {
            refused(
                code::NOT_FOUND,
                format!("component {hash} is not deployed on node {}", self.node_id),
            )
        })
    }

    /// Forgets the holders of the actors here that are not alive any more
    /// (`dead`, or every node not alive now when `None`): an actor no
    /// node holds then exits once idle, unless it was created detached.
    pub(crate) fn holders_gone(&self, dead: Option<&str>) {
        let Ok(sched) = self.sched() else {
            return;
        };
        let alive = |node: &str| match dead {
            Some(dead) => node != dead,
            None => self.view.state(node) == Some(NodeState::Alive),
        };
        for actor in sched.actors().instances() {
            if actor.holders_gone(alive) {
                sched.exit_if_released(&actor);
            }
        }
    }

    /// Counts node `peer` among the holders of actor `actor`, living here
    /// (`held`), or not any more: whether the actor is alive here.
    fn hold(&self, peer: &str, actor: ActorId, held: bool) -> Result<bool, RemoteError> {
        let sched = self.sched()?;
        let found = sched.actors().get(&actor);
        let Some(found) = found.as_ref().filter(|a| a.home.is_none()) else {
            // Its handle may travel before its owner's constructor arrives
            // here: counted once it does.
            if found.is_none() {
                self.early.lock().hold(actor, peer, held);
            }
            return Ok(held && found.is_none());
        };
        if !held {
            found.let_go_by(peer);
            sched.exit_if_released(found);
            return Ok(false);
        }
        // A node seen dead is never counted: nothing would forget it.
        let alive = self.view.state(peer) == Some(NodeState::Alive);
        Ok(alive && found.held_by(peer, 1))
    }

    /// Keeps `held` (a task's results) until its owner `owner` releases
    /// them, [`SHIPPED_KEEP`](crate::protocol::SHIPPED_KEEP)
    /// passes or the owner dies.
    fn keep(&self, task: TaskId, owner: &str, held: Held) {
        let replaced = self.shipped.lock().insert(task, (owner.to_string(), held));
        drop(replaced);
    }

    /// Gives back what was shipped for `task`.
    fn release(&self, task: TaskId) {
        let held = self.shipped.lock().remove(&task);
        drop(held);
    }

    /// Gives back shipments older than [`SHIPPED_KEEP`](crate::protocol::SHIPPED_KEEP): called every so
    /// often by the cluster's sweeper, with the tasks shipped then.
    pub(crate) fn sweep(&self, before: &[TaskId]) {
        for task in before {
            self.release(*task);
        }
    }

    /// The tasks whose shipments are kept now (for the sweeper).
    pub(crate) fn kept_tasks(&self) -> Vec<TaskId> {
        self.shipped.lock().keys().copied().collect()
    }

    /// Drops the relayed answers parked here that no node pulled for a
    /// while (called every so often by the cluster's publisher).
    pub(crate) fn expire_relayed(&self) {
        self.parked.expire();
    }
}

/// The most actors not (yet) here whose holds a node keeps; past it the
/// oldest are forgotten.
const MAX_EARLY_HOLDS: usize = 65_536;

/// Holds of actors whose constructors have not arrived here yet (a handle
/// travelled to a third node first): the nodes holding each, with their
/// stubs' counts, bounded by [`MAX_EARLY_HOLDS`] actors.
struct EarlyHolds(BoundedIdMap<ActorId, std::collections::BTreeMap<String, u32>>);

impl Default for EarlyHolds {
    fn default() -> Self {
        EarlyHolds(BoundedIdMap::new(MAX_EARLY_HOLDS))
    }
}

impl EarlyHolds {
    /// Counts a hold of `actor` by `node` (`held`), or its end.
    fn hold(&mut self, actor: ActorId, node: &str, held: bool) {
        if !held {
            if let Some(nodes) = self.0.get_mut(&actor) {
                if let Some(count) = nodes.get_mut(node) {
                    *count = count.saturating_sub(1);
                    if *count == 0 {
                        nodes.remove(node);
                    }
                }
            }
            return;
        }
        let nodes = self.0.get_or_insert_with(actor, Default::default);
        if nodes.len() < crate::scheduler::actor::MAX_HOLDERS || nodes.contains_key(node) {
            let count = nodes.entry(node.to_string()).or_insert(0);
            *count = count.saturating_add(1);
        }
    }

    /// The holds of `actor` kept so far, forgotten here.
    fn take(&mut self, actor: &ActorId) -> Vec<(String, u32)> {
        let Some(nodes) = self.0.remove(actor) else {
            return Vec::new();
        };
        nodes.into_iter().filter(|(_, n)| *n > 0).collect()
    }
}

/// Who sent a forwarded task queued or running here.
pub(crate) struct Sent {
    /// The node that sent it: its owner.
    pub(crate) by: String,
    /// Whether it is an actor's call (else a function).
    pub(crate) call: bool,
}

/// A forwarded task noted as running here, forgotten when dropped (the
/// request ended, or was dropped).
struct Running<'a> {
    map: &'a Mutex<IdMap<TaskId, Sent>>,
    task: TaskId,
}

impl<'a> Running<'a> {
    fn new(map: &'a Mutex<IdMap<TaskId, Sent>>, task: TaskId, by: &str, call: bool) -> Self {
        let sent = Sent {
            by: by.to_string(),
            call,
        };
        map.lock().insert(task, sent);
        Running { map, task }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.map.lock().remove(&self.task);
    }
}

/// A forwarded task whose spec does not hold together: refused
/// `BAD_REQUEST`.
#[derive(Debug, thiserror::Error)]
enum BadSpec {
    /// An actor's constructor whose id is not the actor's, or with returns.
    #[error("task {0} is not its actor's constructor")]
    NotConstructor(TaskId),
    /// A function or call with no returns or more than `MAX_RETURNS`.
    #[error("task {task} has {count} returns")]
    Returns {
        /// The task.
        task: TaskId,
        /// Its returns.
        count: usize,
    },
    /// A return id that is not the task's own (`task.return_object(i)`).
    #[error("return {index} of task {task} is {id}, not the task's own")]
    NotOwnReturn {
        /// The return's index.
        index: usize,
        /// The task.
        task: TaskId,
        /// The id it gives.
        id: ObjectId,
    },
    /// A call of a method the actor's class does not have.
    #[error("actor class `{class}` has no method `{method}`")]
    NoMethod {
        /// The actor's class.
        class: String,
        /// The method called.
        method: String,
    },
    /// A call with the wrong number of arguments.
    #[error("`{class}.{method}` takes {takes} arguments, got {got}")]
    Arity {
        /// The actor's class.
        class: String,
        /// The method called.
        method: String,
        /// The arguments it takes.
        takes: usize,
        /// The arguments the call gives.
        got: usize,
    },
}

/// Checks that `spec`'s return ids are its own (`task.return_object(i)`),
/// as many as a function or call may have, none for a constructor.
fn check_returns(spec: &TaskSpec) -> Result<(), BadSpec> {
    let count = spec.returns.len();
    match &spec.target {
        Target::ActorCreate { actor, .. } => {
            if *actor != spec.id || count != 0 {
                return Err(BadSpec::NotConstructor(spec.id));
            }
        }
        Target::Function { .. } | Target::ActorCall { .. } => {
            if count == 0 || count > MAX_RETURNS as usize {
                return Err(BadSpec::Returns {
                    task: spec.id,
                    count,
                });
            }
        }
    }
    for (index, id) in spec.returns.iter().enumerate() {
        let own = u32::try_from(index)
            .ok()
            .and_then(|i| spec.id.return_object(i));
        if own != Some(*id) {
            return Err(BadSpec::NotOwnReturn {
                index,
                task: spec.id,
                id: *id,
            });
        }
    }
    Ok(())
}

/// Checks that `actor`'s class has method `method` taking `args`
/// arguments.
fn check_method(
    sched: &Scheduler,
    actor: &Actor,
    method: &str,
    args: usize,
) -> Result<(), BadSpec> {
    let record = sched.component(&actor.component);
    let found = record
        .as_ref()
        .and_then(|r| r.actor_method(&actor.class, method));
    match found {
        None => Err(BadSpec::NoMethod {
            class: actor.class.clone(),
            method: method.to_string(),
        }),
        Some(f) if f.num_args() != args => Err(BadSpec::Arity {
            class: actor.class.clone(),
            method: method.to_string(),
            takes: f.num_args(),
            got: args,
        }),
        Some(_) => Ok(()),
    }
}
