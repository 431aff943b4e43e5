//! Operating `wray start` nodes: a failed start, a node killed with
//! SIGKILL, a stale process id, a drain that refuses new clients, several
//! nodes on one machine selected by directory, process id, node id or
//! address, and every node flag reaching the node.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::{component, in_dir, success_stdout};

/// A node started by `wray start` in `tmp`: its directory and what its
/// `node.json` says. Stopped by process id (`wray stop --node PID`) when
/// dropped, if it still runs.
pub struct StartedNode {
    pub tmp: PathBuf,
    pub dir: PathBuf,
    pub pid: u32,
    pub url: String,
    pub node_id: String,
    pub token: String,
}

impl StartedNode {
    /// `wray start --port 0 ARGS` in `tmp`.
    pub fn start(tmp: &Path, args: &[&str]) -> Self {
        Self::start_with_cpus(tmp, 1, args)
    }

    /// `wray start --port 0 --num-cpus CPUS ARGS` in `tmp`.
    pub fn start_with_cpus(tmp: &Path, cpus: u32, args: &[&str]) -> Self {
        let cpus = cpus.to_string();
        let mut all = vec!["start", "--port", "0", "--num-cpus", &cpus];
        all.extend_from_slice(args);
        let said = success_stdout(&in_dir(tmp, &all).output().expect("wray runs"));
        let pid: u32 = said
            .split("(process ")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no process id in {said}"));
        let dir = tmp.join(format!("wray/node-{pid}"));
        let file = std::fs::read(dir.join("node.json")).expect("a started node has node.json");
        let node: serde_json::Value = serde_json::from_slice(&file).expect("node.json is JSON");
        let token = std::fs::read_to_string(dir.join("token")).unwrap_or_default();
        Self {
            tmp: tmp.to_path_buf(),
            url: node["url"]
                .as_str()
                .expect("node.json has a url")
                .to_string(),
            node_id: node["node_id"]
                .as_str()
                .expect("node.json has a node id")
                .to_string(),
            token: token.trim().to_string(),
            dir,
            pid,
        }
    }

    /// `wray ARGS --node PID`.
    pub fn run(&self, args: &[&str]) -> Output {
        let pid = self.pid.to_string();
        let mut all = args.to_vec();
        all.extend_from_slice(&["--node", &pid]);
        in_dir(&self.tmp, &all).output().expect("wray runs")
    }

    /// A request of `method` to `path` with the token.
    pub fn request(&self, method: &str, path: &str) -> ureq::Request {
        ureq::request(method, &format!("{}{path}", self.url))
            .set("Authorization", &format!("Bearer {}", self.token))
    }

    /// Counter or gauge `name` of its `/metrics` (a series without
    /// labels), if it is there.
    pub fn metric(&self, name: &str) -> Option<f64> {
        let text = self
            .request("GET", "/metrics")
            .call()
            .expect("metrics")
            .into_string()
            .expect("text");
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|n| n.trim().parse().ok())
    }

    /// The JSON answer of `GET path`.
    pub fn get(&self, path: &str) -> serde_json::Value {
        self.request("GET", path)
            .call()
            .expect("the node answers")
            .into_json()
            .expect("the answer is JSON")
    }

    /// Whether its process still runs (and is not a zombie).
    pub fn alive(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
            .unwrap_or(false)
    }

    /// Whether its process is stopped (by `SIGSTOP`: state `T`).
    pub fn stopped(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('T')))
            .unwrap_or(false)
    }

    /// Waits (a minute at most) until its process has ended.
    pub fn wait_dead(&self) {
        wait_for("the node's process to end", || !self.alive());
    }
}

impl Drop for StartedNode {
    fn drop(&mut self) {
        if self.alive() {
            let _ = self.run(&["stop", "--timeout", "10"]);
        }
    }
}

/// Waits until `done` holds, a minute at most.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "waited a minute for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Where `link` points.
fn target(link: &Path) -> PathBuf {
    std::fs::read_link(link).expect("a link")
}

#[test]
fn a_start_on_a_taken_port_says_why_once_and_leaves_no_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let a = StartedNode::start(tmp.path(), &[]);
    let root = tmp.path().join("wray");
    let before = std::fs::read_dir(&root).unwrap().count();
    let port = a.url.rsplit(':').next().unwrap();
    let out = in_dir(tmp.path(), &["start", "--port", port, "--num-cpus", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = stderr(&out);
    assert_eq!(
        err.matches("Address already in use").count(),
        1,
        "said once: {err}"
    );
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{err}"
    );
    // Nothing of the failed node is left, and "latest" is still A.
    assert_eq!(target(&root.join("node_latest")), a.dir);
    assert_eq!(target(&root.join("session_latest")), a.dir);
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), before);
    let names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with("node-start")),
        "{names:?}"
    );
    let status = success_stdout(&in_dir(tmp.path(), &["status"]).output().unwrap());
    assert!(
        status.contains(&format!("{} (alive)", a.node_id)),
        "{status}"
    );
}

#[test]
fn a_killed_node_is_dead_to_status_and_stop_spares_a_process_that_took_its_id() {
    let tmp = tempfile::tempdir().unwrap();
    let node = StartedNode::start(tmp.path(), &[]);
    // SAFETY: a plain signal to the node this test started.
    assert_eq!(unsafe { libc::kill(node.pid as i32, libc::SIGKILL) }, 0);
    node.wait_dead();
    let status = success_stdout(&in_dir(tmp.path(), &["status"]).output().unwrap());
    let shown = std::fs::canonicalize(&node.dir).unwrap();
    assert!(
        status.contains(&format!("{} (dead)", node.node_id))
            && status.contains(&format!("its process {} has ended", node.pid))
            && status.contains(&format!("{} (stale)", shown.display())),
        "{status}"
    );
    let out = in_dir(tmp.path(), &["functions"]).output().unwrap();
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains(&format!("the node of {} is dead", shown.display())),
        "{err}"
    );

    // The kernel gives the id to another process: `node.json` now names a
    // live process, not the node (its start time differs). `wray stop`
    // must not signal it.
    let mut stranger = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let file = node.dir.join("node.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    json["pid"] = stranger.id().into();
    std::fs::write(&file, json.to_string()).unwrap();
    let out = in_dir(tmp.path(), &["stop", "--timeout", "5"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success() && err.contains("is dead"), "{err}");
    assert!(
        stranger.try_wait().unwrap().is_none(),
        "wray stop signalled an unrelated process"
    );
    stranger.kill().unwrap();
    stranger.wait().unwrap();
    // The stale files are gone: the next command says no node runs.
    assert!(!file.exists() && !node.dir.join("token").exists());
    let err = stderr(&in_dir(tmp.path(), &["functions"]).output().unwrap());
    assert!(err.contains("no node is running"), "{err}");
}

#[test]
fn a_draining_node_refuses_new_connections_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let node = StartedNode::start(tmp.path(), &["--grace", "60"]);
    success_stdout(&node.run(&["deploy", component("api").to_str().unwrap()]));
    // A call in flight keeps the node draining.
    let call = node
        .request("POST", "/v1/functions/api/sleep_ms?timeout=120")
        .set("Content-Type", "application/json");
    let in_flight = std::thread::spawn(move || call.send_string("[60000]").map(drop).is_ok());
    wait_for("the call to run", || {
        let tasks = node.get("/v1/tasks?limit=1000");
        tasks["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"] == "sleep_ms" && t["state"] == "RUNNING")
    });
    // SAFETY: a plain signal to the node this test started.
    assert_eq!(unsafe { libc::kill(node.pid as i32, libc::SIGTERM) }, 0);
    let log = node.dir.join("node.log");
    wait_for("the node to stop listening", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("stopped listening on"))
    });
    let addr = node.url.trim_start_matches("http://");
    let refused = std::net::TcpStream::connect(addr).map(drop).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(node.alive(), "the node drains the call in flight");
    // SAFETY: as above.
    unsafe { libc::kill(node.pid as i32, libc::SIGKILL) };
    node.wait_dead();
    let _ = in_flight.join();
}

#[test]
fn every_command_selects_a_node_by_directory_process_id_node_id_or_address() {
    let tmp = tempfile::tempdir().unwrap();
    let a = StartedNode::start(tmp.path(), &[]);
    let b = StartedNode::start(tmp.path(), &[]);
    let run = |args: &[&str]| in_dir(tmp.path(), args).output().unwrap();
    // The latest is B.
    assert_eq!(target(&tmp.path().join("wray/node_latest")), b.dir);
    let mb = component("microbench");
    let a_dir = a.dir.to_str().unwrap();
    success_stdout(&run(&[
        "deploy",
        mb.to_str().unwrap(),
        "--name",
        "mb",
        "--node",
        a_dir,
    ]));
    let listed = success_stdout(&a.run(&["functions"]));
    assert!(listed.contains("mb version 1 ("), "{listed}");
    assert!(success_stdout(&run(&["functions"])).ends_with("0 components\n"));
    let said = success_stdout(&run(&[
        "call", "mb/noop", "--json", "[3]", "--node", &a.node_id,
    ]));
    assert_eq!(said.trim(), "3");
    let status = success_stdout(&a.run(&["status"]));
    assert!(
        status.contains(&format!("{} (alive)", a.node_id)),
        "{status}"
    );
    // One failed task, counted by the status over HTTP too.
    success_stdout(&a.run(&["deploy", component("api").to_str().unwrap()]));
    let out = a.run(&["call", "api/fail", "--json", "[\"on purpose\"]"]);
    assert!(stderr(&out).contains("on purpose"), "{out:?}");
    // Over HTTP alone: the token from WRAY_TOKEN.
    let status = success_stdout(
        &in_dir(tmp.path(), &["status", "--address", &a.url])
            .env("WRAY_TOKEN", &a.token)
            .output()
            .unwrap(),
    );
    assert!(
        status.contains(&format!("{} (alive)", a.node_id))
            && status.contains("  FINISHED: 1\n")
            && status.contains("Errors: 1\n")
            && status.contains("Control plane: embedded: reachable"),
        "{status}"
    );
    let out = a.run(&["logs", &"0".repeat(32)]);
    assert!(stderr(&out).contains("no output of task"), "{out:?}");
    let dir_name = format!("node-{}", a.pid);
    assert!(success_stdout(&run(&["functions", "--node", &dir_name])).contains("mb version 1"));
    // The session readers take the node too.
    for node in [a.node_id.as_str(), a_dir, &b.pid.to_string()] {
        let out = run(&["tasks", "--node", node]);
        assert!(success_stdout(&out).ends_with(" tasks\n"), "{out:?}");
    }
    let out = run(&["errors", "--node", "nosuchnode"]);
    assert!(stderr(&out).contains("--node nosuchnode"), "{out:?}");
    assert!(success_stdout(&a.run(&["job", "list"])).ends_with("0 jobs\n"));
    success_stdout(&a.run(&["undeploy", "mb"]));
    success_stdout(&a.run(&["undeploy", "api"]));
    assert!(success_stdout(&a.run(&["functions"])).ends_with("0 components\n"));
    // `wray stop --address` finds the node directory serving that URL.
    let said = success_stdout(&run(&["stop", "--address", &a.url]));
    assert!(
        said.contains(&format!("wray node {} stopped", a.url)),
        "{said}"
    );
    a.wait_dead();
    assert!(b.alive());
    success_stdout(&run(&["functions"]));
    let out = run(&["functions", "--node", "nosuchnode"]);
    assert!(
        stderr(&out).contains("--node nosuchnode: not a directory"),
        "{out:?}"
    );
}

/// The flags of `wray run --help` that configure the node.
fn node_flags(help: &str) -> Vec<String> {
    let run_only = [
        "--with",
        "--timeline",
        "--quiet",
        "--address",
        "--cacert",
        "--help",
    ];
    help.split_whitespace()
        .filter(|w| w.starts_with("--"))
        .map(|w| w.trim_end_matches(',').to_string())
        .filter(|w| !run_only.contains(&w.as_str()))
        .collect()
}

#[test]
fn every_node_flag_of_wray_run_reaches_a_started_node() {
    let run_help = success_stdout(
        &crate::support::wray()
            .args(["run", "--help"])
            .output()
            .unwrap(),
    );
    let start_help = success_stdout(
        &crate::support::wray()
            .args(["start", "--help"])
            .output()
            .unwrap(),
    );
    let flags = node_flags(&run_help);
    assert!(flags.len() >= 12, "{flags:?}");
    for flag in &flags {
        assert!(
            start_help.contains(flag.as_str()),
            "wray start --help lacks {flag}"
        );
    }
    for flag in ["--log-level", "--log-max-bytes", "--log-files", "WRAY_LOG"] {
        assert!(start_help.contains(flag), "wray start --help lacks {flag}");
    }

    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("words");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("a.txt"), "hello wray hello").unwrap();
    let spill = tmp.path().join("spill");
    let preopen = format!("{}::/data", data.display());
    let node = StartedNode::start(
        tmp.path(),
        &[
            "--resources",
            r#"{"accelerator": 1}"#,
            "--num-gpus",
            "0",
            "--memory",
            "123456789",
            "--task-timeout",
            "1",
            "--task-memory-mib",
            "64",
            "--fuel-metering",
            "--object-store-memory",
            "16",
            "--spill-dir",
            spill.to_str().unwrap(),
            "--dir",
            &preopen,
        ],
    );
    assert!(spill.is_dir(), "--spill-dir is made at start");
    let resources = node.get("/v1/resources");
    let total = &resources["total"];
    assert_eq!(total["accelerator"], 1.0, "{resources}");
    assert_eq!(total["CPU"], 1.0, "{resources}");
    assert_eq!(total["memory"], 123456789.0, "{resources}");
    assert!(total["GPU"].is_null() || total["GPU"] == 0.0, "{resources}");
    for c in ["api", "wordcount"] {
        success_stdout(&node.run(&["deploy", component(c).to_str().unwrap()]));
    }
    let said = success_stdout(&node.run(&["call", "api/accelerated"]));
    assert!(said.contains("accelerator"), "{said}");
    let out = node.run(&["call", "api/spin"]);
    let err = stderr(&out);
    assert!(
        err.contains("answered 504") && err.contains("time limit of 1.000 s exceeded"),
        "{err}"
    );
    let out = node.run(&["call", "api/oom"]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("memory limit of {} bytes exceeded", 64u64 << 20)),
        "{err}"
    );
    let said = success_stdout(&node.run(&[
        "call",
        "wordcount/count_words",
        "--json",
        r#"[["/data/a.txt"]]"#,
    ]));
    assert!(said.contains(r#"["hello",2]"#), "{said}");
    // Fuel metering: a task's fuel limit is kept, not refused.
    let said = success_stdout(&node.run(&["job", "submit", "api", "--", "fuel"]));
    assert!(
        said.contains("fuel limit of 1000000 units exceeded"),
        "{said}"
    );
}

#[test]
fn bad_etcd_urls_spill_dirs_and_time_limits_are_refused_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let start = |extra: &[&str]| {
        let mut args = vec!["start", "--port", "0", "--num-cpus", "1"];
        args.extend_from_slice(extra);
        in_dir(tmp.path(), &args).output().unwrap()
    };
    let out = start(&["--etcd", "notaurl"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("--etcd") && err.contains("http://HOST:PORT"),
        "{err}"
    );
    let out = start(&["--spill-dir", "/etc/passwd"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("--spill-dir /etc/passwd: not a directory"),
        "{err}"
    );
    for flag in ["--task-timeout", "--driver-timeout"] {
        let out = start(&[flag, "1e-9"]);
        let err = stderr(&out);
        assert!(
            !out.status.success() && err.contains(flag) && err.contains("10 ms epoch tick"),
            "{err}"
        );
    }
    // None of them left a node directory, nor a link.
    let root = tmp.path().join("wray");
    let left: Vec<_> = std::fs::read_dir(&root)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
