//! The node flags: one set, shared by every command that starts a node
//! (`wray run`, `wray start`), so that a long-running node is configurable
//! exactly as far as a one-shot run.

use clap::Args;
use wray_host::bounds::{MAX_CPUS, MAX_GPUS, MAX_TASK_MEMORY};
use wray_host::{NodeConfig, Preopen};

use crate::store_args::{parse_seconds, Seconds, StoreArgs};

/// Flags that configure the node itself: resources, limits, the object
/// store.
#[derive(Args, Debug, Clone)]
pub struct NodeArgs {
    /// CPUs of the node (one-CPU tasks running at once), 1 to 4096;
    /// default: this machine's cores. Fewer pins workers to that many cores.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=MAX_CPUS as i64))]
    pub num_cpus: Option<u16>,
    /// GPUs of the node, 0 to 1024 (default: as many as NVML finds).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_GPUS)))]
    pub num_gpus: Option<u32>,
    /// Custom resources of the node, as JSON: '{"accelerator": 2}'.
    #[arg(long, value_name = "JSON")]
    pub resources: Option<String>,
    /// Bytes of memory tasks may reserve with `memory =` (default: the
    /// machine's memory less the object store).
    #[arg(long, value_name = "BYTES")]
    pub memory: Option<u64>,
    /// Give guests read-only access to a host directory, seen at GUEST
    /// (default: the same path). Repeatable.
    #[arg(long = "dir", value_name = "HOST[::GUEST]")]
    pub dirs: Vec<String>,
    /// Let jobs (`wray job submit --dir`, `POST /v1/jobs` `dirs`) read this
    /// host directory and what is under it, read-only. Repeatable; none
    /// by default: a job gets no directory unless allowed here.
    #[arg(long = "allow-dir", value_name = "DIR")]
    pub allow_dirs: Vec<std::path::PathBuf>,
    /// Per-task time limit in seconds, from 0.01 (the epoch tick) up to a
    /// year (0: none).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds,
          default_value = "600")]
    pub task_timeout: Seconds,
    /// Time limit of a driver's `main` in seconds, from 0.01 up to a year
    /// (0, the default: none).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds, default_value = "0")]
    pub driver_timeout: Seconds,
    /// Per-task memory limit in MiB, 1 to 4096 (a wasm32 memory's most).
    #[arg(long, value_name = "MIB", default_value_t = wray_host::config::DEFAULT_TASK_MEMORY >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_TASK_MEMORY >> 20))]
    pub task_memory_mib: u64,
    /// Meter wasm fuel, so that tasks may set fuel limits (slower).
    #[arg(long)]
    pub fuel_metering: bool,
    /// Allocate instances on demand instead of from wasmtime's pooling
    /// allocator (for benchmarks: `bench/languages`).
    #[arg(long, hide = true)]
    pub no_pooling: bool,
    /// Copy each instance's memory image instead of mapping it
    /// copy-on-write (for benchmarks: `bench/languages`).
    #[arg(long, hide = true)]
    pub no_memory_cow: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl NodeArgs {
    /// The node configuration these flags describe (defaults elsewhere).
    ///
    /// # Errors
    /// A `--dir` or `--resources` value that does not parse, a
    /// `--spill-dir` that is no writable directory, or an `--allow-dir`
    /// that does not exist, naming it.
    pub fn config(&self) -> anyhow::Result<NodeConfig> {
        self.store.check()?;
        let mut config = NodeConfig::default();
        if let Some(n) = self.num_cpus {
            config.num_cpus = usize::from(n);
        }
        for spec in &self.dirs {
            config.preopens.push(Preopen::parse(spec)?);
        }
        for dir in &self.allow_dirs {
            // Absolute and free of links: what a job's paths are held to.
            let canonical = std::fs::canonicalize(dir).map_err(|e| {
                anyhow::anyhow!(
                    "--allow-dir {}: {e}: give an existing directory",
                    dir.display()
                )
            })?;
            config.allow_dirs.push(canonical);
        }
        config.task_timeout = self.task_timeout.0;
        config.driver_timeout = self.driver_timeout.0;
        config.task_memory_limit = self.task_memory_mib.saturating_mul(1 << 20);
        config.num_gpus = self.num_gpus;
        config.memory = self.memory;
        config.fuel_metering = self.fuel_metering;
        config.pooling = !self.no_pooling;
        config.memory_cow = !self.no_memory_cow;
        if let Some(json) = &self.resources {
            config.resources = serde_json::from_str(json).map_err(|e| {
                anyhow::anyhow!(
                    "--resources {json}: expected a JSON object of names to numbers: {e}"
                )
            })?;
        }
        self.store.apply(&mut config);
        Ok(config)
    }
}
