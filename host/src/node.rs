//! [`Node`]: one wray node (workers, scheduler, object store) embedded in
//! this process, with the embedded control plane by default.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::{ComponentRecord, EmbeddedFunctionTable, FunctionTable};

use crate::component::{self, LoadedComponent};
use crate::config::NodeConfig;
use crate::driver::DriverOutcome;
use crate::engine::{build_engine, EpochTicker};
use crate::error::{Error, Result};
use crate::object_store::arena::Arena;
use crate::object_store::ObjectStore;
use crate::runtime::{Runtime, StatsSnapshot};
use crate::scheduler::cpu::CpuPool;
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
    _ticker: EpochTicker,
}

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
        let ticker = EpochTicker::start(engine.clone())?;
        let config_threads = config.max_instances as usize + 64;
        let objects = match config.object_store_memory {
            Some(bytes) => {
                let capacity = usize::try_from(bytes).unwrap_or(usize::MAX);
                let arena = Arena::create(&config.object_store_dir, capacity, config.huge_pages)
                    .map_err(|e| Error::InvalidConfig(e.to_string()))?;
                let spill = config.spill_dir.clone().unwrap_or_else(|| {
                    std::env::temp_dir().join(format!("wray-spill-{}", std::process::id()))
                });
                ObjectStore::with_arena(arena, spill)
            }
            None => ObjectStore::new(),
        };
        let rt = Arc::new(Runtime {
            node_id: format!("node-{}", std::process::id()),
            cpus: CpuPool::new(config.num_cpus),
            config,
            engine,
            linker,
            objects,
            actors: Mutex::new(HashMap::new()),
            components: Mutex::new(HashMap::new()),
            stats: Default::default(),
            jobs: Default::default(),
            workers: WorkerPool::new(config_threads),
        });
        Ok(Self {
            rt,
            table,
            control,
            _ticker: ticker,
        })
    }

    /// This node's id.
    pub fn id(&self) -> &str {
        &self.rt.node_id
    }

    /// The configuration the node runs with.
    pub fn config(&self) -> &NodeConfig {
        &self.rt.config
    }

    /// Number of CPU slots.
    pub fn num_cpus(&self) -> usize {
        self.rt.cpus.total()
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
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        let name = path
            .file_stem()
            .map_or_else(|| "app".into(), |s| s.to_string_lossy().into_owned());
        self.deploy(&name, &bytes)
    }

    /// Runs `main(args)` of deployed component `name` as a driver, on the
    /// calling thread, and returns how it ended. Tasks it left running go on.
    ///
    /// # Errors
    /// [`Error::NotDeployed`], [`Error::NoMain`], or a control-plane error.
    pub fn run_main(&self, name: &str, args: &[String]) -> Result<DriverOutcome> {
        let loaded = self.loaded(name)?;
        if !loaded.record.has_main {
            return Err(Error::NoMain(name.to_string()));
        }
        Ok(self.rt.run_driver(loaded, args))
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

    /// (free CPU slots, tasks ready and waiting for a slot) now.
    pub fn cpu_snapshot(&self) -> (usize, usize) {
        self.rt.cpus.snapshot()
    }

    /// Objects and bytes the object store holds now, and its peak.
    pub fn object_store_stats(&self) -> crate::object_store::StoreStats {
        self.rt.objects.stats()
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.control.block_on(f)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Actors hold instances (and a reference to the runtime): drop them.
        // Tasks still running are abandoned, not awaited (a guest spinning
        // until its time limit ends on its own).
        self.rt.actors.lock().clear();
    }
}
