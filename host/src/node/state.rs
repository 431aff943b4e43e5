//! Cluster state, as Ray's state API reports it (`ray.nodes()`,
//! `ray.util.state.list_tasks()`, `ray.cluster_resources()`,
//! `ray.available_resources()`, error info): snapshots made as the API's
//! own types ([`wray_api`]: the HTTP API serves them as they are), read
//! through [`crate::Node`] and published by `wray run` for `wray status`,
//! `wray tasks` and `wray errors`.

use std::time::{SystemTime, UNIX_EPOCH};

use wray_api::{ActorState, CauseInfo, ErrorInfo, GpuSummary, NodeInfo, TaskInfo};
use wray_control_plane::{ActorId, ClusterMember, JobId, NodeState};

use crate::error::TaskError;
use crate::scheduler::actor_table::ActorTable;
use crate::scheduler::task_table::{TaskRow, TaskTable};
use crate::scheduler::Scheduler;

/// This node as `GET /v1/nodes` and a session's `state.json` list it, from
/// what its scheduler knows (`gpus`: its GPUs); the cluster's parts
/// (`address`, object bytes sent and received) are the caller's to add.
pub(crate) fn own_node(sched: &Scheduler, gpus: Vec<GpuSummary>) -> NodeInfo {
    let (total, free) = sched.resources();
    let store = sched.objects().stats();
    NodeInfo {
        node_id: sched.node_id().to_owned(),
        alive: true,
        resources: total,
        gpus,
        state: "ALIVE".to_string(),
        address: None,
        http_address: None,
        resources_available: free,
        running_tasks: sched.tasks().running(),
        object_store_used: u64::try_from(store.bytes).unwrap_or(u64::MAX),
        object_store_capacity: sched
            .objects()
            .arena()
            .map_or(0, |a| u64::try_from(a.capacity()).unwrap_or(u64::MAX)),
        object_store_spilled: u64::try_from(store.spilled).unwrap_or(u64::MAX),
        object_bytes_sent: 0,
        object_bytes_received: 0,
        died_at_ms: None,
        unusable: None,
        unusable_reason: None,
    }
}

/// A node of the cluster as the node registry has it (`m`), as
/// `GET /v1/nodes` lists it: the one place a registry record becomes the
/// API's row. GPUs are known only for the node answering (its caller adds
/// them), and why it is not used (`unusable`) only to that node.
pub(crate) fn member(m: &ClusterMember) -> NodeInfo {
    let r = &m.record;
    let alive = m.state == NodeState::Alive;
    NodeInfo {
        node_id: r.id.clone(),
        alive,
        resources: r.resources_total.clone(),
        gpus: Vec::new(),
        state: match (alive, r.draining) {
            (true, false) => "ALIVE",
            (true, true) => "DRAINING",
            (false, _) => "DEAD",
        }
        .to_string(),
        address: Some(r.peer_address.clone()),
        http_address: r.http_address.clone(),
        // A dead node runs nothing and has nothing free: its last record
        // said what it had then.
        resources_available: if alive {
            r.resources_available.clone()
        } else {
            Default::default()
        },
        running_tasks: if alive { r.running_tasks } else { 0 },
        object_store_used: r.object_store_used,
        object_store_capacity: r.object_store_capacity,
        object_store_spilled: r.object_store_spilled,
        object_bytes_sent: r.object_bytes_sent,
        object_bytes_received: r.object_bytes_received,
        died_at_ms: m.died_at_ms,
        unusable: None,
        unusable_reason: None,
    }
}

/// Up to `limit` actors of `table` (on node `node_id`), by id after
/// `after`, of job `job` only when given: its instances here, and the
/// stubs it owns of actors whose node is not alive (`alive` says which
/// nodes are), whose state is this node's word then; a stub of an actor
/// on a live node is that node's to list. Each is named by the name its
/// component was loaded under here (else its content hash), and not
/// `http` (the HTTP API marks those it created).
pub(crate) fn actors(
    table: &ActorTable,
    node_id: &str,
    after: Option<ActorId>,
    limit: usize,
    job: Option<JobId>,
    alive: &dyn Fn(&str) -> bool,
) -> Vec<ActorState> {
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
            ActorState {
                actor: a.id.to_string(),
                class: a.class.clone(),
                component: now
                    .component_name
                    .map_or_else(|| a.component.to_string(), |n| n.to_string()),
                job: a.id.job().to_string(),
                state: state.to_string(),
                death_cause: now.dead.map(|e| e.to_string()).or(lost_cause),
                node_id: a
                    .home
                    .as_ref()
                    .map_or_else(|| node_id.to_string(), |h| h.node()),
                stub: a.home.is_some(),
                name: a.name.get().cloned(),
                detached: a.detached,
                http: false,
                calls: now.calls,
                queued: u64::try_from(now.queued).unwrap_or(u64::MAX),
                running: now.running,
                restarts: now.restarted,
                created_at: unix_secs(a.created),
            }
        })
        .collect()
}

/// One error of a cause chain, as the error listings show it.
pub(crate) fn cause_info(e: &TaskError) -> CauseInfo {
    CauseInfo {
        task_id: e.task.to_string(),
        function: e.function.clone(),
        kind: e.kind.as_str().to_string(),
        message: e.message.clone(),
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
        state: row.state.as_str().to_string(),
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
                .map(cause_info)
                .collect();
            ErrorInfo {
                time: f
                    .time
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64(),
                task_id: f.task.to_string(),
                function: f.function.to_string(),
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

/// An object of a store as the listings show it, held on node `node_id`.
pub(crate) fn object_info(o: &crate::objects::ObjectRow, node_id: &str) -> wray_api::ObjectInfo {
    wray_api::ObjectInfo {
        id: o.id.to_string(),
        size: u64::try_from(o.size).unwrap_or(u64::MAX),
        location: o.location.to_string(),
        holders: o.holders,
        node_id: node_id.to_string(),
        created_at: o.created_ns as f64 / 1e9,
    }
}
