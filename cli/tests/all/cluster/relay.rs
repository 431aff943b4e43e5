//! Any node's HTTP API reaches what was made through another: a job
//! submitted through node 1 is listed, followed and stopped through node
//! 2; an async call's result made through node 1 is read through node 2;
//! an actor created through node 1 is called and killed through node 2.
//! What no node has is a 404 saying so. A 64 MiB async result reads whole
//! through any node (streamed through the relaying one, which holds a few
//! MiB of it at a time), is marked read only once delivered, and stays
//! readable after a read its client cut short.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::harness::{deploy_api, start_job, wait_within, Cluster};
use crate::node_ops::StartedNode;
use crate::support::{component, success_stdout};

/// The status and JSON answer of `req`.
fn answer(req: Result<ureq::Response, ureq::Error>) -> (u16, Value, Option<String>) {
    let r = match req {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("no answer: {e}"),
    };
    let node = r.header("wray-node").map(str::to_string);
    (r.status(), r.into_json().unwrap_or(Value::Null), node)
}

#[test]
fn jobs_objects_and_actors_made_through_one_node_are_reached_through_another() {
    let cluster = Cluster::start(2, &[]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let ids = cluster.node_ids();
    let (one, two) = (cluster.node(1), cluster.node(2));
    deploy_api(one);

    // A job through node 1, followed to its end through node 2.
    let id = start_job(one, &["chain"]);
    let (status, info, node) = answer(two.request("GET", &format!("/v1/jobs/{id}")).call());
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["job_id"], id.as_str(), "{info}");
    assert_eq!(node.as_deref(), Some(ids[0].as_str()));
    let followed = success_stdout(&two.run(&["job", "logs", "--follow", &id]));
    assert!(followed.contains("sum_refs 6"), "{followed}");
    let said = success_stdout(&two.run(&["job", "status", &id]));
    assert!(said.contains("SUCCEEDED"), "{said}");

    // A job that runs on until stopped, stopped through node 2.
    let forever = start_job(one, &["job_forever"]);
    let status = |n: &crate::node_ops::StartedNode| {
        answer(n.request("GET", &format!("/v1/jobs/{forever}")).call()).1["status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    wait_within("the job to run", Duration::from_secs(30), || {
        status(two) == "RUNNING"
    });
    let (s, stopped, _) = answer(
        two.request("POST", &format!("/v1/jobs/{forever}/stop"))
            .call(),
    );
    assert_eq!(s, 200, "{stopped}");
    wait_within("the job to stop", Duration::from_secs(30), || {
        status(one) == "STOPPED"
    });

    // An async call's result, made through node 1, read through node 2.
    let (s, call, _) = answer(
        one.request("POST", "/v1/functions/api/inc?async=true")
            .send_string("[41]"),
    );
    assert_eq!(s, 202, "{call}");
    let object = call["objects"][0]
        .as_str()
        .expect("an object id")
        .to_string();
    let (s, value, node) = answer(two.request("GET", &format!("/v1/objects/{object}")).call());
    assert_eq!((s, value), (200, serde_json::json!(42)));
    assert_eq!(node.as_deref(), Some(ids[0].as_str()));

    // An actor created through node 1, called and killed through node 2.
    let (s, made, _) = answer(
        one.request("POST", "/v1/actors")
            .send_string(r#"{"component": "api", "class": "Counter", "args": [10]}"#),
    );
    assert_eq!(s, 201, "{made}");
    let actor = made["actor"].as_str().expect("an actor id").to_string();
    let (s, value, _) = answer(
        two.request("POST", &format!("/v1/actors/{actor}/increment"))
            .send_string("[]"),
    );
    assert_eq!((s, value), (200, serde_json::json!(11)));
    let (s, _, _) = answer(two.request("DELETE", &format!("/v1/actors/{actor}")).call());
    assert_eq!(s, 200);
    let (s, gone, _) = answer(
        one.request("POST", &format!("/v1/actors/{actor}/increment"))
            .send_string("[]"),
    );
    assert_ne!(s, 200, "killed: {gone}");

    // What no node has.
    let (s, missing, _) = answer(two.request("GET", "/v1/jobs/0123456789abcdef").call());
    assert_eq!(s, 404, "{missing}");
    let message = missing["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no other live node of the cluster has it either"),
        "{missing}"
    );
    assert!(!message.contains("forgotten"), "{missing}");
}

/// Bytes of the large results: 64 MiB.
const LARGE: usize = 64 << 20;

/// How long a large read may take.
const LARGE_READ: Duration = Duration::from_secs(120);

/// An async call of `mb/make_bytes(LARGE)` through `node`: the id of the
/// 64 MiB object its result refers to (the result itself read there).
fn large_result(node: &StartedNode) -> String {
    let (s, call, _) = answer(
        node.request("POST", "/v1/functions/mb/make_bytes?async=true")
            .timeout(LARGE_READ)
            .send_string(&format!("[{LARGE}]")),
    );
    assert_eq!(s, 202, "{call}");
    let id = call["objects"][0].as_str().expect("an object id");
    let (s, reference, _) = answer(
        node.request("GET", &format!("/v1/objects/{id}?timeout=100"))
            .timeout(LARGE_READ)
            .call(),
    );
    assert_eq!(s, 200, "{reference}");
    reference["$object"]
        .as_str()
        .expect("a ref to the bytes")
        .to_string()
}

/// `GET /v1/objects/{id}` of raw bytes through `node`.
fn get_bytes(node: &StartedNode, id: &str) -> ureq::Response {
    let r = node
        .request("GET", &format!("/v1/objects/{id}"))
        .set("Accept", "application/octet-stream")
        .timeout(LARGE_READ)
        .call();
    match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("no answer: {e}"),
    }
}

/// Object `id` read whole through `node`: its status, the node that
/// answered (`Wray-Node`) and its bytes.
fn read_bytes(node: &StartedNode, id: &str) -> (u16, Option<String>, Vec<u8>) {
    let r = get_bytes(node, id);
    let (status, from) = (r.status(), r.header("wray-node").map(str::to_string));
    let mut body = Vec::new();
    r.into_reader()
        .read_to_end(&mut body)
        .expect("the whole body");
    (status, from, body)
}

/// Whether object `id` was marked read on `node` (its owner): asked for
/// as JSON, an unread rkyv value answers 406 and stays unread; a read one
/// is 404.
fn marked_read(node: &StartedNode, id: &str) -> bool {
    let r = node
        .request("GET", &format!("/v1/objects/{id}"))
        .set("Accept", "application/json")
        .call();
    let status = match r {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(s, _)) => s,
        Err(e) => panic!("no answer: {e}"),
    };
    assert!(matches!(status, 404 | 406), "{status}");
    status == 404
}

/// Resident memory of process `pid`, in bytes (`VmRSS`).
fn resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib << 10)
}

/// Samples the resident memory of process `pid` every millisecond while
/// `during` runs: what it returns, and the most above what it was before.
fn peak_growth<T>(pid: u32, during: impl FnOnce() -> T) -> (T, u64) {
    let before = resident(pid);
    let (stop, peak) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(before)),
    );
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(resident(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let out = during();
    stop.store(true, Ordering::Relaxed);
    sampler.join().expect("the sampler ends");
    (out, peak.load(Ordering::Relaxed).saturating_sub(before))
}

#[test]
fn a_64_mib_async_result_is_read_whole_through_any_node_and_a_read_cut_short_loses_nothing() {
    let cluster = Cluster::start(3, &[]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let ids = cluster.node_ids();
    let one = cluster.node(1);
    let mb = component("microbench");
    success_stdout(&one.run(&["deploy", mb.to_str().expect("UTF-8"), "--name", "mb"]));

    // A result made through node 1, read through node 2, node 3, then
    // node 1 itself: the same bytes each time (64 MiB of ones, after the
    // SDK's header), answered by node 1, then read (once delivered).
    let mut reads = Vec::new();
    for via in [2, 3, 1] {
        let id = large_result(one);
        let node = cluster.node(via);
        let start = std::time::Instant::now();
        let ((status, from, body), growth) = peak_growth(node.pid, || read_bytes(node, &id));
        let took = start.elapsed();
        assert_eq!(
            status,
            200,
            "through node {via}: {}",
            String::from_utf8_lossy(&body)
        );
        let relayed = (via != 1).then_some(ids[0].as_str());
        assert_eq!(from.as_deref(), relayed, "through node {via}");
        println!(
            "read {} bytes through node {via} in {took:?}: its resident memory grew by {} KiB \
             at most",
            body.len(),
            growth >> 10
        );
        if via != 1 {
            // Relayed a chunk at a time: never the whole value in memory.
            assert!(growth < 32 << 20, "node {via} grew by {growth} bytes");
        }
        wait_within(
            "the object to be marked read",
            Duration::from_secs(30),
            || marked_read(one, &id),
        );
        reads.push(body);
    }
    let owner = reads.pop().expect("read at the owner");
    assert!(
        (LARGE..LARGE + 4096).contains(&owner.len()),
        "{} bytes",
        owner.len()
    );
    assert!(owner.iter().filter(|b| **b == 1).count() >= LARGE);
    for (via, read) in [2, 3].iter().zip(&reads) {
        assert!(
            read == &owner,
            "through node {via}: {} bytes differ",
            read.len()
        );
    }

    // A read whose client goes after the first MiB, through node 2 and at
    // node 1: the object stays, and reads whole through node 3.
    for via in [2, 1] {
        let id = large_result(one);
        let r = get_bytes(cluster.node(via), &id);
        assert_eq!(r.status(), 200, "through node {via}");
        let mut reader = r.into_reader();
        let mut first = vec![0u8; 1 << 20];
        reader.read_exact(&mut first).expect("the first MiB");
        assert_eq!(first[..], owner[..1 << 20]);
        drop(reader);
        assert!(!marked_read(one, &id), "cut short through node {via}");
        let (status, _, body) = read_bytes(cluster.node(3), &id);
        assert_eq!(status, 200, "after a read cut short through node {via}");
        assert!(body == owner, "after a read cut short through node {via}");
    }
}
