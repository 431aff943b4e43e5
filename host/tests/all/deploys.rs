//! What a node holds of deployed components, bounded (names, versions per
//! name, bytes, compiled code; a node following a shared table too), and
//! what a deploy costs: cheap checks before any compile, compiles on a
//! bounded pool under a time limit, calls answering meanwhile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_control_plane::EmbeddedFunctionTable;
use wray_host::TaskOptions;
use wray_host::{DeployBound, Error, Node, NodeConfig, Stdio};

use crate::support::{component, json};

#[path = "../common/synth.rs"]
pub(crate) mod synth;

/// A node of these tests. None uses the compile cache: a component
/// compiled afresh and one loaded from the cache need not take the same
/// bytes of code, and the cache (shared by every test running at once) may
/// or may not hold a component when a node looks, so the code sizes
/// compared here would depend on the order tests ran in.
fn config() -> NodeConfig {
    NodeConfig {
        cache_dir: None,
        num_cpus: 2,
        stdio: Stdio::memory(),
        max_instances: 64,
        ..NodeConfig::default()
    }
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(component(name)).expect("a built component")
}

/// The bound a deploy met; fails the test for anything else.
fn limit(result: wray_host::Result<wray_host::ComponentRecord>) -> (DeployBound, String) {
    match result {
        Err(Error::DeployLimit(limit)) => (limit.bound, limit.to_string()),
        other => panic!("expected a deploy past a bound, got {other:?}"),
    }
}

/// Waits (up to 120 s) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(120), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_name_past_the_bound_is_refused_naming_it_and_an_undeploy_makes_room() {
    let node = Node::start(NodeConfig {
        max_components: 2,
        ..config()
    })
    .expect("node starts");
    let api = bytes("api");
    node.deploy_blocking("one", &api).expect("deploys");
    node.deploy_blocking("two", &api).expect("deploys");
    let (bound, message) = limit(node.deploy_blocking("three", &api));
    assert_eq!(bound, DeployBound::Names);
    assert!(bound.is_count(), "HTTP answers 409");
    assert!(
        message.contains("holds 2 component names") && message.contains("--max-components 2"),
        "{message}"
    );
    // Another version of a name it has is no new name.
    node.deploy_blocking("two", &bytes("hostile"))
        .expect("deploys");
    assert!(node.undeploy_blocking("one").expect("undeploys"));
    node.deploy_blocking("three", &api).expect("deploys");
    assert_eq!(node.component_usage().names, 2);
}

#[test]
fn old_versions_are_dropped_their_code_given_back_and_one_an_actor_uses_is_kept() {
    let node = Node::start(NodeConfig {
        max_versions: 1,
        ..config()
    })
    .expect("node starts");
    // What microbench's code costs, measured on this node, then given back.
    node.deploy_blocking("m", &bytes("microbench"))
        .expect("deploys");
    let micro_code = node.component_usage().compiled_bytes;
    assert!(micro_code > 0, "its compiled code is accounted");
    assert!(node.undeploy_blocking("m").expect("undeploys"));
    assert_eq!(node.component_usage().compiled_bytes, 0);
    node.deploy_blocking("x", &bytes("api")).expect("deploys");
    let api_code = node.component_usage().compiled_bytes;
    assert!(api_code > 0, "its compiled code is accounted");
    // An actor of version 1 keeps it loaded: version 2 finds no version it
    // may drop.
    let session = node.session().expect("a session");
    let actor = session
        .create_actor_blocking("x", "Counter", vec![json("1")], TaskOptions::new())
        .expect("created");
    let read = session
        .call(actor, "get", Vec::new(), TaskOptions::new())
        .expect("called");
    session
        .get_blocking(read[0], None)
        .expect("the actor lives");
    let (bound, message) = limit(node.deploy_blocking("x", &bytes("microbench")));
    assert_eq!(bound, DeployBound::Versions);
    assert!(
        message.contains("tasks or actors use every one") && message.contains("--max-versions 1"),
        "{message}"
    );
    // Once the actor is gone, version 2 replaces version 1, whose code is
    // given back.
    assert!(session.kill_actor(actor));
    // The actor's instance (and its use of version 1) is dropped just
    // after the kill returns: the deploy is refused until then.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match node.deploy_blocking("x", &bytes("microbench")) {
            Ok(_) => break,
            Err(wray_host::Error::DeployLimit(l))
                if l.bound == DeployBound::Versions && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("deploys once the actor is gone: {e}"),
        }
    }
    let usage = node.component_usage();
    assert_eq!((usage.names, usage.versions), (1, 1));
    assert_eq!(
        usage.compiled_bytes, micro_code,
        "version 1's code given back"
    );
    // An undeploy gives everything back.
    drop(session);
    assert!(node.undeploy_blocking("x").expect("undeploys"));
    let usage = node.component_usage();
    assert_eq!(
        (usage.versions, usage.bytes, usage.compiled_bytes),
        (0, 0, 0)
    );
}

#[test]
fn bytes_and_compiled_code_past_their_budgets_are_refused() {
    // What two components cost, measured on a node without tight bounds.
    let probe = Node::start(config()).expect("node starts");
    probe
        .deploy_blocking("api", &bytes("api"))
        .expect("deploys");
    let api = probe.component_usage();
    probe
        .deploy_blocking("hostile", &bytes("hostile"))
        .expect("deploys");
    let both = probe.component_usage();

    let files = Node::start(NodeConfig {
        max_component_bytes: (both.bytes - 1).max(1 << 20),
        ..config()
    })
    .expect("node starts");
    files
        .deploy_blocking("api", &bytes("api"))
        .expect("deploys");
    let (bound, message) = limit(files.deploy_blocking("hostile", &bytes("hostile")));
    assert_eq!(bound, DeployBound::ComponentBytes);
    assert!(bound.is_bytes(), "HTTP answers 507");
    assert!(message.contains("--max-component-mib"), "{message}");

    let code = Node::start(NodeConfig {
        max_compiled_bytes: (both.compiled_bytes - 1).max(1 << 20),
        ..config()
    })
    .expect("node starts");
    code.deploy_blocking("api", &bytes("api")).expect("deploys");
    assert_eq!(code.component_usage().compiled_bytes, api.compiled_bytes);
    let (bound, message) = limit(code.deploy_blocking("hostile", &bytes("hostile")));
    assert_eq!(bound, DeployBound::CompiledBytes);
    assert!(message.contains("--max-compiled-mib"), "{message}");
    assert_eq!(code.component_usage().names, 1, "nothing changed");
}

#[test]
fn a_node_following_a_shared_table_stays_within_its_bounds() {
    let table = Arc::new(EmbeddedFunctionTable::new());
    let writer = Node::with_function_table(config(), table.clone()).expect("node starts");
    let follower = Node::with_function_table(
        NodeConfig {
            max_components: 1,
            ..config()
        },
        table,
    )
    .expect("node starts");
    writer
        .deploy_blocking("one", &bytes("api"))
        .expect("deploys");
    wait_until("the follower has `one`", || {
        follower.deployed("one").is_some()
    });
    writer
        .deploy_blocking("two", &bytes("api"))
        .expect("deploys");
    let newer = writer
        .deploy_blocking("one", &bytes("microbench"))
        .expect("deploys");
    // Events arrive in order: once `one` is the newer version there, `two`
    // was seen (and refused: the follower holds one name at most).
    wait_until("the follower has the newer `one`", || {
        follower
            .deployed("one")
            .is_some_and(|r| r.hash == newer.hash)
    });
    assert!(follower.deployed("two").is_none());
    assert_eq!(follower.component_usage().names, 1);
    assert_eq!(
        follower.compile_stats().started,
        2,
        "`two` was not even fetched and compiled"
    );
}

#[test]
fn an_80_mib_component_exporting_nothing_is_refused_before_compiling() {
    let node = Node::start(config()).expect("node starts");
    let big = synth::component(80 << 20, &["wasi:cli/stdout@0.2.6"], &[]);
    let err = node
        .deploy_blocking("big", &big)
        .expect_err("exports nothing");
    let Error::Component { reason, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        reason.contains("it exports none of `wray:runtime/functions@0.1.0`")
            && reason.contains("(it exports nothing)"),
        "{reason}"
    );
    let stats = node.compile_stats();
    assert_eq!((stats.started, stats.refused_before_compile), (0, 1));
    // With the parts' names but more code than a component may have (64
    // MiB by default): the same, before compiling.
    let names = [synth::FUNCTIONS, synth::METADATA];
    let err = node
        .deploy_blocking("big", &synth::component(80 << 20, &[], &names))
        .expect_err("too much code");
    assert!(err.to_string().contains("--max-code-mib 64"), "{err}");
    assert_eq!(node.compile_stats().started, 0);
}

#[test]
fn a_compile_past_its_time_limit_fails_the_deploy_naming_it() {
    let node = Node::start(NodeConfig {
        compile_timeout: Duration::from_millis(1),
        cache_dir: None,
        ..config()
    })
    .expect("node starts");
    let names = [synth::FUNCTIONS, synth::METADATA];
    let err = node
        .deploy_blocking("slow", &synth::component(4 << 20, &[], &names))
        .expect_err("past the time limit");
    assert!(
        err.to_string()
            .contains("compiling it took longer than 0.001 s, the most a compile may take (--compile-timeout)"),
        "{err}"
    );
    assert_eq!(node.compile_stats().timed_out, 1);
}

#[test]
fn calls_answer_while_a_large_deploy_compiles_and_compiles_wait_their_turn() {
    // Two CPUs: one compile slot.
    let node = Arc::new(
        Node::start(NodeConfig {
            cache_dir: None,
            compile_timeout: Duration::from_secs(600),
            ..config()
        })
        .expect("node starts"),
    );
    assert_eq!(node.compile_stats().slots, 1);
    node.deploy_blocking("hostile", &bytes("hostile"))
        .expect("deploys");
    let before = node.compile_stats().started;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    // Wray's parts by name, not by type: it compiles, then is refused.
    let names = [synth::FUNCTIONS, synth::METADATA];
    let big: Arc<[u8]> = Arc::from(synth::component(32 << 20, &[], &names));
    let first = {
        let (node, big) = (node.clone(), big.clone());
        rt.spawn(async move { node.deploy_async("big", big).await })
    };
    wait_until("the first deploy compiles", || {
        node.compile_stats().running == 1
    });
    let second = {
        let node = node.clone();
        rt.spawn(async move { node.deploy_async("big2", big).await })
    };
    wait_until("the second deploy waits for the slot", || {
        node.compile_stats().waiting == 1
    });
    // A call runs and answers meanwhile.
    let session = node.session().expect("a session");
    let ids = session
        .submit_blocking("hostile", "ping", vec![json("41")], TaskOptions::new())
        .expect("submitted");
    let answer = session.get_blocking(ids[0], None).expect("answered");
    assert!(!answer.data.is_empty());
    let stats = node.compile_stats();
    assert_eq!(
        (stats.running, stats.waiting, stats.started - before),
        (1, 1, 1),
        "the call answered while the first compile ran and the second waited"
    );
    // Dropped while it waits: nothing of it compiles.
    second.abort();
    wait_until("the second deploy stops waiting", || {
        node.compile_stats().waiting == 0
    });
    let refused = rt
        .block_on(first)
        .expect("the deploy ran")
        .expect_err("not wray's world");
    assert!(
        refused
            .to_string()
            .contains("does not match wray:runtime 0.1.0"),
        "{refused}"
    );
    let stats = node.compile_stats();
    assert_eq!((stats.started - before, stats.peak_running), (1, 1));
    drop(session);
}
