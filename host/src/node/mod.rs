//! [`Node`]: one wray node (workers, scheduler, object store) embedded in
//! this process, with the embedded control plane by default.

pub mod driver;
pub mod services;
pub mod state;
pub mod timeline;
mod versions;
mod watch;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use wray_control_plane::{
    ComponentRecord, ComponentVersion, EmbeddedFunctionTable, EmbeddedJobTable, FunctionTable,
    JobId, JobTable, TableLimits,
};

use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::error::{DeployBound, DeployLimit, Error, Result};
use crate::executor::compile::{CompilePool, CompileStats};
use crate::executor::component::{self, LoadedComponent};
use crate::executor::engine::{build_engine, EpochTicker};
use crate::executor::instantiation::InstantiationHistogram;
use crate::executor::{Handle, WasmExecutor};
use crate::node::driver::DriverOutcome;
use crate::node::services::NodeServices;
use crate::objects::arena::{Arena, ArenaError};
use crate::objects::data::Budget;
use crate::objects::{default_spill_limit, ObjectStore, StoreLimits};
use crate::resources::{node_gpus, pin, GpuInfo, NodeResources, Quantity, ResourceTotals};
use crate::scheduler::functions::Version;
use crate::scheduler::queue::ResourcePool;
use crate::scheduler::task_table::TaskStatus;
use crate::scheduler::{Executor, Scheduler, StatsSnapshot};
use crate::worker_pool::WorkerPool;

/// A running node.
///
/// ```no_run
/// use wray_host::{Node, NodeConfig};
/// let node = Node::start(NodeConfig::default())?;
/// let app = node.deploy_file("target/wasm/wordcount.wasm")?;
/// let outcome = node.run_main(&app.name, &["/data".to_string()])?;
/// assert!(outcome.result.is_ok());
/// # Ok::<(), wray_host::Error>(())
/// ```
pub struct Node {
    pub(crate) sched: Arc<Scheduler>,
    pub(crate) exec: Arc<WasmExecutor>,
    /// The executor as the scheduler sees it (the scheduler holds it
    /// weakly; this keeps it).
    _handle: Arc<dyn Executor>,
    /// The node's GPUs.
    gpus: Vec<GpuInfo>,
    table: Arc<dyn FunctionTable>,
    /// Where job ids come from.
    jobs: Arc<dyn JobTable>,
    /// Runs control-plane calls (async: the cluster backend is remote).
    control: tokio::runtime::Runtime,
    /// Drives timers and WASI I/O of running tasks (see
    /// [`WasmExecutor::block_on`]); dropped last.
    io: Option<tokio::runtime::Runtime>,
    /// Advances the epoch (time limits); stopped only once no task runs.
    ticker: Option<EpochTicker>,
    /// Held while a deploy is recorded here and written to the function
    /// table, so that the node and the table agree on a name's newest
    /// version when deploys of it race.
    commits: tokio::sync::Mutex<()>,
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
    pub fn start(config: NodeConfig) -> Result<Self> {
        // The table keeps what the node may hold: its names, versions and
        // bytes (the node checks them first; this bounds the table itself).
        let table = EmbeddedFunctionTable::with_limits(TableLimits {
            names: config.max_components,
            versions: config.max_versions,
            bytes: config.max_component_bytes,
        });
        Self::with_function_table(config, Arc::new(table))
    }

    /// Starts a node that deploys into `table`.
    ///
    /// # Errors
    /// As [`Node::start`].
    pub fn with_function_table(config: NodeConfig, table: Arc<dyn FunctionTable>) -> Result<Self> {
        config.validate()?;
        let engine = build_engine(&config)?;
        let linker = component::linker(&engine)?;
        let control = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Engine(format!("cannot start the control-plane runtime: {e}")))?;
        let io = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("wray-io")
            .enable_all()
            .build()
            .map_err(|e| Error::Engine(format!("cannot start the I/O runtime: {e}")))?;
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
        let windows = crate::bounds::max_map_count() / crate::bounds::WINDOWS_SHARE_OF_MAP_COUNT;
        let sched = Arc::new(Scheduler::new(
            config,
            crate::node::random_node_id(),
            Arc::new(objects),
            ResourcePool::new(NodeResources::new(&totals)),
            pin.then(pin::allowed_cpus),
        ));
        let services: Arc<dyn crate::executor::services::Services> =
            Arc::new(NodeServices(sched.clone()));
        let compile_slots = sched.config.compile_slots();
        let guest_memory =
            usize::try_from(sched.config.guest_memory_budget()).unwrap_or(usize::MAX);
        let exec = Arc::new(WasmExecutor {
            engine,
            linker,
            reusable: Default::default(),
            instances: Mutex::new(Default::default()),
            windows: Budget::new(windows),
            guest_memory: Budget::new(guest_memory),
            sched: sched.clone(),
            services,
            io: io.handle().clone(),
            workers: WorkerPool::new(worker_cpus, crate::bounds::MAX_BLOCKED_WORKERS),
            job_logs: Default::default(),
            job_envs: Default::default(),
            instantiations: Default::default(),
            compiles: CompilePool::new(compile_slots),
        });
        let handle: Arc<dyn Executor> = Arc::new(Handle(exec.clone()));
        sched.connect(Arc::downgrade(&handle));
        sched.watch_actor_handles();
        let node = Self {
            sched,
            exec,
            _handle: handle,
            gpus: totals.gpus,
            table,
            jobs: Arc::new(EmbeddedJobTable::new()),
            control,
            io: Some(io),
            ticker: Some(ticker),
            commits: tokio::sync::Mutex::new(()),
        };
        if let Some(io) = &node.io {
            watch::follow_function_table(io, &node.table, &node.exec, &node.sched);
        }
        Ok(node)
    }

    /// Where the function table lives (`embedded`, or `etcd at ..`) and
    /// whether it answers now (for `/healthz` and `wray status`).
    pub fn control_plane_health(&self) -> (String, std::result::Result<(), String>) {
        let health = self
            .block_on(self.table.health())
            .map_err(|e| e.to_string());
        (self.table.backend(), health)
    }

    /// A handle that stops this node's work from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.sched.shutdown.clone())
    }

    /// Shuts the node down in order: every running guest call is stopped
    /// (within one epoch tick), queued tasks are abandoned, the worker
    /// threads are waited for (up to [`SHUTDOWN_GRACE`]), then actors and
    /// cached instances are dropped. Idempotent; [`Drop`] calls it. Returns
    /// how many worker threads were still running after the grace period
    /// (0 unless a host call would not stop).
    pub fn shutdown(&self) -> usize {
        self.sched.shutdown.cancel();
        let left = self.exec.workers.close(SHUTDOWN_GRACE);
        if left > 0 {
            tracing::error!(
                "{left} worker threads still running after {} s",
                SHUTDOWN_GRACE.as_secs()
            );
        }
        drop(self.sched.actors.drain());
        let instances = std::mem::take(&mut *self.exec.instances.lock());
        drop(instances);
        drop(self.exec.reusable.clear());
        left
    }

    /// This node's id.
    pub fn id(&self) -> &str {
        &self.sched.node_id
    }

    /// The configuration the node runs with.
    pub fn config(&self) -> &NodeConfig {
        &self.sched.config
    }

    /// Number of CPUs.
    pub fn num_cpus(&self) -> usize {
        self.sched.config.num_cpus
    }

    /// Counts of the worker threads: now, at the peak, blocked, and their
    /// bound (see [`crate::worker_pool`]).
    pub fn worker_threads(&self) -> crate::worker_pool::PoolStats {
        self.exec.workers.stats()
    }

    /// Compiles `bytes` (once per content hash), reads its exports, and
    /// deploys it into the function table as `name`. Blocks the calling
    /// thread (see [`Node::deploy_async`]).
    ///
    /// # Errors
    /// As [`Node::deploy_async`].
    pub fn deploy(&self, name: &str, bytes: &[u8]) -> Result<ComponentRecord> {
        Ok(self.deploy_version(name, bytes)?.record)
    }

    /// [`Node::deploy`], answering the version the function table gave it
    /// (1, 2, .. per name) and when.
    ///
    /// # Errors
    /// As [`Node::deploy_async`].
    pub fn deploy_version(&self, name: &str, bytes: &[u8]) -> Result<ComponentVersion> {
        self.wait(self.deploy_async(name, Arc::from(bytes)))
    }

    /// Deploys `bytes` as `name`, as the newest version of the name: checks
    /// the name and the node's bounds, checks the component cheaply (what
    /// it exports and imports, how much code), compiles it on the node's
    /// compile pool (never on the caller's thread: this future waits for
    /// it) within `compile_timeout`, describes it, records it here and
    /// writes it to the function table. The name's oldest versions past
    /// `max_versions` that no task or actor uses are dropped.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] for a bad name or when the function table
    /// refuses; [`Error::Component`] when the bytes are not a wray
    /// component (saying what they lack), have too much code or take too
    /// long to compile; [`Error::DeployLimit`] past a bound on what the
    /// node holds (names, versions, bytes, compiled code) or when every
    /// compile slot stayed busy.
    ///
    /// # Cancel safety
    /// Dropped before the compile ends, nothing is deployed (the compile
    /// runs to its end in its slot); once it is being recorded, it is
    /// recorded whole.
    pub async fn deploy_async(&self, name: &str, bytes: Arc<[u8]>) -> Result<ComponentVersion> {
        wray_control_plane::check_name(name)?;
        // The node's bounds, before anything is compiled (the compiled
        // code's size is checked once known).
        let probe = ComponentRecord {
            name: name.to_string(),
            hash: wray_control_plane::content_hash(&bytes),
            size: bytes.len() as u64,
            has_main: false,
            sdk: String::new(),
            functions: Vec::new(),
        };
        self.sched.check_component(&probe, 0)?;
        let loaded = component::load(&self.exec, name, bytes.clone()).await?;
        let _commit = self.commits.lock().await;
        let record = admit(&self.sched, &loaded)?;
        match self.block_on(self.table.deploy(loaded.record.clone(), bytes)) {
            Ok(version) => Ok(version),
            Err(e) => {
                self.sched.take_back_component(&record);
                Err(table_error(name, e))
            }
        }
    }

    /// What the node holds of deployed components (names, versions,
    /// bytes of component files and rows, compiled code) and its bounds.
    pub fn component_usage(&self) -> crate::scheduler::ComponentUsage {
        self.sched.component_usage()
    }

    /// Bytes of linear memory the node's instances hold now, and the
    /// node's budget of them (`--guest-memory`).
    pub fn guest_memory(&self) -> (u64, u64) {
        let budget = &self.exec.guest_memory;
        (budget.used() as u64, budget.limit() as u64)
    }

    /// Counters of the node's compiles: its slots, compiles started,
    /// running and at most at once, given up on past the time limit, and
    /// components refused before compiling.
    pub fn compile_stats(&self) -> CompileStats {
        self.exec.compiles.stats()
    }

    /// The component deployed on this node as `name` (its functions,
    /// schemas and declared resources), without a control-plane round trip.
    pub fn deployed(&self, name: &str) -> Option<Arc<ComponentRecord>> {
        self.sched.deployed(name)
    }

    /// Undeploys `name`: calls by that name fail with not-found from now
    /// on; tasks already submitted finish on the version they named.
    /// `false` when nothing is deployed so.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the function table cannot be written.
    pub fn undeploy(&self, name: &str) -> Result<bool> {
        let in_table = match self.block_on(self.table.undeploy(name)) {
            Ok(()) => true,
            Err(wray_control_plane::Error::ComponentNotFound(_)) => false,
            Err(e) => return Err(e.into()),
        };
        let here = self.sched.undeploy(name).is_some();
        Ok(in_table || here)
    }

    /// The current version of the component deployed as `name`, from the
    /// function table (blocks as [`Node::components`] does).
    ///
    /// # Errors
    /// [`Error::NotDeployed`], or [`Error::ControlPlane`].
    pub fn component(&self, name: &str) -> Result<ComponentVersion> {
        self.block_on(self.table.current(name))
            .map_err(|e| match e {
                wray_control_plane::Error::ComponentNotFound(n) => Error::NotDeployed(n),
                other => other.into(),
            })
    }

    /// The node's own view of the function table: the row of every name
    /// deployed on this node (by it, or followed from the table), ordered
    /// by name. No control-plane round trip: it answers while the control
    /// plane is unreachable (it may lag deploys made elsewhere).
    pub fn local_components(&self) -> Vec<Arc<ComponentRecord>> {
        let mut all = self.sched.named_components();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Every component in the function table, ordered by name. Blocks on
    /// the control plane: call it outside an async runtime (or in
    /// `tokio::task::block_in_place`).
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the function table cannot be read.
    pub fn components(&self) -> Result<Vec<ComponentVersion>> {
        Ok(self.block_on(self.table.list())?)
    }

    /// One page of [`Node::components`]: at most `limit` components whose
    /// names sort after `after`, ordered by name (blocks as
    /// [`Node::components`] does).
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the function table cannot be read.
    pub fn components_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ComponentVersion>> {
        Ok(self.block_on(self.table.list_page(after, limit))?)
    }

    /// Deploys the component file at `path` under its file stem
    /// (`wordcount.wasm` -> `wordcount`).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; then as [`Node::deploy`].
    pub fn deploy_file(&self, path: impl AsRef<Path>) -> Result<ComponentRecord> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        let size = std::fs::metadata(path).map_err(io)?.len();
        if size > MAX_COMPONENT_BYTES {
            return Err(Error::Component {
                name: path.display().to_string(),
                reason: format!(
                    "the file has {size} bytes, more than the {MAX_COMPONENT_BYTES} a component may have"
                ),
            });
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let name = path
            .file_stem()
            .map_or_else(|| "app".into(), |s| s.to_string_lossy().into_owned());
        self.deploy(&name, &bytes)
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
    pub fn run_main(&self, name: &str, args: &[String]) -> Result<DriverOutcome> {
        let prepared = self.prepare_job(name, None, CancelToken::new(), Default::default())?;
        Ok(self.run_prepared(prepared, args, || {}))
    }

    /// A new job's id, from the control plane's job table.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the job table refuses.
    pub(crate) fn start_job(&self, driver: &str) -> Result<JobId> {
        Ok(self.block_on(self.jobs.start_job(driver))?)
    }

    /// Ends job `job` here (its tasks cancelled, actors killed, objects
    /// freed) and in the job table.
    pub(crate) fn end_job(&self, job: JobId) {
        self.sched.end_job(job);
        if let Err(e) = self.block_on(self.jobs.end_job(job)) {
            tracing::warn!(%job, "the job table did not record the job's end: {e}");
        }
    }

    /// Deployed component `name`, loaded here (compiled from the function
    /// table's blob the first time), within the node's bounds. While the
    /// control plane is unreachable, the version this node already runs
    /// under that name (its own view, as the listings answer then).
    ///
    /// # Errors
    /// [`Error::NotDeployed`]; a control-plane error (the table
    /// unreachable and the name not loaded here, or a refusal); as
    /// [`Node::deploy_async`] when it must be loaded and cannot.
    pub(crate) fn loaded(&self, name: &str) -> Result<Arc<LoadedComponent>> {
        let record = match self.block_on(self.table.component(name)) {
            Ok(record) => record,
            Err(wray_control_plane::Error::ComponentNotFound(n)) => {
                return Err(Error::NotDeployed(n))
            }
            Err(e) if e.is_retryable() => {
                let own = self.sched.deployed(name);
                if let Some(loaded) = own.and_then(|r| self.exec.component(&r.hash)) {
                    tracing::warn!(
                        component = name,
                        "the control plane is unreachable ({e}): running the version this node has"
                    );
                    return Ok(loaded);
                }
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(known) = self.sched.deployed(name).filter(|r| r.hash == record.hash) {
            if let Some(loaded) = self.exec.component(&known.hash) {
                return Ok(loaded);
            }
        }
        if let Some(loaded) = self.exec.component(&record.hash) {
            // Known by its hash (under another name, or forgotten by name
            // after a redeploy elsewhere): known by this name from now on.
            let row = Arc::new(record);
            let fresh = Version::new(row.clone(), loaded.clone(), loaded.compiled);
            self.sched.insert_component(row, fresh)?;
            return Ok(loaded);
        }
        let bytes = self.block_on(self.table.blob(&record.hash))?;
        let loaded = self.wait(component::load(&self.exec, name, bytes))?;
        admit(&self.sched, &loaded)?;
        Ok(loaded)
    }

    /// Drives `future` to its end from a synchronous caller, on the node's
    /// I/O runtime: a plain thread blocks on it; a multi-threaded
    /// runtime's thread tells its runtime first (`block_in_place`); a
    /// current-thread runtime's thread hands it to a thread of its own.
    fn wait<F>(&self, future: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let io = &self.exec.io;
        match Handle::try_current() {
            Err(_) => io.block_on(future),
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| io.block_on(future))
            }
            Ok(_) => std::thread::scope(|s| {
                let waiting = s.spawn(|| io.block_on(future));
                match waiting.join() {
                    Ok(out) => out,
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }),
        }
    }

    /// The path of the shared-memory object store's file, if any.
    pub fn object_store_path(&self) -> Option<std::path::PathBuf> {
        self.sched.objects.arena().map(|a| a.path().to_path_buf())
    }

    /// A closure listing the store's first `limit` objects by id, and how
    /// many it holds in all (for publishers on another thread: what one
    /// listing costs stays bounded however many objects there are);
    /// nothing once the node is gone.
    pub fn objects_source(
        &self,
        limit: usize,
    ) -> impl Fn() -> (Vec<crate::objects::ObjectInfo>, usize) + Send + 'static {
        let objects = Arc::downgrade(&self.sched.objects);
        move || {
            objects
                .upgrade()
                .map(|o| (o.list_page(None, limit), o.stats().objects))
                .unwrap_or_default()
        }
    }

    /// Every object in the store, with size, location and holders.
    pub fn objects(&self) -> Vec<crate::objects::ObjectInfo> {
        self.sched.objects.list()
    }

    /// At most `limit` objects of the store whose ids follow `after`
    /// (from the first without it), by id (see
    /// [`ObjectStore::list_page`](crate::objects::ObjectStore::list_page)).
    pub fn objects_page(
        &self,
        after: Option<wray_control_plane::ObjectId>,
        limit: usize,
    ) -> Vec<crate::objects::ObjectInfo> {
        self.sched.objects.list_page(after, limit)
    }

    /// Tasks by state, exact: pending and running now, finished since the
    /// node started.
    pub fn task_counts(&self) -> std::collections::BTreeMap<TaskStatus, u64> {
        self.sched.tasks.counts()
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
        let (_, free) = self.sched.pool.resources();
        (
            free.get(crate::resources::CPU).copied().unwrap_or(0.0),
            self.sched.pool.queued(),
        )
    }

    /// The nodes (Ray's `ray.nodes()`): this one.
    pub fn nodes(&self) -> Vec<crate::node::state::NodeInfo> {
        vec![crate::node::state::NodeInfo {
            node_id: self.sched.node_id.clone(),
            alive: true,
            resources: self.cluster_resources(),
            gpus: self.gpus.iter().map(Into::into).collect(),
        }]
    }

    /// Resources in all, by name (Ray's `ray.cluster_resources()`): `CPU`,
    /// `GPU`, `memory` (bytes) and custom ones.
    pub fn cluster_resources(&self) -> std::collections::BTreeMap<String, f64> {
        self.sched.pool.resources().0
    }

    /// Resources free now (Ray's `ray.available_resources()`).
    pub fn available_resources(&self) -> std::collections::BTreeMap<String, f64> {
        self.sched.pool.resources().1
    }

    /// Every task the node knows, oldest first (Ray's `list_tasks()`; the
    /// last [`MAX_FINISHED_TASKS`](crate::bounds::MAX_FINISHED_TASKS)
    /// finished ones are kept).
    pub fn tasks(&self) -> Vec<crate::node::state::TaskInfo> {
        crate::node::state::tasks(&self.sched.tasks, &self.sched.node_id)
    }

    /// Errors of failed tasks, oldest first (Ray's `error_info`).
    pub fn errors(&self) -> Vec<crate::node::state::ErrorInfo> {
        crate::node::state::errors(&self.sched.tasks, &self.sched.node_id)
    }

    /// The timeline as Chrome trace JSON (see [`crate::node::timeline`]).
    pub fn timeline(&self) -> serde_json::Value {
        crate::node::timeline::chrome_trace(&self.sched.tasks, &self.sched.node_id)
    }

    /// A closure giving the node's status as JSON (nodes, resources total
    /// and free, task counts by state (exact), errors, and the pending and
    /// running tasks, at most `tasks_limit`, the most recent), for
    /// publishers on another thread; `null` once the node is gone. Its cost
    /// does not grow with the tasks that have finished.
    pub fn status_source(
        &self,
        tasks_limit: usize,
    ) -> impl Fn() -> serde_json::Value + Send + 'static {
        let sched = Arc::downgrade(&self.sched);
        let gpus: Vec<crate::node::state::GpuSummary> = self.gpus.iter().map(Into::into).collect();
        move || match sched.upgrade() {
            None => serde_json::Value::Null,
            Some(sched) => status_json(&sched, &gpus, tasks_limit),
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
            Some(sched) => sched.tasks.finished_since(from, limit),
        }
    }

    /// Writes the timeline as Chrome trace JSON to `out`, event by event
    /// (see [`crate::node::timeline`]); how many events it wrote.
    ///
    /// # Errors
    /// Writing to `out` failed.
    pub fn write_timeline(&self, out: impl std::io::Write) -> std::io::Result<usize> {
        let registry = &self.sched.tasks;
        let now = registry.nanos(std::time::Instant::now());
        crate::node::timeline::write_chrome_trace(&registry.tasks(), &self.sched.node_id, now, out)
    }

    /// Objects and bytes the object store holds now, and its peak.
    pub fn object_store_stats(&self) -> crate::objects::StoreStats {
        self.sched.objects.stats()
    }

    /// Runs a control-plane future to completion. It is polled once first
    /// (in the control runtime's context): the embedded tables answer at
    /// once, so a job's start and end cost no thread handoff. Otherwise it
    /// runs on the node's control runtime; called from a multi-threaded
    /// tokio runtime's task (the HTTP API's handlers), it first tells that
    /// runtime the thread blocks (`block_in_place`), since a runtime may
    /// not be entered from another.
    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        use tokio::runtime::{Handle, RuntimeFlavor};
        let mut f = std::pin::pin!(f);
        {
            let _context = self.control.enter();
            if let Poll::Ready(out) = f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                return out;
            }
        }
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| self.control.block_on(f))
            }
            _ => self.control.block_on(f),
        }
    }
}

/// Makes `loaded` runnable on the node of `sched` as the newest version
/// of its name, within the node's bounds; its row (a new one each time:
/// see `Scheduler::undeploy_if_same`).
///
/// # Errors
/// [`Error::DeployLimit`] past a bound; nothing changed then.
pub(crate) fn admit(
    sched: &Scheduler,
    loaded: &Arc<LoadedComponent>,
) -> Result<Arc<ComponentRecord>> {
    let record = Arc::new(loaded.record.clone());
    let fresh = Version::new(record.clone(), loaded.clone(), loaded.compiled);
    sched.insert_component(record.clone(), fresh)?;
    Ok(record)
}

/// The error of a function-table write refusing a deploy of `name`: past
/// one of the table's own bounds, the node's [`DeployLimit`].
fn table_error(name: &str, e: wray_control_plane::Error) -> Error {
    match e {
        wray_control_plane::Error::TableFull {
            what, held, limit, ..
        } => {
            let bound = if what == "names" {
                DeployBound::Names
            } else {
                DeployBound::ComponentBytes
            };
            Error::DeployLimit(DeployLimit {
                name: name.to_string(),
                bound,
                limit,
                reason: format!(
                    "the function table holds {held} {what}, the most it may ({} {}); \
                     undeploy some first",
                    bound.flag(),
                    if bound.is_bytes() { limit >> 20 } else { limit }
                ),
            })
        }
        other => other.into(),
    }
}

/// A node's id: `node-` and 16 random hex digits (unique beyond this
/// process and machine, as Ray's random `NodeID`).
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

fn status_json(
    rt: &Scheduler,
    gpus: &[crate::node::state::GpuSummary],
    tasks_limit: usize,
) -> serde_json::Value {
    let (total, free) = rt.pool.resources();
    let counts = rt.tasks.counts();
    let now = rt.tasks.nanos(std::time::Instant::now());
    let live: Vec<crate::node::state::TaskInfo> = rt
        .tasks
        .live(tasks_limit)
        .into_iter()
        .map(|r| crate::node::state::task_info(r, &rt.node_id, now))
        .collect();
    serde_json::json!({
        "time": crate::node::state::unix_now(),
        "nodes": [{
            "node_id": rt.node_id,
            "alive": true,
            "resources": total,
            "gpus": gpus,
        }],
        "cluster_resources": total,
        "available_resources": free,
        "task_counts": counts,
        "tasks": live,
        "errors": crate::node::state::errors(&rt.tasks, &rt.node_id),
    })
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
