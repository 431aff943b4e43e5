//! The cluster seen whole from any node: in a cluster, the listings of
//! its state (`GET /v1/tasks`, `/v1/actors`, `/v1/jobs`, `/v1/objects`,
//! `/v1/errors`), its timeline and another node's log are gathered from
//! the nodes over the node-to-node channel
//! ([`Node::relay_each`](wray_host::Node::relay_each)): the same request
//! goes to every live node ([`wray_host::FAN_OUT`] at a time), each
//! answers its own page from its own routes (`listings`), and the pages
//! merge into one in the listing's order (`rows`), at most a page's rows
//! held at once. A node that does not answer within the request's
//! `?timeout=` ([`NODE_DEADLINE`] by default, [`MAX_NODE_DEADLINE`](crate::query::MAX_NODE_DEADLINE) at
//! most), or answers an error, is named in the answer's `unreachable`,
//! never waited for longer. `?node=` asks that node alone (or, when it is dead, every
//! node for the rows that still name it).
//!
//! `GET /v1/resources` is the cluster's too: the sum of its live nodes'.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use hyper::{StatusCode, Uri};
use serde::de::DeserializeOwned;
use serde_json::Value;
use wray_host::{RelayRequest, RelayResponse};

use crate::body::{json, Answer};
use crate::error::ApiError;
use crate::query::{Query, NODE_DEADLINE};
use crate::routes::Route;
use crate::rows::{unknown_node, window, Listing, Merge, Window};
use crate::state::State;
use wray_api::ErrorCode;

/// The most bytes of other nodes' timelines one answer gathers (each is
/// at most a relayed answer's bound, 8 MiB); a node past it is named in
/// `unreachable`.
const MAX_TIMELINE_BYTES: usize = 64 << 20;

/// Answers `r` (a [`gathered`](crate::query::gathered) route of request `uri`) for the cluster.
pub(crate) async fn answer(state: &State, r: Route<'_>, uri: &Uri) -> Answer {
    let query = Query::parse(uri.query().unwrap_or(""), &r)?;
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string());
    let w = window(query.order, query.after.as_deref(), query.limit)?;
    if query.local {
        // This node's own table, as it is: no other node asked.
        return json(StatusCode::OK, &crate::listings::tasks(state, &query, &w));
    }
    if r == Route::ListActors {
        // Its actors that another node named, by name.
        state.node.learn_actor_names().await;
    }
    match r {
        Route::Tasks => json(
            StatusCode::OK,
            &gather(state, &query, &w, path, |w| {
                crate::listings::tasks(state, &query, w)
            })
            .await,
        ),
        Route::Errors => json(
            StatusCode::OK,
            &gather(state, &query, &w, path, |w| {
                crate::listings::errors(state, &query, w)
            })
            .await,
        ),
        Route::ListActors => json(
            StatusCode::OK,
            &gather(state, &query, &w, path, |w| {
                crate::listings::actors(state, &query, w)
            })
            .await,
        ),
        Route::Objects => json(
            StatusCode::OK,
            &gather(state, &query, &w, path, |w| {
                crate::listings::objects(state, &query, w)
            })
            .await,
        ),
        Route::ListJobs => json(
            StatusCode::OK,
            &gather(state, &query, &w, path, |w| {
                crate::listings::jobs(state, &query, w)
            })
            .await,
        ),
        Route::Timeline => timeline(state, &query, path).await,
        Route::Logs => logs(state, &query, path).await,
        other => Err(ApiError::not_found(
            ErrorCode::NoRoute,
            format!("{} is not answered for the cluster", other.info().path),
        )),
    }
}

/// How long each node is waited for: the query's `?timeout=`, else
/// [`NODE_DEADLINE`].
fn deadline(query: &Query) -> Duration {
    query.timeout.unwrap_or(NODE_DEADLINE)
}

/// A GET of `path` (with its query) for the other nodes.
fn request(path: String) -> RelayRequest {
    RelayRequest {
        method: "GET".to_string(),
        path,
        accept: None,
        body: bytes::Bytes::new(),
    }
}

/// A node's answer `response` as a `T`, or why it is not one.
fn read<T: DeserializeOwned>(response: RelayResponse) -> Result<T, String> {
    if response.status != 200 {
        let said = serde_json::from_slice::<wray_api::ErrorBody>(&response.body)
            .map(|b| b.error.message)
            .unwrap_or_default();
        return Err(format!("answered {}: {said}", response.status));
    }
    serde_json::from_slice(&response.body).map_err(|e| format!("answered what is not a page: {e}"))
}

/// Which nodes a request naming `?node=` reaches: this one (`here`), and
/// the others (`others`, `only` that one when it is a live other node).
struct Reach<'a> {
    here: bool,
    others: bool,
    only: Option<&'a str>,
}

fn reach<'a>(state: &State, node: Option<&'a str>) -> Reach<'a> {
    let me = state.node.id();
    match node {
        None => Reach {
            here: true,
            others: true,
            only: None,
        },
        Some(n) if n == me => Reach {
            here: true,
            others: false,
            only: None,
        },
        Some(n) if state.node.node_alive(n) => Reach {
            here: false,
            others: true,
            only: Some(n),
        },
        // Dead or gone: the live nodes may still hold rows naming it.
        Some(_) => Reach {
            here: true,
            others: true,
            only: None,
        },
    }
}

/// The page `window` asks for, of this node (`local`) and every other
/// live node that `query`'s `?node=` reaches, merged.
async fn gather<L: Listing + DeserializeOwned>(
    state: &State,
    query: &Query,
    window: &Window,
    path: String,
    local: impl FnOnce(&Window) -> L,
) -> L {
    let reach = reach(state, query.node.as_deref());
    let mut merge = Merge::<L>::new(window.clone());
    if reach.here {
        merge.add(local(window), |_| true);
    }
    if reach.others {
        let mut answers = state
            .node
            .relay_each(request(path), reach.only, deadline(query));
        while let Some((node, answer)) = answers.next().await {
            match answer.map_err(|e| e.to_string()).and_then(read::<L>) {
                Ok(page) => merge.add(page, |_| true),
                Err(e) => merge.missing(node, e),
            }
        }
    }
    merge.finish()
}

/// `GET /v1/timeline` for the cluster: every node's trace (its last
/// `?limit=` tasks) in one, a process per node (by id), a row per worker,
/// times in microseconds since the Unix epoch; the nodes whose trace is
/// missing under `"unreachable"`.
async fn timeline(state: &State, query: &Query, path: String) -> Answer {
    let node = &state.node;
    let me = node.id().to_string();
    let target = query.node.as_deref();
    if target.is_some_and(|n| n != me && !node.node_alive(n)) {
        return Err(unknown_node(target.unwrap_or_default()));
    }
    let mut traces: BTreeMap<String, Value> = BTreeMap::new();
    let mut unreachable = Vec::new();
    if target.is_none_or(|n| n == me) {
        traces.insert(me.clone(), node.timeline(query.limit));
    }
    if target.is_none_or(|n| n != me) {
        let mut taken = 0usize;
        let mut answers = node.relay_each(request(path), target, deadline(query));
        while let Some((id, answer)) = answers.next().await {
            let answer = answer.map_err(|e| e.to_string()).and_then(|r| {
                taken = taken.saturating_add(r.body.len());
                if taken > MAX_TIMELINE_BYTES {
                    return Err(format!(
                        "the timeline is past its bound of {MAX_TIMELINE_BYTES} bytes: ask for \
                         fewer tasks (?limit=) or one node (?node=)"
                    ));
                }
                read::<Value>(r)
            });
            match answer {
                Ok(trace) => {
                    traces.insert(id, trace);
                }
                Err(error) => unreachable.push(wray_api::Unreachable { node_id: id, error }),
            }
        }
    }
    unreachable.sort_by(|a, b| a.node_id.cmp(&b.node_id));
    json(StatusCode::OK, &merge_traces(traces, unreachable))
}

/// One trace of `traces` (by node): each node's events under a process of
/// its own, numbered from 1 in the order of the node ids.
fn merge_traces(traces: BTreeMap<String, Value>, unreachable: Vec<wray_api::Unreachable>) -> Value {
    let mut events = Vec::new();
    for (pid, (_, trace)) in (1u64..).zip(traces) {
        let Value::Object(mut trace) = trace else {
            continue;
        };
        let Some(Value::Array(mine)) = trace.remove("traceEvents") else {
            continue;
        };
        for mut event in mine {
            if let Value::Object(e) = &mut event {
                e.insert("pid".to_string(), Value::from(pid));
                events.push(event);
            }
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("traceEvents".to_string(), Value::Array(events));
    out.insert("displayTimeUnit".to_string(), Value::from("ms"));
    if !unreachable.is_empty() {
        out.insert(
            "unreachable".to_string(),
            serde_json::to_value(unreachable).unwrap_or(Value::Null),
        );
    }
    Value::Object(out)
}

/// `GET /v1/logs?node=` of another node: its answer, relayed.
async fn logs(state: &State, query: &Query, path: String) -> Answer {
    let node = &state.node;
    let Some(target) = query.node.as_deref().filter(|n| *n != node.id()) else {
        return crate::node_logs::local(state, query).await;
    };
    if !node.node_alive(target) {
        return Err(unknown_node(target));
    }
    let mut answers = node.relay_each(request(path), Some(target), deadline(query));
    match answers.next().await {
        Some((_, Ok(response))) => Ok(crate::relayed::response_of(target, response)),
        Some((_, Err(e))) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            ErrorCode::NodeUnreachable,
            format!("node {target}: {e}"),
        )),
        None => Err(unknown_node(target)),
    }
}

/// `GET /v1/resources`: in a cluster the sum of its live nodes' (this
/// node's own as it has them now, the others' as they last published).
pub(crate) fn resources(state: &State) -> wray_api::Resources {
    let node = &state.node;
    let mut total = node.cluster_resources();
    let mut available = node.available_resources();
    for other in node.nodes() {
        if !other.alive || other.node_id == node.id() {
            continue;
        }
        for (name, amount) in &other.resources {
            *total.entry(name.clone()).or_default() += amount;
        }
        for (name, amount) in &other.resources_available {
            *available.entry(name.clone()).or_default() += amount;
        }
    }
    wray_api::Resources { total, available }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_nodes_trace_becomes_a_process_of_its_own() {
        let trace = |name: &str| {
            serde_json::json!({"traceEvents": [
                {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": name}},
                {"name": "f", "ph": "X", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0},
            ]})
        };
        let traces = BTreeMap::from([
            ("node-b".to_string(), trace("wray node-b")),
            ("node-a".to_string(), trace("wray node-a")),
        ]);
        let merged = merge_traces(traces, Vec::new());
        let events = merged["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 4);
        let pid_of = |name: &str| {
            events
                .iter()
                .find(|e| e["args"]["name"] == name)
                .map(|e| e["pid"].as_u64().unwrap())
        };
        assert_eq!(
            (pid_of("wray node-a"), pid_of("wray node-b")),
            (Some(1), Some(2))
        );
        assert!(merged.get("unreachable").is_none());
    }
}
