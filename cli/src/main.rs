//! `wray`: the command line of a wray node.
//!
//! `wray run app.wasm [--num-cpus N] [--dir HOST[::GUEST]] [--task-timeout SECS]
//! [--driver-timeout SECS] [-- args]` starts an embedded single node, deploys the
//! component and runs its `main` as the driver; SIGINT or SIGTERM stops it in
//! order.
//!
//! `wray describe app.wasm [--json]` prints what a component exports.
//!
//! The cases of `ray microbenchmark` are a benchmark program of their own,
//! `wray-microbenchmark` (crate `wray-bench`, `bench/`).
//!
//! `wray objects|status|tasks|errors|timeline [--session DIR]` read the state
//! the latest (or a given) `wray run` or `wray start` node published; with
//! `--address URL`, the state of the whole cluster of the node there.
//!
//! `wray start` runs a long-running node serving the HTTP API; `wray stop`,
//! `status`, `deploy`, `functions`, `undeploy`, `call`, `logs` and `job`
//! reach it (`--node DIR|ID` or `--address URL`, default the latest).
//!
//! Logs go to stderr at the level of `WRAY_LOG` (default `warn`); a `wray
//! start` node's go to its `node.log` (`--log-level`, default `info`).

mod client;
mod client_tls;
mod describe;
mod embedded;
mod job_cmds;
mod logs_cmd;
mod node_args;
mod node_cmds;
mod node_dir;
mod node_log;
mod process;
mod progress;
mod remote_state;
mod run;
mod session;
mod signals;
mod state_cmds;
mod store_args;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// wray: a distributed execution engine whose tasks and actors are
/// WebAssembly components.
#[derive(Parser)]
#[command(name = "wray", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a component's `main` as the driver on an embedded single node.
    Run(run::RunArgs),
    /// Show what a component exports: its parts, functions, actor classes
    /// and methods, with their parameters' and returns' JSON Schemas.
    Describe(describe::DescribeArgs),
    /// List the objects of the latest (or a given) `wray run` session, or
    /// with `--address` of every node of a cluster: id, size, location
    /// (heap, shared-memory, spilled), holders and node.
    Objects(session::ObjectsArgs),
    /// Show the nodes, resources (used / total) and task counts of the
    /// latest (or a given) session or node (Ray's `ray status`); a node
    /// whose process has ended is shown dead. With `--address`, the
    /// cluster's resources in all and each node's.
    Status(state_cmds::StatusArgs),
    /// List the tasks of a session, or with `--address` of the cluster:
    /// id, state, function, node, resources, times (Ray's `ray list
    /// tasks`).
    Tasks(state_cmds::TasksArgs),
    /// List the errors of failed tasks (of a session, or with `--address`
    /// of the cluster): function, task, node, message.
    Errors(state_cmds::ErrorsArgs),
    /// Write a session's timeline (with `--address`, the cluster's) as
    /// Chrome trace JSON (Ray's `ray timeline`), for chrome://tracing or
    /// Perfetto.
    Timeline(state_cmds::TimelineArgs),
    /// Start a long-running node serving the HTTP API (in the background;
    /// `wray stop` ends it). It logs to node.log in its directory, at the
    /// level of --log-level, else of the WRAY_LOG environment variable,
    /// else `info`; guests' output of plain calls is kept there and by
    /// task id (`wray logs`).
    Start(node_cmds::StartArgs),
    /// Stop a node `wray start` started (the latest, or `--node`): it
    /// stops listening, drains, then exits.
    Stop(node_cmds::StopArgs),
    /// Deploy a component to the running node.
    Deploy(client::DeployArgs),
    /// List the running node's components and their exports.
    Functions(client::NodeArg),
    /// Remove a component from the running node.
    Undeploy(client::UndeployArgs),
    /// Call `component/function` on the running node with JSON arguments.
    Call(client::CallArgs),
    /// Print what a task of the running node wrote to stdout and stderr
    /// (calls over HTTP and their tasks; a job's output is `wray job logs`).
    Logs(logs_cmd::LogsArgs),
    /// Jobs on the running node (Ray's `ray job`): submit a component's
    /// `main`, follow its logs, see its status, stop it.
    #[command(subcommand)]
    Job(job_cmds::JobCommand),
    /// The compile process of a node (`wray_host::compile_process`): reads
    /// one request on stdin, compiles, exits. Not for people.
    #[command(name = "__compile", hide = true)]
    Compile,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        // Says what went wrong in one line on stderr, logs nothing.
        Command::Compile => return std::process::ExitCode::from(wray_host::compile_process()),
        // The node itself logs to its node.log (`node_log`), and must not
        // die of SIGPIPE; so must not an embedded node.
        Command::Start(args) if args.foreground() => {}
        Command::Run(_) => init_stderr_log(),
        _ => {
            init_stderr_log();
            // A command whose output is cut short (`wray functions | head`)
            // ends quietly, as other command-line tools do, instead of
            // failing on every write.
            // SAFETY: restores the default action of one signal before any
            // thread is started.
            unsafe {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            }
        }
    }
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Describe(args) => {
            describe::describe(args).map(|()| std::process::ExitCode::SUCCESS)
        }
        Command::Objects(args) => session::objects(args).map(|()| std::process::ExitCode::SUCCESS),
        Command::Status(args) => state_cmds::status(args).map(|()| std::process::ExitCode::SUCCESS),
        Command::Logs(args) => logs_cmd::logs(args),
        Command::Tasks(args) => state_cmds::tasks(args).map(|()| std::process::ExitCode::SUCCESS),
        Command::Errors(args) => state_cmds::errors(args).map(|()| std::process::ExitCode::SUCCESS),
        Command::Start(args) => node_cmds::start(args),
        Command::Stop(args) => node_cmds::stop(args),
        Command::Deploy(args) => client::deploy(args),
        Command::Functions(args) => client::functions(args),
        Command::Undeploy(args) => client::undeploy(args),
        Command::Call(args) => client::call(args),
        Command::Job(command) => job_cmds::run(command),
        Command::Compile => Ok(std::process::ExitCode::from(wray_host::compile_process())),
        Command::Timeline(args) => {
            state_cmds::timeline(args).map(|()| std::process::ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", report(&e));
            std::process::ExitCode::from(2)
        }
    }
}

/// Logs to stderr at the level of `WRAY_LOG` (default `warn`).
fn init_stderr_log() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("WRAY_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// `e` and its causes, `: `-separated, each said once: a cause whose text
/// its error already includes (`cannot listen on ..: {source}`) is not
/// repeated.
fn report(e: &anyhow::Error) -> String {
    let mut said = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if said.contains(&text) {
            continue;
        }
        if !said.is_empty() {
            said.push_str(": ");
        }
        said.push_str(&text);
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_its_error_already_names_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let e = anyhow::Error::new(wray_http::server::ServeError::Bind {
            addr: "127.0.0.1:1".parse().unwrap(),
            source: io,
        })
        .context("starting");
        let said = report(&e);
        assert_eq!(said.matches("address in use").count(), 1, "{said}");
        assert!(
            said.starts_with("starting: cannot listen on 127.0.0.1:1"),
            "{said}"
        );
    }
}
