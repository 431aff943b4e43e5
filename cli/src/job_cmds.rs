//! `wray job …`, Ray's `ray job` over the node's Jobs API: `submit` runs
//! a deployed component's `main` (or a `.wasm` file's, deploying it
//! first) as a job and follows its log until it ends; `logs`, `status`,
//! `stop`, `list` and `delete`.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use wray_api::{encode, JobInfo, JobStatus, JobStopped, SubmitJob};

use crate::client::{upload, Client, NodeArg};

/// The `wray job` subcommands.
#[derive(Subcommand)]
pub enum JobCommand {
    /// Run `main(args)` of a deployed component, or of a `.wasm` file
    /// (deployed first, under its file stem), as a job; follow its log
    /// until it ends (exit 1 when it fails) unless `--no-wait`.
    Submit(SubmitArgs),
    /// Print a job's log; `--follow` streams it until the job ends.
    Logs(LogsArgs),
    /// Print a job's status, times, and why it failed or stopped.
    Status(JobArg),
    /// Stop a job: its driver, tasks and actors are cancelled.
    Stop(JobArg),
    /// List the node's jobs, oldest first.
    List(NodeArg),
    /// Forget a finished job and its log.
    Delete(JobArg),
}

/// Arguments of `wray job submit`.
#[derive(Args)]
pub struct SubmitArgs {
    /// A deployed component's name, or a `.wasm` file to deploy.
    component: String,
    /// Return once the job is submitted.
    #[arg(long)]
    no_wait: bool,
    /// `main`'s arguments (after `--`).
    #[arg(last = true)]
    args: Vec<String>,
    #[command(flatten)]
    node: NodeArg,
}

/// A job of the node.
#[derive(Args)]
pub struct JobArg {
    /// The job's id (16 hex digits, as `submit` printed it).
    job: String,
    #[command(flatten)]
    node: NodeArg,
}

/// Arguments of `wray job logs`.
#[derive(Args)]
pub struct LogsArgs {
    #[command(flatten)]
    job: JobArg,
    /// Stream the log until the job ends.
    #[arg(long, short)]
    follow: bool,
}

/// Runs `command`.
///
/// # Errors
/// The node cannot be reached, or refused (the message names why).
pub fn run(command: JobCommand) -> anyhow::Result<ExitCode> {
    match command {
        JobCommand::Submit(args) => submit(args),
        JobCommand::Logs(args) => {
            let client = args.job.node.client()?;
            logs(&client, &args.job.job, args.follow)?;
            Ok(ExitCode::SUCCESS)
        }
        JobCommand::Status(args) => {
            let client = args.node.client()?;
            let info = job(&client, &args.job)?;
            print_status(&info);
            Ok(ExitCode::SUCCESS)
        }
        JobCommand::Stop(args) => {
            let client = args.node.client()?;
            let v: JobStopped = client.typed(
                client
                    .request("POST", &format!("/v1/jobs/{}/stop", encode(&args.job)))
                    .send_string(""),
            )?;
            if v.stopped {
                println!("job {} stopping", args.job);
            } else {
                println!("job {} had already ended", args.job);
            }
            Ok(ExitCode::SUCCESS)
        }
        JobCommand::List(node) => {
            let client = node.client()?;
            let jobs: Vec<JobInfo> = client.typed(client.request("GET", "/v1/jobs").call())?;
            for j in &jobs {
                println!(
                    "{}  {:<9}  {} {}",
                    j.job_id,
                    status_name(j.status),
                    j.component,
                    j.args.join(" ")
                );
            }
            println!("{} jobs", jobs.len());
            Ok(ExitCode::SUCCESS)
        }
        JobCommand::Delete(args) => {
            let client = args.node.client()?;
            let _: wray_api::JobDeleted = client.typed(
                client
                    .request("DELETE", &format!("/v1/jobs/{}", encode(&args.job)))
                    .call(),
            )?;
            println!("deleted job {}", args.job);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `wray job submit`.
fn submit(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let client = args.node.client()?;
    let component = deployed_name(&client, &args.component)?;
    let body = serde_json::to_string(&SubmitJob {
        component: component.clone(),
        args: args.args,
    })?;
    let info: JobInfo = client.typed(
        client
            .request("POST", "/v1/jobs")
            .set("Content-Type", "application/json")
            .send_string(&body),
    )?;
    let id = info.job_id;
    eprintln!("job {id} submitted ({component})");
    if args.no_wait {
        println!("{id}");
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("following its log until it ends (--no-wait returns at once; Ctrl-C leaves the job running)");
    logs(&client, &id, true)?;
    let info = job(&client, &id)?;
    print_status(&info);
    Ok(if info.status == JobStatus::Succeeded {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The name to submit: `component`, or, for a `.wasm` file, the name it
/// was deployed under here.
fn deployed_name(client: &Client, component: &str) -> anyhow::Result<String> {
    let path = Path::new(component);
    if path.extension().is_none_or(|e| e != "wasm") {
        return Ok(component.to_string());
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the file has no name to deploy it under")?;
    upload(client, name, &bytes)?;
    Ok(name.to_string())
}

/// Job `id`'s info.
fn job(client: &Client, id: &str) -> anyhow::Result<JobInfo> {
    client.typed(
        client
            .request("GET", &format!("/v1/jobs/{}", encode(id)))
            .call(),
    )
}

/// A status as the API spells it (`SUCCEEDED`).
fn status_name(status: JobStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Copies job `id`'s log to stdout as it arrives (until the job ends, with
/// `follow`).
fn logs(client: &Client, id: &str, follow: bool) -> anyhow::Result<()> {
    let query = if follow { "?follow=true" } else { "" };
    let response = client.response(
        client
            .request("GET", &format!("/v1/jobs/{}/logs{query}", encode(id)))
            .call(),
    )?;
    if let Some(n) = response.header("wray-log-dropped").filter(|n| *n != "0") {
        eprintln!("[wray: the first {n} bytes of the log were dropped: it keeps the last part]");
    }
    let mut body = response.into_reader();
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = body.read(&mut buf).context("reading the log")?;
        if n == 0 {
            return Ok(());
        }
        out.write_all(&buf[..n])?;
        out.flush()?;
    }
}

/// Prints a job's status line and, when it failed or stopped, why.
fn print_status(info: &JobInfo) {
    let times = match (info.start_time, info.end_time) {
        (Some(s), Some(e)) => format!(" in {:.3} s", e - s),
        _ => String::new(),
    };
    println!(
        "job {} {}{times} ({} bytes of log)",
        info.job_id,
        status_name(info.status),
        info.log_bytes
    );
    if let Some(m) = &info.message {
        println!("  {m}");
    }
}
