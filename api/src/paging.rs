//! Listings that can grow answer a page at a time: `?limit=N` (at most
//! [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when unsaid) entries after the cursor
//! `?after=C`, and the cursor of the next page (`next`, absent on the
//! last page). The listings of the cluster's state ([`ClusterListQuery`])
//! merge every node's rows in one [`Order`] and name the nodes they could
//! not read ([`Unreachable`]).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Entries of a page when the request names no `limit`.
pub const DEFAULT_LIMIT: usize = 100;

/// The most entries one page may ask for (a larger `limit` is a 400).
pub const MAX_LIMIT: usize = 1000;

/// The query of a paginated listing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Entries to answer, 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Answer the entries after this one: the `next` of the previous
    /// page.
    pub after: Option<String>,
}

impl ListQuery {
    /// The query string (`?limit=..&after=..`, values percent-encoded;
    /// empty when neither is set).
    pub fn to_query(&self) -> String {
        crate::encoding::query_string([
            ("limit", self.limit.map(|l| l.to_string())),
            ("after", self.after.clone()),
        ])
    }
}

/// `GET /v1/tasks`' and `GET /v1/actors`' filter, beside their
/// [`ClusterListQuery`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobFilter {
    /// Only the tasks (or actors) of this job (its id, 16 hex digits): its
    /// driver, and every task, actor and actor call it led to, on any
    /// node.
    pub job: Option<String>,
}

/// `GET /v1/tasks`' view of one node's own table, beside its
/// [`ClusterListQuery`] and [`JobFilter`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LocalQuery {
    /// This node's own task table as it is, no other node asked: a task it
    /// sent to another node is listed too (as it saw it: from its
    /// submission here to its results back, named by the node it was sent
    /// to), which the cluster's listing leaves to that node.
    pub local: Option<bool>,
}

/// The order of a cluster listing's rows (`?order=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// The newest first (the default): by submission or creation time,
    /// latest first.
    #[default]
    Newest,
    /// The oldest first.
    Oldest,
}

impl Order {
    /// Its name in a query (`newest`, `oldest`).
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Newest => "newest",
            Order::Oldest => "oldest",
        }
    }
}

/// The query of a listing that answers for the whole cluster
/// (`GET /v1/tasks`, `/v1/actors`, `/v1/jobs`, `/v1/objects`,
/// `/v1/errors`): every node's rows, merged in one order, a page at a
/// time.
///
/// The cursor (`after`, the `next` of the previous page) names a place in
/// that order, not a row: it never goes stale, and a row that arrives
/// later is listed where it belongs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ClusterListQuery {
    /// Rows to answer, 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Answer the rows after this place: the `next` of the previous page
    /// (opaque).
    pub after: Option<String>,
    /// `newest` (the default) or `oldest` first.
    #[param(inline)]
    pub order: Option<Order>,
    /// Only the rows of this node (its id, `node-` and 16 hex digits):
    /// the tasks it ran, the actors living on it, the jobs it runs, the
    /// objects its store holds, the errors of its tasks.
    pub node: Option<String>,
    /// Seconds each other node is waited for, above 0 and at most 60
    /// (default 10); a node past it is named in `unreachable`.
    #[param(exclusive_minimum = 0, maximum = 60)]
    pub timeout: Option<f64>,
}

impl ClusterListQuery {
    /// The query string (`?limit=..&after=..&order=..&node=..`, values
    /// percent-encoded; empty when none is set).
    pub fn to_query(&self) -> String {
        crate::encoding::query_string([
            ("limit", self.limit.map(|l| l.to_string())),
            ("after", self.after.clone()),
            ("order", self.order.map(|o| o.as_str().to_string())),
            ("node", self.node.clone()),
            ("timeout", self.timeout.map(|t| t.to_string())),
        ])
    }
}

/// A node of the cluster whose rows a listing lacks: it did not answer
/// within the listing's deadline, or answered with an error. The rows of
/// every other node are there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Unreachable {
    /// The node's id.
    pub node_id: String,
    /// What went wrong (`no answer within 10s`, ...).
    pub error: String,
}
