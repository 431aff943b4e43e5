//! `wray run`: deploy a component on an embedded node and run its `main`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::embedded;
use crate::node_args::NodeArgs;
use crate::progress::Progress;
use crate::session::Session;
use crate::signals::Interrupts;

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
    #[command(flatten)]
    node: NodeArgs,
    /// Write the timeline (Chrome trace JSON) here when the driver ends.
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Do not show the progress line.
    #[arg(long)]
    quiet: bool,
    /// Run the driver on the running node (or cluster) at this URL instead
    /// of a node embedded here, as `wray job submit` does: the component
    /// and the `--with` ones are deployed there (under their file stems)
    /// and `main` runs there as a job whose log follows here; its token
    /// comes from `WRAY_TOKEN`. The node flags are that node's own then.
    #[arg(long, value_name = "URL", conflicts_with = "timeline")]
    address: Option<String>,
    /// With `--address` at https: trust this certificate (PEM) instead of
    /// the public roots (default: `WRAY_CACERT`).
    #[arg(long, value_name = "FILE", requires = "address")]
    cacert: Option<PathBuf>,
    /// Arguments passed to the driver's `main`.
    #[arg(last = true)]
    args: Vec<String>,
}

/// Runs the driver; the exit code is 0 when `main` succeeded, 1 when it
/// failed, and 128 + the signal's number when SIGINT or SIGTERM stopped it
/// (a second signal exits at once). Either way the node shuts down in
/// order and leaves no file behind.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = args.address {
        if !args.node.is_default() {
            anyhow::bail!(
                "the node flags configure a node embedded here: with --address the driver \
                 runs on that node, as it is configured (drop them, or drop --address)"
            );
        }
        let node = crate::client::NodeArg::at(url, args.cacert);
        return crate::job_cmds::run_on(&node, &args.component, &args.with, args.args);
    }
    let config = args.node.config()?;

    let (node, app) = embedded::start_with_component(config, &args.component)?;
    for path in &args.with {
        embedded::deploy(&node, path)?;
    }
    let interrupts = Interrupts::watch(node.stop_handle())?;
    let progress = (!args.quiet).then(|| Progress::start(&node));
    let session = Session::start(&node, crate::session::run_dir());
    let outcome = node.run_main_blocking(&app, &args.args)?;
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
