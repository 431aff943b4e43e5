//! Placement that spreads and queued work that moves, on three one-CPU
//! nodes: a burst from one driver runs on every node (tasks queued on
//! the driver's node move as the others free up); two drivers flooding
//! the same nodes have their queued tasks moved and handed back while
//! others start, and no task runs twice; tasks that a forwarded task
//! submits are owned (placed, run or sent on) by the node it runs on.

use std::time::Duration;

use super::harness::{job, job_log, ran, start_job, wait_job_end, Cluster};

/// One CPU per node (the harness's default): a task that waits, waits
/// for a CPU.
const ONE_CPU: [&str; 0] = [];

#[test]
fn a_burst_from_one_driver_runs_on_every_node() {
    let cluster = Cluster::with_api(3, &[&ONE_CPU, &ONE_CPU, &ONE_CPU]);
    let log = job(cluster.node(1), &["cluster_burst", "12", "500"]);
    let counts = ran(&log);
    eprintln!("12 tasks of 500 ms: {counts:?}; {log}");
    assert_eq!(counts.values().sum::<u64>(), 12, "{log}");
    // Each node ran some: placed at once on the two idle nodes, then
    // moved from the driver's node's queue as they freed up (without
    // spillback: 10, 1 and 1).
    for id in cluster.node_ids() {
        let n = counts.get(&id).copied().unwrap_or(0);
        assert!(n >= 2, "node {id} ran {n} of 12: {counts:?}");
    }
    let moved = cluster.node(1).metric("wray_cluster_tasks_moved_total");
    assert!(moved.is_some_and(|m| m >= 1.0), "moved {moved:?}");
}

#[test]
fn two_drivers_flooding_the_same_nodes_run_each_task_once() {
    let cluster = Cluster::with_api(3, &[&ONE_CPU, &ONE_CPU, &ONE_CPU]);
    // Both submit 150 short tasks at once: each node gets work from two
    // owners, queues it, moves it from its queue to whichever node frees
    // up, or hands it back to its owner.
    let one = start_job(cluster.node(1), &["cluster_once", "150", "20"]);
    let three = start_job(cluster.node(3), &["cluster_once", "150", "20"]);
    for (i, id) in [(1, &one), (3, &three)] {
        let status = wait_job_end(cluster.node(i), id, Duration::from_secs(180));
        let log = job_log(cluster.node(i), id);
        assert!(status.contains("SUCCEEDED"), "{status}\n{log}");
        // Each of the 150 recorded itself, none twice.
        assert!(log.contains("once 150 0"), "{log}");
        let counts = ran(&log);
        assert_eq!(counts.values().sum::<u64>(), 150, "{log}");
        assert!(
            counts.len() >= 2,
            "the tasks of node {i}'s job ran on one node: {log}"
        );
        eprintln!("node {i}'s job: {counts:?}");
    }
    let moved: f64 = (1..=3)
        .filter_map(|i| cluster.node(i).metric("wray_cluster_tasks_moved_total"))
        .sum();
    eprintln!("tasks moved: {moved}");
    assert!(moved >= 1.0, "no task moved");
}

#[test]
fn a_tasks_calls_on_an_actor_are_queued_before_it_counts_as_finished() {
    let relay: [&str; 2] = ["--resources", r#"{"relay": 2}"#];
    let cluster = Cluster::with_api(3, &[&[], &super::harness::ACCELERATED, &relay]);
    // Each round a worker on node 3 pushes 100 updates to a tally on node
    // 2 without waiting; the driver on node 1 reads the tally once it has
    // the worker's result: it sees all of them, every round (without the
    // wait on node 3, a read overtook the last updates in some rounds).
    let log = job(cluster.node(1), &["cluster_causal", "30", "100"]);
    assert!(log.contains("causal 30 30"), "{log}");
}

#[test]
fn each_scheduling_strategy_places_as_rays_does() {
    let four: [&str; 2] = ["--num-cpus", "4"];
    let cluster = Cluster::with_api(3, &[&four, &four, &four]);
    let third = cluster.node(3).node_id.clone();
    let log = job(cluster.node(1), &["cluster_strategies", &third]);
    // DEFAULT: the driver's node takes two (a quarter, then half used:
    // under the 50% threshold), the third goes to another node. SPREAD:
    // one each. Node affinity: all on node 3; soft, for a node not in the
    // cluster: placed as DEFAULT; hard: infeasible, at once.
    for want in [
        "default 2",
        "spread 3",
        "pinned true",
        "soft 3",
        "hard Infeasible",
    ] {
        assert!(log.contains(want), "{want}: {log}");
    }
}

#[test]
fn tasks_submitted_by_a_forwarded_task_are_owned_where_it_runs() {
    let cluster = Cluster::with_api(3, &[&ONE_CPU, &ONE_CPU, &ONE_CPU]);
    // Three tasks spread over the nodes, each submitting 30 trivial tasks
    // from where it runs and waiting for them (lending its CPU meanwhile).
    let log = job(cluster.node(1), &["cluster_nested", "3", "30"]);
    let fans: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("fan "))
        .map(str::trim)
        .collect();
    let leaves = ran(&log);
    eprintln!("fans on {fans:?}; leaves ran {leaves:?}");
    assert_eq!(fans.len(), 3, "{log}");
    assert_eq!(leaves.values().sum::<u64>(), 90, "{log}");
    let ids = cluster.node_ids();
    let metric = |i: usize, name: &str| cluster.node(i).metric(name).unwrap_or(0.0) as u64;
    // A node other than the driver's runs what other nodes sent it and
    // ran there (`taken`: its fan, the leaves other nodes sent it) and
    // what it owns: the leaves its own fan submitted and kept there. Had the driver's node
    // owned every leaf, each leaf run elsewhere would have been sent, and
    // no node would run more than it took.
    let mut owned_and_kept = 0;
    for i in 2..=3 {
        let id = &ids[i - 1];
        let taken = metric(i, "wray_cluster_tasks_taken_total");
        let fans_here = fans.iter().filter(|f| *f == id).count() as u64;
        let ran_here = leaves.get(id).copied().unwrap_or(0) + fans_here;
        let forwarded = metric(i, "wray_cluster_tasks_forwarded_total");
        eprintln!(
            "node {i}: ran {ran_here} (fans {fans_here}), taken {taken}, forwarded {forwarded}"
        );
        assert!(
            ran_here >= taken,
            "node {i} ran {ran_here} but took {taken}: {log}"
        );
        if fans_here > 0 {
            owned_and_kept += ran_here - taken;
        }
    }
    assert!(
        fans.iter().any(|f| *f != ids[0]),
        "every fan ran on the driver's node: {log}"
    );
    assert!(
        owned_and_kept > 0,
        "no node ran a task its own fan submitted: {log}"
    );
}
