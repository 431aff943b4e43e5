//! What a call answers and what it leaves behind: objects read once but
//! never lost to an error the client can retry, refs inside async results
//! kept readable, results past the answer bound refused with the way to
//! fetch them, time limits that bound the task itself, and actors that
//! outlive their component's undeploy.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wray_http::HttpConfig;

use super::{answer, api_deployed, authed, call, code, deploy, get, get_at, post, spawn_server};

/// `GET {url}/v1/objects/{id}` with `accept`: (status, body bytes).
fn object(url: &str, id: &str, accept: &str) -> (u16, Vec<u8>) {
    let r = authed("GET", &format!("{url}/v1/objects/{id}"))
        .set("Accept", accept)
        .call();
    let r = match r {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport: {e}"),
    };
    let status = r.status();
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut r.into_reader(), &mut body).expect("the body");
    (status, body)
}

#[test]
fn a_406_leaves_the_object_to_be_read_with_the_right_accept() {
    let (s, v) = call("/v1/functions/mb/noop?async=true", "[41]");
    assert_eq!(s, 202, "{v}");
    let id = v["objects"][0].as_str().expect("an id").to_string();
    let url = super::base();
    let (s, body) = object(url, &id, "application/octet-stream");
    assert_eq!(s, 406, "{}", String::from_utf8_lossy(&body));
    assert_eq!(object(url, &id, "application/json"), (200, b"41".to_vec()));
    assert_eq!(object(url, &id, "application/json").0, 404);
}

#[test]
fn refs_inside_an_async_result_stay_readable_until_read() {
    api_deployed();
    let (s, v) = call("/v1/functions/api/make_refs?async=true", "[]");
    assert_eq!(s, 202, "{v}");
    let id = v["objects"][0].as_str().expect("an id");
    let (s, refs) = get(&format!("/v1/objects/{id}"));
    assert_eq!(s, 200, "{refs}");
    let nested: Vec<String> = refs
        .as_array()
        .expect("a list of refs")
        .iter()
        .map(|r| r["$object"].as_str().expect("a ref").to_string())
        .collect();
    assert_eq!(nested.len(), 3, "{refs}");
    let url = super::base();
    for (i, n) in nested.iter().enumerate() {
        // A Rust guest's `put` is rkyv: not JSON (the object stays), but
        // its bytes (the SDK's header, then the archived i64: 8 bytes,
        // little-endian, last).
        assert_eq!(object(url, n, "application/json").0, 406, "{n}");
        let value = i64::try_from(i + 1).unwrap();
        let (s, bytes) = object(url, n, "application/octet-stream");
        assert_eq!(s, 200, "{n}");
        assert!(bytes.ends_with(&value.to_le_bytes()), "{n}: {bytes:?}");
    }
    // Each read once, and then the session is gone.
    let (s, v) = get(&format!("/v1/objects/{}", nested[0]));
    assert_eq!((s, code(&v)), (404, "unknown_object"), "{v}");
}

#[test]
fn a_result_past_the_answer_bound_is_refused_saying_how_to_fetch_it_whole() {
    let url = format!(
        "http://{}",
        spawn_server(HttpConfig {
            max_response: 1 << 20,
            ..HttpConfig::default()
        })
    );
    deploy(&url, "api", "api");
    // `big` returns 16 MiB of one byte value: `[7,7,...]` in JSON.
    let (s, v) = post(
        &format!("{url}/v1/functions/api/big"),
        "application/json",
        b"[7]",
    );
    assert_eq!((s, code(&v)), (507, "result_too_large"), "{v}");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("1048576 bytes")
            && message.contains("?async=true")
            && message.contains("GET /v1/objects/"),
        "{message}"
    );
    let (s, v) = post(
        &format!("{url}/v1/functions/api/big?async=true"),
        "application/json",
        b"[7]",
    );
    assert_eq!(s, 202, "{v}");
    let id = v["objects"][0].as_str().expect("an id");
    let (s, body) = object(&url, id, "application/json");
    assert_eq!(s, 200);
    let value: Vec<u8> = serde_json::from_slice(&body).expect("the JSON of a Vec<u8>");
    assert!(value.len() == 16 << 20 && value.iter().all(|b| *b == 7));
    // Below the bound, answered as usual.
    assert_eq!(
        post(
            &format!("{url}/v1/functions/api/fib"),
            "application/json",
            b"[10]"
        ),
        (200, json!(55))
    );
}

/// The tasks of `function` on the node at `url`, by state.
fn states(url: &str, function: &str) -> Vec<String> {
    let (s, v) = get_at(url, "/v1/tasks?limit=1000");
    assert_eq!(s, 200, "{v}");
    v["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter(|t| t["function"] == function)
        .map(|t| t["state"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Waits (up to a minute) until no task of `function` runs at `url`.
fn until_none_runs(url: &str, function: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = states(url, function);
        if !now.is_empty()
            && now
                .iter()
                .all(|s| !matches!(s.as_str(), "RUNNING" | "QUEUED" | "BLOCKED"))
        {
            return;
        }
        assert!(Instant::now() < deadline, "{function} still runs: {now:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_async_calls_timeout_bounds_its_task() {
    let url = format!("http://{}", spawn_server(HttpConfig::default()));
    deploy(&url, "api", "api");
    let (s, v) = post(
        &format!("{url}/v1/functions/api/spin?async=true&timeout=0.5"),
        "application/json",
        b"[]",
    );
    assert_eq!(s, 202, "{v}");
    let id = v["objects"][0].as_str().expect("an id");
    // The task's own time limit ends it: its error, not the read's.
    let (s, v) = get_at(&url, &format!("/v1/objects/{id}?timeout=60"));
    assert_eq!((s, code(&v)), (504, "task_failed"), "{v}");
    assert_eq!(
        (
            v["error"]["task"]["kind"].as_str(),
            v["error"]["task"]["function"].as_str()
        ),
        (Some("timeout"), Some("spin")),
        "{v}"
    );
    until_none_runs(&url, "spin");
    // A synchronous call's timeout ends its task too.
    let (s, v) = post(
        &format!("{url}/v1/functions/api/spin?timeout=0.5"),
        "application/json",
        b"[]",
    );
    assert_eq!((s, code(&v)), (504, "task_failed"), "{v}");
    until_none_runs(&url, "spin");
    // A function's own shorter limit still holds under a longer timeout.
    let (s, v) = post(
        &format!("{url}/v1/functions/api/short_time?timeout=60"),
        "application/json",
        b"[]",
    );
    assert_eq!(
        (s, v["error"]["task"]["kind"].as_str()),
        (504, Some("timeout")),
        "{v}"
    );
}

#[test]
fn an_actor_keeps_working_after_its_component_is_undeployed() {
    let url = super::base();
    deploy(url, "counter", "short_lived_counter");
    let (s, v) = call(
        "/v1/actors",
        r#"{"component": "short_lived_counter", "class": "Counter", "args": [1]}"#,
    );
    assert_eq!(s, 201, "{v}");
    let actor = v["actor"].as_str().expect("an actor").to_string();
    let (s, _) = answer(
        authed(
            "DELETE",
            &format!("{url}/v1/components/short_lived_counter"),
        )
        .call(),
    );
    assert_eq!(s, 200);
    assert_eq!(
        call(&format!("/v1/actors/{actor}/add"), "[2]"),
        (200, json!(3))
    );
    let (s, v) = call(&format!("/v1/actors/{actor}/nope"), "[]");
    assert_eq!((s, code(&v)), (404, "unknown_method"), "{v}");
    let (_, listed) = get("/v1/actors?limit=1000");
    let mine: Vec<&Value> = listed["actors"]
        .as_array()
        .expect("actors")
        .iter()
        .filter(|a| a["actor"] == actor.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{listed}");
    assert_eq!(mine[0]["component"], "short_lived_counter");
    let (s, _) = answer(authed("DELETE", &format!("{url}/v1/actors/{actor}")).call());
    assert_eq!(s, 200);
}
