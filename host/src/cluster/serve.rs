//! What a node answers its peers ([`Service`], the channel's handler):
//! running a task another node forwarded (its objects received first,
//! its results shipped back and kept until the owner has them), and
//! reading the bytes of an object it holds.
//!
//! Every request is hostile input: the task must name a component this
//! node runs, its return ids must be its own (`task.return_object(i)`),
//! its request must fit this node, and its objects are bounded and
//! checked (see `transfer`) before anything is sealed.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;
use wray_control_plane::{ActorId, NodeView, ObjectId, TaskId, MAX_RETURNS};
use wray_peer::{Blob, PeerClient, PeerHandler, PeerIdentity, RemoteError};

use crate::cluster::handles;
use crate::cluster::protocol::{
    code, decode, encode, ActorWhere, CancelTask, KillActor, Release, RunTask, TaskDone, WireError,
    ACTOR_WHERE, CANCEL_TASK, HTTP_RELAY, KILL_ACTOR, MAX_KILL_REASON, RELEASE, RUN_TASK,
};
use crate::cluster::transfer::{id_of_key, receive, ship};
use crate::error::{ErrorKind, TaskError};
use crate::id_map::IdMap;
use crate::objects::{Object, ObjectStore, Subscription};
use crate::proto::{Target, TaskSpec};
use crate::scheduler::actor::Life;
use crate::scheduler::functions::InUse;
use crate::scheduler::task::{Actor, Task};
use crate::scheduler::Scheduler;

/// The most shipments a node keeps for owners at once; past it the
/// oldest is given back.
const MAX_SHIPMENTS: usize = 4_096;

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
    /// Loads a component the node does not know yet.
    pub(crate) loader: crate::cluster::Loader,
    pub(crate) client: PeerClient,
    pub(crate) view: NodeView,
    /// What was shipped to owners and is kept until they say they have it
    /// (or [`SHIPPED_KEEP`](crate::cluster::protocol::SHIPPED_KEEP) passes), by task, oldest first.
    shipped: Mutex<(IdMap<TaskId, Held>, std::collections::VecDeque<TaskId>)>,
    /// Actors created here for other nodes (not detached), by the node
    /// that owns them: they die with it. Pruned of dead ones as it
    /// reaches the node's actor bound.
    adopted: Mutex<IdMap<ActorId, String>>,
    /// Forwarded tasks (functions and actor calls) running here now, by
    /// the node that sent them (bounded by the connections the server
    /// holds: one request each).
    running: Mutex<IdMap<TaskId, String>>,
    /// Runs a peer's relayed HTTP request, once the node's HTTP API
    /// serves.
    relay: crate::cluster::relay::RelaySlot,
}

fn refused(code: u16, message: impl Into<String>) -> RemoteError {
    RemoteError::new(code, message.into())
}

impl Service {
    pub(crate) fn new(
        loader: crate::cluster::Loader,
        sched: Weak<Scheduler>,
        client: PeerClient,
        view: NodeView,
        relay: crate::cluster::relay::RelaySlot,
    ) -> Arc<Self> {
        Arc::new(Service {
            loader,
            sched,
            client,
            view,
            relay,
            shipped: Mutex::new(Default::default()),
            adopted: Mutex::new(Default::default()),
            running: Mutex::new(Default::default()),
        })
    }

    fn sched(&self) -> Result<Arc<Scheduler>, RemoteError> {
        self.sched
            .upgrade()
            .ok_or_else(|| refused(code::UNAVAILABLE, "the node is shutting down"))
    }

    /// Runs a forwarded task here (a function, an actor's constructor or
    /// one of its calls); answers its results.
    async fn run_task(&self, peer: &PeerIdentity, body: &[u8]) -> Result<Bytes, RemoteError> {
        let sched = self.sched()?;
        let RunTask {
            spec,
            component_name,
            objects,
            actors,
            detached,
        } = decode("run-task", body).map_err(|m| refused(code::BAD_REQUEST, m))?;
        let bad = |m: String| refused(code::BAD_REQUEST, m);
        check_returns(&spec).map_err(bad)?;
        // A call goes to an actor whose instance is here.
        let actor = match &spec.target {
            Target::ActorCall { actor, method } => {
                let found = sched
                    .actors
                    .get(actor)
                    .filter(|a| a.home.is_none() && a.component == spec.component);
                let Some(found) = found else {
                    return Err(refused(
                        code::NOT_FOUND,
                        format!("no actor {actor} on node {}", sched.node_id),
                    ));
                };
                check_method(&sched, &found, method, spec.args.len()).map_err(bad)?;
                Some(found)
            }
            Target::ActorCreate { .. } | Target::Function { .. } => None,
        };
        let pin = self.pin(&sched, &spec.component, component_name).await?;
        if actor.is_none() {
            sched
                .pool
                .check_feasible(&spec.request)
                .map_err(|m| refused(code::UNAVAILABLE, format!("{m} (node {})", sched.node_id)))?;
        }
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
        let (args, _) = receive(&sched.objects, &self.client, &owner, objects, &[])
            .await
            .map_err(|m| refused(code::UNAVAILABLE, m))?;
        handles::learn(&sched, &self.view, actors, &args);
        let args = Held::new(sched.objects.clone(), args);
        if let Target::ActorCreate { .. } = &spec.target {
            let created = sched
                .adopt_actor(spec, pin)
                .map_err(|m| refused(code::UNAVAILABLE, m))?;
            if !detached {
                self.adopted(&sched, created.id, &peer.node_id);
            }
            // The constructor holds its arguments now.
            drop(args);
            let mut life = created.life();
            let died = match life.wait_for(|l| *l != Life::Starting).await {
                Ok(life) => match &*life {
                    Life::Dead(cause) => Some(WireError::from(cause)),
                    Life::Starting | Life::Alive => None,
                },
                Err(_) => Some(WireError::from(&TaskError::new(
                    ErrorKind::ActorDied,
                    created.class.clone(),
                    created.id,
                    format!("node {} shut down", sched.node_id),
                ))),
            };
            let done = TaskDone {
                objects: Vec::new(),
                actors: Vec::new(),
                actor_died: died,
            };
            return encode(&done).map_err(|m| refused(code::UNAVAILABLE, m));
        }
        let returns = spec.returns.clone();
        for id in &returns {
            sched.objects.register_pending(*id);
        }
        let kept: Vec<ObjectId> = returns
            .iter()
            .copied()
            .filter(|id| sched.objects.acquire(id))
            .collect();
        let kept = Held::new(sched.objects.clone(), kept);
        let task_id = spec.id;
        let mut task = Task::new(spec, actor.clone());
        task.pin = Some(pin);
        let _running = Running::new(&self.running, task_id, &peer.node_id);
        sched.submit(task);
        // The task holds its arguments now.
        drop(args);
        for id in &returns {
            sealed(&sched.objects, id).await;
        }
        let objects = ship(&sched.objects, &returns).map_err(|m| refused(code::UNAVAILABLE, m))?;
        let actors = handles::refs(&sched, &objects, true);
        // Actors here handed to the owner die with it.
        for r in actors.iter().filter(|r| r.owner && r.node == sched.node_id) {
            self.adopted(&sched, r.actor, &peer.node_id);
        }
        let done = TaskDone {
            actors,
            objects,
            actor_died: actor.and_then(|a| a.dead()).as_ref().map(WireError::from),
        };
        let answer = encode(&done).map_err(|m| refused(code::UNAVAILABLE, m))?;
        self.keep(task_id, kept);
        Ok(answer)
    }

    /// A use of component `hash`, loaded by `name` (from the function
    /// table) when this node does not have it yet.
    async fn pin(
        &self,
        sched: &Scheduler,
        hash: &str,
        name: Option<String>,
    ) -> Result<InUse, RemoteError> {
        let pinned = sched.functions.read().pin(hash);
        let pinned = match (pinned, name) {
            (Some(pin), _) => Some(pin),
            // Deployed elsewhere a moment ago: this node has not followed
            // the deploy yet; the function table has it.
            (None, Some(name)) => {
                (self.loader)(name).await;
                sched.functions.read().pin(hash)
            }
            (None, None) => None,
        };
        pinned.ok_or_else(|| {
            refused(
                code::NOT_FOUND,
                format!("component {hash} is not deployed on node {}", sched.node_id),
            )
        })
    }

    /// Notes that actor `actor`, created here, is owned by node `owner`:
    /// it dies when that node is seen dead.
    fn adopted(&self, sched: &Scheduler, actor: ActorId, owner: &str) {
        let mut adopted = self.adopted.lock();
        if adopted.len() >= sched.config.max_live_actors() {
            adopted.retain(|id, _| sched.actors.get(id).is_some_and(|a| a.dead().is_none()));
        }
        adopted.insert(actor, owner.to_string());
    }

    /// Kills the actors created here for nodes not alive any more.
    pub(crate) fn owners_gone(&self) {
        let owners: std::collections::BTreeSet<String> =
            self.adopted.lock().values().cloned().collect();
        for owner in owners {
            if self.view.state(&owner) != Some(wray_control_plane::NodeState::Alive) {
                self.owner_died(&owner);
            }
        }
    }

    /// Kills the actors created here for node `owner`, which died
    /// (detached ones live on).
    pub(crate) fn owner_died(&self, owner: &str) {
        let Ok(sched) = self.sched() else {
            return;
        };
        let orphans: Vec<ActorId> = {
            let mut adopted = self.adopted.lock();
            let orphans = adopted
                .iter()
                .filter(|(_, o)| o.as_str() == owner)
                .map(|(id, _)| *id)
                .collect::<Vec<_>>();
            adopted.retain(|_, o| o.as_str() != owner);
            orphans
        };
        for id in orphans {
            sched.kill_actor(id, &format!("the death of its owner, node {owner}"));
        }
    }

    /// Keeps `held` (a task's results) until its owner releases them or
    /// [`SHIPPED_KEEP`](crate::cluster::protocol::SHIPPED_KEEP) passes.
    fn keep(&self, task: TaskId, held: Held) {
        let mut shipped = self.shipped.lock();
        let (map, order) = &mut *shipped;
        if map.len() >= MAX_SHIPMENTS {
            if let Some(oldest) = order.pop_front() {
                map.remove(&oldest);
            }
        }
        if map.insert(task, held).is_none() {
            order.push_back(task);
        }
    }

    /// Gives back what was shipped for `task`.
    fn release(&self, task: TaskId) {
        let held = {
            let mut shipped = self.shipped.lock();
            let (map, order) = &mut *shipped;
            order.retain(|t| *t != task);
            map.remove(&task)
        };
        drop(held);
    }

    /// Gives back shipments older than [`SHIPPED_KEEP`](crate::cluster::protocol::SHIPPED_KEEP): called every so
    /// often by the cluster's sweeper, with the tasks shipped then.
    pub(crate) fn sweep(&self, before: &[TaskId]) {
        for task in before {
            self.release(*task);
        }
    }

    /// The tasks whose shipments are kept now (for the sweeper).
    pub(crate) fn kept_tasks(&self) -> Vec<TaskId> {
        self.shipped.lock().1.iter().copied().collect()
    }
}

/// A forwarded task noted as running here, forgotten when dropped (the
/// request ended, or was dropped).
struct Running<'a> {
    map: &'a Mutex<IdMap<TaskId, String>>,
    task: TaskId,
}

impl<'a> Running<'a> {
    fn new(map: &'a Mutex<IdMap<TaskId, String>>, task: TaskId, by: &str) -> Self {
        map.lock().insert(task, by.to_string());
        Running { map, task }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.map.lock().remove(&self.task);
    }
}

/// Checks that `spec`'s return ids are its own (`task.return_object(i)`),
/// as many as a function or call may have, none for a constructor.
fn check_returns(spec: &TaskSpec) -> Result<(), String> {
    let count = spec.returns.len();
    match &spec.target {
        Target::ActorCreate { actor, .. } => {
            if *actor != spec.id || count != 0 {
                return Err(format!("task {} is not its actor's constructor", spec.id));
            }
        }
        Target::Function { .. } | Target::ActorCall { .. } => {
            if count == 0 || count > MAX_RETURNS as usize {
                return Err(format!("task {} has {count} returns", spec.id));
            }
        }
    }
    for (i, id) in spec.returns.iter().enumerate() {
        let own = u32::try_from(i).ok().and_then(|i| spec.id.return_object(i));
        if own != Some(*id) {
            return Err(format!(
                "return {i} of task {} is {id}, not the task's own",
                spec.id
            ));
        }
    }
    Ok(())
}

/// Checks that `actor`'s class has method `method` taking `args`
/// arguments.
fn check_method(sched: &Scheduler, actor: &Actor, method: &str, args: usize) -> Result<(), String> {
    let record = sched.component(&actor.component);
    let found = record
        .as_ref()
        .and_then(|r| r.actor_method(&actor.class, method));
    match found {
        None => Err(format!(
            "actor class `{}` has no method `{method}`",
            actor.class
        )),
        Some(f) if f.num_args() != args => Err(format!(
            "`{}.{method}` takes {} arguments, got {args}",
            actor.class,
            f.num_args()
        )),
        Some(_) => Ok(()),
    }
}

/// Waits until `id` is sealed (or gone).
async fn sealed(objects: &ObjectStore, id: &ObjectId) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let waiter = Box::new(move || {
        if let Some(tx) = tx.lock().take() {
            let _ = tx.send(());
        }
    });
    match objects.subscribe(id, waiter) {
        Subscription::Ready | Subscription::Unknown => {}
        Subscription::Pending(_) => {
            let _ = rx.await;
        }
    }
}

/// A range of a sealed value's bytes, kept alive while it is sent.
struct ValueRange {
    object: Arc<Object>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for ValueRange {
    fn as_ref(&self) -> &[u8] {
        match &*self.object {
            Object::Value { data, .. } => data.bytes().get(self.start..self.end).unwrap_or(&[]),
            Object::Error(_) => &[],
        }
    }
}

#[async_trait::async_trait]
impl PeerHandler for Service {
    async fn call(
        &self,
        peer: &PeerIdentity,
        method: u16,
        body: Bytes,
    ) -> Result<Bytes, RemoteError> {
        match method {
            RUN_TASK => self.run_task(peer, &body).await,
            CANCEL_TASK => {
                let CancelTask { task } =
                    decode("cancel-task", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                // Only a task this peer forwarded and that runs here now.
                let sent_by = self.running.lock().get(&task).cloned();
                if sent_by.as_deref() == Some(peer.node_id.as_str()) {
                    self.sched()?.cancel(task, true, true);
                }
                Ok(Bytes::new())
            }
            KILL_ACTOR => {
                let KillActor { actor, mut why } =
                    decode("kill-actor", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                let sched = self.sched()?;
                // Only an actor whose instance lives here, not a stub.
                if sched.actors.get(&actor).is_some_and(|a| a.home.is_none()) {
                    let mut cut = why.len().min(MAX_KILL_REASON);
                    while !why.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    why.truncate(cut);
                    sched.kill_actor(actor, &format!("node {} ({why})", peer.node_id));
                }
                Ok(Bytes::new())
            }
            HTTP_RELAY => crate::cluster::relay::answer(&self.relay, &body).await,
            ACTOR_WHERE => {
                let ActorWhere { actor } =
                    decode("actor-where", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                let here = self.sched()?.actors.get(&actor).is_some_and(|a| {
                    a.home.is_none()
                        && a.dead().is_none()
                        && *a.life().borrow() == crate::scheduler::actor::Life::Alive
                });
                Ok(Bytes::from_static(if here { &[1] } else { &[0] }))
            }
            RELEASE => {
                let Release { task } =
                    decode("release", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                self.release(task);
                Ok(Bytes::new())
            }
            other => Err(refused(
                code::BAD_REQUEST,
                format!("no peer method {other}"),
            )),
        }
    }

    async fn read(
        &self,
        _peer: &PeerIdentity,
        key: &[u8],
        offset: u64,
        len: u32,
    ) -> Result<Blob, RemoteError> {
        let sched = self.sched()?;
        let id = id_of_key(key)
            .ok_or_else(|| refused(code::BAD_REQUEST, "the key is not an object id"))?;
        let missing = || {
            refused(
                code::NOT_FOUND,
                format!("object {id} is not on node {}", sched.node_id),
            )
        };
        let object = sched.objects.get(&id).ok_or_else(missing)?;
        let size = match &*object {
            Object::Value { data, .. } => data.bytes().len(),
            Object::Error(_) => return Err(missing()),
        };
        let start = usize::try_from(offset).ok();
        let end = start.and_then(|s| s.checked_add(len as usize));
        match (start, end) {
            (Some(start), Some(end)) if end <= size => {
                Ok(Blob::new(ValueRange { object, start, end }))
            }
            _ => Err(refused(
                code::BAD_REQUEST,
                format!("bytes {offset}+{len} are past object {id}'s {size}"),
            )),
        }
    }
}
