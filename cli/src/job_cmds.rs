//! `wray job …`, Ray's `ray job` over the node's Jobs API: `submit` runs
//! a deployed component's `main` (or a `.wasm` file's, deploying it
//! first) as a job, with its options (directories, a working directory
//! packed here and uploaded, environment variables, driver resources, a
//! time limit, metadata), and follows its log until it ends; `logs`,
//! `status`, `stop`, `list` and `delete`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use wray_api::{encode, JobDir, JobInfo, JobStatus, JobStopped, JobWorkingDir, SubmitJob};
use wray_host::working_dir::{pack, PackOptions};
use wray_host::Preopen;

use crate::client::{upload, Client, NodeArg};

/// The most jobs `wray job list` reads (a node remembers 256).
const LISTED_JOBS: usize = 10_000;

/// The `wray job` subcommands.
#[derive(Subcommand)]
pub enum JobCommand {
    /// Run `main(args)` of a deployed component (`app`, or a kept version
    /// `app@3`), or of a `.wasm` file (deployed first, under its file
    /// stem), as a job, with directories, environment variables, driver
    /// resources, a time limit and metadata; follow its log until it ends
    /// (exit 1 when it fails) unless `--no-wait`.
    Submit(Box<SubmitArgs>),
    /// Print a job's log; `--follow` streams it until the job ends.
    Logs(LogsArgs),
    /// Print a job's status, times, and why it failed or stopped.
    Status(JobArg),
    /// Stop a job: its driver, tasks and actors are cancelled.
    Stop(JobArg),
    /// List the jobs of the node's cluster, newest first, with the node
    /// running each.
    List(NodeArg),
    /// Forget a finished job and its log.
    Delete(JobArg),
}

/// Arguments of `wray job submit`.
#[derive(Args)]
pub struct SubmitArgs {
    /// A deployed component's name (`app`, or `app@3` for a version the
    /// node keeps), or a `.wasm` file to deploy.
    component: String,
    /// Return once the job is submitted.
    #[arg(long)]
    no_wait: bool,
    /// Let the job's driver, tasks and actors read host directory HOST,
    /// read-only, seen at GUEST (default: the same path). HOST must be
    /// inside a directory the node allows (`wray start --allow-dir`).
    /// Repeatable.
    #[arg(long = "dir", value_name = "HOST[::GUEST]")]
    dirs: Vec<String>,
    /// Take local directory DIR to every node the job's tasks reach
    /// (Ray's `working_dir`): packed here (`.git` and `--exclude`s left
    /// out), uploaded once, and seen read-only by the job's driver, tasks
    /// and actors at GUEST (default `.`: their current directory, so
    /// relative paths resolve in it).
    #[arg(long, value_name = "DIR[::GUEST]")]
    working_dir: Option<String>,
    /// A glob pattern of what `--working-dir` leaves out (`*.log`,
    /// `data/raw`, `/build`): without `/` it matches any entry's name,
    /// with `/` the path from the directory. Repeatable.
    #[arg(long = "exclude", value_name = "PATTERN", requires = "working_dir")]
    excludes: Vec<String>,
    /// The most MiB `--working-dir` may pack to (the nodes hold packages
    /// to their own `--max-working-dir-mib`).
    #[arg(long, value_name = "MIB", default_value_t = wray_host::config::DEFAULT_MAX_WORKING_DIR >> 20,
          value_parser = clap::value_parser!(u64).range(1..=wray_host::bounds::MAX_WORKING_DIR_BYTES >> 20))]
    max_working_dir_mib: u64,
    /// Set environment variable K of the job's guests. Repeatable.
    #[arg(long = "env", value_name = "K=V")]
    env: Vec<String>,
    /// CPUs the driver waits for and holds while it runs (Ray's
    /// `--entrypoint-num-cpus`; fractional; default none).
    #[arg(long, value_name = "N")]
    num_cpus: Option<f64>,
    /// GPUs the driver waits for and holds while it runs (fractional).
    #[arg(long, value_name = "N")]
    num_gpus: Option<f64>,
    /// Custom resources the driver waits for and holds, as JSON:
    /// '{"accelerator": 1}'.
    #[arg(long, value_name = "JSON")]
    resources: Option<String>,
    /// Seconds the whole job may take from its submission (waiting for
    /// resources included); past it the job is stopped and fails.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// A label kept with the job, shown by `job status` and `job list`.
    /// Repeatable.
    #[arg(long = "metadata", value_name = "K=V")]
    metadata: Vec<String>,
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
        JobCommand::Submit(args) => submit(*args),
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
            let read = crate::remote_state::rows::<wray_api::JobList>(
                &client,
                "/v1/jobs",
                None,
                wray_api::Order::Newest,
                LISTED_JOBS,
            )?;
            crate::remote_state::tell_unreachable(&read.unreachable);
            let jobs = read.rows;
            for j in &jobs {
                let mut line = format!(
                    "{}  {:<9}  {}  {} {}",
                    j.job_id,
                    j.status.as_str(),
                    j.node_id,
                    j.component,
                    j.args.join(" ")
                );
                if !j.options.metadata.is_empty() {
                    line.push_str(&format!("  [{}]", labels(&j.options.metadata)));
                }
                println!("{}", line.trim_end());
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
    let mut submit = job_body(&args)?;
    submit.component = deployed_name(&client, &args.component)?;
    if let Some(spec) = &args.working_dir {
        submit.working_dir = Some(upload_working_dir(&client, &args, spec)?);
    }
    let component = submit.component.clone();
    let body = serde_json::to_string(&submit)?;
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
    follow_to_end(&client, &id)
}

/// Follows job `id`'s log until it ends, then prints its status: exit 0
/// when it succeeded, 1 otherwise.
fn follow_to_end(client: &Client, id: &str) -> anyhow::Result<ExitCode> {
    logs(client, id, true)?;
    let info = job(client, id)?;
    print_status(&info);
    Ok(if info.status == JobStatus::Succeeded {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `wray run --address`: deploys `component` and each of `with` (under
/// their file stems) on the node `node` names, runs `main(args)` there as
/// a job and follows its log until it ends (exit 0 when it succeeded).
pub(crate) fn run_on(
    node: &NodeArg,
    component: &Path,
    with: &[std::path::PathBuf],
    args: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let client = node.client()?;
    for path in with {
        deployed_name(&client, &path.to_string_lossy())?;
    }
    let submit = SubmitJob {
        component: deployed_name(&client, &component.to_string_lossy())?,
        args,
        ..SubmitJob::default()
    };
    let info: JobInfo = client.typed(
        client
            .request("POST", "/v1/jobs")
            .set("Content-Type", "application/json")
            .send_string(&serde_json::to_string(&submit)?),
    )?;
    eprintln!(
        "wray: job {} runs on {} ({}); its log follows (Ctrl-C leaves it running)",
        info.job_id, client.url, submit.component
    );
    follow_to_end(&client, &info.job_id)
}

/// The body of `POST /v1/jobs` that `args` describe (the component is
/// filled in by the caller).
fn job_body(args: &SubmitArgs) -> anyhow::Result<SubmitJob> {
    let mut dirs = Vec::with_capacity(args.dirs.len());
    for spec in &args.dirs {
        let p = Preopen::parse(spec)?;
        // A relative path means one under the directory the command runs
        // in (the node refuses paths that are not absolute).
        let host = std::path::absolute(&p.host)
            .with_context(|| format!("--dir {spec}: making it absolute"))?;
        dirs.push(JobDir {
            host: host.to_string_lossy().into_owned(),
            guest: p.guest,
        });
    }
    let resources = match &args.resources {
        None => BTreeMap::new(),
        Some(json) => serde_json::from_str(json).map_err(|e| {
            anyhow::anyhow!("--resources {json}: expected a JSON object of names to numbers: {e}")
        })?,
    };
    Ok(SubmitJob {
        component: String::new(),
        args: args.args.clone(),
        dirs,
        env: pairs("--env", &args.env)?,
        num_cpus: args.num_cpus,
        num_gpus: args.num_gpus,
        resources,
        timeout: args.timeout,
        metadata: pairs("--metadata", &args.metadata)?,
        working_dir: None,
    })
}

/// Packs `--working-dir` `spec` (`DIR[::GUEST]`) and uploads it to the
/// node unless the node keeps it already; what the job names.
fn upload_working_dir(
    client: &Client,
    args: &SubmitArgs,
    spec: &str,
) -> anyhow::Result<JobWorkingDir> {
    let (dir, guest) = match spec.split_once("::") {
        Some((dir, guest)) => (dir, guest.to_string()),
        None => (spec, wray_api::DEFAULT_WORKING_DIR_GUEST.to_string()),
    };
    let options = PackOptions {
        excludes: args.excludes.clone(),
        max_bytes: args.max_working_dir_mib.saturating_mul(1 << 20),
    };
    let packed = pack(Path::new(dir), &options).with_context(|| format!("--working-dir {dir}"))?;
    let id = packed.id.to_string();
    let known = client
        .request("GET", &format!("/v1/packages/{}", encode(&id)))
        .call()
        .is_ok();
    if !known {
        let _: wray_api::PackageInfo = client.typed(
            client
                .request("POST", "/v1/packages")
                .set("Content-Type", "application/x-tar")
                .send_bytes(&packed.bytes),
        )?;
    }
    eprintln!(
        "working dir {dir}: {} files, {} bytes packed ({} left out), {} ({id})",
        packed.files,
        packed.bytes.len(),
        packed.excluded,
        if known {
            "on the node already"
        } else {
            "uploaded"
        }
    );
    Ok(JobWorkingDir { package: id, guest })
}

/// `K=V` values of `flag` as a map (a key given twice keeps its last
/// value).
fn pairs(flag: &str, given: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for pair in given {
        let Some((k, v)) = pair.split_once('=') else {
            bail!("{flag} {pair}: expected K=V");
        };
        map.insert(k.to_string(), v.to_string());
    }
    Ok(map)
}

/// `k=v, ..`.
fn labels(map: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.join(", ")
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

/// Prints a job's status line, its metadata and, when it failed or
/// stopped, why.
fn print_status(info: &JobInfo) {
    let times = match (info.start_time, info.end_time) {
        (Some(s), Some(e)) => format!(" in {:.3} s", e - s),
        _ => String::new(),
    };
    println!(
        "job {} {}{times} ({} bytes of log)",
        info.job_id,
        info.status.as_str(),
        info.log_bytes
    );
    if !info.options.metadata.is_empty() {
        println!("  metadata: {}", labels(&info.options.metadata));
    }
    if let Some(m) = &info.message {
        println!("  {m}");
    }
}
