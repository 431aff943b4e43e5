//! The query parameters a route takes (the typed forms in [`wray_api`]:
//! `InvokeQuery`, `ObjectQuery`, `ListQuery`, `ClusterListQuery`,
//! `JobFilter`, `TimelineQuery`, `LogsQuery`, `DeployQuery`,
//! `JobLogsQuery`), parsed with a bound on every value: a parameter the
//! route does not take, or a value out of range, is a 400 `bad_query`
//! naming it. Values are percent-decoded once.

use std::time::Duration;

use wray_api::{Order, DEFAULT_LIMIT, DEFAULT_TIMELINE_TASKS, MAX_LIMIT, MAX_TIMELINE_TASKS};

use crate::config::MAX_TIMEOUT;
use crate::error::ApiError;
use crate::routes::Route;
use wray_api::ErrorCode;

/// The query parameters of a request.
#[derive(Default)]
pub(crate) struct Query {
    /// `timeout=` seconds (calls, actor calls, objects; how long each node
    /// is waited for, for what the cluster's nodes answer together).
    pub(crate) timeout: Option<Duration>,
    /// `async=`: answer 202 with object ids.
    pub(crate) asynchronous: bool,
    /// `name=` of a deploy.
    pub(crate) name: Option<String>,
    /// `GET /v1/jobs/{id}/logs`: the byte to start from.
    pub(crate) offset: u64,
    /// `GET /v1/jobs/{id}/logs`: stream until the job ends.
    pub(crate) follow: bool,
    /// `POST /v1/components/{name}/rollback`: the version to make current.
    pub(crate) version: Option<u64>,
    /// A listing's page size ([`DEFAULT_LIMIT`] when unsaid); the
    /// timeline's tasks per node ([`DEFAULT_TIMELINE_TASKS`]).
    pub(crate) limit: usize,
    /// A listing's cursor: answer what follows it.
    pub(crate) after: Option<String>,
    /// `GET /v1/tasks` and `GET /v1/actors`: only those of this job.
    pub(crate) job: Option<wray_host::JobId>,
    /// A cluster listing's order.
    pub(crate) order: Order,
    /// A cluster listing's, the timeline's or the logs' node (a valid
    /// node id).
    pub(crate) node: Option<String>,
    /// `GET /v1/logs`: bytes of the log's end.
    pub(crate) bytes: Option<u64>,
    /// `GET /v1/tasks?local=true`: this node's own task table, as it is.
    pub(crate) local: bool,
}

/// The most bytes of a node's log `GET /v1/logs` answers.
pub(crate) const MAX_LOG_BYTES: u64 = 1 << 20;

/// How long a node's part of a gathered answer is waited for, unless the
/// request says (`?timeout=`): 10 s (Ray's `ray list` waits 30 s for the
/// whole answer).
pub(crate) const NODE_DEADLINE: Duration = Duration::from_secs(10);

/// The longest `?timeout=` a gathered answer takes.
pub(crate) const MAX_NODE_DEADLINE: Duration = Duration::from_secs(60);

/// Whether `r` is answered for the whole cluster (and, relayed from
/// another node, with this node's part).
pub(crate) fn gathered(r: &Route<'_>) -> bool {
    cluster_listing(r) || matches!(r, Route::Timeline | Route::Logs)
}

/// Whether `r` is a listing of the cluster's state: every node's rows,
/// merged (`?order=`, `?node=`).
pub(crate) fn cluster_listing(r: &Route<'_>) -> bool {
    matches!(
        r,
        Route::Tasks | Route::ListActors | Route::Objects | Route::Errors | Route::ListJobs
    )
}

impl Query {
    /// Parses `query`, refusing parameters `r` does not take.
    ///
    /// # Errors
    /// 400 `bad_query` naming the parameter and what it takes.
    pub(crate) fn parse(query: &str, r: &Route<'_>) -> Result<Self, ApiError> {
        let mut q = Query {
            limit: if *r == Route::Timeline {
                DEFAULT_TIMELINE_TASKS
            } else {
                DEFAULT_LIMIT
            },
            ..Query::default()
        };
        let listing = *r == Route::ListComponents || cluster_listing(r);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let value = wray_api::decode(raw).map_err(|e| {
                ApiError::bad_request(ErrorCode::BadQuery, format!("{}: {e}", cut(key)))
            })?;
            let value = value.as_str();
            match (key, r) {
                ("timeout", Route::Invoke(..) | Route::CallActor(..) | Route::GetObject(_)) => {
                    q.timeout = Some(parse_timeout(value)?);
                }
                ("timeout", _)
                    if cluster_listing(r) || matches!(r, Route::Timeline | Route::Logs) =>
                {
                    let t = parse_timeout(value)?;
                    if t > MAX_NODE_DEADLINE {
                        return Err(ApiError::bad_request(
                            ErrorCode::BadQuery,
                            format!(
                                "timeout={}: a node is waited for {} s at most",
                                cut(value),
                                MAX_NODE_DEADLINE.as_secs()
                            ),
                        ));
                    }
                    q.timeout = Some(t);
                }
                ("async", Route::Invoke(..)) => q.asynchronous = parse_bool(key, value)?,
                ("follow", Route::JobLogs(_)) => q.follow = parse_bool(key, value)?,
                ("offset", Route::JobLogs(_)) => {
                    q.offset = value.parse().map_err(|_| {
                        ApiError::bad_request(
                            ErrorCode::BadQuery,
                            format!(
                                "offset={}: expected a byte offset (0 to 2^64-1)",
                                cut(value)
                            ),
                        )
                    })?;
                }
                ("name", Route::Deploy) => q.name = Some(value.to_string()),
                ("version", Route::Rollback(_)) => {
                    q.version = Some(value.parse().map_err(|_| {
                        ApiError::bad_request(
                            ErrorCode::BadQuery,
                            format!(
                                "version={}: expected a version number (1, 2, ..)",
                                cut(value)
                            ),
                        )
                    })?);
                }
                ("limit", Route::Timeline) => {
                    q.limit = parse_limit(value, MAX_TIMELINE_TASKS, "tasks of each node")?;
                }
                ("limit", _) if listing => {
                    q.limit = parse_limit(value, MAX_LIMIT, "entries per page")?;
                }
                ("after", _) if listing => q.after = Some(value.to_string()),
                ("order", _) if cluster_listing(r) => {
                    q.order = match value {
                        "newest" => Order::Newest,
                        "oldest" => Order::Oldest,
                        other => {
                            return Err(ApiError::bad_request(
                                ErrorCode::BadQuery,
                                format!("order={}: expected newest or oldest", cut(other)),
                            ))
                        }
                    };
                }
                ("node", _) if cluster_listing(r) || matches!(r, Route::Timeline | Route::Logs) => {
                    wray_control_plane::NodeId::parse(value).map_err(|e| {
                        ApiError::bad_request(
                            ErrorCode::BadQuery,
                            format!("node={}: {e}", cut(value)),
                        )
                    })?;
                    q.node = Some(value.to_string());
                }
                ("local", Route::Tasks) => q.local = parse_bool(key, value)?,
                ("bytes", Route::Logs) => {
                    q.bytes = Some(
                        value
                            .parse::<u64>()
                            .ok()
                            .filter(|n| (1..=MAX_LOG_BYTES).contains(n))
                            .ok_or_else(|| {
                                ApiError::bad_request(
                                    ErrorCode::BadQuery,
                                    format!(
                                        "bytes={}: expected 1 to {MAX_LOG_BYTES} bytes of the log",
                                        cut(value)
                                    ),
                                )
                            })?,
                    );
                }
                ("job", Route::Tasks | Route::ListActors) => {
                    q.job = Some(value.parse().map_err(|e: wray_host::BadId| {
                        ApiError::bad_request(
                            ErrorCode::BadQuery,
                            format!("job={}: {e}", cut(value)),
                        )
                    })?);
                }
                _ => {
                    return Err(ApiError::bad_request(
                        ErrorCode::BadQuery,
                        format!("{} takes no query parameter `{}`", r.info().path, cut(key)),
                    ))
                }
            }
        }
        Ok(q)
    }
}

/// At most 64 characters of `s`, for a message.
fn cut(s: &str) -> String {
    s.chars().take(64).collect()
}

/// `key=value` as a flag: `true`, `1` or nothing; `false` or `0`.
fn parse_bool(key: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" | "1" | "" => Ok(true),
        "false" | "0" => Ok(false),
        other => Err(ApiError::bad_request(
            ErrorCode::BadQuery,
            format!("{key}={}: expected true or false", cut(other)),
        )),
    }
}

/// `limit=`: 1 to `max` (of `what`).
fn parse_limit(value: &str, max: usize, what: &str) -> Result<usize, ApiError> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(
                ErrorCode::BadQuery,
                format!("limit={}: expected 1 to {max} {what}", cut(value)),
            )
        })
}

/// `timeout=` seconds: a number above 0 and at most [`MAX_TIMEOUT`].
fn parse_timeout(value: &str) -> Result<Duration, ApiError> {
    let bad = || {
        ApiError::bad_request(
            ErrorCode::BadQuery,
            format!(
                "timeout={}: expected seconds above 0 and at most {}",
                cut(value),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_decoded_and_bounded() {
        let q = Query::parse("name=x%23y", &Route::Deploy).unwrap();
        assert_eq!(q.name.as_deref(), Some("x#y"));
        let q = Query::parse("limit=1000&after=a%26b", &Route::ListComponents).unwrap();
        assert_eq!((q.limit, q.after.as_deref()), (1000, Some("a&b")));
        assert_eq!(
            Query::parse("", &Route::Tasks).unwrap().limit,
            DEFAULT_LIMIT
        );
        for bad in [
            "limit=0",
            "limit=1001",
            "limit=x",
            "after=%ff",
            "order=up",
            "node=n1",
            "job=1",
        ] {
            let e = Query::parse(bad, &Route::Objects).err().unwrap();
            assert_eq!(e.code, ErrorCode::BadQuery, "{bad}");
        }
        let q = Query::parse("order=oldest&node=node-00000000000000ff", &Route::Tasks).unwrap();
        assert_eq!(
            (q.order, q.node.as_deref()),
            (Order::Oldest, Some("node-00000000000000ff"))
        );
        assert_eq!(
            Query::parse("", &Route::Tasks).unwrap().order,
            Order::Newest
        );
        let q = Query::parse("limit=100000", &Route::Timeline).unwrap();
        assert_eq!(q.limit, MAX_TIMELINE_TASKS);
        assert_eq!(
            Query::parse("", &Route::Timeline).unwrap().limit,
            DEFAULT_TIMELINE_TASKS
        );
        assert!(Query::parse("bytes=1048577", &Route::Logs).is_err());
        let q = Query::parse("timeout=0.5", &Route::Objects).unwrap();
        assert_eq!(q.timeout, Some(Duration::from_millis(500)));
        assert!(Query::parse("timeout=61", &Route::Tasks).is_err());
        let e = Query::parse("limit=5", &Route::Nodes).err().unwrap();
        assert!(
            e.message.contains("no query parameter `limit`"),
            "{}",
            e.message
        );
    }
}
