//! A `wray start` node's own output: its rotated `node.log`, and the
//! bounded, findable output of guests called over HTTP; messages that used
//! to print Rust debug text or Rust-only advice.

use std::path::Path;

use crate::node_ops::StartedNode;
use crate::support::{component, in_dir, success_stdout};

/// Bytes of the regular files under `dir`, recursively.
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) if m.is_file() => m.len(),
            _ => 0,
        })
        .sum()
}

/// Bytes of the regular files process `pid` holds open (deleted ones
/// included: their space is used until they are closed).
pub(crate) fn open_file_bytes(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::metadata(e.path()).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// The node's disk use: its directory and the files it holds open.
pub(crate) fn disk_use(node: &StartedNode) -> u64 {
    dir_bytes(&node.dir) + open_file_bytes(node.pid)
}

/// The `node.log*` files of `dir` and their sizes.
fn logs(dir: &Path) -> Vec<(String, u64)> {
    let mut found: Vec<(String, u64)> = std::fs::read_dir(dir)
        .expect("the node directory")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("node.log"))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().map_or(0, |m| m.len()))
        })
        .collect();
    found.sort();
    found
}

/// Calls `api/shout` with `tag` over HTTP; the call's task id.
fn shout(node: &StartedNode, tag: &str) -> String {
    let answer = node
        .request("POST", "/v1/functions/api/shout")
        .set("Content-Type", "application/json")
        .send_string(&serde_json::json!([tag]).to_string())
        .expect("the call succeeds");
    let task = answer
        .header("wray-task-id")
        .expect("the answer names the task")
        .to_string();
    let len: u64 = answer
        .into_string()
        .expect("an answer")
        .trim()
        .parse()
        .expect("a number");
    assert_eq!(len, tag.len() as u64);
    task
}

#[test]
fn a_guest_printing_megabytes_over_http_leaves_a_bounded_log_and_disk_and_its_output_by_task() {
    const LOG_BYTES: u64 = 64 << 10;
    const LOG_FILES: u64 = 3;
    let tmp = tempfile::tempdir().unwrap();
    let node = StartedNode::start(
        tmp.path(),
        &[
            "--log-max-bytes",
            &LOG_BYTES.to_string(),
            "--log-files",
            &LOG_FILES.to_string(),
            "--object-store-memory",
            "0",
        ],
    );
    success_stdout(&node.run(&["deploy", component("api").to_str().unwrap()]));
    // A small call first: its output is kept whole, in the log and by id.
    let small = shout(&node, "hello");
    let out = node.run(&["logs", &small]);
    assert_eq!(success_stdout(&out), "task hello\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "task hello stderr\n");
    let log = std::fs::read_to_string(node.dir.join("node.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains(&small) && l.contains("task hello"))
        .unwrap_or_else(|| panic!("no line of task {small} in {log}"));
    assert!(
        line.contains("function=shout") && line.contains("stdout"),
        "{line}"
    );

    // Each call prints 2 MiB (1 MiB to stdout, 1 MiB to stderr), 32 times
    // the bound of a task: 16 MiB in all.
    let before = disk_use(&node);
    let tag = "x".repeat(1 << 20);
    let mut last = String::new();
    for _ in 0..8 {
        last = shout(&node, &tag);
    }
    let printed = 8 * 2 * (1u64 << 20);
    let grown = disk_use(&node).saturating_sub(before);
    assert!(
        grown < printed / 16,
        "disk use grew by {grown} bytes for {printed} printed"
    );
    // The log keeps its bound, rotated.
    let files = logs(&node.dir);
    assert!(files.len() as u64 <= LOG_FILES, "{files:?}");
    assert!(files.len() > 1, "the log was never rotated: {files:?}");
    assert!(files.iter().all(|(_, n)| *n <= LOG_BYTES), "{files:?}");
    // The last call's output: its first 64 KiB, and the count of the rest.
    let out = node.run(&["logs", &last]);
    let stdout = success_stdout(&out);
    assert_eq!(stdout.len(), 64 << 10);
    assert!(stdout.starts_with("task xxx"), "{}", &stdout[..20]);
    let err = String::from_utf8_lossy(&out.stderr);
    let total = ("task \n".len() + tag.len()) + ("task  stderr\n".len() + tag.len());
    let dropped = total - (64 << 10);
    assert!(
        err.contains(&format!("[wray: {dropped} more bytes were dropped")),
        "{err}"
    );
    let kept = node.get(&format!("/v1/tasks/{last}/logs"));
    assert_eq!(kept["function"], "shout");
    assert_eq!(kept["dropped"], dropped as u64);
    // The log says which task's output was cut.
    let all: String = logs(&node.dir)
        .iter()
        .map(|(name, _)| std::fs::read_to_string(node.dir.join(name)).unwrap_or_default())
        .collect();
    assert!(
        all.contains(&format!(
            "output past 65536 bytes is dropped (counted in GET /v1/tasks/{last}/logs)"
        )),
        "no marker for {last}"
    );
    // `wray call --task-id` names the task whose output `wray logs` shows.
    let out = node.run(&["call", "api/shout", "--json", "[\"cli\"]", "--task-id"]);
    assert_eq!(success_stdout(&out).trim(), "3");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let task = err
        .strip_prefix("task ")
        .map(str::trim)
        .unwrap_or_else(|| panic!("no task id in {err:?}"));
    assert_eq!(success_stdout(&node.run(&["logs", task])), "task cli\n");
    // An id the node keeps nothing of.
    let out = node.run(&["logs", &"0".repeat(32)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("answered 404") && err.contains("no output of task"),
        "{err}"
    );
}

#[test]
fn the_node_log_survives_the_stop_and_the_node_keeps_no_start_up_file() {
    let tmp = tempfile::tempdir().unwrap();
    let node = StartedNode::start(tmp.path(), &["--log-level", "info"]);
    let log = node.dir.join("node.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("wray node {} serving", node.node_id)),
        "{text}"
    );
    // It holds no deleted file of the node root open (the old start-up
    // file was one), and no start-up file is left.
    let root = tmp.path().join("wray");
    let deleted: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", node.pid))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|p| p.starts_with(&root))
        .map(|p| p.display().to_string())
        .filter(|p| p.ends_with(" (deleted)"))
        .collect();
    assert!(deleted.is_empty(), "{deleted:?}");
    let names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".log")), "{names:?}");
    // Its stdout and stderr are /dev/null: `wray start` stopped reading.
    for fd in [0, 1, 2] {
        let target = std::fs::read_link(format!("/proc/{}/fd/{fd}", node.pid)).unwrap();
        assert_eq!(target, Path::new("/dev/null"));
    }
    success_stdout(&node.run(&["stop"]));
    node.wait_dead();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("stopped listening on")
            && text.contains(&format!("wray node {} stopped", node.node_id)),
        "{text}"
    );
    // A bad level is refused naming the flag.
    let out = in_dir(
        tmp.path(),
        &["start", "--port", "0", "--log-level", "no=such=level"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--log-level no=such=level"),
        "{err}"
    );
}

#[test]
fn messages_name_limits_in_words_and_main_in_every_language() {
    let tmp = tempfile::tempdir().unwrap();
    let node = StartedNode::start(tmp.path(), &[]);
    success_stdout(&node.run(&["deploy", component("api").to_str().unwrap()]));
    // A get that times out says how long it waited, not `Some(..)`.
    let answer: serde_json::Value = node
        .request("POST", "/v1/functions/api/sleep_ms?async=true")
        .send_string("[60000]")
        .unwrap()
        .into_json()
        .unwrap();
    let object = answer["objects"][0].as_str().unwrap().to_string();
    let err = node
        .request("GET", &format!("/v1/objects/{object}?timeout=0.1"))
        .call()
        .unwrap_err();
    let ureq::Error::Status(504, response) = err else {
        panic!("{err}");
    };
    let body = response.into_string().unwrap();
    assert!(body.contains("was not ready within 0.1 s"), "{body}");
    assert!(!body.contains("Some("), "{body}");
    // A component without `main` (C's) says what a `main` is in each SDK.
    let out = node.run(&["job", "submit", component("sum_bytes").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exports no `driver` interface")
            && err.contains("`@wray.main` in Python")
            && err.contains("`#[wray::main]` in Rust"),
        "{err}"
    );
}
