//! The function table's routes (deploy, list, get, undeploy, a
//! component's OpenAPI document) and this node's pages of the cluster
//! listings (actors, tasks, objects, errors, jobs: see `rows` for their
//! order and `gather` for their merge over the cluster).
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
use crate::rows::{micros, page, Place, Window};
use crate::state::State;
use wray_api::ErrorCode;

/// 400 `bad_name` unless `name` follows the one name rule.
fn checked_name(name: &str) -> Result<(), ApiError> {
    check_name(name).map_err(|e| {
        ApiError::bad_request(
            ErrorCode::BadName,
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

/// A function-table error as an answer: a damaged entry is named (500
/// `corrupt_entry`: asking again will not help); anything else is 503.
fn table_error(e: wray_host::Error) -> ApiError {
    match e {
        wray_host::Error::ControlPlane(wray_control_plane::Error::Corrupt { .. }) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::CorruptEntry,
            format!("the function table: {e} (`wray undeploy` of the name removes it)"),
        ),
        e => ApiError::busy(format!("the function table: {e}")),
    }
}

/// `GET /v1/components`: a page, by name.
pub(crate) async fn components(state: &State, query: &Query) -> Answer {
    let node = &state.node;
    let after = query.after.as_deref();
    // One more than asked: whether there is a next page.
    let want = query.limit.saturating_add(1);
    match node.components_page(after, want).await {
        Ok(listed) => {
            let (page, next) = cut(listed.entries, query.limit, |v: &ComponentVersion| {
                v.record.name.clone()
            });
            // The damaged entries among this page's names (sorting after
            // `after`, the table's listing made sure; up to its last).
            let mut skipped = listed.skipped;
            skipped.retain(|s| next.as_deref().is_none_or(|last| s.name.as_str() <= last));
            json(
                StatusCode::OK,
                &wray_api::ComponentList {
                    components: page.iter().map(crate::wire::version).collect(),
                    next,
                    view: View::ControlPlane,
                    errors: crate::wire::list_errors(&skipped),
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
                    errors: Vec::new(),
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
            ErrorCode::NoName,
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
                ApiError::bad_request(ErrorCode::InvalidComponent, e.to_string())
            }
            wray_host::Error::DeployLimit(ref limit) => ApiError::deploy_limit(limit),
            wray_host::Error::ControlPlane(ref c) if !c.is_retryable() => {
                ApiError::bad_request(ErrorCode::InvalidComponent, e.to_string())
            }
            wray_host::Error::ControlPlane(_) => ApiError::busy(e.to_string()),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::DeployFailed,
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

/// This node's page of `GET /v1/actors` (its actors: see
/// [`wray_host::Node::actors`]), of job `?job=` and node `?node=` when
/// given.
pub(crate) fn actors(state: &State, query: &Query, window: &Window) -> wray_api::ActorList {
    let rows = state
        .node
        .actors(None, usize::MAX, query.job)
        .into_iter()
        .map(|mut a| {
            // Created over HTTP: its methods are callable there, and it is
            // named by the component it was created from.
            if let Some(kept) = a
                .actor
                .parse()
                .ok()
                .and_then(|id| state.kept.actor_component(id))
            {
                a.http = true;
                a.component = kept;
            }
            a
        })
        .filter(|a| of_node(query, &a.node_id))
        .collect();
    page(rows, window)
}

/// Whether a row of node `node` is one `?node=` asks for.
fn of_node(query: &Query, node: &str) -> bool {
    query.node.as_deref().is_none_or(|n| n == node)
}

/// Whether a row of this node naming node `node` as the one that ran it
/// is that node's to list: it is another node (the task was sent there),
/// and alive (`alive` remembers what the view said of each node asked).
fn theirs(state: &State, alive: &mut std::collections::HashMap<String, bool>, node: &str) -> bool {
    if node == state.node.id() {
        return false;
    }
    if let Some(known) = alive.get(node) {
        return *known;
    }
    let known = state.node.node_alive(node);
    alive.insert(node.to_string(), known);
    known
}

/// `GET /v1/tasks/{id}` here: this node's row of task `id`, unless the
/// row names another live node as the one that ran it (that node answers,
/// through `relay`, with its own row: times, worker, error as it saw
/// them).
///
/// # Errors
/// 400 `bad_id` for an id that is not one; 404 `unknown_task` when this
/// node keeps no row of it, or the row is another live node's.
pub(crate) fn task(state: &State, id: &str) -> Result<wray_api::TaskInfo, ApiError> {
    let task: wray_host::TaskId = crate::error::parse_id(id)?;
    let wanted = task.to_string();
    let mut alive = std::collections::HashMap::new();
    state
        .node
        .tasks()
        .into_iter()
        .find(|t| t.task_id == wanted && !theirs(state, &mut alive, &t.node_id))
        .ok_or_else(|| {
            ApiError::not_found(
                ErrorCode::UnknownTask,
                format!(
                    "no node keeps task {task}: it was never submitted, or it finished long \
                     enough ago that its node forgot it (a node keeps its last {} finished \
                     tasks)",
                    wray_host::bounds::MAX_FINISHED_TASKS
                ),
            )
        })
}

/// This node's page of `GET /v1/tasks`: its tasks, a task it sent to
/// another node only while that node is not alive to list it (always with
/// `?local=true`), of job `?job=` and node `?node=` when given.
pub(crate) fn tasks(state: &State, query: &Query, window: &Window) -> wray_api::TaskList {
    let mut alive = std::collections::HashMap::new();
    let rows = state
        .node
        .tasks()
        .into_iter()
        .filter(|t| query.local || !theirs(state, &mut alive, &t.node_id))
        .filter(|t| of_node(query, &t.node_id))
        .filter(|t| {
            query.job.is_none_or(|job| {
                t.task_id
                    .parse::<wray_host::TaskId>()
                    .is_ok_and(|id| id.job() == job)
            })
        })
        .collect();
    page(rows, window)
}

/// This node's page of `GET /v1/errors`, as [`tasks`] chooses its rows.
pub(crate) fn errors(state: &State, query: &Query, window: &Window) -> wray_api::ErrorList {
    let mut alive = std::collections::HashMap::new();
    let rows = state
        .node
        .errors()
        .into_iter()
        .filter(|e| !theirs(state, &mut alive, &e.node_id))
        .filter(|e| of_node(query, &e.node_id))
        .collect();
    page(rows, window)
}

/// This node's page of `GET /v1/objects`: its store's objects (memory
/// bounded by the page, not by the store).
pub(crate) fn objects(state: &State, query: &Query, window: &Window) -> wray_api::ObjectList {
    let node = &state.node;
    let me = node.id();
    if !of_node(query, me) {
        return page(Vec::new(), window);
    }
    let keep = |created_ns: u64, id: &wray_host::ObjectId| {
        let Some(cursor) = &window.after else {
            return true;
        };
        let at = micros(created_ns as f64 / 1e9);
        if at != cursor.micros {
            let later = at > cursor.micros;
            return later == (window.order == wray_api::Order::Oldest);
        }
        Place {
            micros: at,
            node: me.to_string(),
            id: id.to_string(),
        }
        .after(cursor, window.order)
    };
    let newest = window.order == wray_api::Order::Newest;
    let rows = node.objects_by_time(newest, &keep, window.limit.saturating_add(1));
    page(rows, window)
}

/// This node's page of `GET /v1/jobs`: the jobs submitted to it.
pub(crate) fn jobs(state: &State, query: &Query, window: &Window) -> wray_api::JobList {
    let rows = state
        .jobs
        .list()
        .into_iter()
        .filter(|j| of_node(query, &j.node_id))
        .collect();
    page(rows, window)
}
