//! Blocking calls past a time limit or a cancel, waits that cannot end,
//! deadlocks on oneself, runaway loops, recursion and memory, fork bombs,
//! many tiny tasks, a driver that never returns.

use std::time::Duration;

use crate::support::attack;

#[test]
fn a_task_asleep_in_wasi_stops_at_its_time_limit() {
    let out = attack(|_| {}, &["sleep", "30000", "2000"]);
    out.expect("sleep: timeout: time limit of 2.000 s exceeded", &[]);
    out.expect("stopped before its sleep ended: true", &[]);
}

#[test]
fn a_task_asleep_in_wasi_stops_when_cancelled() {
    let out = attack(|_| {}, &["cancel_sleep"]);
    out.expect("cancel: true", &[]);
    out.expect("cancel_sleep: cancelled:", &[]);
    out.expect("stopped before its sleep ended: true", &[]);
}

#[test]
fn waiting_on_an_id_that_names_nothing_returns_at_once() {
    let out = attack(|_| {}, &["wait_unknown"]);
    for job in ["other job", "my job"] {
        out.expect(
            &format!("wait_unknown {job}: ready [true], get not-found:"),
            &["does not exist on node"],
        );
    }
}

#[test]
fn a_driver_stops_at_its_own_time_limit() {
    let _serial = crate::support::serial();
    let config = wray_host::NodeConfig {
        driver_timeout: Some(Duration::from_secs(1)),
        ..wray_host::NodeConfig::default()
    };
    let node = wray_host::Node::start(config).expect("node");
    node.deploy_file_blocking(crate::support::component("hostile"))
        .expect("deploys");
    let outcome = node
        .run_main_blocking("hostile", &["hang_driver".to_string(), "30".to_string()])
        .expect("runs");
    let err = outcome.result.unwrap_err().to_string();
    assert!(err.contains("time limit of 1.000 s exceeded"), "{err}");
    assert!(outcome.wall < Duration::from_secs(20), "{:?}", outcome.wall);
}

#[test]
fn runaway_loops_recursion_and_memory_fail_their_task_only() {
    let spin = attack(|c| c.task_timeout = Some(Duration::from_secs(1)), &["spin"]);
    spin.expect("spin: timeout: time limit of 1.000 s exceeded", &[]);
    let greedy = attack(
        |c| c.task_timeout = Some(Duration::from_secs(1)),
        &["escape_limit"],
    );
    greedy.expect("escape_limit: timeout: time limit of 1.000 s exceeded", &[]);
    let stack = attack(|_| {}, &["deep_stack"]);
    stack.expect("deep_stack: trap:", &["call stack exhausted"]);
    let grow = attack(|_| {}, &["grow_4g"]);
    grow.expect(
        "grow_4g: out-of-memory: memory limit of 1073741824 bytes exceeded",
        &[],
    );
}

#[test]
fn a_fork_bomb_fails_clearly_and_is_cancelled_whole() {
    let out = attack(|_| {}, &["fork", "30", "2"]);
    out.expect(
        "fork: application:",
        &["tasks blocked in `get` keep theirs"],
    );
    out.expect("fork cleaned up: true", &[]);
    // A chain 30 deep (each level blocked on the next) is no bomb: it works.
    let chain = attack(|_| {}, &["fork", "30", "1"]);
    chain.expect("fork: ok: 1", &[]);
}

#[test]
fn waiting_for_ones_own_result_is_refused_not_a_hang() {
    let out = attack(|_| {}, &["own_return"]);
    out.expect(
        "own_return: application: invalid-argument:",
        &["which it makes itself: it would wait forever"],
    );
}

#[test]
fn an_actor_waiting_on_itself_ends_at_its_time_limit() {
    let out = attack(|_| {}, &["actor_self_call"]);
    out.expect(
        "actor_self_call: timeout: time limit of 1.000 s exceeded",
        &[],
    );
}

#[test]
fn a_hundred_thousand_tiny_tasks_all_run() {
    let out = attack(|_| {}, &["tiny_tasks", "100000"]);
    out.expect("tiny_tasks: ok: 4200000", &[]);
}

#[test]
fn shutting_down_stops_a_spinning_task_and_joins_every_thread() {
    // Default limits (600 s per task): only the shutdown can stop the spin.
    let out = crate::support::run_on_node(
        |c| c.task_timeout = Some(Duration::from_secs(600)),
        |node| {
            let driver = {
                let node = node.clone();
                std::thread::spawn(move || node.run_main_blocking("hostile", &["spin".to_string()]))
            };
            std::thread::sleep(Duration::from_millis(300));
            assert_eq!(node.shutdown(), 0, "every worker thread stopped");
            let outcome = driver.join().expect("driver thread").expect("runs");
            // The driver itself, blocked in `get` on the spinning task, is
            // stopped too.
            let err = outcome.result.unwrap_err().to_string();
            assert!(
                err.contains("cancelled: stopped: the node is shutting down"),
                "{err}"
            );
            assert!(outcome.wall < Duration::from_secs(30), "{:?}", outcome.wall);
        },
        &["spin then shutdown"],
    );
    assert!(out.lines.is_empty(), "{:?}", out.lines);
}
