//! `wray run`: deploy a component on an embedded node and run its `main`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use wray_host::bounds::{MAX_CPUS, MAX_GPUS, MAX_TASK_MEMORY};
use wray_host::{NodeConfig, Preopen};

use crate::embedded;
use crate::progress::Progress;
use crate::session::Session;
use crate::signals::Interrupts;
use crate::store_args::{parse_seconds, Seconds, StoreArgs};

/// Arguments of `wray run`.
#[derive(Args)]
pub struct RunArgs {
    /// The component (.wasm) whose `main` is the driver.
    component: PathBuf,
    /// Deploy another component beside it, under its file stem
    /// (`lib.wasm` -> `lib`), so that the driver's tasks can call its
    /// functions and actors by qualified name (`wray::deployed!`).
    /// Repeatable.
    #[arg(long = "with", value_name = "COMPONENT.wasm")]
    with: Vec<PathBuf>,
    /// CPUs of the node (one-CPU tasks running at once), 1 to 4096;
    /// default: this machine's cores. Fewer pins workers to that many cores.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=MAX_CPUS as i64))]
    num_cpus: Option<u16>,
    /// Give guests read-only access to a host directory, seen at GUEST
    /// (default: the same path). Repeatable.
    #[arg(long = "dir", value_name = "HOST[::GUEST]")]
    dirs: Vec<String>,
    /// Per-task time limit in seconds, up to a year (0: none).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds,
          default_value = "600")]
    task_timeout: Seconds,
    /// Time limit of the driver's `main` in seconds, up to a year (0, the
    /// default: none).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds, default_value = "0")]
    driver_timeout: Seconds,
    /// Per-task memory limit in MiB, 1 to 4096 (a wasm32 memory's most).
    #[arg(long, value_name = "MIB", default_value_t = wray_host::config::DEFAULT_TASK_MEMORY >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_TASK_MEMORY >> 20))]
    task_memory_mib: u64,
    /// GPUs of the node, 0 to 1024 (default: as many as NVML finds).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_GPUS)))]
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
    /// Allocate instances on demand instead of from wasmtime's pooling
    /// allocator (for benchmarks: `bench/languages`).
    #[arg(long, hide = true)]
    no_pooling: bool,
    /// Copy each instance's memory image instead of mapping it
    /// copy-on-write (for benchmarks: `bench/languages`).
    #[arg(long, hide = true)]
    no_memory_cow: bool,
    #[command(flatten)]
    store: StoreArgs,
    /// Arguments passed to the driver's `main`.
    #[arg(last = true)]
    args: Vec<String>,
}

/// Runs the driver; the exit code is 0 when `main` succeeded, 1 when it
/// failed, and 128 + the signal's number when SIGINT or SIGTERM stopped it
/// (a second signal exits at once). Either way the node shuts down in
/// order and leaves no file behind.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut config = NodeConfig::default();
    if let Some(n) = args.num_cpus {
        config.num_cpus = usize::from(n);
    }
    for spec in &args.dirs {
        config.preopens.push(Preopen::parse(spec)?);
    }
    config.task_timeout = args.task_timeout.0;
    config.driver_timeout = args.driver_timeout.0;
    config.task_memory_limit = args.task_memory_mib.saturating_mul(1 << 20);
    config.num_gpus = args.num_gpus;
    config.memory = args.memory;
    config.fuel_metering = args.fuel_metering;
    config.pooling = !args.no_pooling;
    config.memory_cow = !args.no_memory_cow;
    if let Some(json) = &args.resources {
        config.resources = serde_json::from_str(json).map_err(|e| {
            anyhow::anyhow!("--resources {json}: expected a JSON object of names to numbers: {e}")
        })?;
    }
    args.store.apply(&mut config);

    let (node, app) = embedded::start_with_component(config, &args.component)?;
    for path in &args.with {
        embedded::deploy(&node, path)?;
    }
    let interrupts = Interrupts::watch(node.stop_handle())?;
    let progress = (!args.quiet).then(|| Progress::start(&node));
    let session = Session::start(&node);
    let outcome = node.run_main(&app, &args.args)?;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(s) = session {
        s.finish();
    }
    if let Some(path) = &args.timeline {
        std::fs::File::create(path)
            .and_then(|f| node.write_timeline(f))
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
    let signal = interrupts.received();
    drop(node);
    match (outcome.result, signal) {
        (_, Some(signal)) => {
            eprintln!("wray: stopped by signal {signal}");
            Ok(ExitCode::from(128 + signal as u8))
        }
        (Ok(()), None) => Ok(ExitCode::SUCCESS),
        (Err(message), None) => {
            eprintln!("error: main of `{app}` failed: {message}");
            Ok(ExitCode::FAILURE)
        }
    }
}
