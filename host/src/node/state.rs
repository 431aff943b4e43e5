//! Cluster state, as Ray's state API reports it (`ray.nodes()`,
//! `ray.util.state.list_tasks()`, `ray.cluster_resources()`,
//! `ray.available_resources()`, error info): plain serializable snapshots,
//! read through [`crate::Node`] and published by `wray run` for
//! `wray status`, `wray tasks` and `wray errors`.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use wray_control_plane::{ActorId, JobId};

use crate::error::TaskError;
use crate::resources::GpuInfo;
use crate::scheduler::actor_table::ActorTable;
use crate::scheduler::task_table::{TaskRow, TaskStatus, TaskTable};

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
    /// The node it runs on: this one, or the one it was sent to.
    pub node_id: String,
    /// Whether it was sent to another node (`node_id`), which lists it
    /// too, with its worker.
    pub forwarded: bool,
    /// The worker thread it ran on.
    pub worker: Option<String>,
    /// When it was submitted, in seconds since the Unix epoch (0 when the
    /// node's start on the wall clock is not known).
    pub submitted_at: f64,
    /// Its resource request.
    pub resources: String,
    /// Milliseconds from submission to start (`None`: not started).
    pub queued_ms: Option<f64>,
    /// Milliseconds it ran (so far).
    pub run_ms: Option<f64>,
    /// Its error message, if it failed.
    pub error: Option<String>,
}

/// One actor of a node (Ray's `list_actors()` row): an instance living
/// here, or a stub of one living on another node, alive or recently dead.
#[derive(Debug, Clone, Serialize)]
pub struct ActorInfo {
    /// Its id (hex).
    pub actor_id: String,
    /// Its class.
    pub class: String,
    /// The name its component was loaded under, when this node loaded it.
    pub component: Option<String>,
    /// Its component's content hash.
    pub component_hash: String,
    /// The job it belongs to (hex).
    pub job_id: String,
    /// `PENDING_CREATION` (its constructor has not ended), `ALIVE` or
    /// `DEAD`, as Ray names them.
    pub state: &'static str,
    /// Why it died, once it has.
    pub death_cause: Option<String>,
    /// The node its instance lives on (this one, unless a stub).
    pub node_id: String,
    /// Whether its instance lives on another node (this is a stub).
    pub stub: bool,
    /// Its name in the actor directory, if it took one.
    pub name: Option<String>,
    /// Created detached (outlives its job and handles).
    pub detached: bool,
    /// Calls taken to run here, its constructor's runs included (a stub
    /// counts the calls it sent).
    pub calls: u64,
    /// Calls waiting in its queue here.
    pub queued: usize,
    /// Whether a call runs now.
    pub running: bool,
    /// Times it was restarted on another node.
    pub restarts: u32,
    /// Other nodes holding its handle (an instance here).
    pub holders: usize,
    /// When this node made it (its instance, or its stub), in seconds
    /// since the Unix epoch.
    pub created_at: f64,
}

/// Up to `limit` actors of `table` (on node `node_id`), by id after
/// `after`, of job `job` only when given: its instances here, and the
/// stubs it owns of actors whose node is not alive (`alive` says which
/// nodes are), whose state is this node's word then; a stub of an actor
/// on a live node is that node's to list.
pub(crate) fn actors(
    table: &ActorTable,
    node_id: &str,
    after: Option<ActorId>,
    limit: usize,
    job: Option<JobId>,
    alive: &dyn Fn(&str) -> bool,
) -> Vec<ActorInfo> {
    table
        .page(after, limit, job)
        .into_iter()
        .filter(|a| a.home.as_ref().is_none_or(|h| h.owner && !alive(&h.node())))
        .map(|a| {
            let now = a.snapshot();
            let lost = a.home.as_ref().map(|h| h.node());
            let restarts_left = a.restarts.max_restarts > now.restarted;
            let (state, lost_cause) = match (&now.dead, now.alive, &lost) {
                (Some(_), _, _) => ("DEAD", None),
                (None, _, Some(_)) if restarts_left => ("RESTARTING", None),
                (None, _, Some(node)) => ("DEAD", Some(format!("its node {node} died"))),
                (None, true, None) => ("ALIVE", None),
                (None, false, None) => ("PENDING_CREATION", None),
            };
            ActorInfo {
                actor_id: a.id.to_string(),
                class: a.class.clone(),
                component: now.component_name.map(|n| n.to_string()),
                component_hash: a.component.to_string(),
                job_id: a.id.job().to_string(),
                state,
                death_cause: now.dead.map(|e| e.to_string()).or(lost_cause),
                node_id: a
                    .home
                    .as_ref()
                    .map_or_else(|| node_id.to_string(), |h| h.node()),
                stub: a.home.is_some(),
                name: a.name.get().cloned(),
                detached: a.detached,
                calls: now.calls,
                queued: now.queued,
                running: now.running,
                restarts: now.restarted,
                holders: now.holders,
                created_at: unix_secs(a.created),
            }
        })
        .collect()
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
    /// Whether another node ran it (`node_id`), which keeps the error
    /// too.
    pub forwarded: bool,
    /// The error kind (`timeout`, `out-of-memory`, ...).
    pub kind: String,
    /// The message.
    pub message: String,
    /// The errors it passes on, nearest first; the last is the root. A task
    /// that failed because an argument holds an error names that error
    /// first (its `kind` and `message` are that error's).
    pub causes: Vec<CauseInfo>,
}

/// One error of a cause chain.
#[derive(Debug, Clone, Serialize)]
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

impl From<&TaskError> for CauseInfo {
    fn from(e: &TaskError) -> Self {
        CauseInfo {
            task_id: e.task.to_string(),
            function: e.function.clone(),
            kind: e.kind.as_str().to_string(),
            message: e.message.clone(),
        }
    }
}

/// The tasks of `registry`, oldest first (pending, running, and the last
/// [`MAX_FINISHED_TASKS`](crate::bounds::MAX_FINISHED_TASKS) finished).
pub fn tasks(registry: &TaskTable, node_id: &str) -> Vec<TaskInfo> {
    let now = registry.nanos(std::time::Instant::now());
    registry
        .tasks()
        .into_iter()
        .map(|r| task_info(r, node_id, now, Some(registry.epoch_unix_ns)))
        .collect()
}

/// The [`TaskInfo`] of `row`, of a task on node `node_id` (unless it was
/// sent to another); `now_ns` (on the row's clock: nanoseconds since the
/// node started) ends the run time of a task still running;
/// `epoch_unix_ns`, the node's start on the wall clock (nanoseconds since
/// the Unix epoch), places it in time (`submitted_at` is 0 without it).
pub fn task_info(row: TaskRow, node_id: &str, now_ns: u64, epoch_unix_ns: Option<u64>) -> TaskInfo {
    let ms = |from: u64, to: u64| to.saturating_sub(from) as f64 / 1e6;
    let submitted_at =
        epoch_unix_ns.map_or(0.0, |e| e.saturating_add(row.submitted_ns) as f64 / 1e9);
    TaskInfo {
        queued_ms: row.started_ns.map(|s| ms(row.submitted_ns, s)),
        run_ms: row
            .started_ns
            .map(|s| ms(s, row.ended_ns.unwrap_or(now_ns))),
        task_id: row.task_id,
        parent_task_id: row.parent_task_id,
        function: row.function,
        state: row.state,
        forwarded: row.node.is_some(),
        node_id: row.node.unwrap_or_else(|| node_id.to_string()),
        worker: row.worker,
        submitted_at,
        resources: row.resources,
        error: row.error,
    }
}

/// The errors kept by `registry`, oldest first.
pub fn errors(registry: &TaskTable, node_id: &str) -> Vec<ErrorInfo> {
    registry
        .errors()
        .into_iter()
        .map(|f| {
            let passed_on = (f.error.task != f.task).then_some(&f.error);
            let causes = passed_on
                .into_iter()
                .chain(f.error.causes())
                .map(CauseInfo::from)
                .collect();
            ErrorInfo {
                time: f
                    .time
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64(),
                task_id: f.task.to_string(),
                function: f.function.to_string(),
                forwarded: f.node.is_some(),
                node_id: f
                    .node
                    .as_deref()
                    .map_or_else(|| node_id.to_string(), str::to_string),
                kind: f.error.kind.as_str().to_string(),
                message: f.error.message,
                causes,
            }
        })
        .collect()
}

/// `t` in seconds since the Unix epoch (0 before it).
pub fn unix_secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// Seconds since the Unix epoch now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

// The HTTP API's and the CLI's types (`wray-api`) of these snapshots.

impl From<&GpuSummary> for wray_api::GpuSummary {
    fn from(g: &GpuSummary) -> Self {
        wray_api::GpuSummary {
            index: g.index,
            name: g.name.clone(),
            memory: g.memory,
        }
    }
}

impl From<TaskInfo> for wray_api::TaskInfo {
    fn from(t: TaskInfo) -> Self {
        wray_api::TaskInfo {
            task_id: t.task_id,
            parent_task_id: t.parent_task_id,
            function: t.function,
            state: t.state.as_str().to_string(),
            node_id: t.node_id,
            worker: t.worker,
            submitted_at: t.submitted_at,
            resources: t.resources,
            queued_ms: t.queued_ms,
            run_ms: t.run_ms,
            error: t.error,
        }
    }
}

impl From<ErrorInfo> for wray_api::ErrorInfo {
    fn from(e: ErrorInfo) -> Self {
        wray_api::ErrorInfo {
            time: e.time,
            task_id: e.task_id,
            function: e.function,
            node_id: e.node_id,
            kind: e.kind,
            message: e.message,
            causes: e
                .causes
                .into_iter()
                .map(|c| wray_api::CauseInfo {
                    task_id: c.task_id,
                    function: c.function,
                    kind: c.kind,
                    message: c.message,
                })
                .collect(),
        }
    }
}

impl From<&crate::objects::ObjectInfo> for wray_api::ObjectInfo {
    fn from(o: &crate::objects::ObjectInfo) -> Self {
        wray_api::ObjectInfo {
            id: o.id.to_string(),
            size: u64::try_from(o.size).unwrap_or(u64::MAX),
            location: o.location.to_string(),
            holders: o.holders,
            node_id: String::new(),
            created_at: o.created_ns as f64 / 1e9,
        }
    }
}
