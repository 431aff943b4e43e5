//! Versioned calls (`app@1`) and rollback on a node: a kept version runs
//! its own code, a rollback makes it what the name means again, and a
//! version pruned or never deployed is refused naming the versions kept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_control_plane::MAX_VERSIONS_KEPT;
use wray_host::ErrorKind;
use wray_host::{Error, JobStatus, Jobs, Node, NodeConfig, Stdio};

use crate::deploys::synth::variant;
use crate::support::{component, json, json_results};

/// `sub_experiment(1, 2)` through `target`: its JSON result, or the
/// error's kind.
fn sub_experiment(node: &Arc<Node>, target: &str) -> Result<String, ErrorKind> {
    let session = node.session().expect("a session");
    let ids = session
        .submit_blocking(
            target,
            "sub_experiment",
            vec![json("1"), json("2")],
            json_results(),
        )
        .expect("submits");
    let got = session.get_blocking(ids[0], Some(Duration::from_secs(60)));
    got.map(|p| String::from_utf8_lossy(&p.data).into_owned())
        .map_err(|e| e.kind)
}

/// A node with `nested` deployed as `app` version 1 and `microbench` as
/// version 2: only version 1 has `sub_experiment`.
fn two_versions() -> Arc<Node> {
    let node = Node::start(NodeConfig {
        num_cpus: 2,
        stdio: Stdio::memory(),
        max_instances: 64,
        ..NodeConfig::default()
    })
    .expect("node starts");
    let nested = std::fs::read(component("nested")).expect("nested is built");
    let mb = std::fs::read(component("microbench")).expect("microbench is built");
    assert_eq!(
        node.deploy_version_blocking("app", &nested)
            .expect("v1")
            .version,
        1
    );
    assert_eq!(
        node.deploy_version_blocking("app", &mb)
            .expect("v2")
            .version,
        2
    );
    node
}

#[test]
fn a_call_to_an_old_version_runs_its_code_and_a_rollback_makes_it_current() {
    let node = two_versions();
    assert_eq!(sub_experiment(&node, "app@1").as_deref(), Ok("3"));
    assert_eq!(sub_experiment(&node, "app"), Err(ErrorKind::NotFound));
    assert_eq!(node.component_blocking("app").expect("deployed").version, 2);

    // A job of `app@1` runs version 1's `main`.
    let jobs = Jobs::default();
    let info = jobs
        .submit_blocking(node.clone(), "app@1", Vec::new())
        .expect("submits");
    assert_eq!(info.component, "app@1");
    let job = info.job_id.parse().expect("id");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !jobs.info(job).expect("info").status.is_terminal() {
        assert!(Instant::now() < deadline, "the job never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(jobs.info(job).expect("info").status, JobStatus::Succeeded);
    let log = jobs.log(job).expect("log").0.read(0, usize::MAX).bytes;
    assert_eq!(String::from_utf8_lossy(&log), "[45, 55, 65, 75, 85]\n");

    // Rollback: the name means version 1 again, here and in the table.
    let current = block(node.rollback("app", 1)).expect("rolls back");
    assert_eq!(current.version, 1);
    assert_eq!(node.component_blocking("app").expect("deployed").version, 1);
    assert_eq!(sub_experiment(&node, "app").as_deref(), Ok("3"));
    let listed = node.components_blocking().expect("listed");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].version, 1);
    // Version 2 is still kept; its bytes deployed again make it current
    // again, with its number: no version 3.
    assert_eq!(sub_experiment(&node, "app@2"), Err(ErrorKind::NotFound));
    let mb = std::fs::read(component("microbench")).expect("built");
    let again = block(node.deploy_async("app", Arc::from(&mb[..]))).expect("deploys");
    assert_eq!((again.current.version, again.new), (2, false));
    assert_eq!(sub_experiment(&node, "app"), Err(ErrorKind::NotFound));
    let numbers: Vec<u64> = block(node.versions("app"))
        .expect("kept")
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(numbers, [1, 2]);
    // New bytes are version 3.
    assert_eq!(
        node.deploy_version_blocking("app", &variant(&mb, 1))
            .expect("v3")
            .version,
        3
    );
}

#[test]
fn a_pruned_or_unknown_version_is_refused_naming_the_versions_kept() {
    let node = two_versions();
    let mb = std::fs::read(component("microbench")).expect("built");
    let nested = std::fs::read(component("nested")).expect("built");
    let kept = u64::try_from(MAX_VERSIONS_KEPT).expect("small");
    for n in 0..kept {
        let n = u8::try_from(n).expect("small");
        node.deploy_version_blocking("app", &variant(&nested, n))
            .expect("deploys");
    }
    let newest = kept + 2;
    let names: Vec<String> = (3..=newest).map(|v| v.to_string()).collect();
    let kept_text = format!("the versions kept are {}", names.join(", "));
    for version in [1, newest + 1] {
        let e = block(node.component_at("app", version)).expect_err("not kept");
        assert!(
            matches!(&e, Error::VersionNotFound { version: v, kept, .. } if *v == version && kept.len() == MAX_VERSIONS_KEPT),
            "{e}"
        );
        assert!(e.to_string().contains(&kept_text), "{e}");
        let e = block(node.rollback("app", version)).expect_err("not kept");
        assert!(e.to_string().contains(&kept_text), "{e}");
    }
    let session = node.session().expect("a session");
    let e = session
        .submit_blocking(
            "app@1",
            "sub_experiment",
            vec![json("1"), json("2")],
            json_results(),
        )
        .expect_err("pruned");
    assert!(e.to_string().contains(&kept_text), "{e}");
    let e = block(node.component_at("nothing", 1)).expect_err("not deployed");
    assert!(matches!(e, Error::NotDeployed(_)), "{e}");
    let e = session
        .submit_blocking("app@x", "sub_experiment", Vec::new(), json_results())
        .expect_err("malformed");
    assert!(e.to_string().contains("not a version number"), "{e}");
    // A name cannot hold `@`.
    let e = node.deploy_blocking("a@b", &mb).expect_err("refused");
    assert!(e.to_string().contains("`@`"), "{e}");
}

/// The function table's watch tells the node of its own deploys and
/// rollbacks too, a moment later: an event handled after the node changed
/// the name again must not bring back what the event was sent for.
#[test]
fn a_late_event_of_the_table_never_undoes_a_later_deploy_or_rollback() {
    let node = two_versions();
    let nested = std::fs::read(component("nested")).expect("nested is built");
    let mb = std::fs::read(component("microbench")).expect("microbench is built");
    let hash = |bytes: &[u8]| wray_control_plane::content_hash(bytes);
    let (nested_hash, mb_hash) = (hash(&nested), hash(&mb));
    let means = |node: &Node| node.deployed("app").expect("deployed").hash.clone();
    // Threads that keep the CPUs busy, so that the watch's task is
    // preempted at any point of its handling (as on a loaded machine).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hogs: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let _stop = StopOnDrop(stop);
    for round in 0..200 {
        let v = node
            .deploy_version_blocking("app", &nested)
            .expect("deploys")
            .version;
        assert_eq!(means(&node), nested_hash, "round {round}: after its deploy");
        node.deploy_version_blocking("app", &mb).expect("deploys");
        assert_eq!(means(&node), mb_hash, "round {round}: after its deploy");
        block(node.rollback("app", v)).expect("rolls back");
        assert_eq!(means(&node), nested_hash, "round {round}: after a rollback");
        node.deploy_version_blocking("app", &mb).expect("deploys");
        assert_eq!(means(&node), mb_hash, "round {round}: after a rollback");
    }
    drop(_stop);
    for hog in hogs {
        hog.join().expect("a hog ends");
    }
}

/// Sets its flag when dropped (a failed assertion too stops the hogs).
struct StopOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Runs a control-plane future of the node from this plain test thread.
fn block<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// A call of `app@1` from inside an async runtime is awaited to its end
/// (the function table read, the version loaded) on a current-thread
/// runtime, where a `block_in_place` would panic; the blocking form
/// refuses there rather than block the runtime's thread.
#[test]
fn a_versioned_call_is_awaited_inside_a_runtime_and_its_blocking_form_refuses_there() {
    let node = two_versions();
    let session = node.session().expect("a session");
    let args = || vec![json("1"), json("2")];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let ids = session
            .submit("app@1", "sub_experiment", args(), json_results())
            .await
            .expect("submits");
        let got = session
            .get(ids[0], Some(Duration::from_secs(60)))
            .await
            .expect("a value");
        assert_eq!(String::from_utf8_lossy(&got.data), "3");
        let e = session
            .submit_blocking("app@1", "sub_experiment", args(), json_results())
            .expect_err("refused inside a runtime");
        assert!(matches!(e, Error::BlockingInRuntime(_)), "{e}");
        let e = node
            .component_blocking("app")
            .expect_err("refused inside a runtime");
        assert!(matches!(e, Error::BlockingInRuntime(_)), "{e}");
    });
}
