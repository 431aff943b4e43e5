//! Function calls, actors and objects: `POST /v1/functions/..`,
//! `POST /v1/actors[/..]`, `DELETE /v1/actors/{id}`, `GET /v1/objects/{id}`.
//!
//! Arguments travel as the JSON text the client sent (each array element
//! as written: integers of any size arrive exactly), checked by the node
//! against the parameters' schemas. Results are answered from the object
//! store without a copy ([`crate::body`]); a synchronous answer larger
//! than [`HttpConfig::max_response`](crate::HttpConfig) is refused with
//! the way to fetch it instead.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::value::RawValue;
use wray_host::{ActorId, FunctionRecord, ObjectId, Session, SharedValue, TaskError};
use wray_host::{Arg, Codec, LimitOptions, Payload, TaskOptions};

use crate::body::ResponseBody;
use crate::body::{json, Answer};
use crate::delivery::Delivering;
use crate::error::ApiError;
use crate::kept::{KeptActor, Purpose};
use crate::query::Query;
use crate::state::State;
use wray_api::ErrorCode;

/// `body` as a JSON array of arguments for `params` parameters of `what`;
/// an empty body (or only whitespace) is `[]`.
fn json_args(body: &[u8], params: usize, what: &str) -> Result<Vec<Arg>, ApiError> {
    let values: Vec<Box<RawValue>> = if body.iter().all(u8::is_ascii_whitespace) {
        Vec::new()
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(
                ErrorCode::BadJson,
                format!("the body must be a JSON array of {what}'s arguments: {e}"),
            )
        })?
    };
    raw_args(values, params, what)
}

/// Each raw value as a JSON argument, as written.
fn raw_args(values: Vec<Box<RawValue>>, params: usize, what: &str) -> Result<Vec<Arg>, ApiError> {
    if values.len() != params {
        return Err(ApiError::bad_request(
            ErrorCode::WrongArgumentCount,
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
                data: String::from(Box::<str>::from(v)).into_bytes(),
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

pub(crate) fn unknown_component(name: &str) -> ApiError {
    ApiError::not_found(
        ErrorCode::UnknownComponent,
        format!("no component is deployed as `{name}`"),
    )
}

fn unknown_actor(actor: ActorId) -> ApiError {
    ApiError::not_found(
        ErrorCode::UnknownActor,
        format!("actor {actor} is not a live actor of this node"),
    )
}

/// A session refused by the node (too many jobs, objects or tasks).
fn refused(e: wray_host::Error) -> ApiError {
    match e {
        wray_host::Error::NotDeployed(name) => unknown_component(&name),
        other => ApiError::busy(other.to_string()),
    }
}

fn kept_full(state: &State) -> ApiError {
    ApiError::busy(format!(
        "{} async calls and actors are kept already, the most this node keeps",
        state.config.max_kept
    ))
}

/// `POST /v1/functions/{component}/{function}`. The call's `timeout`
/// (else the node's default) bounds both the wait and the task: the task
/// runs under the lesser of it and the function's own limit, so a task
/// never outlives its answer. An async call's `timeout` bounds its task
/// only.
pub(crate) async fn invoke(
    state: &State,
    component: &str,
    function: &str,
    query: &Query,
    body: &[u8],
) -> Answer {
    let record = crate::versions::record_of(&state.node, component).await?;
    let Some(f) = record.function(function) else {
        let names: Vec<&str> = record
            .functions
            .iter()
            .filter(|f| f.kind == wray_host::FunctionKind::Function)
            .map(|f| f.name.as_str())
            .collect();
        return Err(ApiError::not_found(
            ErrorCode::UnknownFunction,
            format!(
                "component `{component}` has no function `{function}` (it has: {})",
                names.join(", ")
            ),
        ));
    };
    let args = json_args(body, f.params.len(), function)?;
    let wait = query.timeout.unwrap_or(state.config.default_timeout);
    let task_limit = if query.asynchronous {
        query.timeout
    } else {
        Some(wait)
    };
    let timeout_ms = task_limit
        .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1))
        .map(|ms| f.declared.timeout_ms.map_or(ms, |own| own.min(ms)));
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
                limits: LimitOptions {
                    timeout_ms: timeout_ms.or(f.declared.timeout_ms),
                    ..LimitOptions::default()
                },
                ..options(f)
            },
        )
        .await
        .map_err(refused)?;
    // The call's task id, for its output (`GET /v1/tasks/{id}/logs`).
    let task = ids.first().map(|id| id.task);
    let answer = if query.asynchronous {
        let objects: Vec<String> = ids.iter().map(ToString::to_string).collect();
        if !state.kept.keep(session, Purpose::Results(ids)) {
            return Err(kept_full(state));
        }
        json(StatusCode::ACCEPTED, &wray_api::Accepted { objects })
    } else {
        results(&session, &ids, wait, state.config.max_response).await
    };
    answer.map(|mut response| {
        if let Some(value) = task.and_then(|t| HeaderValue::from_str(&t.to_string()).ok()) {
            response
                .headers_mut()
                .insert(wray_api::TASK_ID_HEADER, value);
        }
        response
    })
}

/// The values of `ids` (all a call returned) as the answer: one value as
/// itself, several as a JSON array (sent piece by piece, never joined),
/// at most `max` bytes in all.
///
/// # Errors
/// A task's error; 507 `result_too_large` past `max`.
async fn results(session: &Session, ids: &[ObjectId], timeout: Duration, max: usize) -> Answer {
    let deadline = Instant::now() + timeout;
    let mut values = Vec::with_capacity(ids.len());
    let mut total = ids.len().saturating_add(1);
    for id in ids {
        let left = deadline.saturating_duration_since(Instant::now());
        let value = session.get_shared(*id, Some(left)).await;
        session.release(&[*id]);
        let value = value.map_err(|e| ApiError::task(&e))?;
        total = total.saturating_add(value.bytes().len());
        if total > max {
            return Err(ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                ErrorCode::ResultTooLarge,
                format!(
                    "the results have more than {max} bytes, the most a call's answer carries \
                     (wray start --max-response-mib): call with ?async=true and read each \
                     result with GET /v1/objects/{{id}}, which sends a value of any size \
                     (Accept: application/octet-stream for raw bytes)"
                ),
            ));
        }
        values.push(value);
    }
    if let [one] = values.as_slice() {
        return value_answer(one.clone(), false);
    }
    let mut chunks = Vec::with_capacity(values.len().saturating_mul(2).saturating_add(1));
    chunks.push(Bytes::from_static(b"["));
    for (i, v) in values.into_iter().enumerate() {
        if v.codec() != Codec::Json {
            return Err(not_json(v.codec()));
        }
        if i > 0 {
            chunks.push(Bytes::from_static(b","));
        }
        chunks.push(Bytes::from_owner(v));
    }
    chunks.push(Bytes::from_static(b"]"));
    let mut response = Response::new(ResponseBody::from(chunks));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

fn not_json(codec: Codec) -> ApiError {
    let name = match codec {
        Codec::Json => "json",
        Codec::Raw => "raw",
        Codec::Rkyv => "rkyv (only Rust guests read it)",
    };
    ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        ErrorCode::NotJson,
        format!("the value is {name}, which HTTP answers only as JSON or (one raw value) as bytes"),
    )
}

/// `Wray-Codec`: how an `application/octet-stream` answer's bytes are
/// encoded (`raw`, or `rkyv` for a Rust guest's own values).
const CODEC_HEADER: &str = "wray-codec";

/// A value as the answer, from the store without a copy: JSON as is; raw
/// bytes as `application/octet-stream`; rkyv (a Rust guest's `put`) only
/// as `application/octet-stream` when asked so, marked `Wray-Codec: rkyv`.
///
/// # Errors
/// 406 when the value is not what `want_raw` asks (the value is kept).
fn value_answer(v: SharedValue, want_raw: bool) -> Answer {
    let (bytes, content_type, codec) = value_bytes(v, want_raw)?;
    Ok(value_response(
        ResponseBody::from(Full::new(bytes)),
        content_type,
        codec,
    ))
}

/// [`value_answer`]'s parts: the value's bytes (no copy), its content
/// type and codec header.
///
/// # Errors
/// As [`value_answer`].
fn value_bytes(
    v: SharedValue,
    want_raw: bool,
) -> Result<(Bytes, &'static str, Option<&'static str>), ApiError> {
    let (content_type, codec) =
        match v.codec() {
            Codec::Json if !want_raw => ("application/json", None),
            Codec::Raw => ("application/octet-stream", Some("raw")),
            Codec::Rkyv if want_raw => ("application/octet-stream", Some("rkyv")),
            Codec::Json => {
                return Err(ApiError::new(
                    StatusCode::NOT_ACCEPTABLE,
                    ErrorCode::NotRaw,
                    "the value is JSON; ask for it with `Accept: application/json`",
                ))
            }
            Codec::Rkyv => return Err(ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                ErrorCode::NotJson,
                "the value is rkyv (a Rust guest's encoding), which HTTP does not turn into JSON: \
                 ask for its bytes with `Accept: application/octet-stream`",
            )),
        };
    Ok((Bytes::from_owner(v), content_type, codec))
}

/// A 200 answer of `body`, of `content_type`, its codec header `codec`.
fn value_response(
    body: ResponseBody,
    content_type: &'static str,
    codec: Option<&'static str>,
) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(codec) = codec {
        headers.insert(CODEC_HEADER, HeaderValue::from_static(codec));
    }
    response
}

/// `GET /v1/objects/{id}`: an async call's result, or an object a result
/// refers to, read once. What `Accept` asks is settled before anything
/// is consumed: an answer the client can retry (a 406, a 504 while it is
/// pending) leaves the object to be read again. The object is marked read
/// only once its answer (its value, or its task's error) was delivered
/// whole ([`Delivering`]): here, once hyper took its last byte; relayed
/// to another node, once that node's client got its last byte. A client
/// that goes away midway leaves it readable. (Two reads at once may both
/// get it.)
pub(crate) async fn get_object(
    state: &State,
    id: &str,
    query: &Query,
    headers: &hyper::HeaderMap,
) -> Answer {
    let id: ObjectId = crate::error::parse_id(id)?;
    let want_raw = headers
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/octet-stream") && !a.contains("json"));
    let missing = || {
        ApiError::not_found(
            ErrorCode::UnknownObject,
            format!("object {id} does not exist on this node (or was read already)"),
        )
    };
    let session = state.kept.session(id.job()).ok_or_else(missing)?;
    if !state.kept.unread(id) {
        return Err(missing());
    }
    let timeout = query.timeout.unwrap_or(state.config.default_timeout);
    let kept = state.kept.clone();
    match session.get_shared(id, Some(timeout)).await {
        Ok(value) => {
            let nested = value.refs();
            let (bytes, content_type, codec) = value_bytes(value, want_raw)?;
            let body = Delivering::value(bytes, Box::new(move || kept.read(id, &nested)));
            Ok(value_response(body.into(), content_type, codec))
        }
        Err(e) if is_get_timeout(&e) => Err(ApiError::task(&e)),
        Err(e) => {
            // The task's error is the object's value: read once delivered.
            let (parts, body) = ApiError::task(&e).to_response().into_parts();
            let bytes = body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let body = Delivering::value(bytes, Box::new(move || kept.read(id, &[])));
            Ok(Response::from_parts(parts, body.into()))
        }
    }
}

/// Whether `e` is a `get` that timed out (the object may come later).
fn is_get_timeout(e: &TaskError) -> bool {
    e.kind == wray_host::ErrorKind::Timeout && e.function == "get"
}

/// `POST /v1/actors`.
pub(crate) async fn create_actor(state: &State, body: &[u8]) -> Answer {
    let new: wray_api::NewActor = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            ErrorCode::BadJson,
            format!("the body must be {{\"component\": .., \"class\": .., \"args\": [..]}}: {e}"),
        )
    })?;
    let record = state
        .node
        .deployed(&new.component)
        .ok_or_else(|| unknown_component(&new.component))?;
    let class = record.actor_class(&new.class).ok_or_else(|| {
        ApiError::not_found(
            ErrorCode::UnknownClass,
            format!(
                "component `{}` has no actor class `{}`",
                new.component, new.class
            ),
        )
    })?;
    let args = raw_args(new.args, class.params.len(), &format!("{}.new", new.class))?;
    let session = state.node.session().map_err(refused)?;
    let options = TaskOptions {
        result_codec: Some(Codec::Json),
        ..TaskOptions::new()
    };
    let actor = session
        .create_actor(&new.component, &new.class, args, options)
        .await
        .map_err(refused)?;
    let info = wray_api::ActorInfo {
        actor: actor.to_string(),
        component: new.component.clone(),
        class: new.class.clone(),
    };
    let kept = KeptActor {
        actor,
        component: new.component,
        class: new.class,
        record,
    };
    if !state.kept.keep(session, Purpose::Actor(kept)) {
        return Err(kept_full(state));
    }
    json(StatusCode::CREATED, &info)
}

fn parse_actor(id: &str) -> Result<ActorId, ApiError> {
    crate::error::parse_id(id)
}

/// `POST /v1/actors/{id}/{method}`: checked against the component version
/// the actor was created from (an undeploy leaves its actors working).
/// `timeout` bounds the wait only: an actor runs its calls in order, and
/// stopping one would stop the actor (kill it to stop it).
pub(crate) async fn call_actor(
    state: &State,
    id: &str,
    method: &str,
    query: &Query,
    body: &[u8],
) -> Answer {
    let actor = parse_actor(id)?;
    let (session, kept) = state
        .kept
        .actor(actor)
        .ok_or_else(|| unknown_actor(actor))?;
    let class = &kept.class;
    let m = kept.record.actor_method(class, method).ok_or_else(|| {
        ApiError::not_found(
            ErrorCode::UnknownMethod,
            format!("actor class `{class}` has no method `{method}`"),
        )
    })?;
    let args = json_args(body, m.params.len(), &format!("{class}.{method}"))?;
    let ids = session
        .call(actor, method, args, options(m))
        .map_err(refused)?;
    let timeout = query.timeout.unwrap_or(state.config.default_timeout);
    results(&session, &ids, timeout, state.config.max_response).await
}

/// `DELETE /v1/actors/{id}`: an actor created over HTTP is killed and its
/// session dropped; any other live actor of the node (a job's) is killed
/// as an operator's kill (Ray's `ray.kill`).
pub(crate) fn kill_actor(state: &State, id: &str) -> Answer {
    let actor = parse_actor(id)?;
    if let Some((session, _)) = state.kept.actor(actor) {
        session.kill_actor(actor);
        drop(session);
        state.kept.remove(actor.job());
    } else if !state.node.kill_actor(actor, "the HTTP API") {
        return Err(unknown_actor(actor));
    }
    json(
        StatusCode::OK,
        &wray_api::Killed {
            killed: actor.to_string(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(args: &[Arg]) -> Vec<String> {
        args.iter()
            .map(|a| match a {
                Arg::Value(p) => String::from_utf8_lossy(&p.data).into_owned(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn arguments_pass_as_written_and_an_empty_body_is_no_arguments() {
        let args = json_args(b"[1180591620717411303424, {\"a\": 1.50}]", 2, "f").unwrap();
        assert_eq!(texts(&args), ["1180591620717411303424", "{\"a\": 1.50}"]);
        assert!(json_args(b"", 0, "f").unwrap().is_empty());
        assert!(json_args(b" \n", 0, "f").unwrap().is_empty());
        assert_eq!(
            json_args(b"", 1, "f").unwrap_err().code,
            ErrorCode::WrongArgumentCount
        );
        assert_eq!(
            json_args(b"[1", 1, "f").unwrap_err().code,
            ErrorCode::BadJson
        );
    }
}
