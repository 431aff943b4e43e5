//! The `Session` door from plain Rust (no guest): submit, call, put, get
//! (async and blocking), wait, release, cancel, on a real node running the
//! `microbench` component.

use wray_host::{Arg, Codec, ErrorKind, Payload, TaskOptions};

use crate::support::{component, Setup, TestNode};

/// FNV-1a (64 bit) of a type name: the SDK's type fingerprint.
fn fingerprint(type_name: &str) -> u64 {
    type_name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A `u64` as the Rust SDK encodes it: the 16-byte header (`wry\x01`, the
/// type fingerprint, 4 zero bytes), then rkyv's archive of a `u64` (its 8
/// little-endian bytes).
fn u64_payload(x: u64) -> Payload {
    let mut data = b"wry\x01".to_vec();
    data.extend_from_slice(&fingerprint("u64").to_le_bytes());
    data.extend_from_slice(&[0; 4]);
    data.extend_from_slice(&x.to_le_bytes());
    Payload {
        codec: Codec::Rkyv,
        data,
        refs: Vec::new(),
    }
}

fn u64_of(p: &Payload) -> u64 {
    assert_eq!(p.data.len(), 24, "a u64 payload");
    u64::from_le_bytes(p.data[16..24].try_into().expect("8 bytes"))
}

#[test]
fn a_session_submits_from_plain_rust_and_gets_results_asynchronously() {
    let t = TestNode::start(Setup::default());
    t.node
        .deploy_file_blocking(component("microbench"))
        .expect("deploys");
    let session = t.node.session().expect("a session");
    let ids: Vec<_> = (0..50u64)
        .map(|i| {
            let returns = session
                .submit_blocking(
                    "microbench",
                    "noop",
                    vec![Arg::Value(u64_payload(i))],
                    TaskOptions::new(),
                )
                .expect("submits");
            assert_eq!(returns.len(), 1);
            returns[0]
        })
        .collect();
    // Gets on an async runtime of the caller's own: no thread per get.
    let io = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let values = io.block_on(async {
        let mut values = Vec::new();
        for id in &ids {
            values.push(u64_of(&session.get(*id, None).await.expect("a value")));
        }
        values
    });
    assert_eq!(values, (0..50).collect::<Vec<_>>());
    let ready = io.block_on(session.wait(&ids, ids.len(), None));
    assert!(ready.iter().all(|r| *r));

    // An object argument: put, then pass by reference.
    let put = session.put(u64_payload(41)).expect("puts");
    let r = session
        .submit_blocking(
            "microbench",
            "noop",
            vec![Arg::Object(put)],
            TaskOptions::new(),
        )
        .expect("submits")[0];
    assert_eq!(u64_of(&session.get_blocking(r, None).expect("a value")), 41);

    // An actor: created and called through the session.
    let echo = session
        .create_actor_blocking("microbench", "Echo", Vec::new(), TaskOptions::default())
        .expect("creates");
    let r = session
        .call(
            echo,
            "echo",
            vec![Arg::Value(u64_payload(7))],
            TaskOptions::new(),
        )
        .expect("calls")[0];
    assert_eq!(u64_of(&session.get_blocking(r, None).expect("a value")), 7);
    assert!(session.kill_actor(echo));

    // What the function table refuses surfaces at `get`, as in Ray.
    let r = session
        .submit_blocking(
            "microbench",
            "no_such_function",
            Vec::new(),
            TaskOptions::new(),
        )
        .expect("submits")[0];
    let err = session.get_blocking(r, None).expect_err("an error object");
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert!(err.message.contains("no_such_function"), "{err}");
    let err = session
        .submit_blocking("nothing-deployed", "f", Vec::new(), TaskOptions::new())
        .expect_err("an unknown component");
    assert!(err.to_string().contains("nothing-deployed"), "{err}");

    // Released objects are freed; an id of another job reads as missing.
    session.release(&ids);
    let other = t.node.session().expect("a second session");
    let err = other.get_blocking(put, None).expect_err("not visible");
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert_ne!(
        other.job(),
        session.job(),
        "job ids come from the job table"
    );
}

#[test]
fn node_ids_are_random_not_the_pid() {
    let a = TestNode::start(Setup::default());
    let b = TestNode::start(Setup::default());
    assert_ne!(a.node.id(), b.node.id());
    assert!(!a.node.id().contains(&std::process::id().to_string()));
}

/// Calls `reused_put(x, keep)` of `api` in a session of its own (a job,
/// as an HTTP invocation is), sharing warm instances across jobs when
/// `shared`; (inits, reinits, tasks) of the instance it ran on, `x`
/// read back, and 1 if it could cancel its child.
fn reused_put(
    node: &std::sync::Arc<wray_host::Node>,
    x: u64,
    keep: bool,
    shared: bool,
) -> Vec<u64> {
    let session = node.session().expect("a session");
    let options = TaskOptions {
        shared_reuse: shared,
        ..crate::support::json_results()
    };
    let args = vec![
        crate::support::json(&x.to_string()),
        crate::support::json(&keep.to_string()),
    ];
    let ids = session
        .submit_blocking("api", "reused_put", args, options)
        .expect("submits");
    let value = session.get_blocking(ids[0], None).expect("a value");
    serde_json::from_slice(&value.data).expect("a JSON array")
}

/// A node with one CPU and `api` deployed.
fn one_cpu_with_api() -> TestNode {
    let t = TestNode::start(Setup {
        num_cpus: 1,
        ..Setup::default()
    });
    t.node
        .deploy_file_blocking(component("api"))
        .expect("deploys");
    t
}

#[test]
fn shared_reuse_serves_jobs_from_one_warm_instance_bound_to_each_in_turn() {
    let t = one_cpu_with_api();
    let node = &t.node;
    // One instance serves three jobs, bound to each in turn: it may cancel
    // the child it submitted (a task may cancel only tasks of its job).
    assert_eq!(reused_put(node, 7, false, true), [1, 0, 1, 7, 1]);
    assert_eq!(reused_put(node, 8, false, true), [1, 1, 2, 8, 1]);
    // An instance left holding an object of its job is not shared on.
    assert_eq!(reused_put(node, 9, true, true), [1, 2, 3, 9, 1]);
    assert_eq!(reused_put(node, 10, false, true), [1, 0, 1, 10, 1]);
    assert_eq!(reused_put(node, 11, false, true), [1, 1, 2, 11, 1]);
    // Without `shared_reuse`, a job's instances are its own.
    assert_eq!(reused_put(node, 12, false, false), [1, 0, 1, 12, 1]);
    assert_eq!(reused_put(node, 13, false, true), [1, 2, 3, 13, 1]);
}

#[test]
fn every_instantiation_lands_in_a_cumulative_histogram() {
    const N: u64 = 20;
    let t = TestNode::start(Setup::default());
    t.node
        .deploy_file_blocking(component("microbench"))
        .expect("deploys");
    let before = t.node.instantiation_histogram();
    assert!(before.count >= 1, "deploy's describe made an instance");
    let session = t.node.session().expect("a session");
    for i in 0..N {
        let r = session
            .submit_blocking(
                "microbench",
                "noop",
                vec![Arg::Value(u64_payload(i))],
                TaskOptions::new(),
            )
            .expect("submits")[0];
        assert_eq!(u64_of(&session.get_blocking(r, None).expect("a value")), i);
    }
    let after = t.node.instantiation_histogram();
    assert!(
        after.count >= before.count + N,
        "{N} tasks, one fresh instance each: {before:?} then {after:?}"
    );
    assert_eq!(after.failed, 0);
    assert_eq!(after.cumulative.len(), after.bounds_ns.len());
    assert!(after.bounds_ns.windows(2).all(|w| w[0] < w[1]));
    assert!(
        after.cumulative.windows(2).all(|w| w[0] <= w[1])
            && after.cumulative.last().is_some_and(|&n| n <= after.count),
        "cumulative, ending at most at the count: {after:?}"
    );
    assert!(
        after.sum_ns > before.sum_ns && after.sum_ns / after.count > 0,
        "{after:?}"
    );
    // Counters only grow.
    assert!(before
        .cumulative
        .iter()
        .zip(&after.cumulative)
        .all(|(b, a)| b <= a));
}

/// `inc(x)` of `api` submitted with `options`, from inside `rt` when
/// given; its return object.
fn submit_inc(
    session: &wray_host::Session,
    rt: Option<&tokio::runtime::Runtime>,
    function: &str,
    x: u64,
) -> wray_host::ObjectId {
    let options = TaskOptions {
        on_caller_runtime: true,
        ..crate::support::json_results()
    };
    let args = vec![crate::support::json(&x.to_string())];
    let ids = match rt {
        Some(rt) => rt.block_on(session.submit("api", function, args, options)),
        None => session.submit_blocking("api", function, args, options),
    };
    ids.expect("submits")[0]
}

/// The worker the task of `id` ran on, by the task table.
fn worker_of(node: &wray_host::Node, id: &str) -> Option<String> {
    node.tasks()
        .into_iter()
        .find(|t| t.task_id == id)
        .and_then(|t| t.worker)
}

/// How many cores the calling thread may run on.
fn allowed_cores() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled in by the
    // kernel for the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let ok = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        assert_eq!(ok, 0, "sched_getaffinity");
        usize::try_from(libc::CPU_COUNT(&set)).expect("a count")
    }
}

fn caller_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("caller-rt")
        .enable_all()
        .build()
        .expect("a runtime")
}

/// `TaskOptions::on_caller_runtime`: a task submitted from inside a
/// multi-threaded tokio runtime runs as a task of that runtime. One it
/// could not start before the runtime shut down runs on a worker thread;
/// one that was running when it shut down fails with a `system` error
/// (its callers are not left waiting).
#[test]
fn a_task_on_its_callers_runtime_runs_there_and_is_not_lost_with_that_runtime() {
    let t = one_cpu_with_api();
    let session = t.node.session().expect("a session");
    let value = |id| -> u64 {
        let p = session
            .get_blocking(id, Some(std::time::Duration::from_secs(60)))
            .expect("a value");
        serde_json::from_slice(&p.data).expect("JSON")
    };
    let task_of = |id: wray_host::ObjectId| id.task.to_string();

    let rt = caller_runtime();
    let cores = || {
        rt.block_on(rt.spawn(async { allowed_cores() }))
            .expect("joins")
    };
    let before = cores();
    let ran_there = submit_inc(&session, Some(&rt), "inc", 1);
    assert_eq!(value(ran_there), 2);
    assert_eq!(
        worker_of(&t.node, &task_of(ran_there)).as_deref(),
        Some("caller-rt")
    );
    // One that waits on its own tasks takes its CPU back after the wait.
    // The node pins worker threads (it has fewer CPUs than the machine, when
    // the machine has 2 or more), never the runtime's thread.
    let waited = submit_inc(&session, Some(&rt), "run_experiment", 1);
    assert_eq!(value(waited), 55);
    assert_eq!(cores(), before, "the runtime's thread was pinned");
    // Outside a runtime the option changes nothing.
    let outside = submit_inc(&session, None, "inc", 2);
    assert_eq!(value(outside), 3);
    assert!(worker_of(&t.node, &task_of(outside)).is_some_and(|w| w.starts_with("wray-worker-")));

    // Queued behind a task holding the node's one CPU; its runtime shuts
    // down before that CPU is free.
    let busy = session
        .submit_blocking(
            "api",
            "sleep_ms",
            vec![crate::support::json("300")],
            crate::support::json_results(),
        )
        .expect("submits")[0];
    let queued = submit_inc(&session, Some(&rt), "inc", 41);
    drop(rt);
    assert_eq!(value(busy), 300);
    assert_eq!(value(queued), 42);
    assert!(worker_of(&t.node, &task_of(queued)).is_some_and(|w| w.starts_with("wray-worker-")));

    // Running (asleep in WASI) when its runtime shuts down.
    let rt = caller_runtime();
    let asleep = submit_inc(&session, Some(&rt), "sleep_ms", 600_000);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !t
        .node
        .tasks()
        .iter()
        .any(|r| r.task_id == task_of(asleep) && r.state == "RUNNING")
    {
        assert!(std::time::Instant::now() < deadline, "it never ran");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(rt);
    let err = session
        .get_blocking(asleep, Some(std::time::Duration::from_secs(60)))
        .expect_err("an error");
    assert_eq!(err.kind, ErrorKind::System, "{err}");
    assert!(err.message.contains("runtime shut down"), "{err}");
}

#[test]
fn a_listing_for_publishers_stops_at_its_limit_and_counts_the_rest() {
    let t = TestNode::start(Setup::default());
    let session = t.node.session().expect("a session");
    for i in 0..25 {
        session.put(u64_payload(i)).expect("put");
    }
    let (listed, total) = t.node.objects_source(10)();
    assert_eq!(listed.len(), 10);
    assert!(total >= 25, "{total} objects counted");
    let ids: Vec<_> = listed.iter().map(|o| o.id.clone()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "the first by id");
}

/// Waits (up to a minute) until task `id` runs on `node`.
fn wait_running(node: &wray_host::Node, id: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let running = node
            .tasks()
            .iter()
            .any(|t| t.task_id == id && t.state == "RUNNING");
        if running {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{id} never ran");
        std::thread::yield_now();
    }
}

#[test]
fn cancel_stops_a_running_actor_call_only_with_force_and_its_actor_dies() {
    let t = TestNode::start(Setup::default());
    t.node
        .deploy_file_blocking(component("api"))
        .expect("api deploys");
    let session = t.node.session().expect("a session");
    let napper = session
        .create_actor_blocking("api", "Napper", Vec::new(), TaskOptions::default())
        .expect("creates");
    let nap = |ms: u64| {
        session
            .call(
                napper,
                "nap",
                vec![Arg::Value(u64_payload(ms))],
                TaskOptions::new(),
            )
            .expect("calls")[0]
    };
    // Without force, a running call runs on to its value.
    let first = nap(300);
    wait_running(&t.node, &first.task.to_string());
    assert!(!session.cancel(first, false, false), "not stopped");
    assert_eq!(
        u64_of(&session.get_blocking(first, None).expect("a value")),
        1
    );
    // With force, it stops, and the actor dies with it.
    let second = nap(60_000);
    wait_running(&t.node, &second.task.to_string());
    assert!(session.cancel(second, true, false), "stopped");
    let err = session.get_blocking(second, None).expect_err("cancelled");
    assert_eq!(err.kind, ErrorKind::Cancelled, "{err}");
    let err = session.get_blocking(nap(1), None).expect_err("no actor");
    assert_eq!(err.kind, ErrorKind::ActorDied, "{err}");
}

/// A node may do its I/O on its caller's runtime, as `wray start` does
/// (one runtime in the process): its guests' tasks run on its workers and
/// their results come back; a current-thread runtime, which runs its
/// tasks only while its owner blocks on it, is refused.
#[test]
fn a_node_runs_on_its_callers_runtime_and_refuses_a_current_thread_one() {
    let config = || wray_host::NodeConfig {
        num_cpus: 2,
        max_instances: 256,
        ..wray_host::NodeConfig::default()
    };
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let refused = wray_host::Node::start_on(config(), current.handle().clone());
    assert!(
        matches!(refused, Err(wray_host::Error::InvalidConfig(_))),
        "a current-thread runtime is refused"
    );
    let io = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let node = wray_host::Node::start_on(config(), io.handle().clone()).expect("starts");
    node.deploy_file_blocking(component("microbench"))
        .expect("deploys");
    let session = node.session().expect("a session");
    for i in 0..20u64 {
        let returns = session
            .submit_blocking(
                "microbench",
                "noop",
                vec![Arg::Value(u64_payload(i))],
                TaskOptions::new(),
            )
            .expect("submits");
        let got = session.get_blocking(returns[0], None).expect("a result");
        assert_eq!(u64_of(&got), i);
    }
    // The node before the runtime it runs on, as `wray start` stops.
    drop(session);
    assert_eq!(node.shutdown(), 0);
    drop(node);
    io.shutdown_timeout(std::time::Duration::from_secs(5));
}
