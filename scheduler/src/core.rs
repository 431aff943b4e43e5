//! `Scheduler`: the node's scheduling state (the task table, the
//! resource queue, actor mailboxes, the node's view of the function table,
//! counters) and how a job ends. It starts work through the
//! `Executor` interface and knows nothing of wasmtime.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::RwLock;
use wray_control_plane::{ActorId, ComponentRecord, JobId};

use crate::actor_table::ActorTable;
use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::error::{DeployLimit, ErrorKind, TaskError};
use crate::exec::Executor;
use crate::functions::{ComponentLimits, ComponentUsage, Functions, InUse, Version};
use crate::names::ActorNames;
use crate::objects::ObjectStore;
use crate::queue::ResourcePool;
use crate::remote::Remote;
use crate::task::Actor;
use crate::task_table::TaskTable;

/// Task counters of a node.
#[derive(Default)]
pub(crate) struct Stats {
    pub submitted: AtomicU64,
    pub finished: AtomicU64,
    pub failed: AtomicU64,
    pub handed_back: AtomicU64,
}

/// A point-in-time copy of a node's task counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatsSnapshot {
    /// Tasks submitted (functions, actor constructors and calls).
    pub submitted: u64,
    /// Tasks that finished with a value.
    pub finished: u64,
    /// Tasks that finished with an error object.
    pub failed: u64,
    /// Tasks other nodes forwarded here that were handed back to them
    /// before they ran (another node had room first: spillback).
    pub handed_back: u64,
}

impl StatsSnapshot {
    /// Tasks submitted and not yet finished (queued, waiting or running).
    pub fn pending(&self) -> u64 {
        self.submitted.saturating_sub(
            self.finished
                .saturating_add(self.failed)
                .saturating_add(self.handed_back),
        )
    }
}

/// The scheduling state of one node.
pub struct Scheduler {
    /// The node's configuration.
    pub(super) config: NodeConfig,
    /// The node's id (random: unique beyond this process).
    pub(super) node_id: String,
    /// The node's object store.
    pub(super) objects: Arc<ObjectStore>,
    /// Resources and the queue of tasks waiting for them.
    pub(super) pool: ResourcePool,
    /// Every task's state, times and error.
    pub(super) tasks: TaskTable,
    /// Live and recently dead actors (their mailboxes).
    pub(super) actors: ActorTable,
    /// The node's view of the function table: deployed components' rows
    /// by content hash (what submissions are checked against). Read on
    /// every submission, written on deploy.
    pub(super) functions: RwLock<Functions>,
    pub(super) stats: Stats,
    /// Forwarded tasks' calls on actors living elsewhere, awaited before
    /// each counts as finished.
    pub(super) calls_out: crate::calls_out::CallsOut,
    /// Cancelled when the node shuts down: every running guest call stops.
    pub(super) shutdown: CancelToken,
    /// When workers are pinned to the cores of their CPU units (the node
    /// has fewer CPUs than the machine): every core the process may use.
    pub(super) pin: Option<Vec<u32>>,
    /// Where started work goes, and the actor directory's keeper: given
    /// at construction.
    outlets: Outlets,
    /// The other nodes of its cluster, from the moment the node joins one
    /// ([`Scheduler::join_cluster`]; a node joins at most once). Owned:
    /// the cluster's side holds this scheduler weakly.
    remote: OnceLock<Arc<dyn Remote>>,
}

/// The layers above the scheduler that it hands work to, given to
/// [`Scheduler::new`]: the node builds them around the scheduler in one
/// step (`Arc::new_cyclic`), so the scheduler is never without them.
/// Weak: the node owns them, and they hold the scheduler.
pub struct Outlets {
    /// Where started work goes (the node's executor).
    pub executor: Weak<dyn Executor>,
    /// The actor directory's keeper (named actors).
    pub names: Weak<dyn ActorNames>,
}

#[cfg(test)]
impl Outlets {
    /// Outlets that lead nowhere: a scheduler alone, for tests that start
    /// nothing.
    pub fn none() -> Self {
        Self {
            executor: Weak::<Nowhere>::new(),
            names: Weak::<Nowhere>::new(),
        }
    }
}

/// What [`Outlets::none`] points at (never reached: its `Weak`s are empty).
#[cfg(test)]
struct Nowhere;

#[cfg(test)]
impl Executor for Nowhere {
    fn run_function(
        &self,
        _: Arc<crate::PendingTask>,
        _: crate::resources::Allocation,
        _: Option<tokio::runtime::Handle>,
    ) {
    }
    fn run_actor(&self, _: Arc<Actor>, _: Arc<crate::PendingTask>, _: Option<TaskError>) {}
    fn drop_actor(&self, _: ActorId) {}
    fn end_job(&self, _: JobId) {}
    fn forget_components(&self, _: &[Arc<str>]) {}
}

#[cfg(test)]
impl ActorNames for Nowhere {
    fn released(&self, _: &str, _: ActorId) {}
    fn moved(&self, _: &str, _: ActorId, _: &str) {}
}

impl Scheduler {
    /// A scheduler for a node with `config`, `objects` and `pool`, handing
    /// its work to `outlets`.
    pub fn new(
        config: NodeConfig,
        node_id: String,
        objects: Arc<ObjectStore>,
        pool: ResourcePool,
        pin: Option<Vec<u32>>,
        outlets: Outlets,
    ) -> Self {
        let limits = ComponentLimits::of(&config);
        Self {
            calls_out: crate::calls_out::CallsOut::new(objects.clone()),
            config,
            node_id,
            objects,
            pool,
            tasks: TaskTable::default(),
            actors: ActorTable::default(),
            functions: RwLock::new(Functions::new(limits)),
            stats: Stats::default(),
            shutdown: CancelToken::new(),
            pin,
            outlets,
            remote: OnceLock::new(),
        }
    }

    /// The node joined a cluster: tasks may be placed on `remote`'s nodes
    /// from now on, and actor stubs, forwarded tasks and job ends go
    /// through it. False when the node was in a cluster already (a node
    /// joins at most once).
    pub fn join_cluster(&self, remote: Arc<dyn Remote>) -> bool {
        self.remote.set(remote).is_ok()
    }

    /// The cluster's other nodes, when the node joined a cluster.
    pub fn remote(&self) -> Option<&Arc<dyn Remote>> {
        self.remote.get()
    }

    /// The keeper of actor names, while the node lives.
    pub fn names(&self) -> Option<Arc<dyn ActorNames>> {
        self.outlets.names.upgrade()
    }

    /// The executor, while the node lives.
    pub fn executor(&self) -> Option<Arc<dyn Executor>> {
        self.outlets.executor.upgrade()
    }

    /// Kills `actor` with `cause`: its running call is stopped, its
    /// instance dropped, and its resources given back to the node. False
    /// when it was dead already.
    pub fn actor_died(self: &Arc<Self>, actor: &Actor, cause: TaskError) -> bool {
        let Some(allocation) = actor.mark_dead(cause) else {
            return false;
        };
        self.tear_down(actor, allocation, false);
        true
    }

    /// Notes that the last handle of actor `id` is gone: it exits now if
    /// idle, else after its last queued call.
    pub(crate) fn actor_released(self: &Arc<Self>, id: ActorId) {
        if let Some(actor) = self.actors.get(&id) {
            actor.release();
            self.exit_if_released(&actor);
        }
    }

    /// Ends `actor` if its last handle is gone and it is idle (see
    /// `Mailbox::exit_if_released`): later calls, made through a copied
    /// id, fail with `actor-died` saying why.
    pub fn exit_if_released(self: &Arc<Self>, actor: &Actor) {
        let cause = || {
            TaskError::new(
                ErrorKind::ActorDied,
                format!("{}.exit", actor.class),
                actor.id,
                "exited: its last handle was dropped (create it with \
                 Options::new().detached() to keep it)",
            )
        };
        if let Some(allocation) = actor.exit_if_released(cause) {
            self.tear_down(actor, allocation, true);
        }
    }

    /// Connects the object store's free hook: the handle object of an
    /// actor freed releases the actor (see
    /// [`actor_handle_object`](crate::proto::actor_handle_object)).
    pub fn watch_actor_handles(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        self.objects.set_free_hook(Box::new(move |id| {
            if let Some(sched) = weak.upgrade() {
                if crate::proto::actor_handle_object(id.task) == id {
                    sched.actor_released(id.task);
                }
            }
        }));
    }

    /// Drops a dead actor's instance and gives its resources back
    /// (`released`: it exited as its last handle went).
    fn tear_down(
        self: &Arc<Self>,
        actor: &Actor,
        allocation: Option<crate::resources::Allocation>,
        released: bool,
    ) {
        // Outside the actor's lock: tearing the instance down seals the
        // objects it left unsealed, and their waiters may call back into
        // this actor.
        if let Some(executor) = self.executor() {
            executor.drop_actor(actor.id);
        }
        // Its name goes with it where it lived.
        if let (Some(name), Some(names), None) = (actor.name.get(), self.names(), &actor.home) {
            names.released(name, actor.id);
        }
        // A stub of an actor living elsewhere: its owner's kill takes the
        // actor along; otherwise this node lets go of it there (it exits
        // once no node holds it).
        if let (Some(home), Some(remote)) = (&actor.home, self.remote()) {
            remote.actor_gone(actor.id);
            if !released && actor.owned_here() {
                let why = actor.dead().map(|c| c.message).unwrap_or_default();
                remote.kill_actor(&home.node(), actor.id, why);
                // The owner named it (its node does not know the name):
                // dead for good, it frees the name here (only if this
                // actor still holds it).
                if let (Some(name), Some(names)) = (actor.name.get(), self.names()) {
                    names.released(name, actor.id);
                }
            } else {
                remote.let_go_actor(&home.node(), actor.id);
            }
        }
        self.actors.died(actor.id);
        if let Some(a) = allocation {
            self.release_resources(&a);
        }
        self.sweep_components();
    }

    /// Starts the head of `actor`'s queue on the executor if it is ready
    /// and nothing of the actor is running.
    /// An actor living on another node (a stub, see `actor::Home`) has
    /// its calls sent there by the cluster.
    pub fn run_actor_next(self: &Arc<Self>, actor: &Arc<Actor>) {
        if let Some((task, dead)) = actor.take_next() {
            if actor.home.is_some() {
                match self.remote() {
                    Some(remote) => remote.run_actor(actor.clone(), task, dead),
                    None => actor.abandon(),
                }
                return;
            }
            match self.executor() {
                Some(executor) => executor.run_actor(actor.clone(), task, dead),
                None => actor.abandon(),
            }
        }
    }

    /// Pins the calling thread, when `thread` says it is a pool's worker, to
    /// `allocation`'s cores when the node pins (it has fewer CPUs than the
    /// machine); all allowed cores for a task without CPUs. Any other
    /// thread (a tokio runtime's, running a task submitted with
    /// `TaskOptions::on_caller_runtime`; a driver's) is left as it is: it
    /// serves more than this task.
    pub fn pin_worker(
        &self,
        thread: &crate::worker_pool::WaitingThread,
        allocation: &crate::resources::Allocation,
    ) {
        if thread.worker().is_none() {
            return;
        }
        if let Some(allowed) = &self.pin {
            let cores: Vec<u32> = allocation.cpu.iter().map(|g| g.id).collect();
            crate::resources::pin::pin_current_thread(&cores, allowed);
        }
    }

    /// The function-table row of component `hash`, if loaded here.
    pub fn component(&self, hash: &str) -> Option<Arc<ComponentRecord>> {
        self.functions
            .read()
            .by_hash(hash)
            .map(|v| v.record.clone())
    }

    /// The loaded version with content hash `hash`.
    pub fn version(&self, hash: &str) -> Option<Arc<Version>> {
        self.functions.read().by_hash(hash).cloned()
    }

    /// A use of the version with content hash `hash` (it stays loaded
    /// while the use lives), if loaded.
    pub fn pin_component(&self, hash: &str) -> Option<InUse> {
        self.functions.read().pin(hash)
    }

    /// What the node holds of deployed components, and its bounds.
    pub fn component_usage(&self) -> ComponentUsage {
        self.functions.read().usage()
    }

    /// Checks that a new row `record` of a version of `size` bytes, whose
    /// code takes `compiled` bytes (0 before it is compiled), would fit
    /// the node's bounds now.
    ///
    /// # Errors
    /// The [`DeployLimit`] it would meet.
    pub fn check_component(
        &self,
        record: &ComponentRecord,
        compiled: u64,
    ) -> Result<(), DeployLimit> {
        self.sweep_components();
        self.functions.read().check(record, record.size, compiled)
    }

    /// Records `record` as the current row of its name, with `fresh` as its
    /// version unless its hash is loaded already (see `Functions::insert`).
    ///
    /// # Errors
    /// The [`DeployLimit`] it met; nothing changed then.
    pub fn insert_component(
        &self,
        record: Arc<ComponentRecord>,
        fresh: Version,
    ) -> Result<(), DeployLimit> {
        let mut functions = self.functions.write();
        let mut forgotten = functions.sweep();
        let inserted = functions.insert(record, fresh);
        drop(functions);
        match inserted {
            Ok(more) => forgotten.extend(more),
            Err(e) => {
                self.forget(forgotten);
                return Err(e);
            }
        }
        self.forget(forgotten);
        Ok(())
    }

    /// Loads version `fresh` by its hash only, for a call naming a kept
    /// version (see `Functions::insert_version`): a use of it.
    ///
    /// # Errors
    /// The [`DeployLimit`] it met; nothing changed then.
    pub fn add_version(&self, fresh: Version) -> Result<InUse, DeployLimit> {
        self.sweep_components();
        self.functions.write().insert_version(fresh)
    }

    /// Forgets the name `name` (see `Functions::remove_named`).
    pub fn undeploy(&self, name: &str) -> Option<Arc<ComponentRecord>> {
        let (current, forgotten) = self.functions.write().remove_named(name);
        self.forget(forgotten);
        current
    }

    /// Takes back row `record`, which the function table refused (see
    /// `Functions::take_back`).
    pub fn take_back_component(&self, record: &Arc<ComponentRecord>) {
        let forgotten = self.functions.write().take_back(record);
        self.forget(forgotten);
    }

    /// Forgets the retired versions nothing uses any more.
    pub(crate) fn sweep_components(&self) {
        if !self.functions.read().has_retired() {
            return;
        }
        let forgotten = self.functions.write().sweep();
        self.forget(forgotten);
    }

    /// Drops `forgotten` versions outside the lock, after the executor
    /// has dropped whatever it keeps of them (idle reusable instances).
    fn forget(&self, forgotten: Vec<Arc<Version>>) {
        if forgotten.is_empty() {
            return;
        }
        if let Some(executor) = self.executor() {
            let hashes: Vec<Arc<str>> = forgotten.iter().map(|v| v.hash.clone()).collect();
            executor.forget_components(&hashes);
        }
        for v in &forgotten {
            tracing::debug!(
                component = %v.record.name,
                hash = %v.hash,
                "forgotten: no name names it and nothing uses it ({} bytes of compiled code given back)",
                v.compiled
            );
        }
        drop(forgotten);
    }

    /// The row of every name deployed on this node.
    pub fn named_components(&self) -> Vec<Arc<ComponentRecord>> {
        self.functions.read().named().cloned().collect()
    }

    /// The component deployed on this node as `name`, if any (no control
    /// plane round trip).
    pub fn deployed(&self, name: &str) -> Option<Arc<ComponentRecord>> {
        self.functions.read().current(name).cloned()
    }

    /// The node's task counters now.
    pub fn stats(&self) -> StatsSnapshot {
        StatsSnapshot {
            submitted: self.stats.submitted.load(Ordering::Relaxed),
            finished: self.stats.finished.load(Ordering::Relaxed),
            failed: self.stats.failed.load(Ordering::Relaxed),
            handed_back: self.stats.handed_back.load(Ordering::Relaxed),
        }
    }

    /// Ends job `job` (its driver returned), as Ray does when a driver
    /// exits: its unfinished tasks are cancelled, its actors killed, its
    /// reusable instances dropped, and every object it made freed (see
    /// `ObjectStore::end_job`), so that nothing a job
    /// made, reference cycles included, outlives it.
    pub fn end_job(self: &Arc<Self>, job: JobId) {
        // Detached actors outlive their job (Ray's `lifetime="detached"`):
        // their constructors run on, and so do their running calls (a
        // call is cancelled without force; the other actors die below).
        let actors = self.actors.of_job(job);
        let detached: Vec<ActorId> = actors.iter().filter(|a| a.detached).map(|a| a.id).collect();
        for task in self.tasks.unfinished_of_job(job) {
            if !detached.contains(&task) {
                self.cancel(task, false, false);
            }
        }
        for actor in actors.into_iter().filter(|a| !a.detached) {
            let cause = TaskError::new(
                ErrorKind::ActorDied,
                format!("{}.kill", actor.class),
                actor.id,
                "its job ended",
            );
            if self.actor_died(&actor, cause) {
                self.run_actor_next(&actor);
            }
        }
        if let Some(executor) = self.executor() {
            executor.end_job(job);
        }
        self.objects.end_job(job);
        self.sweep_components();
        // And on the nodes its tasks were sent to.
        if let Some(remote) = self.remote() {
            remote.job_ended(job);
        }
    }
}
