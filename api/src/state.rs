//! The node's state, as Ray's state API reports it: health, nodes,
//! resources, tasks, objects and errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::paging::Unreachable;

/// `GET /healthz`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`, or `degraded` when the control plane does not answer.
    pub status: String,
    /// The node's id.
    pub node_id: String,
    /// The control plane as the node sees it.
    pub control_plane: ControlPlaneHealth,
}

/// The control plane as a node sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ControlPlaneHealth {
    /// `embedded`, or `etcd at ..`.
    pub backend: String,
    /// Whether it answers now.
    pub reachable: bool,
    /// Why not, when it does not.
    #[serde(default)]
    pub error: Option<String>,
}

/// One node (Ray's `ray.nodes()` entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NodeInfo {
    /// The node's id.
    pub node_id: String,
    /// Whether it is up.
    pub alive: bool,
    /// Its resources in all, by name (`CPU`, `GPU`, `memory` in bytes,
    /// custom ones).
    pub resources: BTreeMap<String, f64>,
    /// Its GPUs (known for the node answering; empty for the others).
    pub gpus: Vec<GpuSummary>,
    /// `ALIVE`, `DRAINING` (alive, stopping: it takes no new work) or
    /// `DEAD` (Ray's node states).
    #[serde(default = "alive")]
    pub state: String,
    /// Its node-to-node channel (`host:port`), in a cluster.
    #[serde(default)]
    pub address: Option<String>,
    /// The URL of its HTTP API, when published.
    #[serde(default)]
    pub http_address: Option<String>,
    /// Its resources free now, by name.
    #[serde(default)]
    pub resources_available: BTreeMap<String, f64>,
    /// Tasks running on it now.
    #[serde(default)]
    pub running_tasks: u64,
    /// Bytes its object store holds.
    #[serde(default)]
    pub object_store_used: u64,
    /// Bytes of its shared-memory object store.
    #[serde(default)]
    pub object_store_capacity: u64,
    /// Objects its store holds spilled to files now.
    #[serde(default)]
    pub object_store_spilled: u64,
    /// Bytes of object values it sent to other nodes so far (a counter:
    /// its rate is the node's outgoing transfer rate).
    #[serde(default)]
    pub object_bytes_sent: u64,
    /// Bytes of object values it received from other nodes so far.
    #[serde(default)]
    pub object_bytes_received: u64,
    /// When it was found dead (ms since the Unix epoch).
    #[serde(default)]
    pub died_at_ms: Option<u64>,
    /// Why the answering node does not place work on this live node now,
    /// if it does not: `unprobed` (it has not passed a handshake with the
    /// answering node yet), `unreachable` (a connection to it failed),
    /// `stalled` (it stopped answering while it held a task) or
    /// `quarantined` (it failed authentication: a wrong cluster token);
    /// each until it answers a probe again. `null` when work is placed on
    /// it (and for the answering node itself and dead nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
    /// What showed it, with `unusable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable_reason: Option<String>,
}

fn alive() -> String {
    "ALIVE".to_string()
}

/// A GPU of a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GpuSummary {
    /// Its index (the id in `get-gpu-ids`).
    pub index: u32,
    /// Product name.
    pub name: String,
    /// Memory in bytes.
    pub memory: u64,
}

/// `GET /v1/resources`'s answer, by resource name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Resources {
    /// Resources in all (Ray's `ray.cluster_resources()`).
    pub total: BTreeMap<String, f64>,
    /// Resources free now (Ray's `ray.available_resources()`).
    pub available: BTreeMap<String, f64>,
}

/// One task (Ray's `list_tasks()` row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskInfo {
    /// Its id (hex).
    pub task_id: String,
    /// The task that submitted it.
    pub parent_task_id: Option<String>,
    /// Function, `Class.method` or `Class.new`.
    pub function: String,
    /// `PENDING_ARGS`, `QUEUED`, `RUNNING`, `BLOCKED`, `FINISHED`,
    /// `FAILED` or `CANCELLED`.
    pub state: String,
    /// The node it runs on (or ran on): the node that submitted it while
    /// it waits there, the node it was sent to once it was.
    pub node_id: String,
    /// The worker thread it ran on (absent for a task run on another
    /// node that did not answer).
    pub worker: Option<String>,
    /// When it was submitted, in seconds since the Unix epoch (0 when
    /// unknown): the listings' order.
    #[serde(default)]
    pub submitted_at: f64,
    /// Its resource request.
    pub resources: String,
    /// Milliseconds from submission to start (absent: not started).
    pub queued_ms: Option<f64>,
    /// Milliseconds it ran (so far).
    pub run_ms: Option<f64>,
    /// Its error message, if it failed.
    pub error: Option<String>,
}

/// A page of `GET /v1/tasks`: the cluster's tasks, newest submission
/// first (`?order=oldest`: oldest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskList {
    /// The tasks.
    pub tasks: Vec<TaskInfo>,
    /// The cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The nodes whose tasks are not in it (no answer in time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<Unreachable>,
}

/// One object of a node's store (an object held by several nodes is a
/// row of each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ObjectInfo {
    /// Its id (40 hex digits).
    pub id: String,
    /// Size of its value in bytes (0 while pending, and for errors).
    pub size: u64,
    /// `pending`, `error`, `heap`, `shared-memory` or `spilled`.
    pub location: String,
    /// How many holders keep it alive.
    pub holders: u32,
    /// The node whose store holds it.
    #[serde(default)]
    pub node_id: String,
    /// When that store took it in, in seconds since the Unix epoch (0
    /// when unknown): the listings' order.
    #[serde(default)]
    pub created_at: f64,
}

/// A page of `GET /v1/objects`: the objects of every node's store, newest
/// first (`?order=oldest`: oldest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ObjectList {
    /// The objects.
    pub objects: Vec<ObjectInfo>,
    /// The cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The nodes whose objects are not in it (no answer in time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<Unreachable>,
}

/// A failed task's error (Ray's `error_info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorInfo {
    /// When it failed, in seconds since the Unix epoch.
    pub time: f64,
    /// The task that failed.
    pub task_id: String,
    /// Its function.
    pub function: String,
    /// The node it ran on.
    pub node_id: String,
    /// The error kind (`timeout`, `out-of-memory`, ...).
    pub kind: String,
    /// The message.
    pub message: String,
    /// The errors it passes on, nearest first; the last is the root.
    pub causes: Vec<CauseInfo>,
}

/// One error of a cause chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CauseInfo {
    /// The task that raised it.
    pub task_id: String,
    /// That task's function.
    pub function: String,
    /// The error kind.
    pub kind: String,
    /// The message.
    pub message: String,
}

/// A page of `GET /v1/errors`: the cluster's errors, newest first
/// (`?order=oldest`: oldest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorList {
    /// The errors.
    pub errors: Vec<ErrorInfo>,
    /// The cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The nodes whose errors are not in it (no answer in time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<Unreachable>,
}

/// `GET /v1/tasks/{id}/logs`'s answer: what a task outside a job with a
/// log of its own wrote (an HTTP call, the tasks it submitted, a method
/// of an actor made over HTTP), within the node's per-task bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TaskLogs {
    /// The task's id (32 hex digits).
    pub task_id: String,
    /// Its function, `Class.method` or `Class.new`.
    pub function: String,
    /// What it wrote to stdout (invalid UTF-8 replaced), within the bound.
    pub stdout: String,
    /// What it wrote to stderr (invalid UTF-8 replaced), within the bound.
    pub stderr: String,
    /// Bytes it wrote past the bound (its first 64 KiB are kept), dropped.
    pub dropped: u64,
}

/// A node's state as `wray run` publishes it (a session's `state.json`)
/// and `wray status` prints it (read over HTTP from `/v1/nodes`,
/// `/v1/resources`, `/v1/errors` and `/metrics` with `--address`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusSnapshot {
    /// When it was taken (seconds since the Unix epoch; 0 when unknown).
    #[serde(default)]
    pub time: f64,
    /// The nodes.
    pub nodes: Vec<NodeInfo>,
    /// Resources in all, by name.
    pub cluster_resources: BTreeMap<String, f64>,
    /// Resources free now, by name.
    pub available_resources: BTreeMap<String, f64>,
    /// Tasks by state (`FINISHED`, `RUNNING`, ..).
    pub task_counts: BTreeMap<String, u64>,
    /// Pending and running tasks (a bounded few).
    #[serde(default)]
    pub tasks: Vec<TaskInfo>,
    /// Errors of failed tasks, oldest first.
    #[serde(default)]
    pub errors: Vec<ErrorInfo>,
    /// Finished tasks the session could not log (its disk was full).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tasks_not_logged: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A session's object listing (`objects.json`, `wray objects`): the
/// first objects by id, and how many there are in all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectListing {
    /// The objects listed, by id.
    pub objects: Vec<ObjectInfo>,
    /// How many objects the node holds.
    pub total: u64,
}

/// `GET /v1/logs`' query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogsQuery {
    /// The node whose log to read (its id; default: the node asked).
    pub node: Option<String>,
    /// Bytes of the log's end to answer, 1 to 1 MiB (default 64 KiB).
    #[param(minimum = 1, maximum = 1048576)]
    pub bytes: Option<u64>,
    /// Seconds another node is waited for, above 0 and at most 60
    /// (default 10).
    #[param(exclusive_minimum = 0, maximum = 60)]
    pub timeout: Option<f64>,
}

/// `GET /v1/logs`' answer: the end of a node's log, and the tasks whose
/// output it keeps (each read whole with `GET /v1/tasks/{id}/logs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NodeLogs {
    /// The node.
    pub node_id: String,
    /// Its log file (`node.log` in the node's directory), when it keeps
    /// one (a node run in a process of the caller's own has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The file's size in bytes.
    pub size: u64,
    /// Where `text` begins in the file (bytes).
    pub offset: u64,
    /// The file's last bytes, from the first whole line (invalid UTF-8
    /// replaced).
    pub text: String,
    /// The tasks whose output the node keeps, the latest writer first.
    pub tasks: Vec<TaskOutputInfo>,
}

/// A task whose output a node keeps (`GET /v1/tasks/{id}/logs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TaskOutputInfo {
    /// The task's id (32 hex digits).
    pub task_id: String,
    /// Its function, `Class.method` or `Class.new`.
    pub function: String,
    /// Bytes kept (stdout and stderr together).
    pub bytes: u64,
    /// Bytes it wrote past the bound, dropped.
    pub dropped: u64,
}

/// The most tasks of each node `GET /v1/timeline` draws when the query
/// names no `limit`.
pub const DEFAULT_TIMELINE_TASKS: usize = 10_000;

/// The most tasks of each node `GET /v1/timeline` may be asked to draw
/// (a node's task table keeps its last 100,000).
pub const MAX_TIMELINE_TASKS: usize = 100_000;

/// `GET /v1/timeline`'s query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineQuery {
    /// The tasks of each node to draw, its latest submitted, 1 to
    /// 100,000 (default 10,000).
    #[param(minimum = 1, maximum = 100000)]
    pub limit: Option<usize>,
    /// Only this node's tasks (its id).
    pub node: Option<String>,
    /// Seconds each other node is waited for, above 0 and at most 60
    /// (default 10); a node past it is named in `unreachable`.
    #[param(exclusive_minimum = 0, maximum = 60)]
    pub timeout: Option<f64>,
}

impl TimelineQuery {
    /// The query string (`?limit=..&node=..`; empty when neither is set).
    pub fn to_query(&self) -> String {
        crate::encoding::query_string([
            ("limit", self.limit.map(|l| l.to_string())),
            ("node", self.node.clone()),
            ("timeout", self.timeout.map(|t| t.to_string())),
        ])
    }
}
