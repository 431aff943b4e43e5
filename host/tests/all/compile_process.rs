//! Compiles in a child process (`NodeConfig::compiler`): one past its time
//! limit is killed, its slot free again at once, no process left behind;
//! one that compiles is cached and reused. The compile program is this
//! test binary, run as [`compile_process_entry`] (what `wray __compile`
//! runs in the `wray` binary).

use std::time::{Duration, Instant};

use wray_host::{CompileCommand, Node, NodeConfig, Stdio, TaskOptions, DEFAULT_COMPILE_MEMORY};

use crate::deploys::synth;
use crate::support::{component, json};

/// Set for this binary run as a compile process.
const AS_COMPILER: &str = "WRAY_TEST_COMPILE_PROCESS";

/// Not a test: this binary's compile process, run by the nodes below
/// (`--exact` selects it alone; it exits the process).
#[test]
fn compile_process_entry() {
    if std::env::var_os(AS_COMPILER).is_some() {
        std::process::exit(i32::from(wray_host::compile_process()));
    }
}

/// This test binary as a node's compile program, its processes marked
/// with `mark` (in their environment: tests run at once, each with its
/// node's compile processes).
fn compiler(mark: &str) -> CompileCommand {
    CompileCommand {
        program: std::env::current_exe().expect("the test binary"),
        args: [
            "compile_process::compile_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ]
        .map(Into::into)
        .to_vec(),
        envs: vec![(AS_COMPILER.into(), mark.into())],
        memory_limit: DEFAULT_COMPILE_MEMORY,
    }
}

fn config(mark: &str) -> NodeConfig {
    NodeConfig {
        cache_dir: None,
        num_cpus: 2,
        compile_slots: Some(1),
        stdio: Stdio::memory(),
        max_instances: 16,
        compiler: Some(compiler(mark)),
        ..NodeConfig::default()
    }
}

/// The processes this one started that have not been reaped (zombies
/// included), from `/proc/self/task/*/children`.
fn children() -> Vec<String> {
    let mut all = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("procfs") {
        let path = task.expect("a task").path().join("children");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        all.extend(text.split_whitespace().map(str::to_string));
    }
    all
}

/// The child processes of this one that are compile processes marked
/// `mark` (other tests of this binary start other children).
fn compile_processes(mark: &str) -> Vec<String> {
    let wanted = format!("{AS_COMPILER}={mark}");
    children()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
        })
        .collect()
}

/// Waits (up to 30 s) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_compile_past_its_limit_is_killed_and_its_slot_is_free_at_once() {
    let node = Node::start(NodeConfig {
        // Well past a small component's compile on a busy machine, and
        // far short of the big one's.
        compile_timeout: Duration::from_secs(4),
        ..config("killed")
    })
    .expect("node starts");
    // Tens of seconds of Cranelift on two cores.
    let names = [synth::FUNCTIONS, synth::METADATA];
    let big = synth::component(32 << 20, &[], &names);
    let started = Instant::now();
    let err = node
        .deploy_blocking("big", &big)
        .expect_err("past the time limit");
    assert!(
        err.to_string().contains("took longer than 4.000 s"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    wait_until("the compile process is killed and reaped", || {
        compile_processes("killed").is_empty() && node.compile_stats().running == 0
    });
    let stats = node.compile_stats();
    assert_eq!((stats.timed_out, stats.killed), (1, 1));
    // The only slot is free: the next deploy compiles at once, not `busy`
    // after waiting 4 s for it.
    let bytes = std::fs::read(component("hostile")).expect("a built component");
    node.deploy_blocking("hostile", &bytes)
        .expect("deploys in the freed slot");
    let session = node.session().expect("a session");
    let ids = session
        .submit_blocking("hostile", "ping", vec![json("41")], TaskOptions::new())
        .expect("submitted");
    session.get_blocking(ids[0], None).expect("answered");
    assert!(compile_processes("killed").is_empty());
}

#[test]
fn a_component_compiled_in_a_process_is_cached_and_reused() {
    let cache = tempfile::tempdir().expect("a directory");
    let cached = || NodeConfig {
        cache_dir: Some(cache.path().join("compiled")),
        ..config("cached")
    };
    let bytes = std::fs::read(component("hostile")).expect("a built component");
    let first = Node::start(cached()).expect("node starts");
    first.deploy_blocking("hostile", &bytes).expect("deploys");
    let artifacts: Vec<_> = std::fs::read_dir(cache.path().join("compiled"))
        .expect("the cache directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        artifacts.len() == 1 && artifacts[0].ends_with(".cwasm"),
        "{artifacts:?}"
    );
    assert_eq!(first.compile_stats().cache_hits, 0);
    let second = Node::start(cached()).expect("node starts");
    second.deploy_blocking("hostile", &bytes).expect("deploys");
    assert_eq!(
        second.compile_stats().cache_hits,
        1,
        "loaded from the cache"
    );
    let session = second.session().expect("a session");
    let ids = session
        .submit_blocking("hostile", "ping", vec![json("41")], TaskOptions::new())
        .expect("submitted");
    session.get_blocking(ids[0], None).expect("answered");
}

#[test]
fn a_component_compiled_in_a_process_is_linked_and_refused_as_before() {
    let node = Node::start(config("linked")).expect("node starts");
    // Passes the cheap checks (wray's parts by name), then the compiler's
    // type check refuses it.
    let names = [synth::FUNCTIONS, synth::METADATA];
    let err = node
        .deploy_blocking("odd", &synth::component(4096, &[], &names))
        .expect_err("not wray's world");
    assert!(
        err.to_string()
            .contains("does not match wray:runtime 0.1.0"),
        "{err}"
    );
    assert!(compile_processes("linked").is_empty());
}

/// `sh -c SCRIPT` as a node's compile program.
fn shell(script: &str) -> CompileCommand {
    CompileCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        envs: Vec::new(),
        memory_limit: DEFAULT_COMPILE_MEMORY,
    }
}

#[test]
fn an_artifact_the_engine_refuses_is_a_clear_error_and_a_missing_program_falls_back() {
    let bytes = std::fs::read(component("hostile")).expect("a built component");
    // A compile program that says it compiled but wrote nothing: wasmtime
    // refuses the file, and the deploy says so.
    let node = Node::start(NodeConfig {
        compiler: Some(shell("cat > /dev/null")),
        ..config("refused")
    })
    .expect("node starts");
    let err = node
        .deploy_blocking("hostile", &bytes)
        .expect_err("no artifact");
    assert!(
        err.to_string().contains(
            "does not load into this node's engine (is `/bin/sh` another build of wray?)"
        ),
        "{err}"
    );
    // One that fails names its exit status and what it said.
    let node = Node::start(NodeConfig {
        compiler: Some(shell("echo out of luck >&2; exit 7")),
        ..config("failed")
    })
    .expect("node starts");
    let err = node
        .deploy_blocking("hostile", &bytes)
        .expect_err("no artifact");
    assert!(
        err.to_string()
            .contains("the compile process failed (exit status 7): out of luck"),
        "{err}"
    );
    // One that cannot start: compiled in-process instead.
    let node = Node::start(NodeConfig {
        compiler: Some(CompileCommand {
            program: "/nonexistent/wray".into(),
            ..compiler("missing")
        }),
        ..config("missing")
    })
    .expect("node starts");
    node.deploy_blocking("hostile", &bytes)
        .expect("compiled in-process");
}
