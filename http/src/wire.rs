//! The function table's stored records (the control plane's
//! `ComponentRecord`, `ComponentVersion`, `Deployment`, `Skipped`) as the
//! API's views ([`wray_api`]): the one place where a stored record becomes
//! a field of the contract. The node's state (nodes, tasks, actors,
//! objects, errors, task output) is made as the API's types by the host
//! itself (`wray_host::Node::nodes` and the rest).

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
