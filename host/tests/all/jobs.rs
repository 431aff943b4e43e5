//! Background jobs (`Jobs`): each job's guests write into its own bounded
//! log, jobs stop when asked, and the tables stay bounded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_host::{JobError, JobInfo, JobStatus, Jobs, JobsConfig, Node, NodeConfig, Stdio};

use crate::support::component;

/// A node with the `api` fixture deployed, its own stdio in memory.
fn node() -> (Arc<Node>, Stdio) {
    let stdio = Stdio::memory();
    let node = Node::start(NodeConfig {
        num_cpus: 2,
        stdio: stdio.clone(),
        max_instances: 64,
        ..NodeConfig::default()
    })
    .expect("node starts");
    node.deploy_file_blocking(component("api"))
        .expect("api deploys");
    (node, stdio)
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Waits (up to 60 s) for job `info` to end; its last info.
pub(crate) fn ended(jobs: &Jobs, info: &JobInfo) -> JobInfo {
    let job = info.job_id.parse().expect("a job id");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = jobs.info(job).expect("the job is remembered");
        if now.status.is_terminal() {
            return now;
        }
        assert!(Instant::now() < deadline, "job still {:?}", now.status);
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The whole kept log of job `info`.
fn log_text(jobs: &Jobs, info: &JobInfo) -> String {
    let log = jobs
        .log(info.job_id.parse().expect("a job id"))
        .expect("a log")
        .0;
    String::from_utf8(log.read(0, usize::MAX).bytes).expect("utf-8")
}

#[test]
fn each_jobs_driver_and_tasks_write_into_its_own_log_only() {
    let (node, stdio) = node();
    let jobs = Jobs::default();
    let a = jobs
        .submit_blocking(node.clone(), "api", args(&["job_output", "alpha", "3"]))
        .expect("submits");
    let b = jobs
        .submit_blocking(node.clone(), "api", args(&["job_output", "beta", "2"]))
        .expect("submits");
    assert_ne!(a.job_id, b.job_id);
    for (info, tag, n) in [(&a, "alpha", 3), (&b, "beta", 2)] {
        let end = ended(&jobs, info);
        assert_eq!(end.status, JobStatus::Succeeded, "{end:?}");
        assert!(end.start_time.is_some() && end.end_time >= end.start_time);
        let text = log_text(&jobs, info);
        for i in 0..n {
            assert!(text.contains(&format!("driver {tag} {i}\n")), "{text}");
        }
        for line in [
            format!("driver {tag} stderr"),
            format!("task {tag}\n"),
            format!("task {tag} stderr"),
            format!("done {tag} {}", tag.len()),
        ] {
            assert!(text.contains(&line), "`{line}` not in {text}");
        }
        let other = if tag == "alpha" { "beta" } else { "alpha" };
        assert!(!text.contains(other), "{other} in {tag}'s log: {text}");
        assert_eq!(end.log_bytes, text.len() as u64);
    }
    assert!(
        !stdio.stdout_text().contains("driver"),
        "job output reached the node's stdout: {}",
        stdio.stdout_text()
    );
    // `run_main` still writes to the node's stdio.
    let outcome = node
        .run_main_blocking("api", &args(&["job_output", "plain", "1"]))
        .expect("runs");
    assert_eq!(outcome.result, Ok(()));
    assert!(stdio.stdout_text().contains("driver plain 0"));
}

#[test]
fn a_job_writing_past_its_log_keeps_the_tail_and_succeeds() {
    let (node, _stdio) = node();
    let jobs = Jobs::new(JobsConfig {
        log_bytes: 4096,
        ..JobsConfig::default()
    });
    let info = jobs
        .submit_blocking(node, "api", args(&["job_output", "long", "5000"]))
        .expect("submits");
    let end = ended(&jobs, &info);
    // A failing stdout would make the guest's println! panic.
    assert_eq!(end.status, JobStatus::Succeeded, "{end:?}");
    let (log, _) = jobs.log(info.job_id.parse().expect("id")).expect("log");
    let chunk = log.read(0, usize::MAX);
    assert!(chunk.bytes.len() <= 4096);
    assert!(chunk.dropped > 40_000, "dropped {}", chunk.dropped);
    assert_eq!(chunk.dropped + chunk.bytes.len() as u64, end.log_bytes);
    assert!(chunk.done);
    let text = String::from_utf8_lossy(&chunk.bytes);
    assert!(text.contains("driver long 4999\n"), "{text}");
    assert!(text.ends_with("done long 4\n"), "{text}");
}

#[test]
fn a_stopped_job_ends_stopped_and_a_failing_one_failed() {
    let (node, _stdio) = node();
    let jobs = Jobs::default();
    let forever = jobs
        .submit_blocking(node.clone(), "api", args(&["job_forever"]))
        .expect("submits");
    let job = forever.job_id.parse().expect("id");
    let (log, status) = jobs.log(job).expect("log");
    assert!(matches!(status, JobStatus::Pending | JobStatus::Running));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !String::from_utf8_lossy(&log.read(0, 100).bytes).contains("started") {
        assert!(Instant::now() < deadline, "the job never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(jobs.info(job).expect("info").status, JobStatus::Running);
    assert!(matches!(jobs.delete(job), Err(JobError::StillRunning(_))));
    let asked = Instant::now();
    assert!(jobs.stop(job).expect("stops"));
    let end = ended(&jobs, &forever);
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(end.status, JobStatus::Stopped, "{end:?}");
    assert!(end.message.as_deref().unwrap_or("").contains("stopped"));
    assert!(!jobs.stop(job).expect("known"), "stopping twice");
    assert!(log.read(0, 1000).done);
    // The node is fine: the sleeping task was cancelled with the job.
    let failing = jobs
        .submit_blocking(node.clone(), "api", args(&["no_such_scenario"]))
        .expect("submits");
    let end = ended(&jobs, &failing);
    assert_eq!(end.status, JobStatus::Failed);
    assert!(
        end.message
            .as_deref()
            .unwrap_or("")
            .contains("unknown scenario no_such_scenario"),
        "{end:?}"
    );
    jobs.delete(job).expect("a finished job is deleted");
    assert!(matches!(jobs.info(job), Err(JobError::NotFound(..))));
    assert_eq!(jobs.list().len(), 1);
}

#[test]
fn jobs_past_the_bounds_are_refused_and_bad_components_named() {
    let (node, _stdio) = node();
    let jobs = Jobs::new(JobsConfig {
        max_running: 1,
        max_kept: 2,
        ..JobsConfig::default()
    });
    let forever = jobs
        .submit_blocking(node.clone(), "api", args(&["job_forever"]))
        .expect("submits");
    let busy = jobs
        .submit_blocking(node.clone(), "api", args(&["job_output", "x", "1"]))
        .expect_err("one job at a time");
    assert!(
        busy.to_string()
            .contains("the most this node runs at once is 1"),
        "{busy}"
    );
    jobs.stop(forever.job_id.parse().expect("id"))
        .expect("stops");
    ended(&jobs, &forever);
    // Three finished jobs in a table of two: the oldest is forgotten.
    for tag in ["one", "two"] {
        let info = jobs
            .submit_blocking(node.clone(), "api", args(&["job_output", tag, "1"]))
            .expect("submits");
        ended(&jobs, &info);
    }
    let kept: Vec<String> = jobs.list().into_iter().map(|j| j.args[1].clone()).collect();
    assert_eq!(kept, ["one", "two"]);
    let e = jobs
        .submit_blocking(
            node.clone(),
            "api",
            vec!["x".repeat(40_000), "y".repeat(40_000)],
        )
        .expect_err("too long");
    assert!(e.to_string().contains("80000 bytes"), "{e}");
    let e = jobs
        .submit_blocking(node.clone(), "nothing", Vec::new())
        .expect_err("not deployed");
    assert!(e.to_string().contains("`nothing` is not deployed"), "{e}");
    // Inside a tokio runtime the blocking form refuses rather than block
    // (or panic in) a thread the runtime serves other tasks on.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let inside = runtime.block_on(async { jobs.submit_blocking(node.clone(), "api", Vec::new()) });
    let e = inside.expect_err("refused inside a runtime");
    assert!(e.to_string().contains("submit_with_blocking"), "{e}");
    node.deploy_file_blocking(component("sum_bytes"))
        .expect("deploys");
    let e = jobs
        .submit_blocking(node, "sum_bytes", Vec::new())
        .expect_err("no main");
    assert!(
        e.to_string()
            .contains("has no `main`: it exports no `driver` interface"),
        "{e}"
    );
}
