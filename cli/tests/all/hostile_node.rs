//! A hostile client against one long-running node (`wray start`, small
//! bounds): every bound of a node's memory, disk and CPU met in turn over
//! HTTP, as a client that wants to hurt the node would: megabytes of guest
//! output, deploys past the node's names, a component that exports
//! nothing, millions of puts, actors holding guest memory past the node's
//! budget, a result past what one answer carries, an async call that would
//! spin forever. Each attack gets its clear answer naming the bound; a
//! plain call answers after each; and the node's resident memory, open
//! file descriptors and disk, measured before and after, come back.

use std::time::Duration;

use serde_json::{json, Value};

use crate::node_log::disk_use;
use crate::node_ops::{wait_for, StartedNode};
use crate::support::{component, success_stdout};

#[path = "../../../host/tests/common/synth.rs"]
mod synth;

const MIB: u64 = 1 << 20;

/// What the node's process holds.
#[derive(Debug, Clone, Copy)]
struct Usage {
    /// Resident memory, bytes.
    rss: u64,
    /// Open file descriptors.
    fds: usize,
    /// Bytes of its directory and of the files it holds open.
    disk: u64,
}

fn usage(node: &StartedNode) -> Usage {
    let status = std::fs::read_to_string(format!("/proc/{}/status", node.pid)).expect("status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS");
    let fds = std::fs::read_dir(format!("/proc/{}/fd", node.pid))
        .expect("fds")
        .count();
    Usage {
        rss: kib * 1024,
        fds,
        disk: disk_use(node),
    }
}

/// The node's files and the regular files it holds open, with their
/// sizes (for a failure's message).
fn disk_listing(node: &StartedNode) -> String {
    let mut out = String::new();
    let mut walk = vec![node.dir.clone()];
    while let Some(dir) = walk.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => walk.push(e.path()),
                Ok(m) => out.push_str(&format!("\n  {} {}", e.path().display(), m.len())),
                Err(_) => {}
            }
        }
    }
    for e in std::fs::read_dir(format!("/proc/{}/fd", node.pid))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let (Ok(m), Ok(target)) = (std::fs::metadata(e.path()), std::fs::read_link(e.path())) {
            if m.is_file() {
                out.push_str(&format!("\n  open {} {}", target.display(), m.len()));
            }
        }
    }
    out
}

/// `POST path` with the JSON `body`: the status and the JSON answer (or
/// the text, as a JSON string, when it is not JSON).
fn post(node: &StartedNode, path: &str, body: &Value) -> (u16, Value) {
    let answer = node
        .request("POST", path)
        .timeout(Duration::from_secs(120))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string());
    read(answer)
}

fn read(answer: Result<ureq::Response, ureq::Error>) -> (u16, Value) {
    let r = match answer {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("the node did not answer: {e}"),
    };
    let status = r.status();
    let text = r.into_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A call of `hostile/function` with `args`.
fn call(node: &StartedNode, function: &str, args: Value) -> (u16, Value) {
    post(node, &format!("/v1/functions/hostile/{function}"), &args)
}

/// A plain call still answers at once.
fn still_serves(node: &StartedNode) {
    assert_eq!(call(node, "ping", json!([41])), (200, json!(42)));
}

/// Deploys `bytes` as `name`: the status and answer.
fn deploy(node: &StartedNode, name: &str, bytes: &[u8]) -> (u16, Value) {
    read(
        node.request("POST", &format!("/v1/components?name={name}"))
            .timeout(Duration::from_secs(120))
            .send_bytes(bytes),
    )
}

/// A counter of the node's `/metrics`.
fn metric(node: &StartedNode, name: &str) -> u64 {
    node.metric(name)
        .unwrap_or_else(|| panic!("no {name} in the metrics")) as u64
}

/// The error code and message of an error answer.
fn error(answer: &Value) -> (&str, &str) {
    (
        answer["error"]["code"].as_str().unwrap_or(""),
        answer["error"]["message"].as_str().unwrap_or(""),
    )
}

/// Creates a `Hog` actor of `mib` MiB and asks where its memory grew
/// from: the status and answer of that call.
fn hog(node: &StartedNode, mib: u32) -> (String, u16, Value) {
    let (status, made) = post(
        node,
        "/v1/actors",
        &json!({"component": "hostile", "class": "Hog", "args": [mib]}),
    );
    assert_eq!(status, 201, "{made}");
    let actor = made["actor"].as_str().expect("an actor id").to_string();
    let (status, at) = post(node, &format!("/v1/actors/{actor}/at"), &json!([]));
    (actor, status, at)
}

#[test]
fn a_hostile_client_meets_every_bound_and_the_node_gives_back_what_it_took() {
    let tmp = tempfile::tempdir().unwrap();
    let node = StartedNode::start(
        tmp.path(),
        &[
            "--log-max-bytes",
            "65536",
            "--log-files",
            "2",
            "--max-components",
            "3",
            "--max-versions",
            "2",
            "--guest-memory",
            "256",
            "--max-response-mib",
            "8",
            "--object-store-memory",
            "64",
        ],
    );
    let hostile = std::fs::read(component("hostile")).expect("the hostile component");
    assert_eq!(deploy(&node, "hostile", &hostile).0, 201);
    // Once of each kind, small, so that pools and caches are warm before
    // the baseline.
    still_serves(&node);
    assert_eq!(call(&node, "print_mib", json!([1])).0, 200);
    assert_eq!(call(&node, "put_many", json!([1000])), (200, json!(1000)));
    assert_eq!(call(&node, "big_string", json!([1])).0, 200);
    let (warm, status, _) = hog(&node, 16);
    assert_eq!(status, 200);
    assert_eq!(
        node.request("DELETE", &format!("/v1/actors/{warm}"))
            .call()
            .map(|r| r.status())
            .ok(),
        Some(200)
    );
    let before = usage(&node);

    // 1. Guest output: 32 MiB printed in calls leave the disk as it was
    // (each call's first 64 KiB kept by id, the log rotated at its bound).
    for _ in 0..8 {
        assert_eq!(call(&node, "print_mib", json!([4])), (200, json!(4 * MIB)));
    }
    let grown = disk_use(&node).saturating_sub(before.disk);
    assert!(
        grown < 2 * MIB,
        "32 MiB printed grew the disk by {grown} bytes"
    );
    still_serves(&node);

    // 2. Deploys: names past --max-components are refused naming it; the
    // listing pages; the API's document does not grow with them.
    let mut refused = None;
    for i in 0..8 {
        let (status, answer) = deploy(&node, &format!("copy{i}"), &hostile);
        if status != 201 {
            refused = Some((i, status, answer));
            break;
        }
    }
    let (taken, status, answer) = refused.expect("a deploy past --max-components is refused");
    assert_eq!(taken, 2, "3 names: hostile and two copies");
    assert_eq!(status, 409, "{answer}");
    assert_eq!(error(&answer).0, "too_many_deployed", "{answer}");
    assert!(error(&answer).1.contains("--max-components 3"), "{answer}");
    let page = node.get("/v1/components?limit=2");
    assert_eq!(
        page["components"].as_array().map(Vec::len),
        Some(2),
        "{page}"
    );
    assert_eq!(page["next"], "copy1", "{page}");
    let document = node
        .request("GET", "/v1/openapi.json")
        .call()
        .expect("the document")
        .into_string()
        .expect("text");
    assert!(
        !document.contains("print_mib"),
        "the API's document lists no component's functions"
    );
    assert!(document.len() < 512 << 10, "{} bytes", document.len());
    // Versions of one name past --max-versions: the oldest unused dropped.
    // (Other bytes each: the same bytes again are no new version.)
    for n in 0..3 {
        assert_eq!(deploy(&node, "copy0", &synth::variant(&hostile, n)).0, 201);
    }
    assert_eq!(deploy(&node, "copy0", &synth::variant(&hostile, 2)).0, 200);
    // A component with 16 MiB of code and no wray export is refused by the
    // checks before any compile.
    let compiles = metric(&node, "wray_compiles_total");
    let empty = synth::component(16 << 20, &[], &[]);
    let (status, answer) = deploy(&node, "copy1", &empty);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(error(&answer).0, "invalid_component", "{answer}");
    assert!(error(&answer).1.contains("export"), "{answer}");
    assert_eq!(
        metric(&node, "wray_compiles_total"),
        compiles,
        "nothing was compiled"
    );
    assert_eq!(
        metric(&node, "wray_components_refused_before_compile_total"),
        1
    );
    for name in ["copy0", "copy1"] {
        node.request("DELETE", &format!("/v1/components/{name}"))
            .call()
            .expect("undeployed");
    }
    still_serves(&node);

    // 3. Two million puts of an `i64` in one call: the store's inline
    // budget (which each object's metadata is charged to) stops them; the
    // call's end gives the memory back.
    let (status, answer) = call(&node, "put_many", json!([2_000_000]));
    assert!(status == 200 || status == 500, "{status} {answer}");
    if status == 200 {
        let stored = answer.as_u64().expect("a count");
        assert!(
            stored < 2_000_000,
            "every put stored: the budget held nothing back"
        );
    }
    still_serves(&node);

    // 4. Guest memory: actors of 96 MiB each in a 256 MiB budget; the one
    // past it dies naming the budget; the others keep working until killed.
    let mut hogs = Vec::new();
    let mut died = None;
    for _ in 0..4 {
        let (actor, status, answer) = hog(&node, 96);
        hogs.push(actor);
        if status != 200 {
            died = Some(answer);
            break;
        }
    }
    let died = died.expect("an actor past the guest memory budget fails");
    assert!(error(&died).1.contains("--guest-memory 256 MiB"), "{died}");
    assert!(hogs.len() >= 2, "two actors of 96 MiB fit in 256 MiB");
    still_serves(&node);
    for actor in &hogs {
        let _ = node
            .request("DELETE", &format!("/v1/actors/{actor}"))
            .call();
    }
    wait_for("the killed actors' memory to be given back", || {
        metric(&node, "wray_guest_memory_bytes") < 32 * MIB
    });

    // 5. A result past --max-response-mib: 507, saying how to fetch it.
    let (status, answer) = call(&node, "big_string", json!([16]));
    assert_eq!(status, 507, "{answer}");
    assert_eq!(error(&answer).0, "result_too_large");
    assert!(error(&answer).1.contains("?async=true"), "{answer}");
    still_serves(&node);

    // 6. An async call's timeout bounds its task: the spin stops, and the
    // node's one CPU is free again for the next call.
    let (status, answer) = post(
        &node,
        "/v1/functions/hostile/spin?async=true&timeout=1",
        &json!([]),
    );
    assert_eq!(status, 202, "{answer}");
    let id = answer["objects"][0].as_str().expect("an object id");
    let (status, answer) = read(
        node.request("GET", &format!("/v1/objects/{id}?timeout=60"))
            .timeout(Duration::from_secs(90))
            .call(),
    );
    assert_eq!(status, 504, "{answer}");
    assert_eq!(answer["error"]["task"]["kind"], "timeout", "{answer}");
    still_serves(&node);

    // What the attacks took comes back: memory (once the allocator has
    // returned the freed pages), descriptors, disk.
    let margin = 256 * MIB;
    let mut after = usage(&node);
    wait_for("the node's memory to come back", || {
        after = usage(&node);
        after.rss < before.rss + margin
    });
    assert!(
        after.fds <= before.fds + 4,
        "{} fds open before, {} after",
        before.fds,
        after.fds
    );
    assert!(
        after.disk < before.disk + 2 * MIB,
        "disk {} bytes before, {} after: {}",
        before.disk,
        after.disk,
        disk_listing(&node)
    );
    eprintln!("hostile client: before {before:?}, after {after:?}");
    success_stdout(&node.run(&["stop"]));
    node.wait_dead();
}

/// The processes `pid` started and has not reaped.
fn children(pid: u32) -> Vec<String> {
    let mut all = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("procfs") {
        let path = task.expect("a task").path().join("children");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        all.extend(text.split_whitespace().map(str::to_string));
    }
    all
}

#[test]
fn a_compile_past_its_limit_is_killed_and_the_next_deploy_gets_its_slot() {
    let tmp = tempfile::tempdir().unwrap();
    // One CPU: one compile slot.
    let node = StartedNode::start(tmp.path(), &["--compile-timeout", "1"]);
    // Tens of seconds of Cranelift: passes the cheap checks (wray's parts
    // by name), compiled in `wray __compile`.
    let big = synth::component(32 << 20, &[], &[synth::FUNCTIONS, synth::METADATA]);
    let started = std::time::Instant::now();
    let (status, answer) = deploy(&node, "big", &big);
    assert_eq!(status, 400, "{answer}");
    assert!(
        error(&answer).1.contains("took longer than 1.000 s"),
        "{answer}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    wait_for("the compile process is killed and reaped", || {
        children(node.pid).is_empty()
    });
    // The compile thread counts the kill once it has reaped the process,
    // which may be after the test sees no child: wait for the count.
    wait_for("the kill is counted", || {
        metric(&node, "wray_compiles_killed_total") == 1
    });
    // The slot is free: the next deploy compiles at once (not 503 `busy`
    // after waiting a second for the slot), and its component answers.
    let hostile = std::fs::read(component("hostile")).expect("the hostile component");
    let (status, answer) = deploy(&node, "hostile", &hostile);
    assert_eq!(status, 201, "{answer}");
    still_serves(&node);
    assert!(children(node.pid).is_empty(), "{:?}", children(node.pid));
}
