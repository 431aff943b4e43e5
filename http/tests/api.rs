//! The HTTP API end to end: a node in this process, served on a loopback
//! port with a token, driven by a client (`ureq`), as a user would.

#[path = "../../host/tests/common/components.rs"]
mod components;
mod contract;
#[path = "api/deploys.rs"]
mod deploys;
#[path = "api/job_options.rs"]
mod job_options;
mod outage;
mod results;
mod tls;

use std::sync::Arc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{json, Value};
use wray_host::{Node, NodeConfig};
use wray_http::{HttpConfig, Server};

const TOKEN: &str = "test-token";

/// The node and its server, started once for every test of this binary
/// (but the one that fills the kept sessions: [`serve`] gives it its own).
fn base() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let url = serve(HttpConfig {
            max_body: 4096,
            ..HttpConfig::default()
        });
        deploy(&url, "counter", "counter");
        url
    })
}

/// A node of its own served with `config` on a loopback port with
/// [`TOKEN`], `microbench` deployed as `mb`; its URL.
fn serve(config: HttpConfig) -> String {
    let url = format!("http://{}", spawn_server(config));
    deploy(&url, "microbench", "mb");
    url
}

/// Deploys the built component `component` as `name` on the node at `url`.
fn deploy(url: &str, component: &str, name: &str) {
    let wasm = std::fs::read(components::component(component)).expect("a built component");
    let r = post(
        &format!("{url}/v1/components?name={name}"),
        "application/wasm",
        &wasm,
    );
    assert_eq!(r.0, 201, "{component} as {name}: {:?}", r.1);
}

/// A node of its own served with `config` on a loopback port with
/// [`TOKEN`], nothing deployed; its address.
fn spawn_server(config: HttpConfig) -> std::net::SocketAddr {
    let node: Arc<Node> = Node::start(NodeConfig {
        num_cpus: 2,
        ..NodeConfig::default()
    })
    .expect("node starts");
    serve_node(node, config)
}

/// `node` served with `config` on a loopback port with [`TOKEN`]; its
/// address.
fn serve_node(node: Arc<Node>, config: HttpConfig) -> std::net::SocketAddr {
    serve_exactly(
        node,
        HttpConfig {
            token: Some(TOKEN.into()),
            ..config
        },
    )
}

/// `node` served with `config` as it is, on a loopback port; its address.
fn serve_exactly(node: Arc<Node>, config: HttpConfig) -> std::net::SocketAddr {
    let config = HttpConfig {
        bind: "127.0.0.1:0".parse().expect("address"),
        ..config
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let server = Server::bind(node, config).await.expect("binds");
            tx.send(server.local_addr().expect("address"))
                .expect("send");
            server.serve(std::future::pending()).await;
        });
    });
    rx.recv().expect("server address")
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build()
}

/// (status, body as JSON or as a string value).
fn answer(r: Result<ureq::Response, ureq::Error>) -> (u16, Value) {
    let r = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport: {e}"),
    };
    let status = r.status();
    let text = r.into_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A request to `url` carrying [`TOKEN`].
fn authed(method: &str, url: &str) -> ureq::Request {
    agent()
        .request(method, url)
        .set("Authorization", &format!("Bearer {TOKEN}"))
}

fn post(url: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
    answer(
        authed("POST", url)
            .set("Content-Type", content_type)
            .send_bytes(body),
    )
}

fn call(path: &str, body: &str) -> (u16, Value) {
    post(
        &format!("{}{path}", base()),
        "application/json",
        body.as_bytes(),
    )
}

fn get(path: &str) -> (u16, Value) {
    get_at(base(), path)
}

fn get_at(url: &str, path: &str) -> (u16, Value) {
    answer(authed("GET", &format!("{url}{path}")).call())
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn a_function_answers_its_json_result() {
    assert_eq!(call("/v1/functions/mb/noop", "[7]"), (200, json!(7)));
}

#[test]
fn bad_requests_are_4xx_naming_what_was_wrong() {
    let (s, v) = call("/v1/functions/mb/noop", "[7");
    assert_eq!((s, code(&v)), (400, "bad_json"), "{v}");
    let (s, v) = call("/v1/functions/mb/noop", "[1, 2]");
    assert_eq!((s, code(&v)), (400, "wrong_argument_count"), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("noop takes 1"),
        "{v}"
    );
    let (s, v) = call("/v1/functions/mb/nope", "[]");
    assert_eq!((s, code(&v)), (404, "unknown_function"), "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("noop"),
        "{v}"
    );
    let (s, v) = call("/v1/functions/nothing/noop", "[]");
    assert_eq!((s, code(&v)), (404, "unknown_component"), "{v}");
    // The node checks the argument against the parameter's schema.
    let (s, v) = call("/v1/functions/mb/noop", "[\"x\"]");
    assert_eq!((s, code(&v)), (400, "task_failed"), "{v}");
    assert_eq!(v["error"]["task"]["kind"], "invalid-argument", "{v}");
    let (s, v) = call("/v1/functions/mb/noop?timeout=-1", "[1]");
    assert_eq!((s, code(&v)), (400, "bad_query"), "{v}");
    let (s, v) = call("/v1/functions/mb/noop?bogus=1", "[1]");
    assert_eq!((s, code(&v)), (400, "bad_query"), "{v}");
    let (s, v) = call("/v1/functions/mb/noop", &format!("[{}]", "1".repeat(5000)));
    assert_eq!((s, code(&v)), (413, "body_too_large"), "{v}");
    let (s, v) = get("/v2/anything");
    assert_eq!((s, code(&v)), (404, "no_route"), "{v}");
}

#[test]
fn every_route_but_healthz_needs_the_token() {
    let url = base();
    let (s, _) = answer(agent().get(&format!("{url}/healthz")).call());
    assert_eq!(s, 200);
    let (s, v) = answer(agent().get(&format!("{url}/v1/components")).call());
    assert_eq!((s, code(&v)), (401, "no_token"), "{v}");
    let (s, v) = answer(
        agent()
            .post(&format!("{url}/v1/functions/mb/noop"))
            .set("Authorization", "Bearer wrong")
            .send_string("[1]"),
    );
    assert_eq!((s, code(&v)), (401, "bad_token"), "{v}");
}

#[test]
fn an_async_call_answers_ids_whose_values_are_read_once() {
    let (s, v) = call("/v1/functions/mb/noop?async=true", "[41]");
    assert_eq!(s, 202, "{v}");
    let id = v["objects"][0].as_str().expect("an object id").to_string();
    assert_eq!(get(&format!("/v1/objects/{id}")), (200, json!(41)));
    let (s, v) = get(&format!("/v1/objects/{id}"));
    assert_eq!((s, code(&v)), (404, "unknown_object"), "{v}");
    let (s, v) = get("/v1/objects/not-an-id");
    assert_eq!((s, code(&v)), (400, "bad_id"), "{v}");
}

#[test]
fn kept_sessions_are_bounded_and_past_the_bound_the_answer_is_503_with_retry_after() {
    let url = serve(HttpConfig {
        max_kept: 8,
        ..HttpConfig::default()
    });
    let call = |path: &str| post(&format!("{url}{path}"), "application/json", b"[1]");
    let get = |path: &str| get_at(&url, path);
    // Hold all 8 with async calls: the next one is refused.
    let mut ids = Vec::new();
    let mut refused = None;
    for _ in 0..9 {
        let (s, v) = call("/v1/functions/mb/noop?async=true");
        match s {
            202 => ids.push(v["objects"][0].as_str().unwrap().to_string()),
            503 => {
                refused = Some(v);
                break;
            }
            other => panic!("{other}: {v}"),
        }
    }
    let v = refused.expect("a call past the bound is refused");
    assert_eq!(code(&v), "busy", "{v}");
    assert_eq!(ids.len(), 8);
    // Reading the results frees their room.
    for id in ids {
        assert_eq!(get(&format!("/v1/objects/{id}")).0, 200);
    }
    assert_eq!(call("/v1/functions/mb/noop?async=true").0, 202);
}

#[test]
fn an_actor_keeps_its_state_between_calls_until_killed() {
    let (s, v) = call(
        "/v1/actors",
        r#"{"component": "counter", "class": "Counter", "args": [10]}"#,
    );
    assert_eq!(s, 201, "{v}");
    let actor = v["actor"].as_str().expect("actor id").to_string();
    assert_eq!(
        call(&format!("/v1/actors/{actor}/add"), "[5]"),
        (200, json!(15))
    );
    assert_eq!(
        call(&format!("/v1/actors/{actor}/increment"), "[]"),
        (200, json!(16))
    );
    let (s, v) = call(&format!("/v1/actors/{actor}/nope"), "[]");
    assert_eq!((s, code(&v)), (404, "unknown_method"), "{v}");
    // Listed with its state and calls (the constructor and two methods),
    // alone under its job's filter (an HTTP actor is a job of its own).
    let row = |v: &Value| -> Value {
        v["actors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["actor"] == actor.as_str())
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (s, v) = get("/v1/actors?limit=1000");
    let me = row(&v);
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (
            &me["class"],
            &me["component"],
            &me["state"],
            &me["calls"],
            &me["http"]
        ),
        (
            &json!("Counter"),
            &json!("counter"),
            &json!("ALIVE"),
            &json!(3),
            &json!(true)
        ),
        "{v}"
    );
    let job = &actor[..16];
    assert_eq!(me["job"], job, "{v}");
    let (s, v) = get(&format!("/v1/actors?job={job}"));
    assert_eq!((s, v["actors"].as_array().unwrap().len()), (200, 1), "{v}");
    let (s, v) = get("/v1/actors?job=0000000000000000");
    assert_eq!((s, v["actors"].as_array().unwrap().len()), (200, 0), "{v}");
    let (s, _) = answer(authed("DELETE", &format!("{}/v1/actors/{actor}", base())).call());
    assert_eq!(s, 200);
    let (s, v) = call(&format!("/v1/actors/{actor}/add"), "[1]");
    assert_eq!((s, code(&v)), (404, "unknown_actor"), "{v}");
    // Still listed, dead, and why; a second kill finds no live actor.
    let (_, v) = get("/v1/actors?limit=1000");
    let me = row(&v);
    assert_eq!(
        (&me["state"], &me["http"]),
        (&json!("DEAD"), &json!(false)),
        "{v}"
    );
    assert!(
        me["death_cause"]
            .as_str()
            .is_some_and(|c| c.contains("killed")),
        "{v}"
    );
    let (s, _) = answer(authed("DELETE", &format!("{}/v1/actors/{actor}", base())).call());
    assert_eq!(s, 404);
}

#[test]
fn the_openapi_document_names_every_route_and_each_component_document_its_functions() {
    let (s, doc) = get("/v1/openapi.json");
    assert_eq!(s, 200);
    for route in wray_http::routes::ROUTES {
        assert!(
            doc["paths"][route.path][route.method.to_ascii_lowercase()].is_object(),
            "{} {} missing",
            route.method,
            route.path
        );
    }
    // The main document does not grow with what is deployed.
    assert!(doc["paths"].get("/v1/functions/mb/noop").is_none());
    let (s, doc) = get("/v1/components/mb/openapi.json");
    assert_eq!(s, 200, "{doc}");
    let noop = &doc["paths"]["/v1/functions/mb/noop"]["post"];
    let items = &noop["requestBody"]["content"]["application/json"]["schema"]["prefixItems"];
    assert_eq!(items[0]["type"], "integer", "{noop}");
    let (s, v) = get("/v1/components/nothing/openapi.json");
    assert_eq!((s, code(&v)), (404, "unknown_component"), "{v}");
}

#[test]
fn state_routes_and_metrics_answer() {
    assert_eq!(call("/v1/functions/mb/noop", "[3]").0, 200);
    for path in [
        "/v1/nodes",
        "/v1/resources",
        "/v1/tasks",
        "/v1/objects",
        "/v1/errors",
        "/v1/timeline",
        "/v1/components",
        "/v1/jobs",
        "/v1/logs",
    ] {
        let (s, v) = get(path);
        assert_eq!(s, 200, "{path}: {v}");
    }
    let (s, text) = get("/metrics");
    let text = text.as_str().unwrap_or_default().to_string();
    assert_eq!(s, 200);
    assert!(text.contains("wray_http_requests_total{route=\"/v1/functions/{component}/{function}\",method=\"POST\",status=\"200\"}"), "{text}");
    assert!(text.contains("wray_tasks{state="), "{text}");
    // The invocation above made an instance: the histogram counts it, its
    // buckets are cumulative and end at the count.
    let value = |series: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no {series} in {text}"));
        line[series.len() + 1..].parse().expect("a count")
    };
    let count = value("wray_instantiation_seconds_count");
    assert!(count > 0, "{text}");
    assert_eq!(
        value("wray_instantiation_seconds_bucket{le=\"+Inf\"}"),
        count
    );
    let buckets: Vec<u64> = ["0.000005", "0.001", "0.1"]
        .iter()
        .map(|le| value(&format!("wray_instantiation_seconds_bucket{{le=\"{le}\"}}")))
        .collect();
    assert!(
        buckets.windows(2).all(|w| w[0] <= w[1]) && buckets[2] <= count,
        "{text}"
    );
    assert!(text.contains("wray_instantiation_seconds_sum "), "{text}");
    assert!(
        text.contains("wray_instantiation_failures_total "),
        "{text}"
    );
}

#[test]
fn an_undeployed_component_is_not_found_and_can_be_deployed_again() {
    let wasm = std::fs::read(components::component("microbench")).expect("microbench.wasm");
    let url = base();
    assert_eq!(
        post(
            &format!("{url}/v1/components?name=gone"),
            "application/wasm",
            &wasm
        )
        .0,
        201
    );
    assert_eq!(call("/v1/functions/gone/noop", "[1]"), (200, json!(1)));
    let (s, _) = answer(authed("DELETE", &format!("{url}/v1/components/gone")).call());
    assert_eq!(s, 200);
    assert_eq!(call("/v1/functions/gone/noop", "[1]").0, 404);
    let (s, v) = post(
        &format!("{url}/v1/components?name=bad"),
        "application/wasm",
        b"not wasm",
    );
    assert_eq!((s, code(&v)), (400, "invalid_component"), "{v}");
    let (s, v) = post(
        &format!("{url}/v1/components?name=no/slash"),
        "application/wasm",
        &wasm,
    );
    assert_eq!((s, code(&v)), (400, "bad_name"), "{v}");
}

/// `api` deployed on the shared node (once).
fn api_deployed() -> &'static str {
    static DEPLOYED: OnceLock<()> = OnceLock::new();
    DEPLOYED.get_or_init(|| deploy(base(), "api", "api"));
    base()
}

/// A call runs its task on the server's own threads
/// (`TaskOptions::on_caller_runtime`). Such a task may still wait on tasks
/// it submits (they run on worker threads), and a guest that computes
/// shares those threads with the connections: two calls spinning until
/// their 200 ms limit (one on each of the server's two threads) leave it
/// answering `/healthz` before either ends.
#[test]
fn a_call_runs_on_the_servers_threads_yet_may_wait_on_its_tasks_and_never_stalls_the_server() {
    let url = format!("http://{}", spawn_server(HttpConfig::default()));
    deploy(&url, "api", "api");
    let at = |path: &str| format!("{url}{path}");
    let call_at = |path: &str, body: &str| post(&at(path), "application/json", body.as_bytes());
    assert_eq!(
        call_at("/v1/functions/api/run_experiment", "[1]"),
        (200, json!(55))
    );
    assert_eq!(call_at("/v1/functions/api/fib", "[10]"), (200, json!(55)));

    // A round in which one call ended before the other ran (a slow
    // client thread) is tried again.
    for round in 1..=5 {
        let spinners: Vec<_> = (0..2)
            .map(|_| {
                let path = at("/v1/functions/api/short_time");
                std::thread::spawn(move || {
                    let answer = post(&path, "application/json", b"[]");
                    (answer, Instant::now())
                })
            })
            .collect();
        let both_running = loop {
            let (s, v) = get_at(&url, "/v1/tasks?limit=1000");
            assert_eq!(s, 200, "{v}");
            let running = v["tasks"]
                .as_array()
                .expect("a list of tasks")
                .iter()
                .filter(|t| t["function"] == "short_time" && t["state"] == "RUNNING")
                .count();
            if running == 2 {
                break true;
            }
            if spinners.iter().any(std::thread::JoinHandle::is_finished) {
                break false;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let answered = both_running.then(|| {
            let (s, v) = answer(agent().get(&at("/healthz")).call());
            assert_eq!(s, 200, "{v}");
            Instant::now()
        });
        for spinner in spinners {
            let ((s, v), ended) = spinner.join().expect("the caller");
            assert_eq!((s, code(&v)), (504, "task_failed"), "{v}");
            assert_eq!(v["error"]["task"]["kind"], "timeout", "{v}");
            if let Some(answered) = answered {
                assert!(answered < ended, "/healthz waited for the spinning calls");
            }
        }
        if both_running {
            return;
        }
        assert!(round < 5, "the two calls never ran at once in 5 rounds");
    }
}

/// Submits `main(args)` of `api` as a job; its id.
fn submit_job(args: &[&str]) -> String {
    let url = api_deployed();
    let body = json!({ "component": "api", "args": args }).to_string();
    let (s, v) = post(
        &format!("{url}/v1/jobs"),
        "application/json",
        body.as_bytes(),
    );
    assert_eq!(s, 201, "{v}");
    assert!(
        matches!(v["status"].as_str(), Some("PENDING" | "RUNNING")),
        "{v}"
    );
    v["job_id"].as_str().expect("job_id").to_string()
}

/// `GET /v1/jobs/{id}/logs` with `query`: (status, headers' next offset,
/// body).
fn job_logs(id: &str, query: &str) -> (u16, Option<String>, String) {
    let r = authed("GET", &format!("{}/v1/jobs/{id}/logs{query}", base())).call();
    let r = match r {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport: {e}"),
    };
    let next = r.header("wray-log-next").map(str::to_string);
    (r.status(), next, r.into_string().expect("a text body"))
}

#[test]
fn a_job_runs_in_the_background_and_its_log_streams_until_it_ends() {
    let id = submit_job(&["job_output", "web", "3"]);
    // Follow: the body ends when the job does.
    let (s, _, text) = job_logs(&id, "?follow=true");
    assert_eq!(s, 200);
    for line in [
        "driver web 0\n",
        "driver web 2\n",
        "driver web stderr",
        "task web\n",
        "task web stderr",
        "done web 3\n",
    ] {
        assert!(text.contains(line), "`{line}` not in {text}");
    }
    let (s, v) = get(&format!("/v1/jobs/{id}"));
    assert_eq!((s, v["status"].as_str()), (200, Some("SUCCEEDED")), "{v}");
    assert_eq!(v["log_bytes"].as_u64(), Some(text.len() as u64));
    // Not followed: what is kept from an offset, and where to go on from.
    let (s, next, tail) = job_logs(&id, "?offset=7");
    assert_eq!((s, next), (200, Some(text.len().to_string())));
    assert_eq!(tail, text[7..]);
    let (_, _, none) = job_logs(&id, &format!("?offset={}", u64::MAX));
    assert_eq!(none, "");
    let (s, v) = get("/v1/jobs");
    assert_eq!(s, 200);
    assert!(
        v["jobs"]
            .as_array()
            .expect("a page of jobs")
            .iter()
            .any(|j| j["job_id"] == id.as_str()),
        "{v}"
    );
}

#[test]
fn a_stopped_job_ends_its_followers_and_can_then_be_deleted() {
    let id = submit_job(&["job_forever"]);
    // Stopped once it has said so (a stop before it printed would leave
    // nothing to follow).
    let deadline = Instant::now() + Duration::from_secs(30);
    while job_logs(&id, "").2 != "started\n" {
        assert!(Instant::now() < deadline, "job_forever never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let follower = {
        let id = id.clone();
        std::thread::spawn(move || job_logs(&id, "?follow=1"))
    };
    let url = base();
    let (s, v) = answer(authed("DELETE", &format!("{url}/v1/jobs/{id}")).call());
    assert_eq!((s, code(&v)), (409, "job_running"), "{v}");
    let (s, v) = post(&format!("{url}/v1/jobs/{id}/stop"), "application/json", b"");
    assert_eq!((s, &v), (200, &json!({ "stopped": true })));
    let (s, _, text) = follower.join().expect("the follower");
    assert_eq!(s, 200);
    assert!(text.starts_with("started\n"), "{text}");
    let (_, v) = get(&format!("/v1/jobs/{id}"));
    assert_eq!(v["status"], "STOPPED", "{v}");
    // `/metrics` counts it among the stopped jobs (other tests' jobs share
    // the node: at least one).
    let (_, text) = get("/metrics");
    let text = text.as_str().unwrap_or_default();
    let stopped = text
        .lines()
        .find_map(|l| l.strip_prefix("wray_jobs{status=\"STOPPED\"} "))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(stopped.is_some_and(|n| n >= 1), "{text}");
    let (s, v) = post(&format!("{url}/v1/jobs/{id}/stop"), "application/json", b"");
    assert_eq!((s, &v), (200, &json!({ "stopped": false })));
    let (s, _) = answer(authed("DELETE", &format!("{url}/v1/jobs/{id}")).call());
    assert_eq!(s, 200);
    let (s, v) = get(&format!("/v1/jobs/{id}"));
    assert_eq!((s, code(&v)), (404, "unknown_job"), "{v}");
}

#[test]
fn bad_job_requests_are_4xx_naming_what_was_wrong() {
    let url = api_deployed();
    let jobs = format!("{url}/v1/jobs");
    for (body, status, code_) in [
        (r#"{"component": "nothing"}"#, 404, "unknown_component"),
        (r#"{"component": "api", "args": [1]}"#, 400, "bad_json"),
        (
            r#"{"component": "api", "entrypoint": "x"}"#,
            400,
            "bad_json",
        ),
        ("[]", 400, "bad_json"),
    ] {
        let (s, v) = post(&jobs, "application/json", body.as_bytes());
        assert_eq!((s, code(&v)), (status, code_), "{body}: {v}");
    }
    for (path, status, code_) in [
        ("/v1/jobs/nothex", 400, "bad_id"),
        ("/v1/jobs/0123456789abcdef", 404, "unknown_job"),
        ("/v1/jobs/0123456789abcdef/logs?offset=-1", 400, "bad_query"),
        (
            "/v1/jobs/0123456789abcdef/logs?follow=maybe",
            400,
            "bad_query",
        ),
        ("/v1/jobs/0123456789abcdef/logs?timeout=1", 400, "bad_query"),
    ] {
        let (s, v) = get(path);
        assert_eq!((s, code(&v)), (status, code_), "{path}: {v}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Random methods, paths, headers and bodies: every answer is a 4xx,
    /// a 2xx, or a 503; never a dropped connection or another 5xx.
    #[test]
    fn nothing_a_client_sends_gets_a_5xx_or_crashes_the_node(
        method in prop::sample::select(vec!["GET", "POST", "DELETE", "PUT", "PATCH"]),
        path in prop::collection::vec(
            prop_oneof![
                Just("v1".to_string()), Just("functions".to_string()), Just("mb".to_string()),
                Just("noop".to_string()), Just("objects".to_string()), Just("actors".to_string()),
                Just("components".to_string()), "[a-z0-9%.]{0,12}",
            ],
            0..6,
        ),
        query in "[a-z=&0-9.-]{0,20}",
        token in prop::bool::ANY,
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let url = format!("{}/{}?{query}", base(), path.join("/"));
        let mut r = agent().request(method, &url).set("Content-Type", "application/json");
        if token {
            r = r.set("Authorization", &format!("Bearer {TOKEN}"));
        }
        let (s, v) = answer(r.send_bytes(&body));
        prop_assert!(s < 500 || s == 503, "{method} {url}: {s} {v}");
    }
}

#[test]
fn a_node_without_a_token_refuses_what_a_page_of_another_site_could_send() {
    let node: Arc<Node> = Node::start(NodeConfig::default()).expect("node starts");
    let addr = serve_exactly(
        node,
        HttpConfig {
            token: None,
            ..HttpConfig::default()
        },
    );
    let url = format!("http://{addr}");
    let send = |method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]| {
        let mut r = agent().request(method, &format!("{url}{path}"));
        for (k, v) in headers {
            r = r.set(k, v);
        }
        answer(r.send_bytes(body))
    };
    let job = br#"{"component": "nothing", "args": []}"#;
    // What a form or a `no-cors` fetch sends: refused before it is read.
    let (s, v) = send("POST", "/v1/jobs", &[("Content-Type", "text/plain")], job);
    assert_eq!((s, code(&v)), (403, "simple_request"), "{v}");
    let (s, v) = send("POST", "/v1/jobs/0123456789abcdef/stop", &[], b"");
    assert_eq!((s, code(&v)), (403, "simple_request"), "{v}");
    // Another origin, even with a type a form cannot send.
    let evil = [
        ("Content-Type", "application/json"),
        ("Origin", "http://evil.example"),
    ];
    let (s, v) = send("POST", "/v1/jobs", &evil, job);
    assert_eq!((s, code(&v)), (403, "cross_origin"), "{v}");
    // A name another site's DNS points at this address.
    let (s, v) = send("GET", "/v1/nodes", &[("Host", "evil.example")], b"");
    assert_eq!((s, code(&v)), (421, "host_not_allowed"), "{v}");
    // A client: JSON, or `X-Wray-Request`, reaches the route.
    let (s, v) = send(
        "POST",
        "/v1/jobs",
        &[("Content-Type", "application/json")],
        job,
    );
    assert_eq!((s, code(&v)), (404, "unknown_component"), "{v}");
    let (s, v) = send(
        "POST",
        "/v1/jobs/0123456789abcdef/stop",
        &[("X-Wray-Request", "1")],
        b"",
    );
    assert_eq!((s, code(&v)), (404, "unknown_job"), "{v}");
    // The node's own page (same origin) too.
    let own = format!("http://{addr}");
    let (s, v) = send(
        "POST",
        "/v1/jobs",
        &[
            ("Content-Type", "application/json"),
            ("Origin", own.as_str()),
        ],
        job,
    );
    assert_eq!((s, code(&v)), (404, "unknown_component"), "{v}");
}
