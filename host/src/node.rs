//! [`Node`]: one wray node (workers, scheduler, object store) embedded in
//! this process, with the embedded control plane by default.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use wray_control_plane::{ComponentRecord, EmbeddedFunctionTable, FunctionTable};

use crate::cancel_token::CancelToken;
use crate::component::{self, LoadedComponent};
use crate::config::NodeConfig;
use crate::driver::DriverOutcome;
use crate::engine::{build_engine, EpochTicker};
use crate::error::{Error, Result};
use crate::object_store::arena::{Arena, ArenaError};
use crate::object_store::data::Budget;
use crate::object_store::{default_spill_limit, ObjectStore, StoreLimits};
use crate::registry::Registry;
use crate::resources::{node_gpus, pin, NodeResources, Quantity, ResourceTotals};
use crate::runtime::{Runtime, StatsSnapshot};
use crate::scheduler::queue::ResourcePool;
use crate::worker::pool::WorkerPool;

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
    rt: Arc<Runtime>,
    table: Arc<dyn FunctionTable>,
    /// Runs control-plane calls (async: the cluster backend is remote).
    control: tokio::runtime::Runtime,
    /// Drives timers and WASI I/O of running tasks (see
    /// [`Runtime::block_on`](crate::runtime)); dropped last.
    io: Option<tokio::runtime::Runtime>,
    /// Advances the epoch (time limits); stopped only once no task runs.
    ticker: Option<EpochTicker>,
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
        Self::with_function_table(config, Arc::new(EmbeddedFunctionTable::new()))
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
        let rt = Arc::new(Runtime {
            gpus: totals.gpus.clone(),
            node_id: format!("node-{}", std::process::id()),
            pool: ResourcePool::new(NodeResources::new(&totals)),
            pin: pin.then(pin::allowed_cpus),
            registry: Registry::default(),
            reusable: Default::default(),
            actors: Default::default(),
            windows: Budget::new(windows),
            config,
            engine,
            linker,
            objects,
            components: Mutex::new(HashMap::new()),
            stats: Default::default(),
            shutdown: CancelToken::new(),
            io: io.handle().clone(),
            workers: WorkerPool::new(worker_cpus, crate::bounds::MAX_BLOCKED_WORKERS),
        });
        Ok(Self {
            rt,
            table,
            control,
            io: Some(io),
            ticker: Some(ticker),
        })
    }

    /// A handle that stops this node's work from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.rt.shutdown.clone())
    }

    /// Shuts the node down in order: every running guest call is stopped
    /// (within one epoch tick), queued tasks are abandoned, the worker
    /// threads are waited for (up to [`SHUTDOWN_GRACE`]), then actors and
    /// cached instances are dropped. Idempotent; [`Drop`] calls it. Returns
    /// how many worker threads were still running after the grace period
    /// (0 unless a host call would not stop).
    pub fn shutdown(&self) -> usize {
        self.rt.shutdown.cancel();
        let left = self.rt.workers.close(SHUTDOWN_GRACE);
        if left > 0 {
            tracing::error!("{left} worker threads still running after {SHUTDOWN_GRACE:?}");
        }
        drop(self.rt.actors.drain());
        drop(self.rt.reusable.clear());
        left
    }

    /// This node's id.
    pub fn id(&self) -> &str {
        &self.rt.node_id
    }

    /// The configuration the node runs with.
    pub fn config(&self) -> &NodeConfig {
        &self.rt.config
    }

    /// Number of CPUs.
    pub fn num_cpus(&self) -> usize {
        self.rt.config.num_cpus
    }

    /// Counts of the worker threads: now, at the peak, blocked, and their
    /// bound (see [`crate::worker::pool`]).
    pub fn worker_threads(&self) -> crate::worker::pool::PoolStats {
        self.rt.workers.stats()
    }

    /// Compiles `bytes` (once per content hash), reads its exports, and
    /// deploys it into the function table as `name`.
    ///
    /// # Errors
    /// [`Error::Component`] when the bytes are not a wray component;
    /// [`Error::ControlPlane`] when the function table refuses it.
    pub fn deploy(&self, name: &str, bytes: &[u8]) -> Result<ComponentRecord> {
        let loaded = component::load(&self.rt, name, bytes)?;
        let record = loaded.record.clone();
        self.block_on(self.table.deploy(record.clone(), Arc::from(bytes)))?;
        self.rt
            .components
            .lock()
            .insert(record.hash.clone(), loaded);
        Ok(record)
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
        let loaded = self.loaded(name)?;
        if !loaded.record.has_main {
            return Err(Error::NoMain(name.to_string()));
        }
        Ok(self.rt.run_driver(loaded, args, CancelToken::new()))
    }

    fn loaded(&self, name: &str) -> Result<Arc<LoadedComponent>> {
        let record = self
            .block_on(self.table.component(name))
            .map_err(|e| match e {
                wray_control_plane::Error::ComponentNotFound(n) => Error::NotDeployed(n),
                other => other.into(),
            })?;
        if let Some(loaded) = self.rt.components.lock().get(&record.hash) {
            return Ok(loaded.clone());
        }
        let bytes = self.block_on(self.table.blob(&record.hash))?;
        let loaded = component::load(&self.rt, name, &bytes)?;
        self.rt
            .components
            .lock()
            .insert(record.hash, loaded.clone());
        Ok(loaded)
    }

    /// The path of the shared-memory object store's file, if any.
    pub fn object_store_path(&self) -> Option<std::path::PathBuf> {
        self.rt.objects.arena().map(|a| a.path().to_path_buf())
    }

    /// A closure listing the store's objects (for publishers on another
    /// thread); empty once the node is gone.
    pub fn objects_source(
        &self,
    ) -> impl Fn() -> Vec<crate::object_store::ObjectInfo> + Send + 'static {
        let rt = Arc::downgrade(&self.rt);
        move || rt.upgrade().map(|rt| rt.objects.list()).unwrap_or_default()
    }

    /// Every object in the store, with size, location and holders.
    pub fn objects(&self) -> Vec<crate::object_store::ObjectInfo> {
        self.rt.objects.list()
    }

    /// Task counters so far.
    pub fn stats(&self) -> StatsSnapshot {
        self.rt.stats()
    }

    /// A cheap closure that reads the task counters (for progress displays
    /// on another thread).
    pub fn stats_source(&self) -> impl Fn() -> StatsSnapshot + Send + 'static {
        let rt = Arc::downgrade(&self.rt);
        move || rt.upgrade().map(|rt| rt.stats()).unwrap_or_default()
    }

    /// (free CPUs, tasks ready and waiting for resources) now.
    pub fn cpu_snapshot(&self) -> (f64, usize) {
        let (_, free) = self.rt.pool.resources();
        (
            free.get(crate::resources::CPU).copied().unwrap_or(0.0),
            self.rt.pool.queued(),
        )
    }

    /// The nodes (Ray's `ray.nodes()`): this one.
    pub fn nodes(&self) -> Vec<crate::state::NodeInfo> {
        vec![crate::state::NodeInfo {
            node_id: self.rt.node_id.clone(),
            alive: true,
            resources: self.cluster_resources(),
            gpus: self.rt.gpus.iter().map(Into::into).collect(),
        }]
    }

    /// Resources in all, by name (Ray's `ray.cluster_resources()`): `CPU`,
    /// `GPU`, `memory` (bytes) and custom ones.
    pub fn cluster_resources(&self) -> std::collections::BTreeMap<String, f64> {
        self.rt.pool.resources().0
    }

    /// Resources free now (Ray's `ray.available_resources()`).
    pub fn available_resources(&self) -> std::collections::BTreeMap<String, f64> {
        self.rt.pool.resources().1
    }

    /// Every task the node knows, oldest first (Ray's `list_tasks()`; the
    /// last 100,000 finished ones are kept).
    pub fn tasks(&self) -> Vec<crate::state::TaskInfo> {
        crate::state::tasks(&self.rt.registry, &self.rt.node_id)
    }

    /// Errors of failed tasks, oldest first (Ray's `error_info`).
    pub fn errors(&self) -> Vec<crate::state::ErrorInfo> {
        crate::state::errors(&self.rt.registry, &self.rt.node_id)
    }

    /// The timeline as Chrome trace JSON (see [`crate::timeline`]).
    pub fn timeline(&self) -> serde_json::Value {
        crate::timeline::chrome_trace(&self.rt.registry, &self.rt.node_id)
    }

    /// A closure giving the node's status as JSON (nodes, resources total
    /// and free, task counts by state, errors, and the `tasks_limit` most
    /// recent tasks), for publishers on another thread; `null` once the node
    /// is gone.
    pub fn status_source(
        &self,
        tasks_limit: usize,
    ) -> impl Fn() -> serde_json::Value + Send + 'static {
        let rt = Arc::downgrade(&self.rt);
        move || match rt.upgrade() {
            None => serde_json::Value::Null,
            Some(rt) => status_json(&rt, tasks_limit),
        }
    }

    /// Objects and bytes the object store holds now, and its peak.
    pub fn object_store_stats(&self) -> crate::object_store::StoreStats {
        self.rt.objects.stats()
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.control.block_on(f)
    }
}

fn status_json(rt: &Runtime, tasks_limit: usize) -> serde_json::Value {
    let (total, free) = rt.pool.resources();
    let tasks = crate::state::tasks(&rt.registry, &rt.node_id);
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for t in &tasks {
        let state = serde_json::to_value(t.state).unwrap_or_default();
        *counts
            .entry(state.as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    let recent = &tasks[tasks.len().saturating_sub(tasks_limit)..];
    let gpus: Vec<crate::state::GpuSummary> = rt.gpus.iter().map(Into::into).collect();
    serde_json::json!({
        "time": crate::state::unix_now(),
        "nodes": [{
            "node_id": rt.node_id,
            "alive": true,
            "resources": total,
            "gpus": gpus,
        }],
        "cluster_resources": total,
        "available_resources": free,
        "task_counts": counts,
        "tasks": recent,
        "errors": crate::state::errors(&rt.registry, &rt.node_id),
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
