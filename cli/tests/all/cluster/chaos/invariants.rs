//! What must hold after a schedule of faults: see the suite's
//! documentation (`mod.rs`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::faults::Injector;
use crate::cluster::harness::{job_log, Cluster, OWN_TASKS};

/// The task states of work not yet ended.
const LIVE: [&str; 4] = ["PENDING_ARGS", "QUEUED", "RUNNING", "BLOCKED"];

/// The error kinds a fault explains: a node or its link lost
/// (`System`), an actor lost with its node (`ActorDied`), a deadline
/// passed (`Timeout`), work cancelled with its owner (`Cancelled`).
/// Anything else (a wrong value, `Trap`, `Infeasible`: node 1 can always
/// run the workload) is a bug.
const EXPLAINED: [&str; 4] = ["System", "ActorDied", "Timeout", "Cancelled"];

/// Words of an error saying that work failed without ever reaching a
/// node (a refused connection or handshake, a wrong token): such work goes
/// to another node instead (issue 38, items 4 and 5), so these are bugs
/// whatever their kind, unless the actor lived on that node (its node's
/// loss, seen as a refused connection before its lease ended, killed an
/// actor out of restarts).
const NEVER_REACHED: [&str; 4] = [
    "refused the handshake",
    "wrong cluster token",
    "Connection refused",
    "failed to prove",
];

/// How long, after the jobs end, the nodes have to settle: tasks ended,
/// stores and descriptors back to their baseline.
const SETTLE: Duration = Duration::from_secs(45);

/// Open file descriptors a node may hold past its baseline: the peer
/// connections a node keeps to each other node (its client's pool, at
/// most 8 idle per peer, and the other nodes' pools to it), a few more
/// for the nodes started again meanwhile.
const FD_SLACK_PER_PEER: usize = 16;

/// Each node's state before the workload, by process id.
pub struct Baseline {
    nodes: BTreeMap<u32, (usize, f64)>,
}

impl Baseline {
    /// Each node's open descriptors and object store bytes.
    pub fn take(cluster: &Cluster) -> Baseline {
        let nodes = (1..=cluster.len())
            .map(|i| {
                let node = cluster.node(i);
                let store = node.metric("wray_object_store_bytes").unwrap_or(0.0);
                (node.pid, (fds(node.pid), store))
            })
            .collect();
        Baseline { nodes }
    }
}

/// The open descriptors of process `pid`.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The nodes' rows of work not yet ended, or `Ok` when there is none.
pub fn no_live_tasks(cluster: &Cluster) -> Result<(), String> {
    let mut left = String::new();
    for i in (1..=cluster.len()).filter(|&i| cluster.node(i).alive()) {
        let node = cluster.node(i);
        let rows = node
            .request("GET", OWN_TASKS)
            .timeout(Duration::from_secs(5))
            .call()
            .map_err(|e| format!("node {i} did not list its tasks: {e}"))?
            .into_json::<serde_json::Value>()
            .map_err(|e| format!("node {i}'s tasks are not JSON: {e}"))?;
        for row in rows["tasks"].as_array().into_iter().flatten() {
            if LIVE.iter().any(|s| row["state"] == *s) {
                let _ = write!(left, "\n  node {i}: {row}");
            }
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("work left behind:{left}"))
    }
}

/// Checks every invariant once the jobs `(node, id, driver pid)` end (by
/// `deadline` at the latest); what broke, else `Ok`.
pub fn check(
    injector: &Injector,
    baseline: &Baseline,
    jobs: &[(usize, String, u32)],
    deadline: Instant,
) -> Result<(), String> {
    let cluster = injector.cluster();
    let mut broken = String::new();
    for note in &injector.notes {
        println!("chaos note: {note}");
    }
    for (n, id, pid) in jobs {
        let node = cluster.node(*n);
        if node.pid != *pid {
            println!("chaos: job {id} went with its driver's node {n}");
            continue;
        }
        match job_end(cluster, *n, id, deadline) {
            Err(why) => {
                let _ = write!(broken, "\n- job {id} on node {n}: {why}");
                continue;
            }
            Ok(status) if !status.contains("SUCCEEDED") => {
                let log = job_log(node, id);
                let _ = write!(broken, "\n- job {id} on node {n} ended {status}: {log}");
                continue;
            }
            Ok(_) => {}
        }
        let log = job_log(node, id);
        if let Err(why) = results(&log) {
            let _ = write!(broken, "\n- job {id} on node {n}: {why}\n  its log: {log}");
        } else {
            println!("chaos: job {id} on node {n}: {}", summary(&log));
            for error in log.lines().filter(|l| l.starts_with("chaos error ")) {
                println!("  {error}");
            }
        }
    }
    let settle = Instant::now() + SETTLE;
    let mut last = String::new();
    loop {
        match settled(cluster, baseline) {
            Ok(()) => break,
            Err(why) if Instant::now() > settle => {
                last = why;
                break;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    if !last.is_empty() {
        let _ = write!(broken, "\n- {SETTLE:?} after the jobs: {last}");
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(broken)
    }
}

/// Waits for job `id` on node `n` to end; its status line, or why not.
fn job_end(cluster: &Cluster, n: usize, id: &str, deadline: Instant) -> Result<String, String> {
    let node = cluster.node(n);
    loop {
        let out = node.run(&["job", "status", id]);
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        if ["SUCCEEDED", "FAILED", "STOPPED"]
            .iter()
            .any(|s| said.contains(s))
        {
            return Ok(said);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "did not end by its timeout; status: {said} {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The workload's summary line.
fn summary(log: &str) -> &str {
    log.lines()
        .find(|l| l.starts_with("chaos rounds"))
        .unwrap_or("(no summary)")
}

/// Checks the workload's log: no wrong value, no lost update, the object
/// kept, some work done, and every error explained.
fn results(log: &str) -> Result<(), String> {
    let line = log
        .lines()
        .find(|l| l.starts_with("chaos rounds"))
        .ok_or("no summary line")?;
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    let field = |name: &str| -> Option<&str> {
        words
            .chunks(2)
            .find(|pair| pair.first() == Some(&name))
            .and_then(|pair| pair.get(1).copied())
    };
    let number = |name: &str| field(name).and_then(|v| v.parse::<u64>().ok());
    let mut wrong = String::new();
    for name in ["tasks_wrong", "reads_wrong", "lost_updates", "overdue"] {
        match number(name) {
            Some(0) => {}
            other => {
                let _ = write!(wrong, " {name} {other:?};");
            }
        }
    }
    if number("tasks_ok").unwrap_or(0) == 0 {
        wrong.push_str(" no task succeeded;");
    }
    if field("object") != Some("kept") {
        let _ = write!(wrong, " the driver's object {:?};", field("object"));
    }
    for error in log.lines().filter_map(|l| l.strip_prefix("chaos error ")) {
        let (kind, message) = error.split_once(": ").unwrap_or((error, ""));
        // An actor that lived on a node lost with it (out of restarts) is
        // explained however its node's loss showed.
        let lived_there = message.contains("the actor lived there");
        let unreached = !lived_there && NEVER_REACHED.iter().any(|w| message.contains(w));
        if !EXPLAINED.contains(&kind) || message.trim().len() < 10 || unreached {
            let _ = write!(wrong, " an unexplained error: {error};");
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}

/// Whether every live node has no work left, and those that ran since the
/// baseline have their store and descriptors back to it.
fn settled(cluster: &Cluster, baseline: &Baseline) -> Result<(), String> {
    no_live_tasks(cluster)?;
    let live = (1..=cluster.len())
        .filter(|&i| cluster.node(i).alive())
        .count();
    let mut over = String::new();
    for i in (1..=cluster.len()).filter(|&i| cluster.node(i).alive()) {
        let node = cluster.node(i);
        let Some(&(fds_then, store_then)) = baseline.nodes.get(&node.pid) else {
            continue;
        };
        let store = node.metric("wray_object_store_bytes").unwrap_or(f64::MAX);
        if store > store_then + f64::from(1u32 << 20) {
            let _ = write!(
                over,
                " node {i}'s store holds {store} bytes (was {store_then});"
            );
        }
        let now = fds(node.pid);
        let bound = fds_then + FD_SLACK_PER_PEER * live;
        if now > bound {
            let _ = write!(
                over,
                " node {i} holds {now} descriptors (was {fds_then}, bound {bound});"
            );
        }
    }
    if over.is_empty() {
        Ok(())
    } else {
        Err(over)
    }
}
