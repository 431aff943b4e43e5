//! Jobs, objects and actors reachable through any node of a cluster: a
//! request naming one this node does not have (its answer here is a 404)
//! is relayed to the other live nodes over the node-to-node channel
//! ([`Node::relay_http`](wray_host::Node::relay_http)), and the first
//! answer that is not a 404 is the client's, with `Wray-Node` naming the
//! node that gave it ([`here_or_elsewhere`]). A job's log followed
//! through another node is read there a piece at a time (`?offset=`),
//! every [`FOLLOW_POLL`] while nothing new arrived, until the job ends.
//! The other side: [`handler`] runs the requests other nodes relay here
//! through this node's routes, with no token (the peer proved the cluster
//! token), never relaying them further.
//!
//! An answer of any size is relayed: one larger than
//! [`MAX_RELAY_BODY`](wray_host::MAX_RELAY_BODY) stays on the node that
//! made it (a value is not copied out of its object store) and is pulled
//! from there a chunk at a time as this node's client takes it
//! ([`Delivering::relayed`]); a read-once object is marked read there only
//! once this node's client got every byte. Streaming rather than a 307 to
//! the owner: a client of a serverless platform talks to the address it
//! was given (a load balancer, the one node its network reaches), may not
//! reach a node's own `http_address`, would drop its token on a redirect
//! to another host (curl, requests and ureq do), and does not follow
//! redirects by default.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::mpsc;
use wray_host::{RelayAnswer, RelayHandler, RelayRequest, RelayResponse};

use crate::body::{read_body, Answer, ResponseBody};
use crate::dispatch::dispatch;
use crate::error::ApiError;
use crate::log_stream::LogStream;
use crate::query::Query;
use crate::relayed::{copy_headers, response_of, NODE};
use crate::routes::{route, Route};
use crate::state::State;
use wray_api::ErrorCode;

/// How often a log followed on another node is asked for again while
/// nothing new arrived.
pub(crate) const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// How long a relayed request may take here (its answer collected).
const RELAYED_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `r` names a job, an object, an actor, a task or a task's output
/// that another node may have: those are relayed when this node does not.
pub(crate) fn relayable(r: &Route<'_>) -> bool {
    matches!(
        r,
        Route::GetJob(_)
            | Route::DeleteJob(_)
            | Route::StopJob(_)
            | Route::JobLogs(_)
            | Route::GetObject(_)
            | Route::CallActor(..)
            | Route::KillActor(_)
            | Route::TaskLogs(_)
            | Route::GetTask(_)
    )
}

/// Answers `req` (a [`relayable`] route `r`) here, or, when this node
/// does not have what it names, through the first other node that has.
pub(crate) async fn here_or_elsewhere(
    state: &State,
    r: Route<'_>,
    req: Request<Incoming>,
) -> Answer {
    let method = req.method().clone();
    let uri = req.uri().clone();
    let headers = req.headers().clone();
    let body = read_body(req, state.config.max_body, state.config.body_timeout).await?;
    let mut local = Request::new(Full::new(body.clone()));
    *local.method_mut() = method.clone();
    *local.uri_mut() = uri.clone();
    *local.headers_mut() = headers.clone();
    let mut missing = match dispatch(state, r.clone(), local).await {
        Err(e) if e.status == StatusCode::NOT_FOUND => e,
        answer => return answer,
    };
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string());
    let request = RelayRequest {
        method: method.to_string(),
        path,
        accept: headers
            .get(ACCEPT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body,
    };
    let query = Query::parse(uri.query().unwrap_or(""), &r)?;
    let relayed = match &r {
        Route::JobLogs(id) if query.follow => {
            return follow_elsewhere(state, id, query.offset, missing).await;
        }
        _ => state.node.relay_http(request).await,
    };
    match relayed {
        Some((node, response)) => Ok(response_of(&node, response)),
        None => {
            missing
                .message
                .push_str("; no other live node of the cluster has it either");
            Err(missing)
        }
    }
}

/// The relayed request for job `id`'s log from `offset`, whole.
fn log_request(id: &str, offset: u64) -> RelayRequest {
    RelayRequest {
        method: "GET".to_string(),
        path: format!("/v1/jobs/{}/logs?offset={offset}", wray_api::encode(id)),
        accept: None,
        body: Bytes::new(),
    }
}

/// A header of a relayed answer, if it is there.
fn header<'a>(response: &'a RelayResponse, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Whether a job status (`Wray-Job-Status`) is a final one.
fn ended(status: Option<&str>) -> bool {
    matches!(status, Some("SUCCEEDED" | "FAILED" | "STOPPED"))
}

/// Job `id`'s log, on another node, followed from `offset` until the job
/// ends: read there a piece at a time. `missing`: the answer when no node
/// has the job.
async fn follow_elsewhere(state: &State, id: &str, offset: u64, mut missing: ApiError) -> Answer {
    let node = state.node.clone();
    let Some((from, first)) = node.relay_http(log_request(id, offset)).await else {
        missing
            .message
            .push_str("; no other live node of the cluster has it either");
        return Err(missing);
    };
    if first.status != 200 {
        return Ok(response_of(&from, first));
    }
    let (tx, rx) = mpsc::channel(4);
    let headers = first.headers.clone();
    let id = id.to_string();
    tokio::spawn(async move {
        let mut piece = first;
        loop {
            let rest = piece.rest.take();
            let dropped: u64 = header(&piece, "wray-log-dropped")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if dropped > 0 {
                let gap = format!("[wray: {dropped} bytes of log dropped]\n");
                if tx.send(Bytes::from(gap)).await.is_err() {
                    return;
                }
            }
            let done = ended(header(&piece, "wray-job-status"));
            let Some(next) = header(&piece, "wray-log-next").and_then(|v| v.parse().ok()) else {
                return;
            };
            let fresh = !piece.body.is_empty() || rest.as_ref().is_some_and(|r| !r.is_empty());
            if !piece.body.is_empty() && tx.send(piece.body.clone()).await.is_err() {
                return;
            }
            if let Some(rest) = rest {
                if !forward_rest(rest, &tx).await {
                    return;
                }
            }
            if done && !fresh {
                return;
            }
            if !fresh {
                tokio::select! {
                    () = tokio::time::sleep(FOLLOW_POLL) => {}
                    () = tx.closed() => return,
                }
            }
            piece = match node.relay_http(log_request(&id, next)).await {
                Some((_, p)) if p.status == 200 => p,
                _ => return, // the node died or forgot the job
            };
        }
    });
    let mut answer = Response::new(ResponseBody::from(LogStream::from_channel(rx)));
    copy_headers(&mut answer, &headers);
    answer.headers_mut().remove("wray-log-next");
    answer.headers_mut().remove("wray-log-dropped");
    if let Ok(v) = HeaderValue::from_str(&from) {
        answer.headers_mut().insert(NODE, v);
    }
    Ok(answer)
}

/// Sends `rest` (of a piece of log) into `tx` a chunk at a time, and
/// tells its node once all went; `false` when the follower went away or
/// a pull failed.
async fn forward_rest(mut rest: wray_host::RelayedRest, tx: &mpsc::Sender<Bytes>) -> bool {
    loop {
        match rest.next_chunk().await {
            Ok(Some(chunk)) => {
                if tx.send(chunk).await.is_err() {
                    return false;
                }
            }
            Ok(None) => return rest.delivered().await.is_ok(),
            Err(e) => {
                tracing::warn!("following a job's log on another node: {e}");
                return false;
            }
        }
    }
}

/// What runs the requests other nodes relay here: this node's routes, for
/// the [`relayable`] ones only, with no token and no relaying further.
pub(crate) fn handler(state: Weak<State>) -> RelayHandler {
    Arc::new(move |request: RelayRequest| {
        let state = state.clone();
        Box::pin(async move {
            let answer = match state.upgrade() {
                Some(state) => {
                    tokio::time::timeout(RELAYED_TIMEOUT, answer_relayed(&state, request))
                        .await
                        .unwrap_or_else(|_| {
                            Err(ApiError::new(
                                StatusCode::GATEWAY_TIMEOUT,
                                ErrorCode::RelayTimeout,
                                "the relayed request took too long here",
                            ))
                        })
                }
                None => Err(ApiError::not_found(
                    ErrorCode::ShuttingDown,
                    "the node's HTTP API is stopping",
                )),
            };
            let response = answer.unwrap_or_else(|e| e.to_response().map(ResponseBody::from));
            collect(response).await
        })
    })
}

/// A relayed request answered here.
async fn answer_relayed(state: &State, request: RelayRequest) -> Answer {
    let method = Method::from_bytes(request.method.as_bytes())
        .map_err(|_| ApiError::bad_request(ErrorCode::BadMethod, "not an HTTP method"))?;
    let path = request.path.split('?').next().unwrap_or_default();
    let r = route(&method, path)?;
    if !relayable(&r) && !crate::query::gathered(&r) {
        return Err(ApiError::not_found(
            ErrorCode::NotRelayable,
            "only requests for jobs, objects, actors, task output and the cluster's listings \
             are relayed",
        ));
    }
    let mut req = Request::new(Full::new(request.body));
    *req.method_mut() = method;
    *req.uri_mut() = request
        .path
        .parse()
        .map_err(|_| ApiError::bad_request(ErrorCode::BadPath, "not a path"))?;
    if let Some(accept) = request.accept.and_then(|a| HeaderValue::from_str(&a).ok()) {
        req.headers_mut().insert(ACCEPT, accept);
    }
    // Followed by the asking node a piece at a time, never here.
    let query = Query::parse(req.uri().query().unwrap_or(""), &r)?;
    if query.follow {
        return Err(ApiError::bad_request(
            ErrorCode::NoRelayedFollow,
            "a relayed log is read with ?offset=, not followed",
        ));
    }
    dispatch(state, r, req).await
}

/// `response` as a relayed answer: its status, headers, and its body in
/// the pieces it was made of (a value from the store is not copied, nor
/// gathered into one buffer), with what runs once it was delivered (a
/// read-once object's read: run by the node that asked, once its client
/// got every byte).
async fn collect(response: Response<ResponseBody>) -> RelayAnswer {
    let (parts, mut body) = response.into_parts();
    let headers = parts
        .headers
        .iter()
        .filter(|(k, _)| *k == CONTENT_TYPE || k.as_str().starts_with("wray-"))
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let mut pieces = Vec::new();
    let mut delivered = None;
    if let ResponseBody::Delivering(d) = &mut body {
        delivered = d.take_delivered();
        pieces.push(d.take_ready());
    }
    // The rest of a body made whole in memory (a relayed follow, the one
    // body that never ends, is refused before).
    while let Some(frame) = body.frame().await {
        match frame.map(|f| f.into_data()) {
            Ok(Ok(data)) => pieces.push(data),
            Ok(Err(_)) => {} // trailers: none are relayed
            Err(never) => match never {},
        }
    }
    pieces.retain(|p| !p.is_empty());
    RelayAnswer {
        status: parts.status.as_u16(),
        headers,
        body: pieces,
        delivered,
    }
}
