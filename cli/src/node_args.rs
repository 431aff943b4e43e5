//! The node flags: one set, shared by every command that starts a node
//! (`wray run`, `wray start`), so that a long-running node is configurable
//! exactly as far as a one-shot run.

use clap::Args;
use wray_host::bounds::{
    MAX_CODE_BYTES, MAX_COMPILE_TIMEOUT, MAX_COMPONENTS, MAX_COMPONENT_MEMORY, MAX_CPUS, MAX_GPUS,
    MAX_GUEST_MEMORY, MAX_TASK_MEMORY, MAX_VERSIONS, MAX_WORKING_DIR_BYTES, MAX_WORKING_DIR_CACHE,
};
use wray_host::config::{
    DEFAULT_MAX_CODE_BYTES, DEFAULT_MAX_COMPONENTS, DEFAULT_MAX_INSTANCES,
    DEFAULT_MAX_PENDING_TASKS, DEFAULT_MAX_VERSIONS, MAX_INSTANCES,
};
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
    /// The most MiB one job's working directory (`wray job submit
    /// --working-dir`) may pack to on this node.
    #[arg(long, value_name = "MIB", default_value_t = wray_host::config::DEFAULT_MAX_WORKING_DIR >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_WORKING_DIR_BYTES >> 20))]
    pub max_working_dir_mib: u64,
    /// MiB of jobs' working directories the node keeps (packages and what
    /// they unpack to), at least twice --max-working-dir-mib; the least
    /// recently used one no running job holds goes first.
    #[arg(long, value_name = "MIB", default_value_t = wray_host::config::DEFAULT_WORKING_DIR_CACHE >> 20,
          value_parser = clap::value_parser!(u64).range(2..=MAX_WORKING_DIR_CACHE >> 20))]
    pub working_dir_cache_mib: u64,
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
    /// MiB of each pooling slot's memory kept resident between instances
    /// (for benchmarks: `bench/languages`; `NodeConfig::keep_resident`).
    #[arg(long, hide = true, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(0..=MAX_TASK_MEMORY >> 20))]
    pub keep_resident_mib: Option<u64>,
    /// Node-wide budget of guest linear memory in MiB: an instantiation or
    /// memory.grow past it fails that task with out-of-memory (default:
    /// half the machine's memory less the object store).
    #[arg(long, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=MAX_GUEST_MEMORY >> 20))]
    pub guest_memory: Option<u64>,
    /// Most component names deployed at once, 1 to 100000; one more is
    /// refused (HTTP 409).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_COMPONENTS,
          value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(1..=MAX_COMPONENTS as i64))]
    pub max_components: usize,
    /// Versions of one name kept loaded, 1 to 10: a deploy drops the
    /// oldest no task or actor uses (refused, HTTP 409, when all are in use).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_VERSIONS,
          value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(1..=MAX_VERSIONS as i64))]
    pub max_versions: usize,
    /// Instances at once, 1 to 100000: tasks running or blocked in
    /// `get`/`wait` and live actors, each one instance (one slot of the
    /// pooling allocator, which reserves its address space up front); a
    /// task past it waits for a slot, an actor past the actors' share fails.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSTANCES,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_INSTANCES)))]
    pub max_instances: u32,
    /// Live actors at once, at least 1; creating one more fails. Default:
    /// `--max-instances` less room for tasks (64, or 4 per CPU when that is
    /// more).
    #[arg(long, value_name = "N",
          value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(1..=i64::from(MAX_INSTANCES)))]
    pub max_actors: Option<usize>,
    /// Tasks submitted and not finished at once, at least 1; a submission
    /// past it fails with a `system` error.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PENDING_TASKS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_pending_tasks: u64,
    /// MiB of component files (and their exports' schemas) the node holds;
    /// a deploy past it is refused (HTTP 507). Default: an eighth of the
    /// machine's memory, at most 4096.
    #[arg(long, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=MAX_COMPONENT_MEMORY >> 20))]
    pub max_component_mib: Option<u64>,
    /// MiB of compiled code the node holds; a deploy past it is refused
    /// (HTTP 507). Default: an eighth of the machine's memory, at most 4096.
    #[arg(long, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=MAX_COMPONENT_MEMORY >> 20))]
    pub max_compiled_mib: Option<u64>,
    /// MiB of code one component may have (all its modules); a larger one
    /// is refused before it is compiled.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MAX_CODE_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CODE_BYTES >> 20))]
    pub max_code_mib: u64,
    /// Seconds one component may take to compile, up to 3600; past it the
    /// deploy fails.
    #[arg(long, value_name = "SECS", value_parser = parse_compile_timeout,
          default_value = "60")]
    pub compile_timeout: std::time::Duration,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Parses `--compile-timeout`: seconds, more than 0 up to an hour.
fn parse_compile_timeout(text: &str) -> Result<std::time::Duration, String> {
    let range = format!(
        "expected seconds, more than 0 up to {}",
        MAX_COMPILE_TIMEOUT.as_secs()
    );
    let secs: f64 = text.parse().map_err(|_| range.clone())?;
    match std::time::Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() && d <= MAX_COMPILE_TIMEOUT => Ok(d),
        _ => Err(range),
    }
}

impl NodeArgs {
    /// Whether no node flag was given (every field as an empty command
    /// line leaves it; compared by their `Debug` form, which covers the
    /// nested flags without a `PartialEq` on each).
    pub fn is_default(&self) -> bool {
        use clap::{Command, FromArgMatches};
        let none = Self::augment_args(Command::new("wray")).get_matches_from(["wray"]);
        Self::from_arg_matches(&none)
            .is_ok_and(|default| format!("{default:?}") == format!("{self:?}"))
    }

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
        config.max_working_dir_bytes = self.max_working_dir_mib.saturating_mul(1 << 20);
        config.working_dir_cache_bytes = self.working_dir_cache_mib.saturating_mul(1 << 20);
        config.task_timeout = self.task_timeout.0;
        config.driver_timeout = self.driver_timeout.0;
        config.task_memory_limit = self.task_memory_mib.saturating_mul(1 << 20);
        config.num_gpus = self.num_gpus;
        config.memory = self.memory;
        config.fuel_metering = self.fuel_metering;
        config.pooling = !self.no_pooling;
        config.memory_cow = !self.no_memory_cow;
        if let Some(mib) = self.keep_resident_mib {
            config.keep_resident =
                usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        }
        if let Some(json) = &self.resources {
            config.resources = serde_json::from_str(json).map_err(|e| {
                anyhow::anyhow!(
                    "--resources {json}: expected a JSON object of names to numbers: {e}"
                )
            })?;
        }
        config.guest_memory = self.guest_memory.map(|mib| mib.saturating_mul(1 << 20));
        config.max_components = self.max_components;
        config.max_versions = self.max_versions;
        config.max_instances = self.max_instances;
        config.max_actors = self.max_actors;
        config.max_pending_tasks = self.max_pending_tasks;
        if let Some(mib) = self.max_component_mib {
            config.max_component_bytes = mib.saturating_mul(1 << 20);
        }
        if let Some(mib) = self.max_compiled_mib {
            config.max_compiled_bytes = mib.saturating_mul(1 << 20);
        }
        config.max_code_bytes = self.max_code_mib.saturating_mul(1 << 20);
        config.compile_timeout = self.compile_timeout;
        self.store.apply(&mut config);
        Ok(config)
    }
}

#[cfg(test)]
mod bound_flags {
    use clap::Parser;

    use super::NodeArgs;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        node: NodeArgs,
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("wray").chain(args.iter().copied()))
    }

    #[test]
    fn the_bounds_flags_reach_the_node_config() {
        let cli = parse(&[
            "--guest-memory",
            "64",
            "--max-components",
            "5",
            "--max-versions",
            "2",
            "--max-component-mib",
            "100",
            "--max-compiled-mib",
            "200",
            "--max-code-mib",
            "8",
            "--compile-timeout",
            "1.5",
            "--max-instances",
            "20000",
            "--max-actors",
            "12000",
            "--max-pending-tasks",
            "3000000",
        ])
        .expect("parses");
        let c = cli.node.config().expect("a config");
        assert_eq!(c.guest_memory, Some(64 << 20));
        assert_eq!((c.max_components, c.max_versions), (5, 2));
        assert_eq!(
            (c.max_component_bytes, c.max_compiled_bytes),
            (100 << 20, 200 << 20)
        );
        assert_eq!(c.max_code_bytes, 8 << 20);
        assert_eq!(c.compile_timeout, std::time::Duration::from_millis(1500));
        assert_eq!(
            (c.max_instances, c.max_actors, c.max_pending_tasks),
            (20_000, Some(12_000), 3_000_000)
        );
        assert_eq!(c.max_live_actors(), 12_000);
        c.validate().expect("in range");
    }

    #[test]
    fn bounds_flags_out_of_range_are_refused_naming_the_range() {
        for (flag, value, range) in [
            ("--max-versions", "11", "1..=10"),
            ("--max-components", "0", "1..=100000"),
            ("--max-instances", "100001", "1..=100000"),
            ("--max-instances", "0", "1..=100000"),
            ("--compile-timeout", "0", "more than 0 up to 3600"),
            ("--compile-timeout", "1e9", "more than 0 up to 3600"),
            ("--guest-memory", "0", "1.."),
        ] {
            let err = parse(&[flag, value]).err().expect("refused").to_string();
            assert!(err.contains(range), "{flag} {value}: {err}");
        }
    }
}
