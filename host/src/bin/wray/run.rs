//! `wray run`: deploy a component on an embedded node and run its `main`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use wray_host::{NodeConfig, Preopen};

use crate::embedded;
use crate::progress::Progress;
use crate::session::Session;
use crate::store_args::StoreArgs;

/// Arguments of `wray run`.
#[derive(Args)]
pub struct RunArgs {
    /// The component (.wasm) whose `main` is the driver.
    component: PathBuf,
    /// CPUs of the node (one-CPU tasks running at once); default: this
    /// machine's cores. Fewer pins workers to that many cores.
    #[arg(long)]
    num_cpus: Option<usize>,
    /// Give guests read-only access to a host directory, seen at GUEST
    /// (default: the same path). Repeatable.
    #[arg(long = "dir", value_name = "HOST[::GUEST]")]
    dirs: Vec<String>,
    /// Per-task time limit in seconds (0: none).
    #[arg(long, value_name = "SECS", default_value_t = wray_host::config::DEFAULT_TASK_TIMEOUT.as_secs_f64())]
    task_timeout: f64,
    /// Per-task memory limit in MiB.
    #[arg(long, value_name = "MIB", default_value_t = wray_host::config::DEFAULT_TASK_MEMORY >> 20)]
    task_memory_mib: u64,
    /// GPUs of the node (default: as many as NVML finds).
    #[arg(long)]
    num_gpus: Option<u32>,
    /// Custom resources of the node, as JSON: '{"accelerator": 2}'.
    #[arg(long, value_name = "JSON")]
    resources: Option<String>,
    /// Bytes of memory tasks may reserve with `memory =` (default: the
    /// machine's memory less the object store).
    #[arg(long, value_name = "BYTES")]
    memory: Option<u64>,
    /// Meter wasm fuel, so that tasks may set fuel limits (slower).
    #[arg(long)]
    fuel_metering: bool,
    /// Write the timeline (Chrome trace JSON) here when the driver ends.
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Do not show the progress line.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    store: StoreArgs,
    /// Arguments passed to the driver's `main`.
    #[arg(last = true)]
    args: Vec<String>,
}

/// Runs the driver; the exit code is 0 when `main` succeeded, 1 when it
/// failed.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut config = NodeConfig::default();
    if let Some(n) = args.num_cpus {
        config.num_cpus = n;
    }
    for spec in &args.dirs {
        config.preopens.push(Preopen::parse(spec)?);
    }
    if !(args.task_timeout.is_finite() && args.task_timeout >= 0.0) {
        anyhow::bail!(
            "--task-timeout {}: expected a number of seconds >= 0",
            args.task_timeout
        );
    }
    config.task_timeout =
        (args.task_timeout > 0.0).then(|| Duration::from_secs_f64(args.task_timeout));
    config.task_memory_limit = args.task_memory_mib.saturating_mul(1 << 20);
    config.num_gpus = args.num_gpus;
    config.memory = args.memory;
    config.fuel_metering = args.fuel_metering;
    if let Some(json) = &args.resources {
        config.resources = serde_json::from_str(json).map_err(|e| {
            anyhow::anyhow!("--resources {json}: expected a JSON object of names to numbers: {e}")
        })?;
    }
    args.store.apply(&mut config);

    let (node, app) = embedded::start_with_component(config, &args.component)?;
    let progress = (!args.quiet).then(|| Progress::start(&node));
    let session = Session::start(&node);
    let outcome = node.run_main(&app, &args.args)?;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(s) = session {
        s.finish(&node);
    }
    if let Some(path) = &args.timeline {
        std::fs::write(path, node.timeline().to_string())
            .map_err(|e| anyhow::anyhow!("cannot write --timeline {}: {e}", path.display()))?;
    }
    let stats = node.stats();
    eprintln!(
        "wray: {} tasks run ({} failed) on {} CPUs in {:.3} s",
        stats.finished + stats.failed,
        stats.failed,
        node.num_cpus(),
        outcome.wall.as_secs_f64()
    );
    match outcome.result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(message) => {
            eprintln!("error: main of `{app}` failed: {message}");
            Ok(ExitCode::FAILURE)
        }
    }
}
