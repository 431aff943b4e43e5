//! `wray start`, the client commands and `wray stop`, as processes: a node
//! in the background serving the HTTP API, with its own temporary
//! directory (`TMPDIR`) so it shares nothing with other runs.

use crate::support::{component, in_dir, success_stdout, StopOnDrop};
use std::os::unix::fs::PermissionsExt;

#[test]
fn a_started_node_deploys_lists_calls_undeploys_and_stops_leaving_no_files() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| in_dir(tmp.path(), args).output().unwrap();
    let said = success_stdout(&run(&["start", "--port", "0", "--num-cpus", "2"]));
    let _stop = StopOnDrop(tmp.path().to_path_buf());
    assert!(
        said.starts_with("wray node started: http://127.0.0.1:"),
        "{said}"
    );
    let node_dir = tmp.path().join("wray/node_latest");
    let token = std::fs::metadata(node_dir.join("token")).unwrap();
    assert_eq!(token.permissions().mode() & 0o777, 0o600);

    let counter = component("counter");
    let said = success_stdout(&run(&["deploy", counter.to_str().unwrap()]));
    assert!(said.starts_with("deployed counter version 1 ("), "{said}");
    assert!(said.contains("actor Counter(start)"), "{said}");
    let mb = component("microbench");
    success_stdout(&run(&["deploy", mb.to_str().unwrap(), "--name", "mb"]));
    let listed = success_stdout(&run(&["functions"]));
    assert!(
        listed.contains("counter version 1 (") && listed.contains("mb version 1 ("),
        "{listed}"
    );
    assert!(listed.ends_with("2 components\n"), "{listed}");

    let said = success_stdout(&run(&["call", "mb/noop", "--json", "[5]"]));
    assert_eq!(said.trim(), "5");
    let out = run(&["call", "mb/nope"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the node answered 404: component `mb` has no function `nope`"),
        "{err}"
    );

    success_stdout(&run(&["undeploy", "mb"]));
    let out = run(&["call", "mb/noop", "--json", "[5]"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("404"),
        "{out:?}"
    );

    let said = success_stdout(&run(&["stop"]));
    assert!(said.contains("stopped"), "{said}");
    assert!(!node_dir.join("node.json").exists() && !node_dir.join("token").exists());
    let out = run(&["call", "mb/noop"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no node is running"), "{err}");
}

#[test]
fn jobs_are_submitted_followed_stopped_and_fail_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| in_dir(tmp.path(), args).output().unwrap();
    success_stdout(&run(&["start", "--port", "0", "--num-cpus", "2"]));
    let _stop = StopOnDrop(tmp.path().to_path_buf());
    // A `.wasm` file is deployed first; the log is followed to the end.
    let api = component("api");
    let out = run(&[
        "job",
        "submit",
        api.to_str().unwrap(),
        "--",
        "job_output",
        "cli",
        "2",
    ]);
    let said = success_stdout(&out);
    for line in [
        "deployed api version 1",
        "driver cli 0\n",
        "driver cli 1\n",
        "task cli\n",
        "done cli 3\n",
    ] {
        assert!(said.contains(line), "`{line}` not in {said}");
    }
    assert!(said.contains(" SUCCEEDED in "), "{said}");
    // `--no-wait` prints the id; logs, status, stop.
    let id = success_stdout(&run(&[
        "job",
        "submit",
        "--no-wait",
        "api",
        "--",
        "job_forever",
    ]));
    let id = id.trim();
    assert_eq!(id.len(), 16, "{id}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !success_stdout(&run(&["job", "logs", id])).contains("started") {
        assert!(
            std::time::Instant::now() < deadline,
            "job_forever never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(success_stdout(&run(&["job", "status", id])).contains(" RUNNING"));
    let follower = in_dir(tmp.path(), &["job", "logs", "--follow", id])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(success_stdout(&run(&["job", "stop", id])).contains("stopping"));
    let followed = follower.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&followed.stdout), "started\n");
    let status = success_stdout(&run(&["job", "status", id]));
    assert!(status.contains(" STOPPED"), "{status}");
    // A failing job: the command exits 1 and says why.
    let out = run(&["job", "submit", "api", "--", "no_such_scenario"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(" FAILED") && said.contains("unknown scenario no_such_scenario"),
        "{said}"
    );
    let listed = success_stdout(&run(&["job", "list"]));
    assert!(
        listed.contains(id) && listed.ends_with("3 jobs\n"),
        "{listed}"
    );
    success_stdout(&run(&["job", "delete", id]));
    let out = run(&["job", "status", id]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the node answered 404: no job"), "{err}");
}

#[test]
fn no_auth_is_refused_off_loopback() {
    let tmp = tempfile::tempdir().unwrap();
    let out = in_dir(
        tmp.path(),
        &[
            "start",
            "--foreground",
            "--port",
            "0",
            "--bind",
            "0.0.0.0",
            "--no-auth",
        ],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--no-auth is only for a loopback address"),
        "{err}"
    );
}

#[allow(dead_code)]
#[path = "../../../control-plane/tests/all/etcd_server.rs"]
pub(crate) mod etcd_server;

/// Runs `wray call` in `tmp`'s node until it succeeds (or 60 s pass);
/// its stdout.
fn call_until_ok(tmp: &std::path::Path, args: &[&str]) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = in_dir(tmp, args).output().expect("wray runs");
        if out.status.success() {
            return String::from_utf8_lossy(&out.stdout).into_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{args:?} never succeeded: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn two_nodes_on_one_etcd_follow_each_others_deploys_and_undeploys() {
    let mut etcd = etcd_server::EtcdServer::start();
    let url = etcd.endpoint();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let token = crate::support::token_file(a.path());
    let token = token.to_str().unwrap();
    for dir in [&a, &b] {
        let out = in_dir(dir.path(), &crate::support::start_on_etcd(&url, token))
            .output()
            .unwrap();
        success_stdout(&out);
    }
    let _stop = (StopOnDrop(a.path().into()), StopOnDrop(b.path().into()));
    let mb = component("microbench");
    let said = success_stdout(
        &in_dir(a.path(), &["deploy", mb.to_str().unwrap(), "--name", "mb"])
            .output()
            .unwrap(),
    );
    assert!(said.starts_with("deployed mb version 1 ("), "{said}");
    // Node B never saw the deploy: it follows the table.
    let said = call_until_ok(b.path(), &["call", "mb/noop", "--json", "[9]"]);
    assert_eq!(said.trim(), "9");
    let listed = success_stdout(&in_dir(b.path(), &["functions"]).output().unwrap());
    assert!(listed.contains("mb version 1 ("), "{listed}");
    let status = success_stdout(&in_dir(b.path(), &["status"]).output().unwrap());
    assert!(
        status.contains(&format!("Control plane: etcd at {url}: reachable")),
        "{status}"
    );
    // An undeploy through B reaches A.
    success_stdout(&in_dir(b.path(), &["undeploy", "mb"]).output().unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = in_dir(a.path(), &["call", "mb/noop", "--json", "[9]"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stderr).contains("404") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "A still calls mb: {out:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // etcd gone: A keeps running what it has, says so, and deploys fail
    // naming etcd.
    success_stdout(
        &in_dir(a.path(), &["deploy", mb.to_str().unwrap(), "--name", "mb"])
            .output()
            .unwrap(),
    );
    etcd.stop();
    let said = success_stdout(
        &in_dir(a.path(), &["call", "mb/noop", "--json", "[4]"])
            .output()
            .unwrap(),
    );
    assert_eq!(said.trim(), "4");
    let status = success_stdout(&in_dir(a.path(), &["status"]).output().unwrap());
    assert!(
        status.contains("Control plane: etcd at") && status.contains("UNREACHABLE"),
        "{status}"
    );
    let out = in_dir(a.path(), &["deploy", mb.to_str().unwrap(), "--name", "mb2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("etcd at"), "{err}");
}

/// A test-only certificate or key of the HTTP API's tests
/// (`http/tests/tls/README.md`).
pub(crate) fn tls_fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../http/tests/tls")
        .join(name)
        .to_str()
        .expect("a UTF-8 path")
        .to_string()
}

#[test]
fn a_node_started_with_tls_deploys_and_calls_over_https_then_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| in_dir(tmp.path(), args).output().unwrap();
    let (cert, key) = (tls_fixture("cert.pem"), tls_fixture("key.pem"));
    let said = success_stdout(&run(&[
        "start",
        "--port",
        "0",
        "--num-cpus",
        "1",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]));
    let _stop = StopOnDrop(tmp.path().to_path_buf());
    assert!(
        said.starts_with("wray node started: https://127.0.0.1:"),
        "{said}"
    );
    let node_dir = tmp.path().join("wray/node_latest");
    assert_eq!(
        std::fs::read(node_dir.join("cert.pem")).unwrap(),
        std::fs::read(&cert).unwrap()
    );

    // The clients find the node and trust its certificate through the node
    // directory.
    let mb = component("microbench");
    let said = success_stdout(&run(&["deploy", mb.to_str().unwrap(), "--name", "mb"]));
    assert!(said.starts_with("deployed mb version 1 ("), "{said}");
    let said = success_stdout(&run(&["call", "mb/noop", "--json", "[5]"]));
    assert_eq!(said.trim(), "5");
    let said = success_stdout(&run(&["status"]));
    assert!(
        said.contains("Control plane: ") && said.contains(": reachable"),
        "{said}"
    );

    // At --address: the public roots do not vouch for a self-signed
    // certificate; --cacert or WRAY_CACERT does.
    let node: serde_json::Value =
        serde_json::from_slice(&std::fs::read(node_dir.join("node.json")).unwrap()).unwrap();
    let url = node["url"].as_str().unwrap();
    let token = std::fs::read_to_string(node_dir.join("token")).unwrap();
    let at_address = |extra: &[&str], cacert_env: Option<&str>| {
        let mut cmd = in_dir(
            tmp.path(),
            &["call", "mb/noop", "--json", "[6]", "--address", url],
        );
        cmd.args(extra).env("WRAY_TOKEN", token.trim());
        match cacert_env {
            Some(path) => cmd.env("WRAY_CACERT", path),
            None => cmd.env_remove("WRAY_CACERT"),
        };
        cmd.output().unwrap()
    };
    let out = at_address(&[], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("invalid peer certificate"),
        "{err}"
    );
    let out = at_address(&[], Some(&tls_fixture("other-cert.pem")));
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(
        success_stdout(&at_address(&["--cacert", &cert], None)).trim(),
        "6"
    );
    assert_eq!(success_stdout(&at_address(&[], Some(&cert))).trim(), "6");

    let said = success_stdout(&run(&["stop"]));
    assert!(said.contains("stopped"), "{said}");
    assert!(!node_dir.join("node.json").exists() && !node_dir.join("cert.pem").exists());
}

#[test]
fn a_node_whose_key_cannot_be_read_does_not_start_and_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing-key.pem");
    let out = in_dir(
        tmp.path(),
        &[
            "start",
            "--port",
            "0",
            "--num-cpus",
            "1",
            "--tls-cert",
            &tls_fixture("cert.pem"),
            "--tls-key",
            missing.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot read {}", missing.display())),
        "{err}"
    );
    // The flags come in pairs.
    let out = in_dir(
        tmp.path(),
        &[
            "start",
            "--port",
            "0",
            "--tls-cert",
            &tls_fixture("cert.pem"),
        ],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--tls-key"),
        "{out:?}"
    );
}

#[test]
fn a_damaged_function_table_entry_is_listed_under_errors_and_the_rest_answer() {
    let etcd = etcd_server::EtcdServer::start();
    let url = etcd.endpoint();
    let tmp = tempfile::tempdir().unwrap();
    let token = crate::support::token_file(tmp.path());
    let token = token.to_str().unwrap();
    let node = crate::node_ops::StartedNode::start(
        tmp.path(),
        &["--etcd", &url, "--cluster-token-file", token],
    );
    let mb = component("microbench");
    success_stdout(&node.run(&["deploy", mb.to_str().unwrap(), "--name", "mb"]));
    // Written into etcd by something else than wray: a head of another
    // shape, and a version record that is not one.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut raw = etcd.client().await;
        raw.put("/wray/functions/bad", r#"{"current": 5}"#, None)
            .await
            .unwrap();
        raw.put("/wray/versions/mb/00000000000000000002", "nope", None)
            .await
            .unwrap();
    });
    let listed = node.get("/v1/components");
    let names: Vec<&str> = listed["components"]
        .as_array()
        .expect("components")
        .iter()
        .map(|c| c["record"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mb"], "{listed}");
    let errors = listed["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{listed}");
    assert_eq!(errors[0]["name"], "bad");
    assert_eq!(errors[0]["key"], "/wray/functions/bad");
    let kept = node.get("/v1/components/mb/versions");
    assert_eq!(kept["versions"].as_array().map(Vec::len), Some(1), "{kept}");
    assert_eq!(
        kept["errors"][0]["key"], "/wray/versions/mb/00000000000000000002",
        "{kept}"
    );
    // `wray functions` lists the rest, then a line for the damaged one.
    let said = success_stdout(&node.run(&["functions"]));
    assert!(said.contains("mb version 1 ("), "{said}");
    let last = said.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: `bad` left out (/wray/functions/bad): "),
        "{said}"
    );
    // The others still answer.
    assert_eq!(
        success_stdout(&node.run(&["call", "mb/noop", "--json", "[9]"])).trim(),
        "9"
    );
}
