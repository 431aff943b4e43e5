//! Every guest API call, through the `api` fixture (test-programs/api):
//! each scenario prints what the guest observed and the test checks it.

use std::time::Duration;

use crate::support::{scenario, Setup, TestNode};

fn lines(setup: Setup, name: &str) -> Vec<String> {
    scenario(setup, name)
}

#[test]
fn put_get_round_trips_several_types() {
    let out = lines(Setup::default(), "put_get");
    let expected = [
        "i64 42",
        "string \"hello\"",
        "vec [1.5, 2.5]",
        "struct Point { x: 1, y: -2 }",
        "option Some(7)",
        "tuple (1, \"a\")",
        "map {\"a\": 1, \"b\": 2}",
        "empty []",
    ];
    for line in expected {
        assert!(out.iter().any(|l| l == line), "missing `{line}` in {out:?}");
    }
    let checksum: u64 = (0..1u64 << 20).map(|i| i % 251).sum();
    assert!(out.contains(&format!("big 1048576 {checksum}")), "{out:?}");
    assert!(out.iter().any(|l| l == "get_all [1, 2, 3]"), "{out:?}");
}

#[test]
fn wait_returns_ready_in_input_order_and_honours_timeouts() {
    let out = lines(
        Setup {
            num_cpus: 4,
            ..Setup::default()
        },
        "wait",
    );
    assert_eq!(
        out,
        [
            "ready [1, 2] pending [0]",
            "timeout ready [] pending [0]",
            "all ready [0, 1, 2] pending []",
            "get_timeout timeout",
        ]
    );
}

#[test]
fn num_returns_gives_several_refs() {
    assert_eq!(lines(Setup::default(), "num_returns"), ["split 42 \"21\""]);
}

#[test]
fn dependencies_chain_and_refs_inside_values() {
    assert_eq!(lines(Setup::default(), "chain"), ["chain 3", "sum_refs 6"]);
}

#[test]
fn nested_tasks_do_not_deadlock_one_cpu() {
    let out = lines(
        Setup {
            num_cpus: 1,
            ..Setup::default()
        },
        "nested",
    );
    assert_eq!(out, ["nested [45, 55, 65, 75, 85]", "fib 55"]);
}

#[test]
fn actors_keep_state_and_run_calls_in_submission_order() {
    let out = lines(Setup::default(), "actors");
    let log: Vec<String> = (0..20).map(|i| i.to_string()).collect();
    assert_eq!(
        out,
        [
            "counter [11, 12, 13] 13".to_string(),
            "ten [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]".to_string(),
            format!("log [{}]", log.join(", ")),
            "ordered [1, 2]".to_string(),
            "handle 1".to_string(),
        ]
    );
}

#[test]
fn an_actor_reads_its_own_id_and_calls_itself_back_through_a_task() {
    // `runtime.current-actor`: the creator's handle's id in the actor's
    // constructor and methods, none in a task or the driver; a handle to
    // itself handed to a task reaches it (10, then 5 from the task, then 1).
    let out = lines(Setup::default(), "current_actor");
    assert_eq!(
        out,
        [
            "method_sees_creator_id true",
            "constructor_sees_creator_id true",
            "typed_self true other_class_none true",
            "task_sees_none true",
            "driver_sees_none true",
            "called_back 15",
            "after 16",
        ]
    );
}

#[test]
fn actors_exit_with_their_last_handle_so_a_thousand_do_not_exhaust_the_slots() {
    // 1,000 actors one after another on a node of 256 instance slots and
    // 64 live actors: each must exit once its handle is dropped.
    let node = TestNode::start_with(Setup::default(), |c| c.max_actors = Some(64));
    let (result, stdout) = node.run("api", &["actor_lifetime"]);
    assert_eq!(result, Ok(()), "{stdout}");
    // sum of (i + 1) for i in 0..1000
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "short_lived 500500",
            "pending [1, 2, 3]",
            "returned 41",
            "passed 42",
            "detached 6",
        ]
    );
    let stats = node.node.object_store_stats();
    assert_eq!(stats.unmatched_releases, 0, "{stats:?}");
}

#[test]
fn named_actors_are_found_by_name_and_a_taken_name_kills_the_new_actor() {
    let out = lines(Setup::default(), "named");
    assert_eq!(
        out,
        [
            "named 11",
            "from_task 12",
            "dup actor-died names_holder=true",
            "nobody not-found",
            "class invalid-argument",
            "bad_name not-found",
            "killed not-found",
            "again 101",
        ]
    );
}

#[test]
fn a_detached_named_actor_outlives_its_job_until_a_later_job_kills_it() {
    let node = TestNode::start(Setup::default());
    let mut said = Vec::new();
    for args in [
        &["named_make", "keeper", "5"][..],
        &["named_use", "keeper"],
        &["named_kill", "keeper"],
        &["named_use", "keeper"],
    ] {
        let (result, stdout) = node.run("api", args);
        assert_eq!(result, Ok(()), "{args:?}: {stdout}");
        // The node's output so far: this job's line is the last.
        said.extend(stdout.lines().last().map(str::to_string));
    }
    assert_eq!(
        said,
        [
            "named_make 6",
            "named_use 7",
            "named_kill true",
            "named_use not-found"
        ]
    );
}

#[test]
fn errors_propagate_unchanged_through_two_dependencies() {
    let out = lines(Setup::default(), "errors");
    assert_eq!(
        out[..3],
        [
            "error application fail boom",
            "error application fail boom",
            "same_task true"
        ]
    );
}

#[test]
fn an_error_passed_on_keeps_its_cause_chain_and_a_forged_cause_is_dropped() {
    let node = TestNode::start(Setup::default());
    let (result, stdout) = node.run("api", &["errors"]);
    assert_eq!(result, Ok(()), "{stdout}");
    let out: Vec<String> = stdout.lines().map(str::to_string).collect();
    let from = |prefix: &str| {
        out.iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in {out:#?}"))
            .as_str()
    };
    // wrap -> pass_on (through `source()`) -> fail (through `?`).
    assert_eq!(from("chain "), "chain application wrap 2");
    assert_eq!(from("root "), "root application fail boom");
    assert_eq!(from("root_task "), "root_task true");
    // A cause the task never got from `get` is not kept.
    assert_eq!(from("forged "), "forged forge_cause 0");
    // The node's error list: `wrap` names its chain; `inc`, which failed
    // because its argument holds `fail`'s error, names that error.
    let errors = node.node.errors();
    let chain = |function: &str| -> Vec<Vec<String>> {
        errors
            .iter()
            .filter(|e| e.function == function)
            .map(|e| e.causes.iter().map(|c| c.function.clone()).collect())
            .collect()
    };
    assert_eq!(chain("wrap"), [["pass_on", "fail"]]);
    assert_eq!(chain("pass_on"), [["fail"]]);
    assert_eq!(chain("fail"), [Vec::<String>::new()]);
    assert_eq!(chain("inc"), [["fail"], ["fail"]]);
    assert_eq!(chain("forge_cause"), [Vec::<String>::new()]);
}

#[test]
fn trap_becomes_an_error_object_and_the_next_task_runs() {
    assert_eq!(lines(Setup::default(), "trap"), ["trap trap", "after 2"]);
}

#[test]
fn panic_becomes_an_error_object_with_its_message() {
    assert_eq!(
        lines(Setup::default(), "panic"),
        ["panic panic true", "after 2"]
    );
}

#[test]
fn out_of_memory_becomes_an_error_object() {
    let setup = Setup {
        task_memory_limit: 64 << 20,
        ..Setup::default()
    };
    assert_eq!(lines(setup, "oom"), ["oom out-of-memory", "after 2"]);
}

#[test]
fn infinite_loop_hits_the_time_limit() {
    let setup = Setup {
        task_timeout: Some(Duration::from_secs(1)),
        ..Setup::default()
    };
    assert_eq!(lines(setup, "spin"), ["spin timeout", "after 2"]);
}

#[test]
fn a_trapping_actor_dies_and_says_so() {
    assert_eq!(
        lines(Setup::default(), "actor_panic"),
        ["ok 1", "boom panic", "dead actor-died"]
    );
}

#[test]
fn ids_are_hex_and_the_node_is_named() {
    let out = lines(Setup::default(), "ids");
    let task = out[0].strip_prefix("task ").expect("task line");
    assert_eq!(task.len(), 32);
    assert!(task.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(out[1].starts_with("node node-"), "{out:?}");
}

#[test]
fn every_job_gets_a_random_id_part_and_derives_the_rest() {
    let first = lines(Setup::default(), "ids");
    let node = TestNode::start(Setup::default());
    for _ in 0..2 {
        assert_eq!(node.run("api", &["ids"]).0, Ok(()));
    }
    let out = node.stdio.stdout_text();
    let mut ids: Vec<&str> = out.lines().filter(|l| l.starts_with("task ")).collect();
    ids.push(&first[0]);
    // `task ` then 16 hex digits of the job, 16 derived from it.
    let jobs: std::collections::HashSet<&str> = ids.iter().map(|t| &t[5..21]).collect();
    assert_eq!(jobs.len(), 3, "each driver run is a new job: {ids:?}");
    let derived: std::collections::HashSet<&str> = ids.iter().map(|t| &t[21..]).collect();
    assert_eq!(
        derived.len(),
        1,
        "a driver's own part is the same in every job: {ids:?}"
    );
}

#[test]
fn one_node_survives_every_failure_in_a_row() {
    // The same node runs the failing scenarios back to back and still
    // serves the next driver.
    let node = TestNode::start(Setup {
        task_timeout: Some(Duration::from_secs(1)),
        task_memory_limit: 64 << 20,
        ..Setup::default()
    });
    for name in ["trap", "panic", "oom", "spin", "chain"] {
        let (result, _) = node.run("api", &[name]);
        assert_eq!(result, Ok(()), "scenario {name}");
    }
    let out = node.stdio.stdout_text();
    assert!(out.ends_with("chain 3\nsum_refs 6\n"), "{out}");
}

#[test]
fn unknown_scenario_fails_main_with_its_message() {
    let node = TestNode::start(Setup::default());
    let (result, _) = node.run("api", &["no-such-scenario"]);
    assert!(result.unwrap_err().contains("no-such-scenario"));
}
