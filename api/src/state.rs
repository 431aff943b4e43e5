//! The node's state, as Ray's state API reports it: health, nodes,
//! resources, tasks, objects and errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

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
    /// `ALIVE` or `DEAD` (Ray's node states).
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
    /// The node it runs on.
    pub node_id: String,
    /// The worker thread it ran on.
    pub worker: Option<String>,
    /// Its resource request.
    pub resources: String,
    /// Milliseconds from submission to start (absent: not started).
    pub queued_ms: Option<f64>,
    /// Milliseconds it ran (so far).
    pub run_ms: Option<f64>,
    /// Its error message, if it failed.
    pub error: Option<String>,
}

/// A page of `GET /v1/tasks`: oldest submission first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskList {
    /// The tasks.
    pub tasks: Vec<TaskInfo>,
    /// The cursor of the next page (a task id); absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// One object of the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ObjectInfo {
    /// Its id (40 hex digits).
    pub id: String,
    /// Size of its value in bytes (0 while pending, and for errors).
    pub size: u64,
    /// `pending`, `error`, `heap`, `shared-memory` or `spilled`.
    pub location: String,
    /// How many holders keep it alive.
    pub holders: u32,
}

/// A page of `GET /v1/objects`, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ObjectList {
    /// The objects, ordered by id.
    pub objects: Vec<ObjectInfo>,
    /// The cursor of the next page (an object id); absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
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

/// A page of `GET /v1/errors`: oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorList {
    /// The errors.
    pub errors: Vec<ErrorInfo>,
    /// The cursor of the next page (a task id); absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
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
