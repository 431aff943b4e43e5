//! Job options over HTTP (`POST /v1/jobs` with `dirs`, `env`, resources,
//! `timeout`, `metadata`), calls to a kept version (`app@1`) and
//! `POST /v1/components/{name}/rollback`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wray_host::{Node, NodeConfig};
use wray_http::HttpConfig;

use super::deploys::variant;
use super::{authed, code, components, deploy, get_at, post, serve_node};

/// A node of its own whose jobs may read under `allow`, served on a
/// loopback port (port 0, read back) with the tests' token; its URL.
fn serve_allowing(allow: &Path) -> String {
    let node: Arc<Node> = Node::start(NodeConfig {
        num_cpus: 2,
        allow_dirs: vec![allow.to_path_buf()],
        ..NodeConfig::default()
    })
    .expect("node starts");
    format!("http://{}", serve_node(node, HttpConfig::default()))
}

/// `POST {url}/v1/jobs` with `body`.
fn submit(url: &str, body: &Value) -> (u16, Value) {
    post(
        &format!("{url}/v1/jobs"),
        "application/json",
        body.to_string().as_bytes(),
    )
}

/// Waits (up to 60 s) for job `id` at `url` to end; its info.
fn ended(url: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (s, v) = get_at(url, &format!("/v1/jobs/{id}"));
        assert_eq!(s, 200, "{v}");
        if matches!(
            v["status"].as_str(),
            Some("SUCCEEDED" | "FAILED" | "STOPPED")
        ) {
            return v;
        }
        assert!(Instant::now() < deadline, "job still {}", v["status"]);
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Job `id`'s whole log.
fn log(url: &str, id: &str) -> String {
    let r = authed("GET", &format!("{url}/v1/jobs/{id}/logs"))
        .call()
        .expect("a log");
    r.into_string().expect("text")
}

#[test]
fn a_job_reads_an_allowed_directory_with_its_env_and_metadata() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(tree.path().join("greeting.txt"), "bonjour\n").expect("write");
    let outside = tempfile::tempdir().expect("a temporary directory");
    let url = serve_allowing(tree.path());
    deploy(&url, "api", "api");
    let host = tree.path().to_string_lossy().into_owned();
    let (s, v) = submit(
        &url,
        &json!({
            "component": "api",
            "args": ["job_env", "NAME", "/data/greeting.txt"],
            "dirs": [{ "host": host, "guest": "/data" }],
            "env": { "NAME": "wray" },
            "metadata": { "team": "jobs", "ticket": "20" },
        }),
    );
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["metadata"], json!({ "team": "jobs", "ticket": "20" }));
    assert_eq!(v["env"], json!({ "NAME": "wray" }));
    assert_eq!(v["dirs"], json!([{ "host": host, "guest": "/data" }]));
    let id = v["job_id"].as_str().expect("an id").to_string();
    let end = ended(&url, &id);
    assert_eq!(end["status"], "SUCCEEDED", "{end}");
    let text = log(&url, &id);
    for who in ["driver", "task", "actor"] {
        let line = format!("{who} NAME=wray; bonjour\n");
        assert!(text.contains(&line), "`{line}` not in {text}");
    }
    let (_, listed) = get_at(&url, "/v1/jobs");
    let listed = listed["jobs"].as_array().expect("a page of jobs").clone();
    assert_eq!(listed[0]["metadata"]["ticket"], "20", "{listed:?}");

    // Outside the allowed directory: 400, naming the path and the list.
    let other = outside.path().to_string_lossy().into_owned();
    let (s, v) = submit(
        &url,
        &json!({ "component": "api", "dirs": [{ "host": other, "guest": "/data" }] }),
    );
    assert_eq!((s, code(&v)), (400, "dir_not_allowed"), "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&other) && message.contains(&host),
        "{message}"
    );

    for (body, status, want) in [
        (
            json!({ "component": "api", "runtime_env": {} }),
            400,
            "bad_json",
        ),
        (
            json!({ "component": "api", "num_gpus": 4 }),
            422,
            "infeasible",
        ),
        (
            json!({ "component": "api", "timeout": -1 }),
            400,
            "bad_job_options",
        ),
        (
            json!({ "component": "api", "env": (0..129).map(|i| (format!("K{i}"), json!("v"))).collect::<serde_json::Map<_, _>>() }),
            400,
            "bad_json",
        ),
        (
            json!({ "component": "api", "env": { "K": "v".repeat(70_000) } }),
            400,
            "bad_job_options",
        ),
        (json!({ "component": "api@7" }), 404, "unknown_version"),
        (json!({ "component": "api@seven" }), 400, "bad_component"),
    ] {
        let (s, v) = submit(&url, &body);
        assert_eq!((s, code(&v)), (status, want), "{body}: {v}");
    }

    let many: serde_json::Map<String, Value> =
        (0..129).map(|i| (format!("K{i}"), json!("v"))).collect();
    let (_, v) = submit(&url, &json!({ "component": "api", "env": many }));
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`env` has more than 128 variables"),
        "{message}"
    );

    // A time limit stops the job and says so.
    let (s, v) = submit(
        &url,
        &json!({ "component": "api", "args": ["job_forever"], "timeout": 1 }),
    );
    assert_eq!(s, 201, "{v}");
    let end = ended(&url, v["job_id"].as_str().expect("an id"));
    assert_eq!(end["status"], "FAILED", "{end}");
    assert!(
        end["message"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out: the job ran past its timeout of 1 s"),
        "{end}"
    );
}

#[test]
fn a_kept_version_is_called_by_number_and_a_rollback_makes_it_current() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    let url = serve_allowing(tree.path());
    deploy(&url, "nested", "app");
    deploy(&url, "microbench", "app");
    let call = |path: &str| post(&format!("{url}{path}"), "application/json", b"[1, 2]");
    assert_eq!(call("/v1/functions/app@1/sub_experiment"), (200, json!(3)));
    let (s, v) = call("/v1/functions/app/sub_experiment");
    assert_eq!((s, code(&v)), (404, "unknown_function"), "{v}");

    // A job of version 1 runs version 1's `main`.
    let (s, v) = submit(&url, &json!({ "component": "app@1" }));
    assert_eq!(s, 201, "{v}");
    let id = v["job_id"].as_str().expect("an id").to_string();
    assert_eq!(ended(&url, &id)["status"], "SUCCEEDED");
    assert_eq!(log(&url, &id), "[45, 55, 65, 75, 85]\n");

    let rollback = |query: &str| {
        post(
            &format!("{url}/v1/components/app/rollback{query}"),
            "application/json",
            b"",
        )
    };
    let (s, v) = rollback("?version=1");
    assert_eq!((s, &v["version"]), (200, &json!(1)), "{v}");
    assert_eq!(call("/v1/functions/app/sub_experiment"), (200, json!(3)));
    let (_, v) = get_at(&url, "/v1/components/app");
    assert_eq!(v["version"], 1, "{v}");
    for (query, status, want) in [
        ("?version=9", 404, "unknown_version"),
        ("", 400, "no_version"),
        ("?version=x", 400, "bad_query"),
    ] {
        let (s, v) = rollback(query);
        assert_eq!((s, code(&v)), (status, want), "{query}: {v}");
    }
    let (_, v) = rollback("?version=9");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("the versions kept are 1, 2"), "{message}");
    let (s, v) = post(
        &format!("{url}/v1/components/nothing/rollback?version=1"),
        "application/json",
        b"",
    );
    assert_eq!((s, code(&v)), (404, "unknown_component"), "{v}");

    // Pruned: ten more deploys (of other bytes each) keep versions 3 to 12.
    let wasm = std::fs::read(components::component("nested")).expect("built");
    for n in 0..10 {
        let (s, v) = post(
            &format!("{url}/v1/components?name=app"),
            "application/wasm",
            &variant(&wasm, n),
        );
        assert_eq!(s, 201, "{v}");
    }
    let (s, v) = call("/v1/functions/app@1/sub_experiment");
    assert_eq!((s, code(&v)), (404, "unknown_version"), "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the versions kept are 3, 4, 5, 6, 7, 8, 9, 10, 11, 12"),
        "{message}"
    );
    let (s, v) = call("/v1/functions/app@x/sub_experiment");
    assert_eq!((s, code(&v)), (400, "bad_version"), "{v}");
    // The kept versions, listed oldest first, each with its digest.
    let (s, v) = get_at(&url, "/v1/components/app/versions");
    assert_eq!(s, 200, "{v}");
    let listed: Vec<u64> = v["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["version"].as_u64().expect("a number"))
        .collect();
    assert_eq!(listed, (3..=12).collect::<Vec<u64>>(), "{v}");
    assert_eq!(
        v["versions"][9]["hash"].as_str().map(str::len),
        Some(64),
        "{v}"
    );
    let (s, v) = get_at(&url, "/v1/components/nothing/versions");
    assert_eq!((s, code(&v)), (404, "unknown_component"), "{v}");
}
