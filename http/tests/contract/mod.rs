//! The API's contract as a client meets it: the OpenAPI documents
//! validate, listings come a page at a time, names travel percent-encoded
//! under one rule, numbers pass exactly, the token's scheme is
//! case-insensitive and an empty body is no arguments.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use wray_http::HttpConfig;

use super::{
    agent, answer, api_deployed, authed, call, code, components, deploy, get_at, post,
    spawn_server, TOKEN,
};

/// `openapi-spec-validator`: `WRAY_OPENAPI_VALIDATOR`, else the one
/// `cargo xtask setup` installs in `<target>/venv`, else on `PATH`.
fn validator() -> PathBuf {
    if let Some(path) = std::env::var_os("WRAY_OPENAPI_VALIDATOR") {
        return path.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let in_venv = target.join("venv/bin/openapi-spec-validator");
    if in_venv.exists() {
        return in_venv;
    }
    let on_path = Command::new("openapi-spec-validator")
        .arg("--help")
        .output();
    assert!(
        on_path.is_ok_and(|o| o.status.success()),
        "openapi-spec-validator is missing: run `cargo xtask setup` (it installs it into {}), \
         or `pip install openapi-spec-validator==0.9.0`, or name it with WRAY_OPENAPI_VALIDATOR",
        target.join("venv").display()
    );
    PathBuf::from("openapi-spec-validator")
}

/// Runs the validator on `doc`; its complaint, if any.
fn validate(doc: &Value, name: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join(format!("{name}.json"));
    std::fs::write(&file, doc.to_string()).expect("writes the document");
    let out = Command::new(validator())
        .arg(&file)
        .output()
        .expect("openapi-spec-validator runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{name}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The real documents of a node with components whose functions take and
/// return object refs and actor handles (`api`: `sum_refs`, `bump`,
/// `make_refs`, `make_counter`; `tree_reduce`, `nested`, `counter`), each
/// checked by openapi-spec-validator.
#[test]
fn the_openapi_documents_of_a_node_with_refs_and_handles_validate() {
    let url = format!("http://{}", spawn_server(HttpConfig::default()));
    let deployed = ["api", "counter", "nested", "tree_reduce", "microbench"];
    for name in deployed {
        deploy(&url, name, name);
    }
    let (s, doc) = get_at(&url, "/v1/openapi.json");
    assert_eq!(s, 200);
    let mut failures = Vec::new();
    failures.extend(validate(&doc, "openapi").err());
    for name in deployed {
        let (s, doc) = get_at(&url, &format!("/v1/components/{name}/openapi.json"));
        assert_eq!(s, 200, "{doc}");
        let text = doc.to_string();
        assert!(
            !text.contains("\"#/$defs/"),
            "{name}: a ref left pointing at the root's $defs"
        );
        failures.extend(validate(&doc, name).err());
    }
    // The refs were really there to hoist.
    let (_, doc) = get_at(&url, "/v1/components/api/openapi.json");
    let sum_refs = doc["paths"]["/v1/functions/api/sum_refs"]["post"].to_string();
    assert!(sum_refs.contains("#/components/schemas/"), "{sum_refs}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every page of `path` (a listing answering `key` and `next`) with
/// `limit`, following the cursors; the entries' `field`s.
fn all_pages(url: &str, path: &str, key: &str, field: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..10_000 {
        let cursor = after
            .as_deref()
            .map(|a| format!("&after={}", wray_api::encode(a)))
            .unwrap_or_default();
        // `path` may carry a query of its own, ending in `&`.
        let sep = if path.ends_with('&') { "" } else { "?" };
        let (s, v) = get_at(url, &format!("{path}{sep}limit={limit}{cursor}"));
        assert_eq!(s, 200, "{v}");
        let page = v[key].as_array().expect("a page");
        assert!(page.len() <= limit, "{v}");
        out.extend(
            page.iter()
                .map(|e| e[field].as_str().unwrap_or("").to_string()),
        );
        match v["next"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => return out,
        }
    }
    panic!("{path}: pages never ended");
}

#[test]
fn listings_come_a_page_at_a_time_and_the_cursors_cover_them_all() {
    let url = format!("http://{}", spawn_server(HttpConfig::default()));
    let wasm = std::fs::read(components::component("microbench")).expect("microbench.wasm");
    let names = ["a&b", "b", "c d", "x#y", "zz"];
    for name in names {
        let r = post(
            &format!("{url}/v1/components?name={}", wray_api::encode(name)),
            "application/wasm",
            &wasm,
        );
        assert_eq!(r.0, 201, "{name}: {:?}", r.1);
    }
    assert_eq!(
        all_pages(&url, "/v1/components", "components", "hash", 2).len(),
        5
    );
    let (_, first) = get_at(&url, "/v1/components?limit=2");
    let listed: Vec<&str> = first["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["record"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        (listed, first["next"].as_str()),
        (vec!["a&b", "b"], Some("b"))
    );
    assert_eq!(first["view"], "control_plane");
    // Objects (each async call's result) and tasks.
    for i in 0..5 {
        let (s, v) = post(
            &format!("{url}/v1/functions/b/noop?async=true"),
            "application/json",
            format!("[{i}]").as_bytes(),
        );
        assert_eq!(s, 202, "{v}");
    }
    // Newest first, each object once, however the pages fall.
    let objects = all_pages(&url, "/v1/objects", "objects", "id", 2);
    assert!(objects.len() >= 5, "{objects:?}");
    let distinct: std::collections::BTreeSet<&String> = objects.iter().collect();
    assert_eq!(distinct.len(), objects.len(), "{objects:?}");
    let (_, all) = get_at(&url, "/v1/objects?limit=1000");
    let times: Vec<f64> = all["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["created_at"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    let oldest = all_pages(&url, "/v1/objects?order=oldest&", "objects", "id", 2);
    assert_eq!(
        oldest,
        objects.iter().rev().cloned().collect::<Vec<_>>(),
        "?order=oldest is the reverse"
    );
    let tasks = all_pages(&url, "/v1/tasks", "tasks", "task_id", 2);
    let (_, all) = get_at(&url, "/v1/tasks?limit=1000");
    let one_page: Vec<&str> = all["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, one_page);
    // `?job=`: only that job's tasks (a task id's first 16 hex digits are
    // its job's id).
    let ids = |v: &Value| -> Vec<String> {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["task_id"].as_str().unwrap().to_string())
            .collect()
    };
    let job = &one_page[0][..16];
    let (s, v) = get_at(&url, &format!("/v1/tasks?limit=1000&job={job}"));
    assert_eq!(s, 200, "{v}");
    let mine = ids(&v);
    assert!(mine.iter().any(|t| t == one_page[0]), "{v}");
    assert!(mine.iter().all(|t| t.starts_with(job)), "{v}");
    let (s, v) = get_at(&url, "/v1/tasks?job=0000000000000000");
    assert_eq!((s, ids(&v).len()), (200, 0), "{v}");
    let (s, v) = get_at(&url, "/v1/tasks?job=0xnothex");
    assert_eq!((s, code(&v)), (400, "bad_query"), "{v}");
    let (s, v) = get_at(&url, "/v1/objects?job=0000000000000000");
    assert_eq!((s, code(&v)), (400, "bad_query"), "only tasks take it: {v}");
    for bad in ["limit=0", "limit=1001", "limit=many"] {
        let (s, v) = get_at(&url, &format!("/v1/components?{bad}"));
        assert_eq!((s, code(&v)), (400, "bad_query"), "{bad}: {v}");
    }
    // A cursor names a place in the order, never a row that may go.
    let (s, v) = get_at(&url, "/v1/tasks?after=0123");
    assert_eq!((s, code(&v)), (400, "bad_query"), "{v}");
    let (s, v) = get_at(
        &url,
        "/v1/tasks?after=1.node-0000000000000000.gone&order=oldest",
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(ids(&v).len(), one_page.len(), "{v}");
}

#[test]
fn component_names_travel_percent_encoded_under_the_one_name_rule() {
    let url = format!("http://{}", spawn_server(HttpConfig::default()));
    let wasm = std::fs::read(components::component("microbench")).expect("microbench.wasm");
    for name in ["x#y", "a&b", "ünï côdé", "100%"] {
        let encoded = wray_api::encode(name);
        let (s, v) = post(
            &format!("{url}/v1/components?name={encoded}"),
            "application/wasm",
            &wasm,
        );
        assert_eq!((s, v["record"]["name"].as_str()), (201, Some(name)), "{v}");
        let (s, v) = get_at(&url, &format!("/v1/components/{encoded}"));
        assert_eq!((s, v["record"]["name"].as_str()), (200, Some(name)), "{v}");
        let (s, v) = post(
            &format!("{url}/v1/functions/{encoded}/noop"),
            "application/json",
            b"[5]",
        );
        assert_eq!((s, v), (200, json!(5)), "{name}");
    }
    // `x` was not deployed by `x#y`.
    let (s, v) = get_at(&url, "/v1/components/x");
    assert_eq!((s, code(&v)), (404, "unknown_component"), "{v}");
    for bad in ["a%40b", "no%2Fslash", "%2E%2E", ""] {
        let (s, v) = post(
            &format!("{url}/v1/components?name={bad}"),
            "application/wasm",
            &wasm,
        );
        assert_eq!((s, code(&v)), (400, "bad_name"), "{bad}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("no `/`, `@` or control character"),
            "{message}"
        );
    }
    let (s, v) = get_at(&url, "/v1/components/a%2Fb");
    assert_eq!((s, code(&v)), (400, "bad_name"), "{v}");
}

#[test]
fn integers_beyond_64_bits_pass_exactly_and_out_of_range_ones_are_named() {
    api_deployed();
    // The answers' text, as sent (a JSON parser would make floats of them).
    let text = |path: &str, body: &str| match authed("POST", &format!("{}{path}", super::base()))
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => r.into_string().expect("a body"),
        Err(ureq::Error::Status(s, r)) => {
            panic!("{path} {body}: {s} {}", r.into_string().unwrap_or_default())
        }
        Err(e) => panic!("{path}: {e}"),
    };
    let wide = "1180591620717411303424";
    assert_eq!(
        text("/v1/functions/api/echo_wide", &format!("[{wide}]")),
        wide
    );
    let max = u128::MAX.to_string();
    assert_eq!(
        text("/v1/functions/api/echo_wide", &format!("[{max}]")),
        max
    );
    // microbench's noop takes a u64.
    assert_eq!(
        text("/v1/functions/mb/noop", "[18446744073709551615]"),
        "18446744073709551615"
    );
    let (s, v) = call("/v1/functions/mb/noop", "[18446744073709551616]");
    assert_eq!((s, code(&v)), (400, "task_failed"), "{v}");
    assert_eq!(v["error"]["task"]["kind"], "invalid-argument", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("18446744073709551616 is out of range for uint64"),
        "{message}"
    );
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_a_401_says_how_to_authenticate() {
    let url = super::base();
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let r = agent()
            .get(&format!("{url}/v1/resources"))
            .set("Authorization", &format!("{scheme} {TOKEN}"))
            .call();
        assert_eq!(answer(r).0, 200, "{scheme}");
    }
    for auth in [None, Some("Bearer wrong")] {
        let mut r = agent().get(&format!("{url}/v1/resources"));
        if let Some(a) = auth {
            r = r.set("Authorization", a);
        }
        let response = match r.call() {
            Err(ureq::Error::Status(401, response)) => response,
            other => panic!("{auth:?}: {:?}", other.map(|r| r.status())),
        };
        let challenge = response
            .header("www-authenticate")
            .unwrap_or("")
            .to_string();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        let v: Value = response.into_json().expect("a JSON error");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("node directory"), "{message}");
        assert!(!message.contains("session"), "{message}");
    }
}

#[test]
fn an_empty_body_calls_a_function_of_no_arguments() {
    let url = api_deployed();
    let (s, v) = answer(authed("POST", &format!("{url}/v1/functions/api/profiled")).call());
    assert_eq!((s, v), (200, json!(7)));
    let (s, v) = call("/v1/functions/api/profiled", " ");
    assert_eq!((s, v), (200, json!(7)));
    let (s, v) = call("/v1/functions/mb/noop", "");
    assert_eq!((s, code(&v)), (400, "wrong_argument_count"), "{v}");
}
