//! Actors across nodes: an actor asking for a resource only node 2 has is
//! created there; the driver's calls run in order on it, a task on node 3
//! calls it through a handle passed to it, a handle made on node 3 comes
//! back and works, a failing constructor and a kill read as `actor-died`;
//! node 2 killed, the next call fails with `actor-died` naming node 2.

use std::time::Duration;

use super::harness::{
    count, job, job_log, start_job, wait_job_end, wait_within, Cluster, ACCELERATED,
};
use crate::support::success_stdout;

/// Accelerators for the scenario's actors: each holds one while it lives
/// (three at once).
const ACCELERATORS: [&str; 2] = ["--resources", r#"{"accelerator": 4}"#];
/// A relay: the scenario's third-node tasks ask for one.
const RELAY: [&str; 2] = ["--resources", r#"{"relay": 2}"#];

/// The word after `key ` on the line starting with `key`.
fn field<'a>(log: &'a str, key: &str) -> &'a str {
    log.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} ")))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no `{key}` in {log}"))
}

/// SIGKILLs the node of the two with an accelerator (2 and 3) that `log`
/// names as the actor's (`actor_node`); the other one's number.
fn kill_actor_node(cluster: &Cluster, log: &str) -> usize {
    let ids = cluster.node_ids();
    let first = field(log, "actor_node");
    let (lost, other) = if first == ids[1] { (2, 3) } else { (3, 2) };
    assert_eq!(first, ids[lost - 1], "{log}");
    cluster.kill(lost);
    other
}

#[test]
fn an_actor_asking_for_what_only_node_2_has_lives_there_and_every_node_can_call_it() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATORS, &RELAY]);
    let ids = cluster.node_ids();
    let log = job(cluster.node(1), &["cluster_actors"]);
    println!("{log}");
    assert!(log.contains("adds [11, 13, 16]"), "{log}");
    assert_eq!(field(&log, "driver_node"), ids[0], "{log}");
    assert_eq!(field(&log, "actor_node"), ids[1], "{log}");
    // A task on node 3 called it through the handle it was given.
    assert!(log.contains("relayed 116 relay_node"), "{log}");
    let relayed = log
        .lines()
        .find_map(|l| l.split("relay_node ").nth(1))
        .expect("relay node");
    assert_eq!(relayed, ids[2], "{log}");
    assert!(
        log.contains("after 116"),
        "the calls share one actor: {log}"
    );
    assert!(log.contains("made 6"), "a handle made on node 3: {log}");
    assert!(log.contains("broken ActorDied"), "{log}");
    assert!(
        log.contains("a tally cannot start below 0"),
        "the constructor's error is the cause: {log}"
    );
    assert!(log.contains("killed true"), "{log}");
    assert!(log.contains("after_kill ActorDied"), "{log}");
    // Node 2 ran the actor's calls, node 1 only sent them.
    assert!(
        count(cluster.node(2), &["Tally.add"], "FINISHED") >= 5,
        "{}",
        cluster.node(2).get(super::harness::OWN_TASKS)
    );
    // Killed there too: nothing of the job's actors is left alive.
    wait_within(
        "node 2 to have no live actor",
        Duration::from_secs(30),
        || cluster.node(2).metric("wray_actors_live") == Some(0.0),
    );
}

#[test]
fn an_actor_whose_node_is_killed_fails_its_next_call_naming_the_node() {
    let cluster = Cluster::with_api(2, &[&[], &ACCELERATED]);
    let ids = cluster.node_ids();
    let id = start_job(cluster.node(1), &["cluster_actor_lost"]);
    let logs = || job_log(cluster.node(1), &id);
    wait_within("the actor to be made", Duration::from_secs(60), || {
        logs().contains("actor_node")
    });
    assert_eq!(field(&logs(), "actor_node"), ids[1]);
    cluster.kill(2);
    let status = wait_job_end(cluster.node(1), &id, Duration::from_secs(60));
    let log = logs();
    println!("{log}");
    assert!(status.contains("SUCCEEDED"), "{log}");
    assert!(log.contains("lost ActorDied"), "{log}");
    assert!(log.contains(&ids[1]), "the error names node 2: {log}");
}

#[test]
fn an_actor_with_max_restarts_whose_node_is_killed_restarts_on_another_node() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &ACCELERATED]);
    let ids = cluster.node_ids();
    let id = start_job(cluster.node(1), &["cluster_actor_restart"]);
    let logs = || job_log(cluster.node(1), &id);
    // A few calls first, so that the restart has state to lose.
    wait_within("the actor to count", Duration::from_secs(60), || {
        logs().contains("actor_node") && count(cluster.node(1), &["Tally.add"], "FINISHED") >= 3
    });
    let other = kill_actor_node(&cluster, &logs());
    let status = wait_job_end(cluster.node(1), &id, Duration::from_secs(60));
    let log = logs();
    println!("{log}");
    assert!(status.contains("SUCCEEDED"), "{log}");
    // The constructor's state again (100), plus the call that was lost or
    // the next one.
    assert!(log.contains("total 101"), "{log}");
    assert_eq!(field(&log, "new_node"), ids[other - 1], "{log}");
    assert!(log.contains("next 102"), "{log}");
    // It reads the id it had before (`runtime.current-actor`).
    assert!(log.contains("same_id_after_restart true"), "{log}");
    assert_eq!(
        cluster
            .node(1)
            .metric("wray_cluster_actors_restarted_total"),
        Some(1.0)
    );
}

#[test]
fn a_named_detached_actor_is_found_from_every_node_and_outlives_its_job() {
    let cluster = Cluster::with_api(3, &[]);
    let said = |node: usize, args: &[&str]| {
        let log = job(cluster.node(node), args);
        log.lines().last().unwrap_or_default().to_string()
    };
    assert_eq!(said(1, &["named_make", "keeper", "5"]), "named_make 6");
    assert_eq!(said(2, &["named_use", "keeper"]), "named_use 7");
    assert_eq!(said(3, &["named_use", "keeper"]), "named_use 8");
    // A second actor of that name, made on another node, dies of it.
    assert_eq!(
        said(2, &["named_make", "keeper", "0"]),
        "named_make actor-died"
    );
    assert_eq!(said(3, &["named_kill", "keeper"]), "named_kill true");
    // Killed on node 1 by node 3's message; its name is freed there.
    wait_within("the name to be free", Duration::from_secs(30), || {
        said(2, &["named_use", "keeper"]) == "named_use not-found"
    });
    assert_eq!(said(2, &["named_make", "keeper", "1"]), "named_make 2");
}

#[test]
fn an_idle_actor_restarts_when_its_node_is_seen_dead_not_at_its_next_call() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &ACCELERATED]);
    let ids = cluster.node_ids();
    // The driver calls nothing for 20 s after the actor is made.
    let id = start_job(cluster.node(1), &["cluster_actor_idle_restart", "20"]);
    let logs = || job_log(cluster.node(1), &id);
    wait_within("the actor to be made", Duration::from_secs(60), || {
        logs().contains("actor_node")
    });
    let other = kill_actor_node(&cluster, &logs());
    // Restarted once its node is seen dead (the lease lapses), with no
    // call in flight: the driver is asleep.
    wait_within("the actor to restart", Duration::from_secs(15), || {
        cluster
            .node(1)
            .metric("wray_cluster_actors_restarted_total")
            == Some(1.0)
    });
    let status = wait_job_end(cluster.node(1), &id, Duration::from_secs(60));
    let log = logs();
    println!("{log}");
    // Its first call after the sleep went straight to the new instance:
    // without max_task_retries a call lost with the node would fail.
    assert!(status.contains("SUCCEEDED"), "{log}");
    assert!(log.contains("total 101"), "{log}");
    assert_eq!(field(&log, "new_node"), ids[other - 1], "{log}");
}

#[test]
fn a_handle_on_a_third_node_follows_its_actor_restarted_elsewhere() {
    let cluster = Cluster::with_api(4, &[&[], &ACCELERATED, &ACCELERATED, &RELAY]);
    let ids = cluster.node_ids();
    let id = start_job(cluster.node(1), &["cluster_handle_follows_restart"]);
    let logs = || job_log(cluster.node(1), &id);
    // Node 4 (the relay) calls the actor: a few calls first.
    wait_within("node 4 to call the actor", Duration::from_secs(60), || {
        count(cluster.node(4), &["Tally.add"], "FINISHED") >= 3
    });
    let other = kill_actor_node(&cluster, &logs());
    let status = wait_job_end(cluster.node(1), &id, Duration::from_secs(90));
    let log = logs();
    println!("{log}");
    assert!(status.contains("SUCCEEDED"), "{log}");
    // Node 4's stub found the restarted actor (its owner, node 1, restarted
    // it when node `lost` was seen dead) and ran its lost call again
    // there: the constructor's 100, plus that call.
    assert!(log.contains("then 101"), "{log}");
    assert_eq!(field(&log, "new_node"), ids[other - 1], "{log}");
}

#[test]
fn an_actor_lives_while_another_node_holds_its_handle_and_exits_once_none_does() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &RELAY]);
    let ids = cluster.node_ids();
    // The driver sleeps 120 s after killing the keepers: what exits meanwhile
    // exits because no node holds it, not because its job ended.
    let id = start_job(cluster.node(1), &["cluster_borrowed_actor", "120"]);
    let logs = || job_log(cluster.node(1), &id);
    wait_within("the keepers to be killed", Duration::from_secs(90), || {
        logs().contains("killed")
    });
    let log = logs();
    println!("{log}");
    assert_eq!(field(&log, "far_node"), ids[1], "{log}");
    assert_eq!(field(&log, "near_node"), ids[0], "{log}");
    assert!(log.contains("before ok 11 / ok 21"), "{log}");
    // The driver's handles are gone; node 3's keep both tallies alive,
    // the one on node 2 and the one on the driver's own node.
    assert!(log.contains("after ok 12 / ok 22"), "{log}");
    assert!(log.contains("killed true true"), "{log}");
    // Their keepers dead, no node holds the tallies: both exit.
    for (node, what) in [
        (3, "the keepers"),
        (2, "node 2's tally"),
        (1, "node 1's tally"),
    ] {
        wait_within(&format!("{what} to exit"), Duration::from_secs(30), || {
            cluster.node(node).metric("wray_actors_live") == Some(0.0)
        });
    }
    let status = success_stdout(&cluster.node(1).run(&["job", "status", &id]));
    assert!(status.contains("RUNNING"), "the job still runs: {status}");
    success_stdout(&cluster.node(1).run(&["job", "stop", &id]));
}
