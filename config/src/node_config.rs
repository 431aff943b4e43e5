//! [`NodeConfig`]: how one node runs tasks (its resources, limits, the
//! object store's size, where guests' output goes, the compile program),
//! with the defaults and the checks a node runs when it starts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::objects::arena::DEFAULT_KEEP_FREED;
use crate::objects::sizing::{default_object_store_dir, fitting_object_store_memory, total_memory};
use crate::resources::{GpuDiscovery, Nvml};
use crate::{CompileCommand, Preopen, Stdio};

/// Where a node's GPUs come from (NVML by default; tests inject a fixed
/// list with [`crate::resources::StaticGpus`]).
#[derive(Clone)]
pub struct Discovery(pub Arc<dyn GpuDiscovery>);

impl Default for Discovery {
    fn default() -> Self {
        Discovery(Arc::new(Nvml))
    }
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Discovery")
    }
}

/// How one node runs tasks.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// CPUs of the node: how many one-CPU tasks run at once (default: the
    /// machine's cores). Fewer than the machine has pins workers to that
    /// many cores.
    pub num_cpus: usize,
    /// GPUs of the node (Ray's `--num-gpus`); `None`: as many as
    /// [`gpu_discovery`](Self::gpu_discovery) finds.
    pub num_gpus: Option<u32>,
    /// Where GPUs are discovered.
    pub gpu_discovery: Discovery,
    /// Custom resources and their quantities (`--resources '{"name": 2}'`).
    pub resources: BTreeMap<String, f64>,
    /// Bytes of memory tasks may reserve with `memory =` (Ray's `memory`
    /// resource); `None`: the machine's memory less the object store.
    pub memory: Option<u64>,
    /// Wall-clock limit of one task, from its start; `None`: no limit.
    pub task_timeout: Option<Duration>,
    /// Wall-clock limit of a driver's `main`, from its start; `None` (the
    /// default): no limit.
    pub driver_timeout: Option<Duration>,
    /// Largest linear memory one task's instance may grow to, in bytes.
    pub task_memory_limit: u64,
    /// Count wasm fuel (wasmtime's `consume_fuel`, a few percent slower), so
    /// that tasks may set a fuel limit.
    pub fuel_metering: bool,
    /// Default fuel limit of a task (only with `fuel_metering`).
    pub task_fuel: Option<u64>,
    /// Directories guests may read.
    pub preopens: Vec<Preopen>,
    /// Host directories (and what is under them) a job may ask to read
    /// (`--allow-dir`; a job's `dirs`): none by default, so a job gets no
    /// directory unless the operator allows it.
    pub allow_dirs: Vec<PathBuf>,
    /// Where guests' stdout/stderr go.
    pub stdio: Stdio,
    /// Most instances (tasks running or blocked, plus live actors) at once.
    pub max_instances: u32,
    /// Most live actors at once (`None`: `max_instances` less room for
    /// tasks, see [`NodeConfig::max_live_actors`]); creating one more fails
    /// with an error, and plain tasks keep their instances.
    pub max_actors: Option<usize>,
    /// Most tasks submitted and not finished at once; a submission past it
    /// fails with a `system` error.
    pub max_pending_tasks: u64,
    /// Use wasmtime's pooling instance allocator (pre-reserved slots).
    pub pooling: bool,
    /// Initialize linear memories copy-on-write from the component's
    /// memory image (wasmtime's `memory_init_cow`) rather than copying the
    /// data segments in each instance.
    pub memory_cow: bool,
    /// Bytes of each pooling slot's linear memory (and of each table) that
    /// stay resident between instances, in bytes (default
    /// [`DEFAULT_KEEP_RESIDENT`]; 0 to 4 GiB). When an instance ends, the
    /// pages it wrote, up to this many, are reset in place by copy from the
    /// memory image (zeros past it), so the next instance of the same
    /// component in the slot writes them without a page fault; pages past
    /// the budget are given back to the kernel and fault again. Each warm
    /// slot may hold this much memory while idle. Only with `pooling`.
    pub keep_resident: usize,
    /// Directory caching compiled components; `None` disables the disk cache.
    pub cache_dir: Option<PathBuf>,
    /// Capacity of the shared-memory object store in bytes (`None`: no
    /// shared store, every value on the heap).
    pub object_store_memory: Option<u64>,
    /// Directory of the object store's file (`/dev/shm` where it exists).
    pub object_store_dir: PathBuf,
    /// Where objects spill when the store is full (`None`: a directory
    /// under the temporary directory, named after the process).
    pub spill_dir: Option<PathBuf>,
    /// Put the object store on 2 MiB huge pages (a memfd; `object_store_dir`
    /// is then unused), falling back to 4 KiB pages with a log line where
    /// the kernel has too few reserved.
    pub huge_pages: bool,
    /// Bytes of freed object-store pages kept in the store's file for
    /// reuse (default [`DEFAULT_KEEP_FREED`], up to the store's capacity;
    /// `--object-store-keep-freed`): past it, freed 2 MiB chunks are given
    /// back to the kernel (hole punching), so a freed large object does not
    /// keep its memory until the node stops. Unused on huge pages.
    pub object_store_keep_freed: u64,
    /// Most component names deployed on the node at once; a deploy of one
    /// more name is refused (`--max-components`).
    pub max_components: usize,
    /// Most versions of one name the node keeps loaded, 1 to
    /// [`MAX_VERSIONS`](crate::bounds::MAX_VERSIONS): a deploy drops the
    /// oldest that no task or actor uses, and is refused when every one is
    /// in use (`--max-versions`).
    pub max_versions: usize,
    /// Bytes of component files (and their function-table rows: names,
    /// schemas) the node holds, every version of every name together; a
    /// deploy past it is refused (`--max-component-mib`).
    pub max_component_bytes: u64,
    /// Bytes of compiled code the node holds (each version's compiled
    /// image, as wasmtime maps it); a deploy past it is refused
    /// (`--max-compiled-mib`).
    pub max_compiled_bytes: u64,
    /// Most bytes of code (the code sections of all its modules) one
    /// component may have: a larger one is refused before it is compiled
    /// (`--max-code-mib`).
    pub max_code_bytes: u64,
    /// How long one component may take to compile; past it the deploy
    /// fails (`--compile-timeout`).
    pub compile_timeout: Duration,
    /// The program a component is compiled with, in a child process killed
    /// at `compile_timeout` (its compile slot free again at once); `None`
    /// compiles on the node's compile threads, where a compile past its
    /// time limit cannot be stopped: its deploy fails at the limit, but
    /// its slot stays busy until Cranelift returns. Default: `wray
    /// __compile` when this process is `wray`
    /// ([`CompileCommand::this_wray`]), else `None`.
    pub compiler: Option<CompileCommand>,
    /// Compiles running at once (`None`: half the CPUs, at least 1); a
    /// deploy waits for a slot, at most `compile_timeout`.
    pub compile_slots: Option<usize>,
    /// Bytes of linear memory all the node's instances may have together
    /// (`None`: [`NodeConfig::guest_memory_budget`]'s default, half the
    /// machine's memory less the object store); an instantiation or
    /// `memory.grow` past it fails its task with `out-of-memory`
    /// (`--guest-memory`).
    pub guest_memory: Option<u64>,
    /// Where the node keeps jobs' working directories (packages and what
    /// they unpack to; emptied when the node starts); `None`: a temporary
    /// directory of its own, removed when the node goes.
    pub working_dir_cache: Option<PathBuf>,
    /// The most bytes one working-directory package may have
    /// (`--max-working-dir-mib`, default [`DEFAULT_MAX_WORKING_DIR`]).
    pub max_working_dir_bytes: u64,
    /// Bytes of packages and what they unpack to the node keeps, at least
    /// twice `max_working_dir_bytes` (`--working-dir-cache-mib`, default
    /// [`DEFAULT_WORKING_DIR_CACHE`]).
    pub working_dir_cache_bytes: u64,
    /// Tests only: a task of the function with this name makes the host
    /// panic while running it (a stand-in for a host bug).
    #[doc(hidden)]
    pub fail_point: Option<String>,
}

/// Default [`NodeConfig::max_working_dir_bytes`]: 100 MiB (the bound Ray
/// warns at for a `working_dir`).
pub const DEFAULT_MAX_WORKING_DIR: u64 = 100 << 20;

/// Default [`NodeConfig::working_dir_cache_bytes`]: 1 GiB.
pub const DEFAULT_WORKING_DIR_CACHE: u64 = 1 << 30;

/// Default per-task time limit: generous, it only catches runaway guests.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(600);

/// Default per-task memory limit: 4 GiB, the whole 32-bit address space.
pub const DEFAULT_TASK_MEMORY: u64 = 4 << 30;

/// Default [`NodeConfig::keep_resident`]: 8 MiB. A trivial CPython task
/// writes 1.5 to 2.0 MiB of its memory (in 230 to 280 runs of pages), a
/// SpiderMonkey one about 0.6 MiB and a Rust one under 0.3 MiB, so 8 MiB
/// keeps all of it with room for a task that does some work; at 2 MiB a
/// Python task sometimes wrote past the budget and the rest of its pages
/// faulted again in the next instance (`docs/benchmarks.md`, "Where the
/// fresh-instance time goes").
pub const DEFAULT_KEEP_RESIDENT: usize = 8 << 20;

/// Default [`NodeConfig::max_pending_tasks`]: 2^20, so that Ray's
/// envelope of a million tasks queued fits beside the driver and the tasks
/// that submit them (about 1.9 KiB of the node's memory each:
/// `docs/benchmarks.md`, "Scalability envelope").
pub const DEFAULT_MAX_PENDING_TASKS: u64 = 1 << 20;

/// Default [`NodeConfig::max_instances`].
pub const DEFAULT_MAX_INSTANCES: u32 = 1000;

/// The most [`NodeConfig::max_instances`] may be.
pub const MAX_INSTANCES: u32 = 100_000;

/// Default [`NodeConfig::max_components`]: 1,000 names.
pub const DEFAULT_MAX_COMPONENTS: usize = 1000;

/// Default [`NodeConfig::max_versions`]: as many as the function table
/// keeps.
pub const DEFAULT_MAX_VERSIONS: usize = crate::bounds::MAX_VERSIONS;

/// The most of [`NodeConfig::max_component_bytes`] and
/// [`NodeConfig::max_compiled_bytes`] by default: 4 GiB each (less on a
/// small machine: see [`default_component_memory`]).
pub const DEFAULT_COMPONENT_MEMORY: u64 = 4 << 30;

/// Default [`NodeConfig::max_code_bytes`]: 64 MiB of code. A Python
/// component (componentize-py, a whole CPython) has about 10 MiB; an
/// 80 MiB one took 52 s to compile on 2 cores.
pub const DEFAULT_MAX_CODE_BYTES: u64 = 64 << 20;

/// Default [`NodeConfig::compile_timeout`]: a minute.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(60);

/// Smallest default [`NodeConfig::guest_memory`]: 256 MiB.
pub const MIN_DEFAULT_GUEST_MEMORY: u64 = 256 << 20;

/// The default budget of component bytes, and of compiled code: an
/// eighth of the machine's memory, at most [`DEFAULT_COMPONENT_MEMORY`]
/// and at least 64 MiB.
pub fn default_component_memory() -> u64 {
    (total_memory() / 8).clamp(64 << 20, DEFAULT_COMPONENT_MEMORY)
}

impl Default for NodeConfig {
    fn default() -> Self {
        let object_store_dir = default_object_store_dir();
        Self {
            num_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            fuel_metering: false,
            task_fuel: None,
            num_gpus: None,
            gpu_discovery: Discovery::default(),
            resources: BTreeMap::new(),
            memory: None,
            task_timeout: Some(DEFAULT_TASK_TIMEOUT),
            driver_timeout: None,
            task_memory_limit: DEFAULT_TASK_MEMORY,
            preopens: Vec::new(),
            allow_dirs: Vec::new(),
            stdio: Stdio::Inherit,
            max_instances: DEFAULT_MAX_INSTANCES,
            max_actors: None,
            max_pending_tasks: DEFAULT_MAX_PENDING_TASKS,
            pooling: true,
            memory_cow: true,
            keep_resident: DEFAULT_KEEP_RESIDENT,
            cache_dir: dirs::cache_dir().map(|d| d.join("wray").join("compiled")),
            object_store_memory: fitting_object_store_memory(&object_store_dir),
            object_store_dir,
            spill_dir: None,
            huge_pages: false,
            object_store_keep_freed: DEFAULT_KEEP_FREED as u64,
            max_components: DEFAULT_MAX_COMPONENTS,
            max_versions: DEFAULT_MAX_VERSIONS,
            max_component_bytes: default_component_memory(),
            max_compiled_bytes: default_component_memory(),
            max_code_bytes: DEFAULT_MAX_CODE_BYTES,
            compile_timeout: DEFAULT_COMPILE_TIMEOUT,
            compile_slots: None,
            compiler: CompileCommand::this_wray(),
            guest_memory: None,
            working_dir_cache: None,
            max_working_dir_bytes: DEFAULT_MAX_WORKING_DIR,
            working_dir_cache_bytes: DEFAULT_WORKING_DIR_CACHE,
            fail_point: None,
        }
    }
}

impl NodeConfig {
    /// The node's default limits of one task: its memory, time and fuel
    /// limits (each task may lower them, never raise them).
    pub fn limits(&self) -> crate::proto::Limits {
        crate::proto::Limits {
            max_memory: self.task_memory_limit,
            timeout: self.task_timeout,
            fuel: self.task_fuel,
        }
    }

    /// The most live actors the node allows: [`NodeConfig::max_actors`], or
    /// `max_instances` less room for tasks (64, or 4 per CPU when that is
    /// more), at least 1.
    pub fn max_live_actors(&self) -> usize {
        self.max_actors.unwrap_or_else(|| {
            let room = (self.num_cpus.saturating_mul(4)).max(64);
            (self.max_instances as usize).saturating_sub(room).max(1)
        })
    }

    /// Compiles the node runs at once: [`NodeConfig::compile_slots`], or
    /// half its CPUs, at least 1.
    pub fn compile_slots(&self) -> usize {
        self.compile_slots
            .unwrap_or(self.num_cpus / 2)
            .clamp(1, crate::bounds::MAX_COMPILE_SLOTS)
    }

    /// The node-wide budget of guest linear memory, in bytes:
    /// [`NodeConfig::guest_memory`], or half the machine's memory less the
    /// object store (at least [`MIN_DEFAULT_GUEST_MEMORY`]).
    pub fn guest_memory_budget(&self) -> u64 {
        self.guest_memory.unwrap_or_else(|| {
            (total_memory() / 2)
                .saturating_sub(self.object_store_memory.unwrap_or(0))
                .max(MIN_DEFAULT_GUEST_MEMORY)
        })
    }

    /// Checks every value against its valid range.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the bad field, its value and the
    /// valid range.
    pub fn validate(&self) -> Result<()> {
        use crate::bounds::{
            MAX_CPUS, MAX_CUSTOM_RESOURCES, MAX_CUSTOM_UNITS, MAX_GPUS, MAX_GUEST_MEMORY,
            MAX_OBJECT_STORE, MAX_TASK_MEMORY, MAX_TIMEOUT,
        };
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if !(1..=MAX_CPUS).contains(&self.num_cpus) {
            return bad(format!(
                "num_cpus {} is out of range: 1 to {MAX_CPUS}",
                self.num_cpus
            ));
        }
        if let Some(n) = self.num_gpus.filter(|n| *n > MAX_GPUS) {
            return bad(format!("num_gpus {n} is out of range: 0 to {MAX_GPUS}"));
        }
        if !(1..=MAX_INSTANCES).contains(&self.max_instances) {
            return bad(format!(
                "max_instances {} is out of range: 1 to {MAX_INSTANCES}",
                self.max_instances
            ));
        }
        if self.object_store_keep_freed > MAX_OBJECT_STORE {
            return bad(format!(
                "object_store_keep_freed of {} bytes is out of range: 0 to {MAX_OBJECT_STORE} (16 TiB)",
                self.object_store_keep_freed
            ));
        }
        if u64::try_from(self.keep_resident).map_or(true, |b| b > MAX_TASK_MEMORY) {
            return bad(format!(
                "keep_resident of {} bytes is out of range: 0 to {MAX_TASK_MEMORY} (4 GiB)",
                self.keep_resident
            ));
        }
        if !((1 << 16)..=MAX_TASK_MEMORY).contains(&self.task_memory_limit) {
            return bad(format!(
                "task memory limit of {} bytes is out of range: one wasm page (65536) to {MAX_TASK_MEMORY} (4 GiB)",
                self.task_memory_limit
            ));
        }
        for (name, limit) in [
            ("task timeout", self.task_timeout),
            ("driver timeout", self.driver_timeout),
        ] {
            if let Some(t) = limit.filter(|t| *t > MAX_TIMEOUT || t.is_zero()) {
                return bad(format!(
                    "{name} of {} s is out of range: more than 0 up to {} s (a year)",
                    t.as_secs_f64(),
                    MAX_TIMEOUT.as_secs()
                ));
            }
        }
        if let Some(bytes) = self
            .object_store_memory
            .filter(|b| !(4096..=MAX_OBJECT_STORE).contains(b))
        {
            return bad(format!(
                "object store of {bytes} bytes is out of range: 4096 bytes to {MAX_OBJECT_STORE} (16 TiB)"
            ));
        }
        self.validate_components()?;
        if let Some(bytes) = self
            .guest_memory
            .filter(|b| !((1 << 16)..=MAX_GUEST_MEMORY).contains(b))
        {
            return bad(format!(
                "guest memory of {bytes} bytes is out of range: one wasm page (65536) to {MAX_GUEST_MEMORY} (16 TiB)"
            ));
        }
        if self.max_pending_tasks == 0 {
            return bad("max_pending_tasks must be at least 1".into());
        }
        if self.task_fuel.is_some() && !self.fuel_metering {
            return bad("a default fuel limit needs fuel metering".into());
        }
        if self.resources.len() > MAX_CUSTOM_RESOURCES {
            return bad(format!(
                "{} custom resources, more than the {MAX_CUSTOM_RESOURCES} a node may have",
                self.resources.len()
            ));
        }
        for (name, qty) in &self.resources {
            if [
                crate::resources::CPU,
                crate::resources::GPU,
                crate::resources::MEMORY,
            ]
            .contains(&name.as_str())
            {
                return bad(format!(
                    "resource `{name}` is set with --num-cpus, --num-gpus or --memory, not --resources"
                ));
            }
            if !(0.0..=MAX_CUSTOM_UNITS).contains(qty) {
                return bad(format!(
                    "resource `{name}` of {qty} is out of range: 0 to {MAX_CUSTOM_UNITS}"
                ));
            }
            crate::resources::Quantity::from_f64(*qty, &format!("resource `{name}`"))
                .map_err(Error::InvalidConfig)?;
        }
        for p in &self.preopens {
            if !p.host.is_dir() {
                return bad(format!(
                    "--dir {}: not a directory on this host",
                    p.host.display()
                ));
            }
        }
        if self.allow_dirs.len() > wray_control_plane::MAX_ALLOWED_DIRS {
            return bad(format!(
                "{} --allow-dir directories, more than the {} a node may allow (and publish)",
                self.allow_dirs.len(),
                wray_control_plane::MAX_ALLOWED_DIRS
            ));
        }
        for dir in &self.allow_dirs {
            if !dir.is_absolute() || !dir.is_dir() {
                return bad(format!(
                    "--allow-dir {}: not an absolute path of a directory on this host",
                    dir.display()
                ));
            }
            if dir.as_os_str().len() > wray_control_plane::MAX_DIR_BYTES {
                return bad(format!(
                    "--allow-dir {}: longer than {} bytes",
                    dir.display(),
                    wray_control_plane::MAX_DIR_BYTES
                ));
            }
        }
        use crate::bounds::{MAX_WORKING_DIR_BYTES, MAX_WORKING_DIR_CACHE};
        if !((1 << 10)..=MAX_WORKING_DIR_BYTES).contains(&self.max_working_dir_bytes) {
            return bad(format!(
                "max_working_dir_bytes {} is out of range: 1 KiB to {MAX_WORKING_DIR_BYTES} (16 GiB)",
                self.max_working_dir_bytes
            ));
        }
        let least = self.max_working_dir_bytes.saturating_mul(2);
        if !(least..=MAX_WORKING_DIR_CACHE).contains(&self.working_dir_cache_bytes) {
            return bad(format!(
                "a working-dir cache of {} bytes is out of range: twice the largest package \
                 ({least}) to {MAX_WORKING_DIR_CACHE} (16 TiB)",
                self.working_dir_cache_bytes
            ));
        }
        Ok(())
    }
}

impl NodeConfig {
    /// Checks the bounds on deployed components and on compiling them.
    fn validate_components(&self) -> Result<()> {
        use crate::bounds::{
            MAX_CODE_BYTES, MAX_COMPILE_SLOTS, MAX_COMPILE_TIMEOUT, MAX_COMPONENTS,
            MAX_COMPONENT_MEMORY, MAX_VERSIONS, MIN_COMPONENT_MEMORY,
        };
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if !(1..=MAX_COMPONENTS).contains(&self.max_components) {
            return bad(format!(
                "max_components {} is out of range: 1 to {MAX_COMPONENTS}",
                self.max_components
            ));
        }
        if !(1..=MAX_VERSIONS).contains(&self.max_versions) {
            return bad(format!(
                "max_versions {} is out of range: 1 to {MAX_VERSIONS} (as many as the function table keeps)",
                self.max_versions
            ));
        }
        for (name, bytes) in [
            ("component bytes", self.max_component_bytes),
            ("compiled code", self.max_compiled_bytes),
        ] {
            if !(MIN_COMPONENT_MEMORY..=MAX_COMPONENT_MEMORY).contains(&bytes) {
                return bad(format!(
                    "a budget of {bytes} bytes of {name} is out of range: 1 MiB to 1 TiB"
                ));
            }
        }
        if !((1 << 10)..=MAX_CODE_BYTES).contains(&self.max_code_bytes) {
            return bad(format!(
                "max_code_bytes {} is out of range: 1 KiB to {MAX_CODE_BYTES} (1 GiB)",
                self.max_code_bytes
            ));
        }
        if let Some(c) = self
            .compiler
            .as_ref()
            .filter(|c| c.memory_limit < 256 << 20)
        {
            return bad(format!(
                "a compile process memory bound of {} bytes is too small: at least 256 MiB",
                c.memory_limit
            ));
        }
        if self.compile_timeout.is_zero() || self.compile_timeout > MAX_COMPILE_TIMEOUT {
            return bad(format!(
                "compile timeout of {:.3} s is out of range: more than 0 up to {} s (an hour)",
                self.compile_timeout.as_secs_f64(),
                MAX_COMPILE_TIMEOUT.as_secs()
            ));
        }
        if let Some(n) = self
            .compile_slots
            .filter(|n| !(1..=MAX_COMPILE_SLOTS).contains(n))
        {
            return bad(format!(
                "compile_slots {n} is out of range: 1 to {MAX_COMPILE_SLOTS}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dir_specs() {
        let p = Preopen::parse("/usr/lib::/data").unwrap();
        assert_eq!(p.host, PathBuf::from("/usr/lib"));
        assert_eq!(p.guest, "/data");
        assert_eq!(Preopen::parse("/tmp").unwrap().guest, "/tmp");
        assert!(Preopen::parse("::/data").is_err());
        assert!(Preopen::parse("/x::").is_err());
    }

    #[test]
    fn rejects_zero_cpus() {
        let cfg = NodeConfig {
            num_cpus: 0,
            ..Default::default()
        };
        assert!(cfg.validate().unwrap_err().to_string().contains("num_cpus"));
    }

    #[test]
    fn refuses_every_count_past_its_range_naming_the_range() {
        let cases: Vec<(NodeConfig, &str)> = vec![
            (
                NodeConfig {
                    num_cpus: 1 << 32,
                    ..Default::default()
                },
                "1 to 4096",
            ),
            (
                NodeConfig {
                    num_gpus: Some(u32::MAX),
                    ..Default::default()
                },
                "0 to 1024",
            ),
            (
                NodeConfig {
                    object_store_memory: Some(u64::MAX),
                    ..Default::default()
                },
                "16 TiB",
            ),
            (
                NodeConfig {
                    task_memory_limit: u64::MAX,
                    ..Default::default()
                },
                "4 GiB",
            ),
            (
                NodeConfig {
                    task_timeout: Some(Duration::from_secs(u64::MAX)),
                    ..Default::default()
                },
                "a year",
            ),
            (
                NodeConfig {
                    resources: BTreeMap::from([("tpu".to_string(), 1e9)]),
                    ..Default::default()
                },
                "0 to 65536",
            ),
            (
                NodeConfig {
                    max_components: 0,
                    ..Default::default()
                },
                "1 to 100000",
            ),
            (
                NodeConfig {
                    max_versions: 11,
                    ..Default::default()
                },
                "1 to 10",
            ),
            (
                NodeConfig {
                    max_compiled_bytes: 1,
                    ..Default::default()
                },
                "1 MiB to 1 TiB",
            ),
            (
                NodeConfig {
                    compile_timeout: Duration::ZERO,
                    ..Default::default()
                },
                "an hour",
            ),
            (
                NodeConfig {
                    guest_memory: Some(u64::MAX),
                    ..Default::default()
                },
                "16 TiB",
            ),
        ];
        for (cfg, range) in cases {
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains(range), "{err}");
        }
    }

    #[test]
    fn actors_leave_room_for_tasks() {
        let cfg = NodeConfig {
            num_cpus: 2,
            max_instances: DEFAULT_MAX_INSTANCES,
            ..Default::default()
        };
        assert_eq!(cfg.max_live_actors(), 936);
        let tiny = NodeConfig {
            max_instances: 10,
            ..cfg
        };
        assert_eq!(tiny.max_live_actors(), 1);
    }
}
