//! Fate sharing and drains, as Ray's (issue 38, items 6 and 7): the work
//! a dead node owned on the others goes with it (its queued and running
//! tasks, its objects, its actors, but not a detached one); a node
//! stopped with `wray stop` hands back what it queued, finishes what runs
//! within its `--grace` (its owners re-send none of it), and cuts what
//! runs past the grace, which runs again elsewhere.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::harness::{
    count, job_log, ran, start_job, wait_job_end, wait_within, Cluster, ACCELERATED,
};
use crate::node_ops::StartedNode;
use crate::support::success_stdout;

/// The states of a task that has not ended.
const UNFINISHED: [&str; 4] = ["PENDING_ARGS", "QUEUED", "RUNNING", "BLOCKED"];

/// How many of `node`'s tasks of `function` have not ended.
fn unfinished(node: &StartedNode, function: &str) -> usize {
    UNFINISHED
        .iter()
        .map(|state| count(node, &[function], state))
        .sum()
}

/// The actors living on `node` (not stubs), by name (`plain` for the
/// unnamed): their state.
fn actors_on(node: &StartedNode) -> BTreeMap<String, String> {
    let listed = node.get(&format!("/v1/actors?limit=1000&node={}", node.node_id));
    listed["actors"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|a| a["stub"] != Value::Bool(true) && a["class"] == "Tally")
        .map(|a| {
            let name = a["name"].as_str().unwrap_or("plain").to_string();
            (name, a["state"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

/// Bytes in `node`'s object store.
fn store(node: &StartedNode) -> f64 {
    node.metric("wray_object_store_bytes").unwrap_or(-1.0)
}

#[test]
fn the_work_of_a_dead_owner_goes_with_it_but_a_detached_actor_stays() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &ACCELERATED]);
    let baseline = [store(cluster.node(2)), store(cluster.node(3))];
    let two = cluster.node(2).node_id.clone();
    // 16 tasks of 30 s, each holding a 2 MiB argument: 2 run on each of
    // nodes 2 and 3, 6 more wait on node 2 (pinned there), the rest on
    // node 1; and two tallies of node 1's on node 2, one detached.
    let _job = start_job(cluster.node(1), &["cluster_fate", &two, "16", "30000"]);
    wait_within(
        "tasks running on nodes 2 and 3, queued on node 2",
        Duration::from_secs(60),
        || {
            count(cluster.node(2), &["nap"], "RUNNING") >= 1
                && count(cluster.node(3), &["nap"], "RUNNING") >= 1
                && count(cluster.node(2), &["nap"], "QUEUED") >= 1
        },
    );
    let before = actors_on(cluster.node(2));
    assert_eq!(
        before.values().filter(|s| *s == "ALIVE").count(),
        2,
        "{before:?}"
    );
    let killed = cluster.kill(1);
    // Node 1's lease lapses within 4 s, and its work goes at once: well
    // before the tasks' 30 s.
    let limit = Duration::from_secs(15);
    for i in [2, 3] {
        let node = cluster.node(i);
        let left = limit.saturating_sub(killed.elapsed());
        wait_within(&format!("node {i} to drop node 1's tasks"), left, || {
            unfinished(node, "nap") == 0
        });
        let left = limit.saturating_sub(killed.elapsed());
        wait_within(
            &format!("node {i}'s store back to {}", baseline[i - 2]),
            left,
            || store(node) == baseline[i - 2],
        );
        let cancelled = node.metric("wray_cluster_tasks_cancelled_total{reason=\"owner_died\"}");
        assert!(
            cancelled.is_some_and(|n| n >= 2.0),
            "node {i}: {cancelled:?}"
        );
    }
    let left = limit.saturating_sub(killed.elapsed());
    wait_within("node 1's plain tally to die", left, || {
        actors_on(cluster.node(2)).get("plain").map(String::as_str) == Some("DEAD")
    });
    let after = actors_on(cluster.node(2));
    assert_eq!(
        after.get("fate-detached").map(String::as_str),
        Some("ALIVE"),
        "a detached actor outlives its owner: {after:?}"
    );
}

#[test]
fn a_drained_node_finishes_what_runs_hands_back_what_waits_and_cuts_at_its_grace() {
    let two: [&str; 4] = ["--num-cpus", "4", "--grace", "4"];
    let cluster = Cluster::with_api(3, &[&[], &two, &[]]);
    let drained = cluster.node(2).node_id.clone();
    // Task 0 (15 s) starts on node 2 first, then 8 tasks of 2.5 s go
    // there too: 3 run beside it, the rest wait (or move on: spillback).
    let id = start_job(
        cluster.node(1),
        &["cluster_drain", &drained, "8", "2500", "15000"],
    );
    wait_within("4 tasks running on node 2", Duration::from_secs(60), || {
        count(cluster.node(2), &["drained"], "RUNNING") >= 4
    });
    let stopping = Instant::now();
    success_stdout(&cluster.node(2).run(&["stop"]));
    let took = stopping.elapsed();
    let said = std::fs::read_to_string(cluster.node(2).dir.join("node.log")).unwrap_or_default();
    // It waited for the short ones, not for task 0: cut at the grace.
    assert!(
        took < Duration::from_secs(15),
        "node 2 took {took:?} to stop: {said}"
    );
    for line in said.lines().filter(|l| l.contains("drain")) {
        eprintln!("node 2: {line}");
    }
    let status = wait_job_end(cluster.node(1), &id, Duration::from_secs(120));
    let log = job_log(cluster.node(1), &id);
    assert!(status.contains("SUCCEEDED"), "{status}\n{log}");
    assert!(log.contains("exact true"), "{log}");
    assert!(log.contains("distinct 9"), "{log}");
    // Only task 0 ran twice: cut on node 2 at its grace, run again
    // elsewhere. The others ran once, on node 2 or where they were
    // handed back to.
    assert!(log.contains("again [(0, 2)]"), "{log}\nnode 2 said: {said}");
    assert!(!log.contains(&format!("long_on {drained}")), "{log}");
    // Cut at the grace is not a retry (as Ray's preempted nodes).
    let owner = cluster.node(1);
    assert_eq!(
        owner.metric("wray_cluster_tasks_preempted_total"),
        Some(1.0),
        "task 0 ran again after its cut"
    );
    assert_eq!(owner.metric("wray_cluster_tasks_retried_total"), Some(0.0));
    let counts = ran(&log);
    assert_eq!(counts.values().sum::<u64>(), 9, "{log}");
    assert!(
        counts.get(&drained).is_some_and(|n| *n >= 1),
        "node 2 finished none of what it ran: {log}"
    );
}
