//! Cluster state, as Ray's state API reports it (`ray.nodes()`,
//! `ray.util.state.list_tasks()`, `ray.cluster_resources()`,
//! `ray.available_resources()`, error info): plain serializable snapshots,
//! read through [`crate::Node`] and published by `wray run` for
//! `wray status`, `wray tasks` and `wray errors`.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::resources::GpuInfo;
use crate::scheduler::task_table::{TaskStatus, TaskTable};

/// One node (Ray's `ray.nodes()` entry).
#[derive(Debug, Clone, Serialize)]
pub struct NodeInfo {
    /// The node's id.
    pub node_id: String,
    /// Whether it is up (always, for the embedded node).
    pub alive: bool,
    /// Its resources in all.
    pub resources: BTreeMap<String, f64>,
    /// Its GPUs: index, name, memory in bytes.
    pub gpus: Vec<GpuSummary>,
}

/// A GPU as [`NodeInfo`] lists it.
#[derive(Debug, Clone, Serialize)]
pub struct GpuSummary {
    /// Its index (the id in `get-gpu-ids`).
    pub index: u32,
    /// Product name.
    pub name: String,
    /// Memory in bytes.
    pub memory: u64,
}

impl From<&GpuInfo> for GpuSummary {
    fn from(g: &GpuInfo) -> Self {
        GpuSummary {
            index: g.index,
            name: g.name.clone(),
            memory: g.memory,
        }
    }
}

/// One task (Ray's `list_tasks()` row).
#[derive(Debug, Clone, Serialize)]
pub struct TaskInfo {
    /// Its id (hex).
    pub task_id: String,
    /// The task that submitted it.
    pub parent_task_id: Option<String>,
    /// Function, `Class.method` or `Class.new`.
    pub function: String,
    /// Where it is.
    pub state: TaskStatus,
    /// The node it runs on.
    pub node_id: String,
    /// The worker thread it ran on.
    pub worker: Option<String>,
    /// Its resource request.
    pub resources: String,
    /// Milliseconds from submission to start (`None`: not started).
    pub queued_ms: Option<f64>,
    /// Milliseconds it ran (so far).
    pub run_ms: Option<f64>,
    /// Its error message, if it failed.
    pub error: Option<String>,
}

/// A failed task's error (Ray's `error_info`).
#[derive(Debug, Clone, Serialize)]
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
}

/// The tasks of `registry`, oldest first.
pub fn tasks(registry: &TaskTable, node_id: &str) -> Vec<TaskInfo> {
    let now = std::time::Instant::now();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    registry
        .tasks()
        .into_iter()
        .map(|r| TaskInfo {
            task_id: r.id.to_string(),
            parent_task_id: r.parent.map(|p| p.to_string()),
            function: r.function,
            state: r.status,
            node_id: node_id.to_string(),
            worker: r.worker.map(|w| w.to_string()),
            resources: r.request.to_string(),
            queued_ms: r
                .started
                .map(|s| ms(s.saturating_duration_since(r.submitted))),
            run_ms: r
                .started
                .map(|s| ms(r.ended.unwrap_or(now).saturating_duration_since(s))),
            error: r.error.map(|e| e.message),
        })
        .collect()
}

/// The errors kept by `registry`, oldest first.
pub fn errors(registry: &TaskTable, node_id: &str) -> Vec<ErrorInfo> {
    registry
        .errors()
        .into_iter()
        .map(|(time, e)| ErrorInfo {
            time: time
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
            task_id: e.task.to_string(),
            function: e.function,
            node_id: node_id.to_string(),
            kind: e.kind.as_str().to_string(),
            message: e.message,
        })
        .collect()
}

/// Seconds since the Unix epoch now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}
