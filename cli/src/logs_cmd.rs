//! `wray logs TASK_ID`: what a task of a running node wrote to stdout and
//! stderr (`GET /v1/tasks/{id}/logs`), for tasks outside a job with a log
//! of its own: HTTP calls, the tasks they submit, actors made over HTTP.
//! A job's output is `wray job logs`.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;

use crate::client::NodeArg;

/// Arguments of `wray logs`.
#[derive(Args)]
pub struct LogsArgs {
    /// The task's id (32 hex digits: `wray tasks`, the `wray-task-id`
    /// header of an HTTP call, or the node's log).
    task: String,
    #[command(flatten)]
    node: NodeArg,
}

/// Prints the task's stdout to stdout and its stderr to stderr, then, when
/// it wrote more than a task keeps, how many bytes were dropped.
///
/// # Errors
/// The node cannot be reached, or keeps no output of that task.
pub fn logs(args: LogsArgs) -> anyhow::Result<ExitCode> {
    let client = args.node.client()?;
    let body = client.answer(
        client
            .request(
                "GET",
                &format!("/v1/tasks/{}/logs", wray_api::encode(&args.task)),
            )
            .call(),
    )?;
    let output: wray_api::TaskLogs = serde_json::from_str(&body)?;
    std::io::stdout()
        .lock()
        .write_all(output.stdout.as_bytes())?;
    let mut err = std::io::stderr().lock();
    err.write_all(output.stderr.as_bytes())?;
    if let Some(n) = Some(output.dropped).filter(|n| *n > 0) {
        writeln!(
            err,
            "[wray: {n} more bytes were dropped: a task keeps its first {} KiB]",
            wray_host::bounds::TASK_OUTPUT_BYTES >> 10
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
