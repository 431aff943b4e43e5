//! The route table: every route's method, path pattern and summary, in one
//! list that the router ([`route`]), the metrics (by pattern) and the
//! OpenAPI document ([`crate::openapi`]) are all built from.

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
    RouteInfo { method: "GET", path: "/v1/openapi.json", summary: "This document: the routes and every deployed function's JSON Schemas" },
    RouteInfo { method: "GET", path: "/v1/components", summary: "The deployed components" },
    RouteInfo { method: "POST", path: "/v1/components", summary: "Deploy a component (the body: its bytes; `?name=` names it)" },
    RouteInfo { method: "GET", path: "/v1/components/{name}", summary: "One deployed component: its functions, actor classes and their schemas" },
    RouteInfo { method: "DELETE", path: "/v1/components/{name}", summary: "Undeploy a component: calls already made finish on it" },
    RouteInfo { method: "POST", path: "/v1/functions/{component}/{function}", summary: "Call a function: the body is the JSON array of its arguments; `?timeout=` seconds, `?async=true` answers with object ids at once" },
    RouteInfo { method: "GET", path: "/v1/objects/{id}", summary: "An object of an async call: JSON, or raw bytes with `Accept: application/octet-stream`; `?timeout=` seconds to wait" },
    RouteInfo { method: "GET", path: "/v1/actors", summary: "The actors created over HTTP" },
    RouteInfo { method: "POST", path: "/v1/actors", summary: "Create an actor: `{\"component\", \"class\", \"args\"}`" },
    RouteInfo { method: "POST", path: "/v1/actors/{id}/{method}", summary: "Call a method of an actor: the body is the JSON array of its arguments" },
    RouteInfo { method: "DELETE", path: "/v1/actors/{id}", summary: "Kill an actor" },
    RouteInfo { method: "GET", path: "/v1/nodes", summary: "The nodes and their resources" },
    RouteInfo { method: "GET", path: "/v1/resources", summary: "Total and available resources" },
    RouteInfo { method: "GET", path: "/v1/tasks", summary: "Pending, running and recently finished tasks" },
    RouteInfo { method: "GET", path: "/v1/objects", summary: "The objects in the store" },
    RouteInfo { method: "GET", path: "/v1/errors", summary: "Errors of failed tasks, with their cause chains" },
    RouteInfo { method: "GET", path: "/v1/timeline", summary: "The timeline of finished tasks (Chrome trace JSON)" },
    RouteInfo { method: "GET", path: "/v1/jobs", summary: "The jobs, oldest first: status, times, log size" },
    RouteInfo { method: "POST", path: "/v1/jobs", summary: "Submit a job: `{\"component\", \"args\"}` runs the component's `main(args)` in the background" },
    RouteInfo { method: "GET", path: "/v1/jobs/{id}", summary: "One job: its status, and why it failed or stopped" },
    RouteInfo { method: "DELETE", path: "/v1/jobs/{id}", summary: "Forget a finished job and its log" },
    RouteInfo { method: "GET", path: "/v1/jobs/{id}/logs", summary: "What the job's guests wrote (text); `?offset=` bytes to start from, `?follow=true` streams until the job ends" },
    RouteInfo { method: "POST", path: "/v1/jobs/{id}/stop", summary: "Stop a job: its driver, tasks and actors are cancelled" },
    RouteInfo { method: "POST", path: "/v1/components/{name}/rollback", summary: "Make a kept version of a component current again: `?version=N`" },
];

/// A request matched to its route, with its path parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    GetComponent(&'a str),
    /// `DELETE /v1/components/{name}`
    Undeploy(&'a str),
    /// `POST /v1/functions/{component}/{function}`
    Invoke(&'a str, &'a str),
    /// `GET /v1/objects/{id}`
    GetObject(&'a str),
    /// `GET /v1/actors`
    ListActors,
    /// `POST /v1/actors`
    CreateActor,
    /// `POST /v1/actors/{id}/{method}`
    CallActor(&'a str, &'a str),
    /// `DELETE /v1/actors/{id}`
    KillActor(&'a str),
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
    GetJob(&'a str),
    /// `DELETE /v1/jobs/{id}`
    DeleteJob(&'a str),
    /// `GET /v1/jobs/{id}/logs`
    JobLogs(&'a str),
    /// `POST /v1/jobs/{id}/stop`
    StopJob(&'a str),
    /// `POST /v1/components/{name}/rollback`
    Rollback(&'a str),
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
            Route::Invoke(..) => 7,
            Route::GetObject(_) => 8,
            Route::ListActors => 9,
            Route::CreateActor => 10,
            Route::CallActor(..) => 11,
            Route::KillActor(_) => 12,
            Route::Nodes => 13,
            Route::Resources => 14,
            Route::Tasks => 15,
            Route::Objects => 16,
            Route::Errors => 17,
            Route::Timeline => 18,
            Route::ListJobs => 19,
            Route::SubmitJob => 20,
            Route::GetJob(_) => 21,
            Route::DeleteJob(_) => 22,
            Route::JobLogs(_) => 23,
            Route::StopJob(_) => 24,
            Route::Rollback(_) => 25,
        };
        &ROUTES[index]
    }
}

/// The route of `method` and `path` (no query).
///
/// # Errors
/// 414 for a path over [`MAX_PATH`] bytes; 404 for a path no route has;
/// 405 (naming the methods it has) for a path with another method.
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
        let found = match *method {
            Method::GET => get,
            Method::POST => post,
            Method::DELETE => delete,
            _ => None,
        };
        found.ok_or_else(|| {
            let allowed: Vec<&str> = [("GET", get), ("POST", post), ("DELETE", delete)]
                .iter()
                .filter(|(_, r)| r.is_some())
                .map(|(m, _)| *m)
                .collect();
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
            Some(Route::GetComponent(name)),
            None,
            Some(Route::Undeploy(name)),
        ),
        ["v1", "components", name, "rollback"] if param(name).is_some() => {
            by_method(None, Some(Route::Rollback(name)), None)
        }
        ["v1", "functions", c, f] if param(c).is_some() && param(f).is_some() => {
            by_method(None, Some(Route::Invoke(c, f)), None)
        }
        ["v1", "objects"] => by_method(Some(Route::Objects), None, None),
        ["v1", "objects", id] if param(id).is_some() => {
            by_method(Some(Route::GetObject(id)), None, None)
        }
        ["v1", "actors"] => by_method(Some(Route::ListActors), Some(Route::CreateActor), None),
        ["v1", "actors", id] if param(id).is_some() => {
            by_method(None, None, Some(Route::KillActor(id)))
        }
        ["v1", "actors", id, m] if param(id).is_some() && param(m).is_some() => {
            by_method(None, Some(Route::CallActor(id, m)), None)
        }
        ["v1", "nodes"] => by_method(Some(Route::Nodes), None, None),
        ["v1", "resources"] => by_method(Some(Route::Resources), None, None),
        ["v1", "tasks"] => by_method(Some(Route::Tasks), None, None),
        ["v1", "errors"] => by_method(Some(Route::Errors), None, None),
        ["v1", "timeline"] => by_method(Some(Route::Timeline), None, None),
        ["v1", "jobs"] => by_method(Some(Route::ListJobs), Some(Route::SubmitJob), None),
        ["v1", "jobs", id] if param(id).is_some() => {
            by_method(Some(Route::GetJob(id)), None, Some(Route::DeleteJob(id)))
        }
        ["v1", "jobs", id, "logs"] if param(id).is_some() => {
            by_method(Some(Route::JobLogs(id)), None, None)
        }
        ["v1", "jobs", id, "stop"] if param(id).is_some() => {
            by_method(None, Some(Route::StopJob(id)), None)
        }
        _ => Err(ApiError::not_found(
            "no_route",
            format!("no route {path} (see GET /v1/openapi.json)"),
        )),
    }
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
    }
}
