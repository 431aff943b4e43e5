//! The front of every request: its route, the token check, the in-flight
//! bound, then `dispatch` (or, in a cluster, `gather` for the listings of
//! the cluster's state and `relay` for what another node holds); calls and objects are
//! in `calls`, listings and the function table in `listings`. Every invocation, actor and async call runs in a
//! [`wray_host::Session`] of its own (a job), so a caller reaches another
//! caller's objects and actors only when handed their ids. A function's
//! task runs on the server's own runtime (`TaskOptions::on_caller_runtime`),
//! on the connection's thread when a CPU is free: no handoff to a worker
//! thread and back. A guest's compute yields to the connections every
//! epoch tick. (Served from a current-thread runtime, tasks run on worker
//! threads.)

use std::sync::Arc;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::header::AUTHORIZATION;
use hyper::{Request, Response};

use crate::body::ResponseBody;
use crate::config::HttpConfig;
use crate::error::ApiError;
use crate::routes::{route, Route};
pub(crate) use crate::state::State;
use wray_api::ErrorCode;

/// Answers `req`: never an `Err`, never a panic on anything a client sends.
pub(crate) async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<ResponseBody> {
    let start = Instant::now();
    let path = req.uri().path().to_string();
    if let Err(e) = crate::browser::check(&state.config, &req) {
        let response = e.to_response().map(ResponseBody::from);
        state.metrics.record(
            ("refused", "-"),
            response.status().as_u16(),
            start.elapsed(),
        );
        return response;
    }
    if crate::dashboard::is_dashboard(&path) {
        let response = crate::dashboard::serve(req.method(), &path);
        let label = (crate::dashboard::METRICS_ROUTE, "GET");
        state
            .metrics
            .record(label, response.status().as_u16(), start.elapsed());
        return response;
    }
    let (label, answer) = match route(req.method(), &path) {
        Err(e) => (("unmatched", "-"), Err(e)),
        Ok(r) => {
            let info = r.info();
            let label = (info.path, info.method);
            let answer = match authorize(&state.config, &req, &r) {
                Err(e) => Err(e),
                Ok(()) => match state.inflight.try_acquire() {
                    Err(_) => Err(ApiError::busy(format!(
                        "the node is serving {} requests, the most it takes at once",
                        state.config.max_inflight
                    ))),
                    Ok(_permit) => {
                        let cluster = state.node.cluster_name().is_some();
                        if cluster && crate::query::gathered(&r) {
                            crate::gather::answer(&state, r, req.uri()).await
                        } else if cluster && crate::relay::relayable(&r) {
                            crate::relay::here_or_elsewhere(&state, r, req).await
                        } else {
                            crate::dispatch::dispatch(&state, r, req).await
                        }
                    }
                },
            };
            (label, answer)
        }
    };
    let response = answer.unwrap_or_else(|e| e.to_response().map(ResponseBody::from));
    state
        .metrics
        .record(label, response.status().as_u16(), start.elapsed());
    response
}

/// Checks the bearer token (every route but `/healthz`). The scheme is
/// case-insensitive (RFC 7235 §2.1: `bearer` is `Bearer`); a 401 says
/// where the token is and carries `WWW-Authenticate: Bearer`.
fn authorize(config: &HttpConfig, req: &Request<Incoming>, r: &Route<'_>) -> Result<(), ApiError> {
    let Some(token) = &config.token else {
        return Ok(());
    };
    if *r == Route::Healthz {
        return Ok(());
    }
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    match given {
        Some(g) if same(g.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::unauthorized(
            ErrorCode::BadToken,
            "the bearer token is not this node's (see `token` in the node directory, <tmp>/wray/node-<pid>/token, linked from <tmp>/wray/node_latest)",
        )),
        None => Err(ApiError::unauthorized(
            ErrorCode::NoToken,
            "send `Authorization: Bearer <token>` (the token is the file `token` in the node directory, <tmp>/wray/node-<pid>/token, linked from <tmp>/wray/node_latest)",
        )),
    }
}

/// The token of an `Authorization` value of the scheme `Bearer`, in any
/// case, with any spaces between scheme and token.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start_matches(' '))
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for value in ["Bearer t", "bearer t", "BEARER t", "bEaReR  t"] {
            assert_eq!(bearer_token(value), Some("t"), "{value}");
        }
        for value in ["Basic t", "Bearert", "t", ""] {
            assert_eq!(bearer_token(value), None, "{value}");
        }
    }
}
