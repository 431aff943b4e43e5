//! The route table: every route's method, path pattern and summary, in one
//! list that the router ([`route`]), the metrics (by pattern) and the
//! OpenAPI document ([`crate::openapi`]) are all built from.
//!
//! Path parameters arrive percent-encoded (clients encode every segment:
//! `x%23y` for a component named `x#y`); [`route`] splits the path at
//! `/` first, then decodes each parameter once.

use std::borrow::Cow;

use hyper::{Method, StatusCode};

use crate::error::ApiError;

/// One route: `{name}` segments of `path` are parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteInfo {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path pattern, e.g. `/v1/functions/{component}/{function}`.
    pub path: &'static str,
    /// What it does, one line (the OpenAPI summary).
    pub summary: &'static str,
}

/// Every route the server answers, in the order [`route`] tries them.
pub const ROUTES: &[RouteInfo] = &[
    RouteInfo { method: "GET", path: "/healthz", summary: "Whether the node is up, and its control plane reachable (no token needed)" },
    RouteInfo { method: "GET", path: "/metrics", summary: "Prometheus text: tasks by state, requests by route and status, request latency, object store bytes" },
    RouteInfo { method: "GET", path: "/v1/openapi.json", summary: "This document: the routes and the API's types (each component's functions: /v1/components/{name}/openapi.json)" },
    RouteInfo { method: "GET", path: "/v1/components", summary: "The deployed components, by name, a page at a time (`?limit=`, `?after=`)" },
    RouteInfo { method: "POST", path: "/v1/components", summary: "Deploy a component (the body: its bytes; `?name=` names it)" },
    RouteInfo { method: "GET", path: "/v1/components/{name}", summary: "One deployed component: its functions, actor classes and their schemas" },
    RouteInfo { method: "DELETE", path: "/v1/components/{name}", summary: "Undeploy a component: calls already made, and its actors, finish on it" },
    RouteInfo { method: "GET", path: "/v1/components/{name}/openapi.json", summary: "An OpenAPI document of one component's functions: each one's path, with its parameters' and results' JSON Schemas" },
    RouteInfo { method: "POST", path: "/v1/functions/{component}/{function}", summary: "Call a function: the body is the JSON array of its arguments; `?timeout=` seconds, `?async=true` answers with object ids at once" },
    RouteInfo { method: "GET", path: "/v1/objects/{id}", summary: "An object of an async call: JSON, or raw bytes with `Accept: application/octet-stream`; `?timeout=` seconds to wait" },
    RouteInfo { method: "GET", path: "/v1/actors", summary: "The cluster's actors (live, and recently dead), newest first, a page at a time (`?limit=`, `?after=`, `?order=`); `?job=` those of one job, `?node=` those living on one node" },
    RouteInfo { method: "POST", path: "/v1/actors", summary: "Create an actor: `{\"component\", \"class\", \"args\"}`" },
    RouteInfo { method: "POST", path: "/v1/actors/{id}/{method}", summary: "Call a method of an actor: the body is the JSON array of its arguments" },
    RouteInfo { method: "DELETE", path: "/v1/actors/{id}", summary: "Kill an actor (of any job: an operator's kill)" },
    RouteInfo { method: "GET", path: "/v1/nodes", summary: "The cluster's nodes (live, and dead for a while) and their resources" },
    RouteInfo { method: "GET", path: "/v1/resources", summary: "The cluster's total and available resources (its live nodes')" },
    RouteInfo { method: "GET", path: "/v1/tasks", summary: "The cluster's pending, running and recently finished tasks, newest first, a page at a time (`?limit=`, `?after=`, `?order=`); `?job=` those of one job, `?node=` those of one node" },
    RouteInfo { method: "GET", path: "/v1/objects", summary: "The objects in every node's store, newest first, a page at a time (`?limit=`, `?after=`, `?order=`); `?node=` those of one node" },
    RouteInfo { method: "GET", path: "/v1/errors", summary: "The cluster's errors of failed tasks, with their cause chains, newest first, a page at a time (`?limit=`, `?after=`, `?order=`); `?node=` those of one node" },
    RouteInfo { method: "GET", path: "/v1/timeline", summary: "The timeline of the cluster's tasks (Chrome trace JSON): a process per node, a row per worker; `?limit=` tasks of each node, `?node=` one node" },
    RouteInfo { method: "GET", path: "/v1/jobs", summary: "The cluster's jobs, newest first, a page at a time (`?limit=`, `?after=`, `?order=`); `?node=` those of one node" },
    RouteInfo { method: "POST", path: "/v1/jobs", summary: "Submit a job: `{\"component\", \"args\"}` runs the component's `main(args)` in the background" },
    RouteInfo { method: "GET", path: "/v1/jobs/{id}", summary: "One job: its status, and why it failed or stopped" },
    RouteInfo { method: "DELETE", path: "/v1/jobs/{id}", summary: "Forget a finished job and its log" },
    RouteInfo { method: "GET", path: "/v1/jobs/{id}/logs", summary: "What the job's guests wrote (text); `?offset=` bytes to start from, `?follow=true` streams until the job ends" },
    RouteInfo { method: "POST", path: "/v1/jobs/{id}/stop", summary: "Stop a job: its driver, tasks and actors are cancelled" },
    RouteInfo { method: "POST", path: "/v1/components/{name}/rollback", summary: "Make a kept version of a component current again: `?version=N`" },
    RouteInfo { method: "GET", path: "/v1/tasks/{id}/logs", summary: "What a task outside a job with a log wrote to stdout and stderr (its first 64 KiB, and the bytes dropped past them), while the node keeps it" },
    RouteInfo { method: "GET", path: "/v1/components/{name}/versions", summary: "The versions of a component the function table keeps, oldest first (roll back to one: `POST /v1/components/{name}/rollback?version=N`)" },
    RouteInfo { method: "GET", path: "/v1/logs", summary: "The end of a node's log (`?node=`, default this one; `?bytes=`), and the tasks whose output it keeps" },
    RouteInfo { method: "POST", path: "/v1/packages", summary: "Keep a job's working directory: the body is a tar archive (`wray job submit --working-dir` packs it); answers its id for a job's `working_dir`" },
    RouteInfo { method: "GET", path: "/v1/packages/{id}", summary: "Whether the node keeps a package (`sha256:<hex>`), and its sizes" },
];

/// A request matched to its route, with its path parameters
/// (percent-decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route<'a> {
    /// `GET /healthz`
    Healthz,
    /// `GET /metrics`
    Metrics,
    /// `GET /v1/openapi.json`
    OpenApi,
    /// `GET /v1/components`
    ListComponents,
    /// `POST /v1/components`
    Deploy,
    /// `GET /v1/components/{name}`
    GetComponent(Cow<'a, str>),
    /// `DELETE /v1/components/{name}`
    Undeploy(Cow<'a, str>),
    /// `GET /v1/components/{name}/openapi.json`
    ComponentOpenApi(Cow<'a, str>),
    /// `POST /v1/functions/{component}/{function}`
    Invoke(Cow<'a, str>, Cow<'a, str>),
    /// `GET /v1/objects/{id}`
    GetObject(Cow<'a, str>),
    /// `GET /v1/actors`
    ListActors,
    /// `POST /v1/actors`
    CreateActor,
    /// `POST /v1/actors/{id}/{method}`
    CallActor(Cow<'a, str>, Cow<'a, str>),
    /// `DELETE /v1/actors/{id}`
    KillActor(Cow<'a, str>),
    /// `GET /v1/nodes`
    Nodes,
    /// `GET /v1/resources`
    Resources,
    /// `GET /v1/tasks`
    Tasks,
    /// `GET /v1/objects`
    Objects,
    /// `GET /v1/errors`
    Errors,
    /// `GET /v1/timeline`
    Timeline,
    /// `GET /v1/jobs`
    ListJobs,
    /// `POST /v1/jobs`
    SubmitJob,
    /// `GET /v1/jobs/{id}`
    GetJob(Cow<'a, str>),
    /// `DELETE /v1/jobs/{id}`
    DeleteJob(Cow<'a, str>),
    /// `GET /v1/jobs/{id}/logs`
    JobLogs(Cow<'a, str>),
    /// `POST /v1/jobs/{id}/stop`
    StopJob(Cow<'a, str>),
    /// `GET /v1/tasks/{id}/logs`
    TaskLogs(Cow<'a, str>),
    /// `POST /v1/components/{name}/rollback`
    Rollback(Cow<'a, str>),
    /// `GET /v1/components/{name}/versions`
    Versions(Cow<'a, str>),
    /// `GET /v1/logs`
    Logs,
    /// `POST /v1/packages`
    UploadPackage,
    /// `GET /v1/packages/{id}`
    GetPackage(Cow<'a, str>),
}

/// Longest request path served, in bytes (414 beyond).
pub const MAX_PATH: usize = 2048;

impl Route<'_> {
    /// The route's row of [`ROUTES`] (its pattern names it in metrics).
    pub fn info(&self) -> &'static RouteInfo {
        let index = match self {
            Route::Healthz => 0,
            Route::Metrics => 1,
            Route::OpenApi => 2,
            Route::ListComponents => 3,
            Route::Deploy => 4,
            Route::GetComponent(_) => 5,
            Route::Undeploy(_) => 6,
            Route::ComponentOpenApi(_) => 7,
            Route::Invoke(..) => 8,
            Route::GetObject(_) => 9,
            Route::ListActors => 10,
            Route::CreateActor => 11,
            Route::CallActor(..) => 12,
            Route::KillActor(_) => 13,
            Route::Nodes => 14,
            Route::Resources => 15,
            Route::Tasks => 16,
            Route::Objects => 17,
            Route::Errors => 18,
            Route::Timeline => 19,
            Route::ListJobs => 20,
            Route::SubmitJob => 21,
            Route::GetJob(_) => 22,
            Route::DeleteJob(_) => 23,
            Route::JobLogs(_) => 24,
            Route::StopJob(_) => 25,
            Route::Rollback(_) => 26,
            Route::TaskLogs(_) => 27,
            Route::Versions(_) => 28,
            Route::Logs => 29,
            Route::UploadPackage => 30,
            Route::GetPackage(_) => 31,
        };
        // Every variant's index is a row of the table (the unit test
        // routes each row to itself).
        &ROUTES[index]
    }
}

/// The route of `method` and `path` (no query).
///
/// # Errors
/// 414 for a path over [`MAX_PATH`] bytes; 404 for a path no route has;
/// 405 (naming the methods it has) for a path with another method; 400
/// `bad_path` for a parameter that is not UTF-8 once percent-decoded.
pub fn route<'a>(method: &Method, path: &'a str) -> Result<Route<'a>, ApiError> {
    if path.len() > MAX_PATH {
        return Err(ApiError::new(
            StatusCode::URI_TOO_LONG,
            "path_too_long",
            format!("the path has {} bytes, the most is {MAX_PATH}", path.len()),
        ));
    }
    let segments: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
    let by_method = |get: Option<Route<'a>>, post: Option<Route<'a>>, delete: Option<Route<'a>>| {
        let allowed: Vec<&str> = [("GET", &get), ("POST", &post), ("DELETE", &delete)]
            .iter()
            .filter(|(_, r)| r.is_some())
            .map(|(m, _)| *m)
            .collect();
        let found = match *method {
            Method::GET => get,
            Method::POST => post,
            Method::DELETE => delete,
            _ => None,
        };
        found.ok_or_else(|| {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!(
                    "{method} is not allowed on {path}; it takes {}",
                    allowed.join(", ")
                ),
            )
        })
    };
    let param = |s: &'a str| (!s.is_empty()).then_some(s);
    match segments.as_slice() {
        ["healthz"] => by_method(Some(Route::Healthz), None, None),
        ["metrics"] => by_method(Some(Route::Metrics), None, None),
        ["v1", "openapi.json"] => by_method(Some(Route::OpenApi), None, None),
        ["v1", "components"] => by_method(Some(Route::ListComponents), Some(Route::Deploy), None),
        ["v1", "components", name] if param(name).is_some() => by_method(
            Some(Route::GetComponent(decode(name)?)),
            None,
            Some(Route::Undeploy(decode(name)?)),
        ),
        ["v1", "components", name, "openapi.json"] if param(name).is_some() => {
            by_method(Some(Route::ComponentOpenApi(decode(name)?)), None, None)
        }
        ["v1", "components", name, "rollback"] if param(name).is_some() => {
            by_method(None, Some(Route::Rollback(decode(name)?)), None)
        }
        ["v1", "components", name, "versions"] if param(name).is_some() => {
            by_method(Some(Route::Versions(decode(name)?)), None, None)
        }
        ["v1", "functions", c, f] if param(c).is_some() && param(f).is_some() => {
            by_method(None, Some(Route::Invoke(decode(c)?, decode(f)?)), None)
        }
        ["v1", "objects"] => by_method(Some(Route::Objects), None, None),
        ["v1", "objects", id] if param(id).is_some() => {
            by_method(Some(Route::GetObject(decode(id)?)), None, None)
        }
        ["v1", "actors"] => by_method(Some(Route::ListActors), Some(Route::CreateActor), None),
        ["v1", "actors", id] if param(id).is_some() => {
            by_method(None, None, Some(Route::KillActor(decode(id)?)))
        }
        ["v1", "actors", id, m] if param(id).is_some() && param(m).is_some() => {
            by_method(None, Some(Route::CallActor(decode(id)?, decode(m)?)), None)
        }
        ["v1", "nodes"] => by_method(Some(Route::Nodes), None, None),
        ["v1", "resources"] => by_method(Some(Route::Resources), None, None),
        ["v1", "tasks"] => by_method(Some(Route::Tasks), None, None),
        ["v1", "tasks", id, "logs"] if param(id).is_some() => {
            by_method(Some(Route::TaskLogs(decode(id)?)), None, None)
        }
        ["v1", "errors"] => by_method(Some(Route::Errors), None, None),
        ["v1", "timeline"] => by_method(Some(Route::Timeline), None, None),
        ["v1", "logs"] => by_method(Some(Route::Logs), None, None),
        ["v1", "jobs"] => by_method(Some(Route::ListJobs), Some(Route::SubmitJob), None),
        ["v1", "jobs", id] if param(id).is_some() => by_method(
            Some(Route::GetJob(decode(id)?)),
            None,
            Some(Route::DeleteJob(decode(id)?)),
        ),
        ["v1", "jobs", id, "logs"] if param(id).is_some() => {
            by_method(Some(Route::JobLogs(decode(id)?)), None, None)
        }
        ["v1", "jobs", id, "stop"] if param(id).is_some() => {
            by_method(None, Some(Route::StopJob(decode(id)?)), None)
        }
        ["v1", "packages"] => by_method(None, Some(Route::UploadPackage), None),
        ["v1", "packages", id] if param(id).is_some() => {
            by_method(Some(Route::GetPackage(decode(id)?)), None, None)
        }
        _ => Err(ApiError::not_found(
            "no_route",
            format!("no route {path} (see GET /v1/openapi.json)"),
        )),
    }
}

/// Path parameter `segment` percent-decoded (borrowed when it has no `%`).
///
/// # Errors
/// 400 `bad_path` when the decoded bytes are not UTF-8.
fn decode(segment: &str) -> Result<Cow<'_, str>, ApiError> {
    if !segment.contains('%') {
        return Ok(Cow::Borrowed(segment));
    }
    wray_api::decode(segment)
        .map(Cow::Owned)
        .map_err(|e| ApiError::bad_request("bad_path", format!("a path parameter: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pattern` with each `{param}` replaced by `x`.
    fn example(pattern: &str) -> String {
        pattern
            .split('/')
            .map(|s| if s.starts_with('{') { "x" } else { s })
            .collect::<Vec<_>>()
            .join("/")
    }

    #[test]
    fn every_route_in_the_table_is_routed_to_its_own_row() {
        for info in ROUTES {
            let method: Method = info.method.parse().unwrap();
            let path = example(info.path);
            let route = route(&method, &path).unwrap_or_else(|e| panic!("{path}: {e:?}"));
            assert_eq!(route.info(), info, "{} {path}", info.method);
        }
    }

    #[test]
    fn unknown_paths_methods_and_long_paths_are_4xx_naming_them() {
        let e = route(&Method::GET, "/v2/nothing").unwrap_err();
        assert_eq!((e.status, e.code), (StatusCode::NOT_FOUND, "no_route"));
        let e = route(&Method::PUT, "/v1/components").unwrap_err();
        assert_eq!(e.status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(e.message.contains("GET, POST"), "{}", e.message);
        let long = format!("/{}", "a".repeat(MAX_PATH));
        assert_eq!(
            route(&Method::GET, &long).unwrap_err().status,
            StatusCode::URI_TOO_LONG
        );
        assert!(route(&Method::POST, "/v1/functions//f").is_err());
        let e = route(&Method::GET, "/v1/components/%ff").unwrap_err();
        assert_eq!((e.status, e.code), (StatusCode::BAD_REQUEST, "bad_path"));
    }

    #[test]
    fn parameters_are_percent_decoded_once() {
        let r = route(&Method::POST, "/v1/functions/x%23y/a%2526b").unwrap();
        assert_eq!(r, Route::Invoke("x#y".into(), "a%26b".into()));
        // An encoded `/` is part of the name (which the name rule refuses).
        let r = route(&Method::GET, "/v1/components/a%2Fb").unwrap();
        assert_eq!(r, Route::GetComponent("a/b".into()));
    }
}
