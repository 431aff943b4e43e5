//! [`Node`]: one wray node (workers, scheduler, object store) embedded in
//! this process, with the embedded control plane by default.

mod cluster;
mod components;
pub mod driver;
pub(crate) mod names;
pub mod services;
pub mod state;
pub mod timeline;
mod versions;
mod watch;

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use wray_control_plane::{
    ActorId, EmbeddedFunctionTable, EmbeddedJobTable, FunctionTable, JobId, TableLimits,
};

use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::error::{Error, Result};
use crate::executor::compile::CompilePool;
use crate::executor::component;
use crate::executor::engine::{build_engine, EpochTicker};
use crate::executor::instantiation::InstantiationHistogram;
use crate::executor::{Handle, WasmExecutor};
use crate::node::driver::DriverOutcome;
use crate::node::names::Names;
use crate::node::services::NodeServices;
use crate::objects::arena::{Arena, ArenaError};
use crate::objects::data::Budget;
use crate::objects::{default_spill_limit, ObjectStore, StoreLimits};
use crate::resources::{node_gpus, pin, GpuInfo, NodeResources, Quantity, ResourceTotals};
use crate::scheduler::core::Outlets;
use crate::scheduler::queue::ResourcePool;
use crate::scheduler::task_table::TaskStatus;
use crate::scheduler::{Scheduler, StatsSnapshot};
use crate::worker_pool::WorkerPool;

/// A running node.
///
/// ```no_run
/// use wray_host::{Node, NodeConfig};
/// let node = Node::start(NodeConfig::default())?;
/// let app = node.deploy_file_blocking("target/wasm/wordcount.wasm")?;
/// let outcome = node.run_main_blocking(&app.name, &["/data".to_string()])?;
/// assert!(outcome.result.is_ok());
/// # Ok::<(), wray_host::Error>(())
/// ```
pub struct Node {
    pub(crate) sched: Arc<Scheduler>,
    pub(crate) exec: Arc<WasmExecutor>,
    /// The executor as the scheduler sees it (the scheduler holds it
    /// weakly; this keeps it).
    _handle: Arc<Handle>,
    /// The node's GPUs.
    gpus: Vec<GpuInfo>,
    table: Arc<dyn FunctionTable>,
    /// Where job ids come from: in this process, so a job's start and end
    /// wait for nothing (a remote node learns of a job through its tasks).
    jobs: EmbeddedJobTable,
    /// The node's own I/O runtime, which drives timers and WASI I/O of
    /// running tasks (see [`WasmExecutor::block_on`]) and the
    /// control-plane calls of the node's blocking methods ([`Node::wait`]);
    /// dropped last. `None` when the node runs on its caller's runtime
    /// ([`Node::with_function_table_on`]).
    io: Option<tokio::runtime::Runtime>,
    /// Advances the epoch (time limits); stopped only once no task runs.
    ticker: Option<EpochTicker>,
    /// Held while a deploy, rollback or undeploy is recorded here and
    /// written to the function table, and while the table's watch reads a
    /// name's current version and records it here, so that the node and
    /// the table agree on what a name means when these race (a watch
    /// event read late never undoes a later change made here).
    commits: Arc<tokio::sync::Mutex<()>>,
    /// Its named actors (the actor directory's side of them; the
    /// scheduler holds them weakly).
    pub(crate) names: Arc<Names>,
    /// What answers the HTTP requests other nodes relay here, once the
    /// node's HTTP API serves ([`Node::serve_relayed`]).
    relay: crate::cluster::RelaySlot,
    /// The cluster it joined, if any ([`Node::join_cluster`]).
    pub(crate) cluster: std::sync::OnceLock<Arc<crate::cluster::Cluster>>,
    /// When it started (ms since the Unix epoch).
    started_ms: u64,
    /// Jobs' working directories kept here.
    pub(crate) working_dirs: Arc<crate::working_dir::WorkingDirs>,
}

/// Stops a node from another thread (a signal handler, say): every running
/// guest call, the driver's included, ends with a `cancelled` error, and no
/// task starts any more. The node itself is shut down when it is dropped.
#[derive(Clone, Debug)]
pub struct StopHandle(CancelToken);

impl StopHandle {
    /// Stops the node's work now (idempotent).
    pub fn stop(&self) {
        self.0.cancel();
    }
}

/// The largest component file a node loads (1 GiB).
pub const MAX_COMPONENT_BYTES: u64 = 1 << 30;

/// How long [`Node::shutdown`] waits for running tasks to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

impl Node {
    /// Starts a node with the embedded (in-process) function table.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a bad configuration, [`Error::Engine`]
    /// when wasmtime cannot be set up.
    pub fn start(config: NodeConfig) -> Result<Arc<Self>> {
        let table = embedded_table(&config);
        Self::with_function_table(config, table)
    }

    /// [`Node::start`], the node's I/O on `io` (see
    /// [`Node::with_function_table_on`]).
    ///
    /// # Errors
    /// As [`Node::with_function_table_on`].
    pub fn start_on(config: NodeConfig, io: tokio::runtime::Handle) -> Result<Arc<Self>> {
        let table = embedded_table(&config);
        Self::with_function_table_on(config, table, io)
    }

    /// Starts a node that deploys into `table`, its I/O on a runtime of
    /// its own (`wray-io`, one thread), shut down when the node is
    /// dropped.
    ///
    /// # Errors
    /// As [`Node::start`].
    pub fn with_function_table(
        config: NodeConfig,
        table: Arc<dyn FunctionTable>,
    ) -> Result<Arc<Self>> {
        config.validate()?;
        let io = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("wray-io")
            .enable_all()
            .build()
            .map_err(|e| Error::Engine(format!("cannot start the I/O runtime: {e}")))?;
        let handle = io.handle().clone();
        Self::assemble(config, table, handle, Some(io))
    }

    /// Starts a node that deploys into `table` and does its I/O (guests'
    /// timers and WASI I/O, the function table's watch, jobs' timers, the
    /// actor directory's calls) as tasks of `io`, a multi-threaded runtime
    /// of its caller's: `wray start` runs its HTTP API, its cluster and the
    /// node on one runtime. The caller keeps `io` running until the node
    /// is shut down ([`Node::shutdown`]): a guest's sleep needs it while
    /// the guest runs.
    ///
    /// # Errors
    /// As [`Node::start`]; [`Error::InvalidConfig`] when `io` is a
    /// current-thread runtime (it runs tasks only while its owner blocks
    /// on it: a guest's sleep on a worker thread could wait forever).
    pub fn with_function_table_on(
        config: NodeConfig,
        table: Arc<dyn FunctionTable>,
        io: tokio::runtime::Handle,
    ) -> Result<Arc<Self>> {
        config.validate()?;
        if io.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
            return Err(Error::InvalidConfig(
                "a node's I/O runtime must be multi-threaded: a current-thread runtime runs \
                 guests' timers only while its owner blocks on it"
                    .into(),
            ));
        }
        Self::assemble(config, table, io, None)
    }

    /// The node over a checked `config`, its I/O on `io` (`own`: the
    /// runtime behind it, when it is the node's to shut down).
    fn assemble(
        config: NodeConfig,
        table: Arc<dyn FunctionTable>,
        io: tokio::runtime::Handle,
        own: Option<tokio::runtime::Runtime>,
    ) -> Result<Arc<Self>> {
        let engine = build_engine(&config)?;
        let linker = component::linker(&engine)?;
        let ticker = EpochTicker::start(engine.clone())?;
        let objects = object_store(&config)?;
        let worker_cpus = config.num_cpus;
        let (cpu_ids, pin) = pin::node_cpus(config.num_cpus);
        let gpus = node_gpus(&*config.gpu_discovery.0, config.num_gpus);
        let store_bytes = config.object_store_memory.unwrap_or(0);
        let totals = ResourceTotals {
            cpu_ids,
            gpus,
            memory: config
                .memory
                .unwrap_or_else(|| crate::config::total_memory().saturating_sub(store_bytes)),
            custom: config
                .resources
                .iter()
                .map(|(n, q)| {
                    Ok((
                        n.clone(),
                        Quantity::from_f64(*q, n).map_err(Error::InvalidConfig)?,
                    ))
                })
                .collect::<Result<_>>()?,
        };
        if totals.gpus.is_empty() && config.num_gpus.is_none() {
            tracing::debug!("node has no GPUs");
        }
        let working_dirs = crate::working_dir::WorkingDirs::new(
            config.working_dir_cache.clone(),
            config.max_working_dir_bytes,
            config.working_dir_cache_bytes,
        )
        .map_err(|e| Error::InvalidConfig(e.to_string()))?;
        let windows = crate::bounds::max_map_count() / crate::bounds::WINDOWS_SHARE_OF_MAP_COUNT;
        // The scheduler is built with the layers it hands work to, which
        // hold it: the executor (through `Handle`) and the actor names'
        // keeper, each given to it weakly (the node owns them).
        let mut built = None;
        let handle = Arc::new_cyclic(|handle: &Weak<Handle>| {
            let names = Arc::new_cyclic(|names: &Weak<Names>| {
                let sched = Arc::new(Scheduler::new(
                    config,
                    crate::node::random_node_id(),
                    Arc::new(objects),
                    ResourcePool::new(NodeResources::new(&totals)),
                    pin.then(pin::allowed_cpus),
                    Outlets {
                        executor: handle.clone(),
                        names: names.clone(),
                    },
                ));
                Names::new(sched, io.clone())
            });
            let sched = names.sched().clone();
            let services: Arc<dyn crate::executor::services::Services> = Arc::new(NodeServices {
                sched: sched.clone(),
                names: names.clone(),
            });
            let compile_slots = sched.config().compile_slots();
            let guest_memory =
                usize::try_from(sched.config().guest_memory_budget()).unwrap_or(usize::MAX);
            let exec = Arc::new(WasmExecutor {
                engine,
                linker,
                reusable: Default::default(),
                instances: Mutex::new(Default::default()),
                windows: Budget::new(windows),
                guest_memory: Budget::new(guest_memory),
                sched: sched.clone(),
                services,
                io: io.clone(),
                workers: WorkerPool::new(worker_cpus, crate::bounds::MAX_BLOCKED_WORKERS),
                job_logs: Default::default(),
                job_envs: Default::default(),
                instantiations: Default::default(),
                compiles: CompilePool::new(compile_slots),
            });
            built = Some((sched, names, exec.clone()));
            Handle(exec)
        });
        let Some((sched, names, exec)) = built else {
            return Err(Error::Engine("the node's layers were not built".into()));
        };
        sched.watch_actor_handles();
        let node = Self {
            sched,
            exec,
            _handle: handle,
            gpus: totals.gpus,
            table,
            jobs: EmbeddedJobTable::new(),
            io: own,
            ticker: Some(ticker),
            commits: Arc::new(tokio::sync::Mutex::new(())),
            names,
            relay: Default::default(),
            cluster: Default::default(),
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            working_dirs,
        };
        watch::follow_function_table(&io, &node.table, &node.exec, &node.sched, &node.commits);
        Ok(Arc::new(node))
    }

    /// Where the function table lives (`embedded`, or `etcd at ..`) and
    /// whether it answers now (for `/healthz` and `wray status`): `Err`
    /// is the control plane's error (`Unavailable`, naming the backend and
    /// why).
    pub async fn control_plane_health(
        &self,
    ) -> (String, std::result::Result<(), wray_control_plane::Error>) {
        let health = self.table.health().await;
        (self.table.backend(), health)
    }

    /// A handle that stops this node's work from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.sched.shutdown().clone())
    }

    /// Shuts the node down in order: every running guest call is stopped
    /// (within one epoch tick), queued tasks are abandoned, the worker
    /// threads are waited for (up to [`SHUTDOWN_GRACE`]), then actors and
    /// cached instances are dropped. Idempotent; [`Drop`] calls it. Returns
    /// how many worker threads were still running after the grace period
    /// (0 unless a host call would not stop).
    pub fn shutdown(&self) -> usize {
        self.sched.shutdown().cancel();
        let left = self.exec.workers.close(SHUTDOWN_GRACE);
        if left > 0 {
            tracing::error!(
                "{left} worker threads still running after {} s",
                SHUTDOWN_GRACE.as_secs()
            );
        }
        drop(self.sched.actors().drain());
        let instances = std::mem::take(&mut *self.exec.instances.lock());
        drop(instances);
        drop(self.exec.reusable.clear());
        left
    }

    /// Keeps a job's working-directory package (`POST /v1/packages`):
    /// checked, unpacked, kept once by its id; what is kept of it, and
    /// whether it was kept now (not before). Hashed and unpacked on a
    /// blocking thread.
    ///
    /// # Errors
    /// As [`WorkingDirs::store`](crate::working_dir::WorkingDirs::store).
    pub async fn store_package(
        &self,
        bytes: bytes::Bytes,
    ) -> std::result::Result<
        (crate::working_dir::KeptPackage, bool),
        crate::working_dir::WorkingDirError,
    > {
        let dirs = self.working_dirs.clone();
        self.exec
            .io
            .spawn_blocking(move || dirs.store(&bytes))
            .await
            .unwrap_or_else(|e| {
                Err(crate::working_dir::WorkingDirError::Io(format!(
                    "storing a package: {e}"
                )))
            })
    }

    /// Package `id`, if kept here.
    pub fn package(
        &self,
        id: crate::working_dir::PackageId,
    ) -> Option<crate::working_dir::KeptPackage> {
        self.working_dirs.info(id)
    }

    /// This node's id.
    pub fn id(&self) -> &str {
        self.sched.node_id()
    }

    /// When the node started, in milliseconds since the Unix epoch.
    pub fn started_ms(&self) -> u64 {
        self.started_ms
    }

    /// The configuration the node runs with.
    pub fn config(&self) -> &NodeConfig {
        self.sched.config()
    }

    /// Number of CPUs.
    pub fn num_cpus(&self) -> usize {
        self.config().num_cpus
    }

    /// Counts of the worker threads: now, at the peak, blocked, and their
    /// bound (see [`crate::worker_pool`]).
    pub fn worker_threads(&self) -> crate::worker_pool::PoolStats {
        self.exec.workers.stats()
    }

    /// Runs `main(args)` of deployed component `name` as the driver of a
    /// new job, on the calling thread, and returns how it ended. When `main`
    /// returns, the job ends (as in Ray when a driver exits): tasks it left
    /// unfinished are cancelled, its actors killed and its objects freed.
    /// `main` runs under the node's `driver_timeout`, and stops early when
    /// the node is stopped ([`Node::stop_handle`]).
    ///
    /// # Errors
    /// [`Error::NotDeployed`], [`Error::NoMain`], or a control-plane error.
    pub fn run_main_blocking(&self, name: &str, args: &[String]) -> Result<DriverOutcome> {
        let prepared = self.prepare_job(name, None, CancelToken::new(), Default::default())?;
        Ok(self.run_prepared(prepared, args, || {}))
    }

    /// A new job's id, from the node's job table (at once: it is in this
    /// process).
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the job table is full.
    pub(crate) fn start_job(&self, driver: &str) -> Result<JobId> {
        Ok(self.jobs.start(driver)?)
    }

    /// Ends job `job` here (its tasks cancelled, actors killed, objects
    /// freed) and in the job table.
    pub(crate) fn end_job(&self, job: JobId) {
        self.sched.end_job(job);
        self.jobs.end(job);
    }

    /// Drives `future` to its end for a synchronous caller (the CLI, a
    /// program embedding the node, a job's thread): the calling thread
    /// blocks on the node's I/O runtime. The one way the node's blocking
    /// methods wait; `call` names the method, for the error.
    ///
    /// # Errors
    /// [`Error::BlockingInRuntime`] when called from inside a tokio
    /// runtime (of any flavour): the thread serves other tasks, and must
    /// await the method's async form instead. Never `block_in_place`.
    pub(crate) fn wait<F: std::future::Future>(
        &self,
        call: &'static str,
        future: F,
    ) -> Result<F::Output> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::BlockingInRuntime(call));
        }
        Ok(self.exec.io.block_on(future))
    }

    /// The path of the shared-memory object store's file, if any.
    pub fn object_store_path(&self) -> Option<std::path::PathBuf> {
        self.sched.objects().arena().map(|a| a.path().to_path_buf())
    }

    /// A closure listing the store's first `limit` objects by id, and how
    /// many it holds in all (for publishers on another thread: what one
    /// listing costs stays bounded however many objects there are);
    /// nothing once the node is gone.
    pub fn objects_source(
        &self,
        limit: usize,
    ) -> impl Fn() -> (Vec<wray_api::ObjectInfo>, usize) + Send + 'static {
        let objects = Arc::downgrade(self.sched.objects());
        let me = self.id().to_owned();
        move || {
            objects
                .upgrade()
                .map(|o| {
                    let page = o.list_page(None, limit);
                    let listed = page.iter().map(|r| state::object_info(r, &me));
                    (listed.collect(), o.stats().objects)
                })
                .unwrap_or_default()
        }
    }

    /// At most `limit` objects of the store for which `keep(created_ns,
    /// id)` holds, the newest first (`newest`) or the oldest, by the time
    /// the store took them in (see
    /// [`ObjectStore::list_by_time`](crate::objects::ObjectStore::list_by_time)).
    pub fn objects_by_time(
        &self,
        newest: bool,
        keep: &dyn Fn(u64, &wray_control_plane::ObjectId) -> bool,
        limit: usize,
    ) -> Vec<wray_api::ObjectInfo> {
        let rows = self.sched.objects().list_by_time(newest, keep, limit);
        let me = self.id();
        rows.iter().map(|r| state::object_info(r, me)).collect()
    }

    /// Tasks by state, exact: pending and running now, finished since the
    /// node started.
    pub fn task_counts(&self) -> std::collections::BTreeMap<TaskStatus, u64> {
        self.sched.tasks().counts()
    }

    /// Tasks running on the node now (blocked in `get`/`wait` included).
    pub fn running_tasks(&self) -> u64 {
        self.sched.tasks().running()
    }

    /// How long the node's instantiations took since it started (tasks,
    /// actors, drivers, `describe` at deploy; reused instances are not
    /// made again): a histogram, and the failed ones counted apart (see
    /// [`crate::executor::instantiation`]). Lock-free: cheap per scrape.
    pub fn instantiation_histogram(&self) -> InstantiationHistogram {
        self.exec.instantiations.snapshot()
    }

    /// Task counters so far.
    pub fn stats(&self) -> StatsSnapshot {
        self.sched.stats()
    }

    /// A cheap closure that reads the task counters (for progress displays
    /// on another thread).
    pub fn stats_source(&self) -> impl Fn() -> StatsSnapshot + Send + 'static {
        let sched = Arc::downgrade(&self.sched);
        move || sched.upgrade().map(|s| s.stats()).unwrap_or_default()
    }

    /// (free CPUs, tasks ready and waiting for resources) now.
    pub fn cpu_snapshot(&self) -> (f64, usize) {
        let (_, free) = self.sched.resources();
        (
            free.get(crate::resources::CPU).copied().unwrap_or(0.0),
            self.sched.queued(),
        )
    }

    /// Resources in all, by name (Ray's `ray.cluster_resources()`): `CPU`,
    /// `GPU`, `memory` (bytes) and custom ones.
    pub fn cluster_resources(&self) -> std::collections::BTreeMap<String, f64> {
        self.sched.resources().0
    }

    /// Resources free now (Ray's `ray.available_resources()`).
    pub fn available_resources(&self) -> std::collections::BTreeMap<String, f64> {
        self.sched.free_resources()
    }

    /// Every task the node knows, oldest first (Ray's `list_tasks()`; the
    /// last [`MAX_FINISHED_TASKS`](crate::bounds::MAX_FINISHED_TASKS)
    /// finished ones are kept).
    pub fn tasks(&self) -> Vec<wray_api::TaskInfo> {
        crate::node::state::tasks(self.sched.tasks(), self.id())
    }

    /// Up to `limit` actors the node speaks for (its instances, alive or
    /// recently dead, and the stubs it owns of actors whose node is not
    /// alive), by id after `after`, of job `job` only when given (Ray's
    /// `list_actors()`), as `GET /v1/actors` lists them (not yet marked
    /// `http`: the HTTP API knows which it created).
    pub fn actors(
        &self,
        after: Option<ActorId>,
        limit: usize,
        job: Option<JobId>,
    ) -> Vec<wray_api::ActorState> {
        let alive = |node: &str| self.node_alive(node);
        crate::node::state::actors(self.sched.actors(), self.id(), after, limit, job, &alive)
    }

    /// Learns the names the actor directory gives the actors living here
    /// that another node created and named, so that [`Node::actors`] lists
    /// them by name (a bounded look-up, at most 2 s; see
    /// `Names::learn_here`).
    pub async fn learn_actor_names(&self) {
        self.names.learn_here().await;
    }

    /// Kills actor `actor` of any job (an operator's kill: its running
    /// call stopped, its queued calls failing with `actor-died`, its
    /// instance killed where it lives); false when it is unknown here or
    /// dead already.
    pub fn kill_actor(&self, actor: ActorId, by: &str) -> bool {
        self.sched.kill_actor(actor, by)
    }

    /// Errors of failed tasks, oldest first (Ray's `error_info`).
    pub fn errors(&self) -> Vec<wray_api::ErrorInfo> {
        crate::node::state::errors(self.sched.tasks(), self.id())
    }

    /// The timeline of the node's last `limit` tasks (by submission) as
    /// Chrome trace JSON, in microseconds since the Unix epoch (see
    /// [`crate::node::timeline`]).
    pub fn timeline(&self, limit: usize) -> serde_json::Value {
        crate::node::timeline::chrome_trace(self.sched.tasks(), self.id(), limit)
    }

    /// A closure giving the node's status (nodes, resources total and
    /// free, task counts by state (exact), errors, and the pending and
    /// running tasks, at most `tasks_limit`, the most recent), for
    /// publishers on another thread; `None` once the node is gone. Its
    /// cost does not grow with the tasks that have finished.
    pub fn status_source(
        &self,
        tasks_limit: usize,
    ) -> impl Fn() -> Option<wray_api::StatusSnapshot> + Send + 'static {
        let sched = Arc::downgrade(&self.sched);
        let gpus: Vec<wray_api::GpuSummary> = self.gpus.iter().map(Into::into).collect();
        move || {
            sched
                .upgrade()
                .map(|sched| status_snapshot(&sched, &gpus, tasks_limit))
        }
    }

    /// A closure giving the finished tasks from number `from` on (numbered
    /// from 0 as they finish), at most `limit`, and the number after the
    /// last one given (see [`TaskTable::finished_since`]), for publishers on
    /// another thread; nothing once the node is gone.
    ///
    /// [`TaskTable::finished_since`]: crate::scheduler::task_table::TaskTable::finished_since
    pub fn finished_source(
        &self,
    ) -> impl Fn(u64, usize) -> (Vec<crate::scheduler::task_table::TaskRow>, u64) + Send + 'static
    {
        let sched = Arc::downgrade(&self.sched);
        move |from, limit| match sched.upgrade() {
            None => (Vec::new(), from),
            Some(sched) => sched.tasks().finished_since(from, limit),
        }
    }

    /// Writes the timeline as Chrome trace JSON to `out`, event by event
    /// (see [`crate::node::timeline`]); how many events it wrote.
    ///
    /// # Errors
    /// Writing to `out` failed.
    pub fn write_timeline(&self, out: impl std::io::Write) -> std::io::Result<usize> {
        let registry = self.sched.tasks();
        let now = registry.nanos(std::time::Instant::now());
        let origin_us = registry.epoch_unix_ns as f64 / 1e3;
        crate::node::timeline::write_chrome_trace(&registry.tasks(), self.id(), now, origin_us, out)
    }

    /// Bytes of the node's shared-memory object store (0 without one).
    pub fn object_store_capacity(&self) -> u64 {
        self.sched
            .objects()
            .arena()
            .map_or(0, |a| a.capacity() as u64)
    }

    /// Objects and bytes the object store holds now, and its peak.
    pub fn object_store_stats(&self) -> crate::objects::StoreStats {
        self.sched.objects().stats()
    }
}

/// A node's id: `node-` and 16 random hex digits (unique beyond this
/// process and machine, as Ray's random `NodeID`).
/// The embedded function table of a node of `config`: it keeps what the
/// node may hold, its names, versions and bytes (the node checks them
/// first; this bounds the table itself).
fn embedded_table(config: &NodeConfig) -> Arc<dyn FunctionTable> {
    Arc::new(EmbeddedFunctionTable::with_limits(TableLimits {
        names: config.max_components,
        versions: config.max_versions,
        bytes: config.max_component_bytes,
    }))
}

pub(crate) fn random_node_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy source: the clock and the pid, still unlikely to repeat.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64); // the low 64 bits: entropy, not a time
        bytes = (nanos ^ u64::from(std::process::id()).rotate_left(32)).to_le_bytes();
    }
    format!("node-{}", hex::encode(bytes))
}

fn status_snapshot(
    rt: &Scheduler,
    gpus: &[wray_api::GpuSummary],
    tasks_limit: usize,
) -> wray_api::StatusSnapshot {
    let node = state::own_node(rt, gpus.to_vec());
    let now = rt.tasks().nanos(std::time::Instant::now());
    let counts = rt.tasks().counts();
    wray_api::StatusSnapshot {
        time: crate::node::state::unix_now(),
        cluster_resources: node.resources.clone(),
        available_resources: node.resources_available.clone(),
        nodes: vec![node],
        task_counts: counts
            .into_iter()
            .map(|(s, n)| (s.as_str().to_string(), n))
            .collect(),
        tasks: rt
            .tasks()
            .live(tasks_limit)
            .into_iter()
            .map(|r| {
                let epoch = Some(rt.tasks().epoch_unix_ns);
                state::task_info(r, rt.node_id(), now, epoch)
            })
            .collect(),
        errors: state::errors(rt.tasks(), rt.node_id()),
        tasks_not_logged: 0,
    }
}

/// The node's object store: a shared-memory arena of the configured size
/// (refused when it does not fit the file system under it), spilling to
/// nameless files in the spill directory.
fn object_store(config: &NodeConfig) -> Result<ObjectStore> {
    let spill = config.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
    let Some(bytes) = config.object_store_memory else {
        let limits = StoreLimits::default();
        return Ok(ObjectStore::with_limits(None, Some(spill), limits));
    };
    // In range (validated): at most 16 TiB.
    let capacity = usize::try_from(bytes).unwrap_or(usize::MAX);
    let arena = Arena::create(&config.object_store_dir, capacity, config.huge_pages).map_err(
        |e| match e {
            ArenaError::NoRoom { .. } => Error::InvalidConfig(format!(
                "{e}: give a smaller --object-store-memory, or another --object-store-dir"
            )),
            e => Error::InvalidConfig(e.to_string()),
        },
    )?;
    // In range (validated): at most 16 TiB.
    arena.set_keep_freed(usize::try_from(config.object_store_keep_freed).unwrap_or(usize::MAX));
    let limits = StoreLimits {
        inline_bytes: capacity,
        spilled_objects: default_spill_limit(),
    };
    Ok(ObjectStore::with_limits(Some(arena), Some(spill), limits))
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shutdown();
        // Nothing runs guest code any more: the epoch may stop, and the I/O
        // runtime go: waiting for its threads, unless the node is dropped
        // inside an async context (where waiting is not allowed).
        drop(self.ticker.take());
        if let Some(io) = self.io.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                io.shutdown_background();
            } else {
                io.shutdown_timeout(Duration::from_secs(5));
            }
        }
    }
}
