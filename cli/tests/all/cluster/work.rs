//! Work across nodes: a 256 MiB object put on node 1 is read by a task on
//! node 2 byte for byte; a node killed while it runs tasks: they run
//! again on another node and the job's answer is still right; the
//! limits of the node running a forwarded task apply to it.

use std::time::Duration;

use super::harness::{count, job, start_job, wait_within, Cluster, ACCELERATED, OWN_TASKS};
use crate::support::{component, success_stdout, wray};

#[test]
fn a_256_mib_object_put_on_node_1_is_read_on_node_2_byte_for_byte() {
    let cluster = Cluster::with_api(2, &[&[], &ACCELERATED]);
    let log = job(cluster.node(1), &["cluster_bytes", "256"]);
    assert!(log.contains("cluster_bytes 268435456 match"), "{log}");
    // It ran on node 2, and node 1 forwarded it.
    let on_2 = cluster.node(2).get(OWN_TASKS);
    assert!(
        on_2["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .any(|t| t["function"] == "digest_on_accelerator" && t["state"] == "FINISHED"),
        "{on_2}"
    );
    // The transfer counters: node 2 pulled the 256 MiB from node 1, in
    // `/metrics` and in each node's row of `/v1/nodes` (as the registry
    // publishes it, so waited for).
    let mib256 = 256.0 * 1024.0 * 1024.0;
    let sent = cluster
        .node(1)
        .metric("wray_cluster_object_bytes_sent_total");
    let received = cluster
        .node(2)
        .metric("wray_cluster_object_bytes_received_total");
    assert!(
        sent.is_some_and(|b| b >= mib256) && received.is_some_and(|b| b >= mib256),
        "sent {sent:?}, received {received:?}"
    );
    let row = |node: &str| {
        let nodes = cluster.node(1).get("/v1/nodes");
        nodes
            .as_array()
            .and_then(|n| n.iter().find(|n| n["node_id"] == node).cloned())
            .unwrap_or_default()
    };
    let (one, two) = (
        cluster.node(1).node_id.clone(),
        cluster.node(2).node_id.clone(),
    );
    wait_within(
        "the nodes' transfer counters in /v1/nodes",
        Duration::from_secs(30),
        || {
            row(&one)["object_bytes_sent"].as_f64() >= Some(mib256)
                && row(&two)["object_bytes_received"].as_f64() >= Some(mib256)
        },
    );
}

#[test]
fn a_node_killed_while_it_runs_tasks_has_them_run_again_elsewhere() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &ACCELERATED]);
    let id = start_job(cluster.node(1), &["cluster_spread", "8", "3000"]);
    // Node 2 runs some of them: kill it then.
    let running_on_2 = || {
        let tasks = cluster.node(2).get(OWN_TASKS);
        tasks["tasks"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["state"] == "RUNNING"))
    };
    let job_status = || success_stdout(&cluster.node(1).run(&["job", "status", &id]));
    wait_within("node 2 to run a task", Duration::from_secs(60), || {
        let status = job_status();
        assert!(
            !status.contains("FAILED") && !status.contains("SUCCEEDED"),
            "the job ended before node 2 ran a task: {status}; node 2's tasks: {}",
            cluster.node(2).get(OWN_TASKS)
        );
        running_on_2()
    });
    cluster.kill(2);
    let status =
        |s: &str| success_stdout(&cluster.node(1).run(&["job", "status", &id])).contains(s);
    wait_within("the job to end", Duration::from_secs(120), || {
        status("SUCCEEDED") || status("FAILED") || status("STOPPED")
    });
    assert!(
        status("SUCCEEDED"),
        "{}",
        success_stdout(&cluster.node(1).run(&["job", "status", &id]))
    );
    let log = success_stdout(&cluster.node(1).run(&["job", "logs", &id]));
    assert!(log.contains("cluster_spread 28"), "{log}");
    let retried = cluster
        .node(1)
        .metric("wray_cluster_tasks_retried_total")
        .expect("the retry counter") as u64;
    println!("tasks run again after the kill: {retried}");
    assert!(retried >= 1, "{retried}");
}

#[test]
fn a_forwarded_task_cancelled_by_its_owner_stops_on_the_node_running_it() {
    let cluster = Cluster::with_api(2, &[&[], &ACCELERATED]);
    let log = job(cluster.node(1), &["cluster_cancel"]);
    assert!(log.contains("cancel_error Cancelled"), "{log}");
    // The minute-long task stops on node 2 too, well before its minute.
    let slow_on_2 = |state: &str| {
        let tasks = cluster.node(2).get(OWN_TASKS);
        tasks["tasks"].as_array().is_some_and(|t| {
            t.iter()
                .any(|t| t["function"] == "slow_on_accelerator" && t["state"] == state)
        })
    };
    let took = wait_within(
        "node 2 to stop the cancelled task",
        Duration::from_secs(20),
        || slow_on_2("CANCELLED"),
    );
    println!("cancelled on node 2 {took:?} after the job ended");
    assert!(!slow_on_2("RUNNING"));
}

#[test]
fn a_jobs_end_stops_what_its_tasks_left_running_on_another_node() {
    let cluster = Cluster::with_api(2, &[&[], &ACCELERATED]);
    let ids = cluster.node_ids();
    // A task on node 2 leaves a minute-long task running there (nobody
    // holds its ref) and returns; the job ends at once.
    let log = job(cluster.node(1), &["cluster_left_behind", "60000"]);
    assert!(log.contains(&format!("left_on {}", ids[1])), "{log}");
    let took = wait_within(
        "node 2 to end the job's task left running there",
        Duration::from_secs(20),
        || count(cluster.node(2), &["slow_on_accelerator"], "CANCELLED") == 1,
    );
    println!("cancelled on node 2 {took:?} after the job ended");
}

#[test]
fn wray_run_with_address_runs_its_driver_on_a_node_of_the_cluster() {
    let cluster = Cluster::start(2, &[&[], &ACCELERATED]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let ids = cluster.node_ids();
    let node = cluster.node(1);
    let api = component("api");
    let run = |args: &[&str]| {
        let mut cmd = wray();
        cmd.env("WRAY_TOKEN", &node.token)
            .args(["run", "--address", &node.url])
            .arg(&api)
            .arg("--")
            .args(args);
        cmd.output().expect("wray runs")
    };
    // Its tasks spread over the cluster as a job's do: they ask for an
    // accelerator, which only node 2 has.
    let said = success_stdout(&run(&["cluster_spread", "4", "50"]));
    assert!(said.contains("cluster_spread 6"), "{said}");
    let said = success_stdout(&run(&["ids"]));
    assert!(said.contains(&format!("node {}", ids[0])), "{said}");
    // The same file run again is the same version: one, current, on every
    // node of the cluster.
    assert!(said.contains("deployed api version 1 again"), "{said}");
    for i in 1..=2 {
        let kept = cluster.node(i).get("/v1/components/api/versions");
        assert_eq!(
            kept["versions"].as_array().map(Vec::len),
            Some(1),
            "node {i}: {kept}"
        );
    }
    // A failing driver fails the command.
    let failed = run(&["no_such_scenario"]);
    assert!(!failed.status.success());
    // The node flags configure an embedded node: refused with --address.
    let mut cmd = wray();
    cmd.args(["run", "--address", &node.url, "--num-cpus", "2"])
        .arg(&api);
    let refused = cmd.output().expect("wray runs");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("node flags"),
        "{refused:?}"
    );
}

#[test]
fn refs_inside_a_value_at_any_depth_to_objects_still_being_made_reach_a_task_on_another_node() {
    let cluster = Cluster::with_api(2, &[&[], &ACCELERATED]);
    // The refs name tasks still running when the sum is submitted; the sum
    // is sent to node 2 once they are sealed, with their values.
    let log = job(cluster.node(1), &["cluster_nested_refs"]);
    assert!(log.contains("nested_refs 10"), "{log}");
    // Two levels down: 11 + 12 + 21 + 22.
    assert!(log.contains("deep_refs 66"), "{log}");
}

#[test]
fn the_limits_of_the_node_running_a_forwarded_task_apply() {
    // Node 2 (the one with an accelerator) stops a task at 3 s and 64 MiB;
    // node 1, where the job runs, has neither limit. A spinning task and
    // one that allocates without end, both placed on node 2, fail there
    // with their kinds (without node 2's limits applied, the spin ran on
    // and the allocation ended in a trap).
    let limited: [&str; 6] = [
        "--resources",
        r#"{"accelerator": 2}"#,
        "--task-timeout",
        "3",
        "--task-memory-mib",
        "64",
    ];
    let cluster = Cluster::with_api(2, &[&[], &limited]);
    let log = job(cluster.node(1), &["cluster_limits"]);
    for want in ["spin timeout", "oom out-of-memory", "after 2"] {
        assert!(log.contains(want), "{want}: {log}");
    }
}
