//! Resources, limits, cancel and visibility (issue 4): scheduling on
//! fractional GPUs and custom resources, infeasible requests, CPUs given
//! back while blocked, each limit, cancel and kill, and the state API and
//! timeline read back.

use std::sync::Arc;

use wray_host::NodeConfig;
use wray_host::StaticGpus;

use crate::support::{Setup, TestNode};

/// A node with `cpus` CPUs and `gpus` made-up GPUs (no NVML needed).
fn node(cpus: usize, gpus: u32, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
    TestNode::start_with(
        Setup {
            num_cpus: cpus,
            ..Setup::default()
        },
        |c| {
            c.gpu_discovery.0 = Arc::new(StaticGpus::count(gpus));
            tweak(c);
        },
    )
}

/// The node's free resources once every worker has given its allocation
/// back (a task's results are sealed just before its resources return);
/// waits up to 5 s for `want` free.
fn settled(node: &TestNode, name: &str, want: f64) -> f64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let free = node.node.available_resources()[name];
        if free == want || std::time::Instant::now() > deadline {
            return free;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn run(node: &TestNode, scenario: &str) -> Vec<String> {
    let (result, stdout) = node.run("api", &[scenario]);
    assert_eq!(result, Ok(()), "scenario {scenario}; stdout:\n{stdout}");
    stdout.lines().map(str::to_string).collect()
}

#[test]
fn half_gpu_tasks_pack_two_per_gpu_and_a_fifth_waits() {
    let node = node(2, 2, |_| {});
    assert_eq!(
        run(&node, "gpu_packing"),
        [
            "first four on [0, 0, 1, 1]",
            "four at once true",
            "fifth waited true",
            "fifth on one gpu true",
        ]
    );
    let total = node.node.cluster_resources();
    assert_eq!((total["CPU"], total["GPU"]), (2.0, 2.0));
    assert_eq!(settled(&node, "GPU", 2.0), 2.0, "all given back");
    assert_eq!(settled(&node, "CPU", 2.0), 2.0, "all given back");
}

#[test]
fn infeasible_requests_fail_at_submission_naming_request_and_totals() {
    let node = node(2, 2, |c| {
        c.resources.insert("accelerator".into(), 1.0);
    });
    let out = run(&node, "infeasible");
    assert!(
        out[0].starts_with("infeasible: resource request {CPU: 1, GPU: 4} can never be satisfied: not enough GPU on a node with {CPU: 2, GPU: 2,"),
        "{}",
        out[0]
    );
    assert!(out[0].contains("accelerator: 1}"), "{}", out[0]);
    assert!(
        out[1].starts_with("infeasible: ") && out[1].contains("whole number"),
        "{}",
        out[1]
    );
    assert_eq!(out[2], "infeasible");
    assert_eq!(out[3], "invalid-argument");
    assert!(
        out[4].starts_with("accelerator [(\"CPU\", [(0, 0.5)]), (\"accelerator\", [(0, 1.0)])]"),
        "{}",
        out[4]
    );
    // Errors of failed tasks are kept, with function, task and node.
    let errors = node.node.errors();
    assert!(errors.iter().any(|e| e.function == "four_gpus"
        && e.kind == "infeasible"
        && e.node_id == node.node.id()));
}

#[test]
fn blocked_tasks_give_cpus_back_and_keep_gpus_and_actors_hold_theirs() {
    let node = node(1, 1, |_| {});
    assert_eq!(
        run(&node, "blocked"),
        [
            "parent gpus [0] [0]",
            "gpu waited for parent true",
            "actor gpus [0]",
            "gpu task waits for the actor true",
            "killed true",
            "again false",
            "after kill actor-died",
            "gpu task ran true",
            "cpu [(\"CPU\", [(0, 1.0)])]",
        ]
    );
    assert_eq!(settled(&node, "GPU", 1.0), 1.0);
}

#[test]
fn each_limit_names_its_value_and_what_was_used() {
    let node = node(2, 0, |_| {});
    let out = run(&node, "limits");
    assert!(
        out[0].starts_with("out-of-memory: memory limit of 16777216 bytes exceeded: the guest tried to grow its memory to "),
        "{}",
        out[0]
    );
    assert!(
        out[1].starts_with("timeout: time limit of 0.200 s exceeded: the task ran for 0.2"),
        "{}",
        out[1]
    );
    assert_eq!(out[2], "timeout");
    assert_eq!(out[3], "override 33554432");
}

#[test]
fn fuel_limits_stop_spinning_tasks_on_metered_nodes() {
    let node = node(2, 0, |c| c.fuel_metering = true);
    let out = run(&node, "fuel");
    assert_eq!(
        out,
        ["timeout: fuel limit of 1000000 units exceeded: the task burned all 1000000"]
    );
    // Without metering, asking for fuel is refused with a reason.
    let plain = node_without_fuel();
    let (result, stdout) = plain.run("api", &["fuel"]);
    assert_eq!(result, Ok(()));
    assert!(
        stdout.contains("invalid-argument: a fuel limit needs a node started with fuel metering"),
        "{stdout}"
    );
}

fn node_without_fuel() -> TestNode {
    node(2, 0, |_| {})
}

#[test]
fn cancel_stops_queued_running_and_blocked_tasks() {
    let node = node(1, 0, |_| {});
    assert_eq!(
        run(&node, "cancel"),
        [
            "cancel queued true",
            "queued cancelled",
            "cancel running true",
            "running cancelled",
            "cancel blocked true",
            "blocked cancelled",
            "quick true",
            "cancel done false",
            "then 1",
            "profiled 7",
        ]
    );
    // The task table knows every one of them.
    let tasks = node.node.tasks();
    let state = |f: &str| {
        tasks
            .iter()
            .filter(|t| t.function == f)
            .map(|t| t.state.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(state("spin"), ["CANCELLED", "CANCELLED"]);
    assert_eq!(state("waits_long"), ["CANCELLED"]);
    assert!(state("sleep_ms").contains(&"FINISHED".to_string()));
    assert_eq!(state("main"), ["FINISHED"]);
    assert_eq!(settled(&node, "CPU", 1.0), 1.0);
}

#[test]
fn the_timeline_is_chrome_trace_json_with_every_phase() {
    let node = node(1, 0, |_| {});
    run(&node, "cancel");
    let text = serde_json::to_string(&node.node.timeline(1000)).unwrap();
    let trace: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    for e in &complete {
        assert!(
            e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0,
            "{e}"
        );
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
    }
    let names: Vec<&str> = complete.iter().filter_map(|e| e["name"].as_str()).collect();
    for want in [
        "main",
        "profiled",
        "load",
        "get",
        "queued: sleep_ms",
        "wait for args: profiled",
    ] {
        assert!(names.contains(&want), "no {want} in {names:?}");
    }
    let load = complete.iter().find(|e| e["name"] == "load").unwrap();
    let task = complete.iter().find(|e| e["name"] == "profiled").unwrap();
    let (ls, ts) = (load["ts"].as_f64().unwrap(), task["ts"].as_f64().unwrap());
    assert!(
        ls >= ts && ls + load["dur"].as_f64().unwrap() <= ts + task["dur"].as_f64().unwrap() + 1.0
    );
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["name"] == "thread_name"));
}

/// A fresh instance shares no state with the task before it in the same
/// pooling slot, however scattered that task's writes (more separate runs
/// of pages than the slot's reset scans at once).
#[test]
fn a_fresh_instance_sees_none_of_the_last_tasks_writes() {
    let node = node(1, 0, |_| {});
    assert_eq!(run(&node, "fresh_pages"), ["0/0 0/0 0/0 0/0 0/0 "]);
}

#[test]
fn reusable_functions_share_an_instance_set_up_once() {
    let node = node(1, 0, |_| {});
    assert_eq!(
        run(&node, "reuse"),
        [
            "1/0/1 1/1/2 1/2/3 1/3/4 1/4/5 1/5/6 1/6/7 1/7/8 1/8/9 1/9/10 ",
            "0/0/1 0/0/1 0/0/1 ",
        ]
    );
}
