//! One function per route. Every invocation, actor and async call runs in
//! a [`Session`] of its own (a job), so a caller reaches another caller's
//! objects and actors only when handed their ids. A function's task runs
//! on the server's own runtime (`TaskOptions::on_caller_runtime`), on the
//! connection's thread when a CPU is free: no handoff to a worker thread
//! and back. A guest's compute yields to the connections every epoch tick.
//! (Served from a current-thread runtime, tasks run on worker threads.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use tokio::sync::Semaphore;
use wray_host::proto::{Arg, Codec, Payload, TaskOptions};
use wray_host::{ActorId, FunctionRecord, Jobs, Node, ObjectId, Session, TaskError};

use crate::config::{HttpConfig, MAX_TIMEOUT};
use crate::error::ApiError;
use crate::jobs::ResponseBody;
use crate::kept::{Kept, Purpose};
use crate::metrics::Metrics;
use crate::routes::{route, Route};

/// What every request's handler reaches.
pub(crate) struct State {
    pub(crate) node: &'static Node,
    pub(crate) config: HttpConfig,
    pub(crate) kept: Kept,
    pub(crate) inflight: Semaphore,
    pub(crate) metrics: Metrics,
    /// Jobs submitted over HTTP.
    pub(crate) jobs: Jobs,
}

impl State {
    pub(crate) fn new(node: &'static Node, config: HttpConfig) -> Self {
        State {
            node,
            kept: Kept::new(config.max_kept, config.kept_ttl),
            inflight: Semaphore::new(config.max_inflight),
            metrics: Metrics::default(),
            jobs: Jobs::new(config.jobs.clone()),
            config,
        }
    }
}

type Answer = Result<Response<ResponseBody>, ApiError>;

/// Answers `req`: never an `Err`, never a panic on anything a client sends.
pub(crate) async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<ResponseBody> {
    let start = Instant::now();
    let path = req.uri().path().to_string();
    let (label, answer) = match route(req.method(), &path) {
        Err(e) => (("unmatched", "-"), Err(e)),
        Ok(r) => {
            let info = r.info();
            let label = (info.path, info.method);
            let answer = match authorize(&state.config, &req, r) {
                Err(e) => Err(e),
                Ok(()) => match state.inflight.try_acquire() {
                    Err(_) => Err(ApiError::busy(format!(
                        "the node is serving {} requests, the most it takes at once",
                        state.config.max_inflight
                    ))),
                    Ok(_permit) => dispatch(&state, r, req).await,
                },
            };
            (label, answer)
        }
    };
    let response = answer.unwrap_or_else(|e| e.to_response().map(Either::Left));
    state
        .metrics
        .record(label, response.status().as_u16(), start.elapsed());
    response
}

/// Checks the bearer token (every route but `/healthz`).
fn authorize(config: &HttpConfig, req: &Request<Incoming>, r: Route<'_>) -> Result<(), ApiError> {
    let Some(token) = &config.token else {
        return Ok(());
    };
    if r == Route::Healthz {
        return Ok(());
    }
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(g) if same(g.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "bad_token",
            "the bearer token is not this node's (see `token` in the node's session directory)",
        )),
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "no_token",
            "send `Authorization: Bearer <token>` (the token is in the node's session directory)",
        )),
    }
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn dispatch(state: &State, r: Route<'_>, req: Request<Incoming>) -> Answer {
    let query = Query::parse(req.uri().query().unwrap_or(""), r)?;
    let node = state.node;
    match r {
        Route::Healthz => {
            let (backend, health) = node.control_plane_health();
            json(
                StatusCode::OK,
                &serde_json::json!({
                    "status": if health.is_ok() { "ok" } else { "degraded" },
                    "node_id": node.id(),
                    "control_plane": {
                        "backend": backend,
                        "reachable": health.is_ok(),
                        "error": health.err(),
                    },
                }),
            )
        }
        Route::Metrics => {
            let text = state.metrics.render(
                &node.instantiation_histogram(),
                &node.task_counts(),
                &state.jobs.counts(),
                state
                    .config
                    .max_inflight
                    .saturating_sub(state.inflight.available_permits()),
                state.kept.len(),
                u64::try_from(node.object_store_stats().bytes).unwrap_or(u64::MAX),
            );
            Ok(body_response(
                StatusCode::OK,
                "text/plain; version=0.0.4",
                text.into_bytes(),
            ))
        }
        Route::OpenApi => {
            let components = node
                .components()
                .map_err(|e| ApiError::busy(format!("the function table: {e}")))?;
            let records: Vec<_> = components.into_iter().map(|v| v.record).collect();
            json(StatusCode::OK, &crate::openapi::document(&records))
        }
        Route::ListComponents => {
            let components = node
                .components()
                .map_err(|e| ApiError::busy(format!("the function table: {e}")))?;
            json(StatusCode::OK, &components)
        }
        Route::Deploy => deploy(state, query, req).await,
        Route::GetComponent(name) => match node.component(name) {
            Ok(version) => json(StatusCode::OK, &version),
            Err(wray_host::Error::NotDeployed(_)) => Err(unknown_component(name)),
            Err(e) => Err(ApiError::busy(format!("the function table: {e}"))),
        },
        Route::Undeploy(name) => {
            let removed = node
                .undeploy(name)
                .map_err(|e| ApiError::busy(format!("the function table: {e}")))?;
            if removed {
                json(StatusCode::OK, &serde_json::json!({ "undeployed": name }))
            } else {
                Err(unknown_component(name))
            }
        }
        Route::Invoke(component, function) => {
            let body = read_body(req, state.config.max_body, state.config.body_timeout).await?;
            invoke(state, component, function, &query, &body).await
        }
        Route::GetObject(id) => get_object(state, id, &query, &req).await,
        Route::ListActors => {
            let actors: Vec<serde_json::Value> = state
                .kept
                .actors()
                .into_iter()
                .map(|(a, c, k)| serde_json::json!({ "actor": a.to_string(), "component": c, "class": k }))
                .collect();
            json(StatusCode::OK, &actors)
        }
        Route::CreateActor => {
            let body = read_body(req, state.config.max_body, state.config.body_timeout).await?;
            create_actor(state, &body)
        }
        Route::CallActor(id, method) => {
            let body = read_body(req, state.config.max_body, state.config.body_timeout).await?;
            call_actor(state, id, method, &query, &body).await
        }
        Route::KillActor(id) => {
            let actor = parse_actor(id)?;
            let Some((session, _, _)) = state.kept.actor(actor) else {
                return Err(unknown_actor(actor));
            };
            session.kill_actor(actor);
            drop(session);
            state.kept.remove(actor.job());
            json(
                StatusCode::OK,
                &serde_json::json!({ "killed": actor.to_string() }),
            )
        }
        Route::Nodes => json(StatusCode::OK, &node.nodes()),
        Route::Resources => json(
            StatusCode::OK,
            &serde_json::json!({
                "total": node.cluster_resources(),
                "available": node.available_resources(),
            }),
        ),
        Route::Tasks => json(StatusCode::OK, &node.tasks()),
        Route::Objects => json(StatusCode::OK, &node.objects()),
        Route::Errors => json(StatusCode::OK, &node.errors()),
        Route::Timeline => json(StatusCode::OK, &node.timeline()),
        Route::ListJobs => json(StatusCode::OK, &state.jobs.list()),
        Route::SubmitJob => {
            let body = read_body(req, state.config.max_body, state.config.body_timeout).await?;
            json(
                StatusCode::CREATED,
                &crate::jobs::submit(&state.jobs, node, &body)?,
            )
        }
        Route::GetJob(id) => {
            let info = state.jobs.info(crate::jobs::parse_job(id)?);
            json(StatusCode::OK, &info.map_err(crate::jobs::job_error)?)
        }
        Route::DeleteJob(id) => {
            state
                .jobs
                .delete(crate::jobs::parse_job(id)?)
                .map_err(crate::jobs::job_error)?;
            json(StatusCode::OK, &serde_json::json!({ "deleted": id }))
        }
        Route::StopJob(id) => {
            let stopped = state.jobs.stop(crate::jobs::parse_job(id)?);
            json(
                StatusCode::OK,
                &serde_json::json!({ "stopped": stopped.map_err(crate::jobs::job_error)? }),
            )
        }
        Route::JobLogs(id) => crate::jobs::logs(&state.jobs, id, query.offset, query.follow),
        Route::Rollback(name) => json(
            StatusCode::OK,
            &crate::versions::rollback(node, name, query.version)?,
        ),
    }
}

/// The query parameters a route takes.
#[derive(Default)]
struct Query {
    timeout: Option<Duration>,
    asynchronous: bool,
    name: Option<String>,
    /// `GET /v1/jobs/{id}/logs`: the byte to start from.
    offset: u64,
    /// `GET /v1/jobs/{id}/logs`: stream until the job ends.
    follow: bool,
    /// `POST /v1/components/{name}/rollback`: the version to make current.
    version: Option<u64>,
}

impl Query {
    /// Parses `query`, refusing parameters `r` does not take.
    fn parse(query: &str, r: Route<'_>) -> Result<Self, ApiError> {
        let mut q = Query::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match (key, r) {
                ("timeout", Route::Invoke(..) | Route::CallActor(..) | Route::GetObject(_)) => {
                    q.timeout = Some(parse_timeout(value)?);
                }
                ("async", Route::Invoke(..)) => q.asynchronous = parse_bool(key, value)?,
                ("follow", Route::JobLogs(_)) => q.follow = parse_bool(key, value)?,
                ("offset", Route::JobLogs(_)) => {
                    q.offset = value.parse().map_err(|_| {
                        ApiError::bad_request(
                            "bad_query",
                            format!(
                                "offset={}: expected a byte offset (0 to 2^64-1)",
                                value.chars().take(32).collect::<String>()
                            ),
                        )
                    })?;
                }
                ("name", Route::Deploy) => q.name = Some(value.to_string()),
                ("version", Route::Rollback(_)) => {
                    q.version = Some(value.parse().map_err(|_| {
                        ApiError::bad_request(
                            "bad_query",
                            format!(
                                "version={}: expected a version number (1, 2, ..)",
                                value.chars().take(32).collect::<String>()
                            ),
                        )
                    })?);
                }
                _ => {
                    return Err(ApiError::bad_request(
                        "bad_query",
                        format!(
                            "{} takes no query parameter `{}`",
                            r.info().path,
                            key.chars().take(64).collect::<String>()
                        ),
                    ))
                }
            }
        }
        Ok(q)
    }
}

/// `key=value` as a flag: `true`, `1` or nothing; `false` or `0`.
fn parse_bool(key: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" | "1" | "" => Ok(true),
        "false" | "0" => Ok(false),
        other => Err(ApiError::bad_request(
            "bad_query",
            format!(
                "{key}={}: expected true or false",
                other.chars().take(32).collect::<String>()
            ),
        )),
    }
}

/// `timeout=` seconds: a number above 0 and at most [`MAX_TIMEOUT`].
fn parse_timeout(value: &str) -> Result<Duration, ApiError> {
    let bad = || {
        ApiError::bad_request(
            "bad_query",
            format!(
                "timeout={}: expected seconds above 0 and at most {}",
                value.chars().take(32).collect::<String>(),
                MAX_TIMEOUT.as_secs()
            ),
        )
    };
    let secs: f64 = value.parse().map_err(|_| bad())?;
    if !(secs > 0.0 && secs <= MAX_TIMEOUT.as_secs_f64()) {
        return Err(bad());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

/// Reads `req`'s body: at most `limit` bytes within `timeout`.
async fn read_body(
    req: Request<Incoming>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let too_large = |n: String| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body has {n} bytes, the most this route takes is {limit}"),
        )
    };
    if let Some(len) = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > u64::try_from(limit).unwrap_or(u64::MAX) {
            return Err(too_large(len.to_string()));
        }
    }
    let body = Limited::new(req.into_body(), limit);
    match tokio::time::timeout(timeout, body.collect()).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!("the body did not arrive within {} s", timeout.as_secs()),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(too_large("more than that".into()))
        }
        Ok(Err(e)) => Err(ApiError::bad_request(
            "bad_body",
            format!("reading the body: {e}"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// `body` as a JSON array of arguments for `params` parameters of `what`.
fn json_args(body: &[u8], params: usize, what: &str) -> Result<Vec<Arg>, ApiError> {
    let values: Vec<serde_json::Value> = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            "bad_json",
            format!("the body must be a JSON array of {what}'s arguments: {e}"),
        )
    })?;
    if values.len() != params {
        return Err(ApiError::bad_request(
            "wrong_argument_count",
            format!(
                "{what} takes {params} argument(s), the body has {}",
                values.len()
            ),
        ));
    }
    Ok(values
        .into_iter()
        .map(|v| {
            Arg::Value(Payload {
                codec: Codec::Json,
                data: v.to_string().into_bytes(),
                refs: Vec::new(),
            })
        })
        .collect())
}

/// Options of a call over HTTP: JSON results, `returns` of them.
fn options(record: &FunctionRecord) -> TaskOptions {
    TaskOptions {
        num_returns: u32::try_from(record.returns.len().max(1)).unwrap_or(1),
        result_codec: Some(Codec::Json),
        ..TaskOptions::new()
    }
}

fn unknown_component(name: &str) -> ApiError {
    ApiError::not_found(
        "unknown_component",
        format!("no component is deployed as `{name}`"),
    )
}

fn unknown_actor(actor: ActorId) -> ApiError {
    ApiError::not_found(
        "unknown_actor",
        format!("actor {actor} does not exist on this node"),
    )
}

/// A session refused by the node (too many jobs, objects or tasks).
fn refused(e: wray_host::Error) -> ApiError {
    match e {
        wray_host::Error::NotDeployed(name) => unknown_component(&name),
        other => ApiError::busy(other.to_string()),
    }
}

async fn invoke(
    state: &State,
    component: &str,
    function: &str,
    query: &Query,
    body: &[u8],
) -> Answer {
    let record = crate::versions::record_of(state.node, component)?;
    let Some(f) = record.function(function) else {
        let names: Vec<&str> = record
            .functions
            .iter()
            .filter(|f| f.kind == wray_host::FunctionKind::Function)
            .map(|f| f.name.as_str())
            .collect();
        return Err(ApiError::not_found(
            "unknown_function",
            format!(
                "component `{component}` has no function `{function}` (it has: {})",
                names.join(", ")
            ),
        ));
    };
    let args = json_args(body, f.params.len(), function)?;
    let session = state.node.session().map_err(refused)?;
    let ids = session
        .submit(
            component,
            function,
            args,
            // Warm instances of `reuse` functions serve every request.
            TaskOptions {
                shared_reuse: true,
                on_caller_runtime: true,
                ..options(f)
            },
        )
        .map_err(refused)?;
    if query.asynchronous {
        let objects: Vec<String> = ids.iter().map(ToString::to_string).collect();
        if !state.kept.keep(session, Purpose::Results(ids)) {
            return Err(ApiError::busy(format!(
                "{} async calls and actors are kept already, the most this node keeps",
                state.config.max_kept
            )));
        }
        return json(
            StatusCode::ACCEPTED,
            &serde_json::json!({ "objects": objects }),
        );
    }
    let timeout = query.timeout.unwrap_or(state.config.default_timeout);
    results(&session, &ids, timeout).await
}

/// The values of `ids` (all a call returned) as the answer: one value as
/// itself, several as a JSON array.
async fn results(session: &Session<'static>, ids: &[ObjectId], timeout: Duration) -> Answer {
    let deadline = Instant::now() + timeout;
    let mut values = Vec::with_capacity(ids.len());
    for id in ids {
        let left = deadline.saturating_duration_since(Instant::now());
        let value = session.get(*id, Some(left)).await;
        session.release(&[*id]);
        values.push(value.map_err(|e| ApiError::task(&e))?);
    }
    if let [one] = values.as_slice() {
        return payload_answer(one, false);
    }
    let mut out = Vec::from(&b"["[..]);
    for (i, p) in values.iter().enumerate() {
        if p.codec != Codec::Json {
            return Err(not_json(p.codec));
        }
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&p.data);
    }
    out.push(b']');
    Ok(body_response(StatusCode::OK, "application/json", out))
}

fn not_json(codec: Codec) -> ApiError {
    ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        "not_json",
        format!(
            "the value is {codec:?}, which HTTP answers only as JSON or (one raw value) as bytes"
        ),
    )
}

/// A payload as the answer: JSON as is; raw bytes as
/// `application/octet-stream`; rkyv (only Rust guests read it) refused.
fn payload_answer(p: &Payload, want_raw: bool) -> Answer {
    match p.codec {
        Codec::Json if !want_raw => Ok(body_response(
            StatusCode::OK,
            "application/json",
            p.data.clone(),
        )),
        Codec::Raw => Ok(body_response(
            StatusCode::OK,
            "application/octet-stream",
            p.data.clone(),
        )),
        Codec::Json => Err(ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "not_raw",
            "the value is JSON; ask for it with `Accept: application/json`",
        )),
        Codec::Rkyv => Err(not_json(Codec::Rkyv)),
    }
}

async fn get_object(state: &State, id: &str, query: &Query, req: &Request<Incoming>) -> Answer {
    let id: ObjectId = id
        .parse()
        .map_err(|e: wray_host::proto::BadId| ApiError::bad_request("bad_id", e.to_string()))?;
    let missing = || {
        ApiError::not_found(
            "unknown_object",
            format!("object {id} does not exist on this node (or was read already)"),
        )
    };
    let session = state.kept.session(id.job()).ok_or_else(missing)?;
    let timeout = query.timeout.unwrap_or(state.config.default_timeout);
    let value = session.get(id, Some(timeout)).await;
    let still_pending = matches!(&value, Err(e) if is_get_timeout(e));
    if !still_pending {
        state.kept.read(id);
    }
    let want_raw = req
        .headers()
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/octet-stream") && !a.contains("json"));
    match value {
        Ok(p) => payload_answer(&p, want_raw),
        Err(e) => Err(ApiError::task(&e)),
    }
}

/// Whether `e` is a `get` that timed out (the object may come later).
fn is_get_timeout(e: &TaskError) -> bool {
    e.kind == wray_host::ErrorKind::Timeout && e.function == "get"
}

/// `POST /v1/actors`'s body.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NewActor {
    component: String,
    class: String,
    #[serde(default)]
    args: Vec<serde_json::Value>,
}

fn create_actor(state: &State, body: &[u8]) -> Answer {
    let new: NewActor = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            "bad_json",
            format!("the body must be {{\"component\": .., \"class\": .., \"args\": [..]}}: {e}"),
        )
    })?;
    let record = state
        .node
        .deployed(&new.component)
        .ok_or_else(|| unknown_component(&new.component))?;
    let class = record.actor_class(&new.class).ok_or_else(|| {
        ApiError::not_found(
            "unknown_class",
            format!(
                "component `{}` has no actor class `{}`",
                new.component, new.class
            ),
        )
    })?;
    let args = serde_json::to_vec(&new.args).unwrap_or_default();
    let args = json_args(&args, class.params.len(), &format!("{}.new", new.class))?;
    let session = state.node.session().map_err(refused)?;
    let options = TaskOptions {
        result_codec: Some(Codec::Json),
        ..TaskOptions::new()
    };
    let actor = session
        .create_actor(&new.component, &new.class, args, options)
        .map_err(refused)?;
    let purpose = Purpose::Actor {
        actor,
        component: new.component.clone(),
        class: new.class.clone(),
    };
    if !state.kept.keep(session, purpose) {
        return Err(ApiError::busy(format!(
            "{} async calls and actors are kept already, the most this node keeps",
            state.config.max_kept
        )));
    }
    json(
        StatusCode::CREATED,
        &serde_json::json!({ "actor": actor.to_string(), "component": new.component, "class": new.class }),
    )
}

fn parse_actor(id: &str) -> Result<ActorId, ApiError> {
    id.parse()
        .map_err(|e: wray_host::proto::BadId| ApiError::bad_request("bad_id", e.to_string()))
}

async fn call_actor(state: &State, id: &str, method: &str, query: &Query, body: &[u8]) -> Answer {
    let actor = parse_actor(id)?;
    let (session, component, class) = state
        .kept
        .actor(actor)
        .ok_or_else(|| unknown_actor(actor))?;
    let record = state
        .node
        .deployed(&component)
        .ok_or_else(|| unknown_component(&component))?;
    let m = record.actor_method(&class, method).ok_or_else(|| {
        ApiError::not_found(
            "unknown_method",
            format!("actor class `{class}` has no method `{method}`"),
        )
    })?;
    let args = json_args(body, m.params.len(), &format!("{class}.{method}"))?;
    let ids = session
        .call(actor, method, args, options(m))
        .map_err(refused)?;
    let timeout = query.timeout.unwrap_or(state.config.default_timeout);
    results(&session, &ids, timeout).await
}

async fn deploy(state: &State, query: Query, req: Request<Incoming>) -> Answer {
    // The body is read (bounded) before the name is judged, so that a
    // client still sending it gets the answer rather than a broken pipe.
    let bytes = read_body(req, state.config.max_component, state.config.body_timeout).await?;
    let name = query.name.ok_or_else(|| {
        ApiError::bad_request(
            "no_name",
            "name the component: POST /v1/components?name=NAME",
        )
    })?;
    let valid = !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if !valid {
        return Err(ApiError::bad_request(
            "bad_name",
            format!(
                "component name `{}`: use 1 to 128 of A-Z a-z 0-9 _ - .",
                name.chars().take(64).collect::<String>()
            ),
        ));
    }
    let node = state.node;
    // Compiling takes the thread for as long as Cranelift runs: tell the
    // runtime (the control-plane calls inside say so themselves).
    let record = tokio::task::block_in_place(|| node.deploy_version(&name, &bytes)).map_err(
        |e| match e {
            wray_host::Error::Component { .. } => {
                ApiError::bad_request("invalid_component", e.to_string())
            }
            wray_host::Error::ControlPlane(ref c) if !c.is_retryable() => {
                ApiError::bad_request("invalid_component", e.to_string())
            }
            wray_host::Error::ControlPlane(_) => ApiError::busy(e.to_string()),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "deploy_failed",
                other.to_string(),
            ),
        },
    )?;
    json(StatusCode::CREATED, &record)
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> Answer {
    let body = serde_json::to_vec(value)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "encoding", e.to_string()))?;
    Ok(body_response(status, "application/json", body))
}

fn body_response(
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
) -> Response<ResponseBody> {
    let mut response = Response::new(Either::Left(Full::new(Bytes::from(body))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
