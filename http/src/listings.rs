//! The function table's routes (deploy, list, get, undeploy, a
//! component's OpenAPI document) and the listings that can grow (actors,
//! tasks, objects, errors), each answered a page at a time.
//!
//! Reads of the function table fall back to the node's own view when the
//! control plane is unreachable: what this node runs, marked `"view":
//! "node"` and with the header `Wray-View: node`, so `wray functions` and
//! the documents keep working through an outage (calls do already).

use hyper::header::HeaderValue;
use hyper::{Request, StatusCode};
use wray_api::View;
use wray_control_plane::{check_name, NAME_RULE};
use wray_host::ComponentVersion;

use crate::body::{json, read_body, Answer};
use crate::calls::unknown_component;
use crate::error::ApiError;
use crate::query::Query;
use crate::state::State;

/// 400 `bad_name` unless `name` follows the one name rule.
fn checked_name(name: &str) -> Result<(), ApiError> {
    check_name(name).map_err(|e| {
        ApiError::bad_request(
            "bad_name",
            format!(
                "{e}; a component name is {NAME_RULE} (percent-encode it in paths and queries)"
            ),
        )
    })
}

/// Whether a control-plane error means it cannot be reached now (so the
/// node's own view answers instead).
fn unreachable(e: &wray_host::Error) -> bool {
    matches!(
        e,
        wray_host::Error::ControlPlane(wray_control_plane::Error::Unavailable(_))
    )
}

/// `answer` marked as the node's own view (`Wray-View: node`).
fn node_view(answer: Answer) -> Answer {
    let mut response = answer?;
    response
        .headers_mut()
        .insert(wray_api::VIEW_HEADER, HeaderValue::from_static("node"));
    Ok(response)
}

fn table_error(e: wray_host::Error) -> ApiError {
    ApiError::busy(format!("the function table: {e}"))
}

/// `GET /v1/components`: a page, by name.
pub(crate) async fn components(state: &State, query: &Query) -> Answer {
    let node = &state.node;
    let after = query.after.as_deref();
    // One more than asked: whether there is a next page.
    let want = query.limit.saturating_add(1);
    match node.components_page(after, want).await {
        Ok(page) => {
            let (page, next) = cut(page, query.limit, |v: &ComponentVersion| {
                v.record.name.clone()
            });
            json(
                StatusCode::OK,
                &wray_api::ComponentList {
                    components: page.iter().map(crate::wire::version).collect(),
                    next,
                    view: View::ControlPlane,
                },
            )
        }
        Err(e) if unreachable(&e) => {
            let all = node.local_components();
            let page: Vec<_> = all
                .into_iter()
                .filter(|r| after.is_none_or(|a| r.name.as_str() > a))
                .take(want)
                .collect();
            let (page, next) = cut(page, query.limit, |r| r.name.clone());
            node_view(json(
                StatusCode::OK,
                &wray_api::ComponentList {
                    components: page.iter().map(|r| crate::wire::node_view(r)).collect(),
                    next,
                    view: View::Node,
                },
            ))
        }
        Err(e) => Err(table_error(e)),
    }
}

/// `page` (of at most `limit + 1` entries) cut to `limit`, and the cursor
/// of the next page (the last entry kept's, when one more was there).
fn cut<T>(
    mut page: Vec<T>,
    limit: usize,
    cursor: impl Fn(&T) -> String,
) -> (Vec<T>, Option<String>) {
    if page.len() <= limit {
        return (page, None);
    }
    page.truncate(limit);
    let next = page.last().map(cursor);
    (page, next)
}

/// `GET /v1/components/{name}`.
pub(crate) async fn component(state: &State, name: &str) -> Answer {
    checked_name(name)?;
    match state.node.component_async(name).await {
        Ok(version) => json(StatusCode::OK, &crate::wire::version(&version)),
        Err(wray_host::Error::NotDeployed(_)) => Err(unknown_component(name)),
        Err(e) if unreachable(&e) => {
            let record = state
                .node
                .deployed(name)
                .ok_or_else(|| unknown_component(name))?;
            node_view(json(StatusCode::OK, &crate::wire::node_view(&record)))
        }
        Err(e) => Err(table_error(e)),
    }
}

/// `GET /v1/components/{name}/openapi.json`: from the node's own row (the
/// one its calls are checked against), so it answers through an outage.
pub(crate) fn component_openapi(state: &State, name: &str) -> Answer {
    checked_name(name)?;
    let record = state
        .node
        .deployed(name)
        .ok_or_else(|| unknown_component(name))?;
    json(StatusCode::OK, &crate::openapi::component_document(&record))
}

/// `DELETE /v1/components/{name}`.
pub(crate) async fn undeploy(state: &State, name: &str) -> Answer {
    checked_name(name)?;
    let removed = state.node.undeploy_async(name).await.map_err(table_error)?;
    if removed {
        json(
            StatusCode::OK,
            &wray_api::Undeployed {
                undeployed: name.to_string(),
            },
        )
    } else {
        Err(unknown_component(name))
    }
}

/// `POST /v1/components?name=`.
pub(crate) async fn deploy<B>(state: &State, query: Query, req: Request<B>) -> Answer
where
    B: hyper::body::Body<Data = bytes::Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    // The body is read (bounded) before the name is judged, so that a
    // client still sending it gets the answer rather than a broken pipe.
    let bytes = read_body(req, state.config.max_component, state.config.body_timeout).await?;
    let name = query.name.ok_or_else(|| {
        ApiError::bad_request(
            "no_name",
            "name the component: POST /v1/components?name=NAME (percent-encoded)",
        )
    })?;
    checked_name(&name)?;
    let node = &state.node;
    // Compiled on the node's compile pool (never on this runtime's
    // threads): this handler waits for it.
    let deployed = node
        .deploy_async(&name, std::sync::Arc::from(&bytes[..]))
        .await
        .map_err(|e| match e {
            wray_host::Error::Component { .. } => {
                ApiError::bad_request("invalid_component", e.to_string())
            }
            wray_host::Error::DeployLimit(ref limit) => ApiError::deploy_limit(limit),
            wray_host::Error::ControlPlane(ref c) if !c.is_retryable() => {
                ApiError::bad_request("invalid_component", e.to_string())
            }
            wray_host::Error::ControlPlane(_) => ApiError::busy(e.to_string()),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "deploy_failed",
                other.to_string(),
            ),
        })?;
    // 201 for a new version; 200 when the bytes were a kept version's,
    // now current.
    let status = match deployed.new {
        true => StatusCode::CREATED,
        false => StatusCode::OK,
    };
    json(status, &crate::wire::deployment(&deployed))
}

/// `GET /v1/actors`: a page of the node's actors, by id; `?job=` those of
/// one job.
pub(crate) fn actors(state: &State, query: &Query) -> Answer {
    let after = match &query.after {
        None => None,
        Some(a) => Some(a.parse().map_err(|e: wray_host::BadId| {
            ApiError::bad_request("bad_query", format!("after: {e}"))
        })?),
    };
    let page = state
        .node
        .actors(after, query.limit.saturating_add(1), query.job);
    let (page, next) = cut(page, query.limit, |a| a.actor_id.clone());
    let actors = page
        .into_iter()
        .map(|a| {
            let kept = a
                .actor_id
                .parse()
                .ok()
                .and_then(|id| state.kept.actor_component(id));
            crate::wire::actor(a, kept)
        })
        .collect();
    json(StatusCode::OK, &wray_api::ActorList { actors, next })
}

/// The entries of `all` (in their order) after the one whose cursor is
/// `after`, and the next cursor.
///
/// # Errors
/// 410 `stale_cursor` when no entry has that cursor any more (the table
/// dropped it: list again from the start).
fn page_after<T>(
    all: Vec<T>,
    after: Option<&str>,
    limit: usize,
    cursor: impl Fn(&T) -> &str,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let start = match after {
        None => 0,
        Some(a) => {
            let at = all.iter().position(|t| cursor(t) == a).ok_or_else(|| {
                ApiError::new(
                    StatusCode::GONE,
                    "stale_cursor",
                    format!(
                        "after={}: no such entry any more (the node keeps a bounded number): list again without `after`",
                        a.chars().take(64).collect::<String>()
                    ),
                )
            })?;
            at.saturating_add(1)
        }
    };
    let page: Vec<T> = all
        .into_iter()
        .skip(start)
        .take(limit.saturating_add(1))
        .collect();
    Ok(cut(page, limit, |t| cursor(t).to_string()))
}

/// `GET /v1/tasks`: a page, oldest submission first.
pub(crate) fn tasks(state: &State, query: &Query) -> Answer {
    let mut all = state.node.tasks();
    if let Some(job) = query.job {
        all.retain(|t| {
            t.task_id
                .parse::<wray_host::TaskId>()
                .is_ok_and(|id| id.job() == job)
        });
    }
    let (page, next) = page_after(all, query.after.as_deref(), query.limit, |t| {
        t.task_id.as_str()
    })?;
    json(
        StatusCode::OK,
        &wray_api::TaskList {
            tasks: page.into_iter().map(Into::into).collect(),
            next,
        },
    )
}

/// `GET /v1/errors`: a page, oldest first.
pub(crate) fn errors(state: &State, query: &Query) -> Answer {
    let all = state.node.errors();
    let (page, next) = page_after(all, query.after.as_deref(), query.limit, |e| {
        e.task_id.as_str()
    })?;
    json(
        StatusCode::OK,
        &wray_api::ErrorList {
            errors: page.into_iter().map(Into::into).collect(),
            next,
        },
    )
}

/// `GET /v1/objects`: a page, by id (memory bounded by the page, not by
/// the store).
pub(crate) fn objects(state: &State, query: &Query) -> Answer {
    let after = match &query.after {
        None => None,
        Some(a) => Some(a.parse().map_err(|e: wray_host::BadId| {
            ApiError::bad_request("bad_query", format!("after: {e}"))
        })?),
    };
    let page = state
        .node
        .objects_page(after, query.limit.saturating_add(1));
    let (page, next) = cut(page, query.limit, |o| o.id.to_string());
    json(
        StatusCode::OK,
        &wray_api::ObjectList {
            objects: page.iter().map(Into::into).collect(),
            next,
        },
    )
}
