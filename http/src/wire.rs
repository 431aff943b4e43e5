//! The node's own types as the API's wire types ([`wray_api`]): the one
//! place where a host or control-plane field becomes a field of the
//! contract.

use wray_api as api;
use wray_host::{ComponentRecord, ComponentVersion, FunctionKind};

/// A function-table row as the API shows it.
pub(crate) fn record(r: &ComponentRecord) -> api::ComponentRecord {
    api::ComponentRecord {
        name: r.name.clone(),
        hash: r.hash.clone(),
        size: r.size,
        has_main: r.has_main,
        sdk: r.sdk.clone(),
        functions: r
            .functions
            .iter()
            .map(|f| api::FunctionExport {
                kind: match f.kind {
                    FunctionKind::Function => api::ExportKind::Function,
                    FunctionKind::ActorClass => api::ExportKind::ActorClass,
                    FunctionKind::ActorMethod => api::ExportKind::ActorMethod,
                },
                name: f.name.clone(),
                class: f.class.clone(),
                num_returns: f.num_returns,
                params: f
                    .params
                    .iter()
                    .map(|p| api::Param {
                        name: p.name.clone(),
                        schema: p.schema.clone(),
                    })
                    .collect(),
                returns: f.returns.clone(),
                declared: api::Declared {
                    num_cpus: f.declared.num_cpus,
                    num_gpus: f.declared.num_gpus,
                    memory: f.declared.memory,
                    resources: f.declared.resources.clone(),
                    max_memory: f.declared.max_memory,
                    timeout_ms: f.declared.timeout_ms,
                    fuel: f.declared.fuel,
                    reuse: f.declared.reuse,
                },
            })
            .collect(),
    }
}

/// A version from the function table.
pub(crate) fn version(v: &ComponentVersion) -> api::ComponentInfo {
    api::ComponentInfo {
        version: Some(v.version),
        deployed_ms: Some(v.deployed_ms),
        record: record(&v.record),
        view: api::View::ControlPlane,
        new: None,
    }
}

/// What a deploy did: the version now current, and whether it is new.
pub(crate) fn deployment(d: &wray_host::Deployment) -> api::ComponentInfo {
    api::ComponentInfo {
        new: Some(d.new),
        ..version(&d.current)
    }
}

/// A row of the node's own view (no version or deploy time known).
pub(crate) fn node_view(r: &ComponentRecord) -> api::ComponentInfo {
    api::ComponentInfo {
        version: None,
        deployed_ms: None,
        record: record(r),
        view: api::View::Node,
        new: None,
    }
}

pub(crate) fn node(n: &wray_host::NodeInfo, node: &wray_host::Node) -> api::NodeInfo {
    let running = node.running_tasks();
    let store = node.object_store_stats();
    let cluster = node.cluster_stats();
    api::NodeInfo {
        node_id: n.node_id.clone(),
        alive: n.alive,
        resources: n.resources.clone(),
        gpus: n.gpus.iter().map(Into::into).collect(),
        state: "ALIVE".to_string(),
        address: node.cluster_name().map(|(_, a)| a.to_string()),
        http_address: None,
        resources_available: node.available_resources(),
        running_tasks: running,
        object_store_used: store.bytes as u64,
        object_store_capacity: node.object_store_capacity(),
        object_store_spilled: store.spilled as u64,
        object_bytes_sent: cluster.object_bytes_sent,
        object_bytes_received: cluster.object_bytes_received,
        died_at_ms: None,
        unusable: None,
        unusable_reason: None,
    }
}

/// A node of the cluster, as the node registry has it.
pub(crate) fn member(n: &wray_control_plane::NodeInfo) -> api::NodeInfo {
    let r = &n.record;
    let alive = n.state == wray_control_plane::NodeState::Alive;
    api::NodeInfo {
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
        died_at_ms: n.died_at_ms,
        unusable: None,
        unusable_reason: None,
    }
}

pub(crate) fn task_logs(o: wray_host::TaskOutput) -> api::TaskLogs {
    api::TaskLogs {
        task_id: o.task_id,
        function: o.function,
        stdout: o.stdout,
        stderr: o.stderr,
        dropped: o.dropped,
    }
}

/// An actor of the node as `GET /v1/actors` lists it; `http_component`
/// is the name it was created from over HTTP (then its methods are
/// callable there).
pub(crate) fn actor(a: wray_host::ActorInfo, http_component: Option<String>) -> api::ActorState {
    api::ActorState {
        http: http_component.is_some(),
        component: http_component.or(a.component).unwrap_or(a.component_hash),
        actor: a.actor_id,
        class: a.class,
        job: a.job_id,
        state: a.state.to_string(),
        death_cause: a.death_cause,
        node_id: a.node_id,
        stub: a.stub,
        name: a.name,
        detached: a.detached,
        calls: a.calls,
        queued: a.queued as u64,
        running: a.running,
        restarts: a.restarts,
        created_at: a.created_at,
    }
}

/// The entries a listing left out, as the API names them.
pub(crate) fn list_errors(skipped: &[wray_host::Skipped]) -> Vec<api::ListError> {
    skipped
        .iter()
        .map(|s| api::ListError {
            name: s.name.clone(),
            key: s.key.clone(),
            error: s.error.clone(),
        })
        .collect()
}
