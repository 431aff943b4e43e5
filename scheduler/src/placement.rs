//! The placement step: which node a task runs on.
//!
//! A node of its own (the embedded default) runs every task here when its
//! request fits the node's totals, and refuses it as `infeasible`
//! otherwise, at submission, as Ray does for a request no node of the
//! cluster could ever meet.
//!
//! In a cluster a remote function is checked at submission (some live
//! node could run it: [`Scheduler::check_placeable`]) and placed once its
//! object arguments exist ([`Scheduler::place`], from `dispatch`), when
//! what they weigh is known and what is free where is fresher: Ray's
//! owner also asks for a lease only once a task's dependencies are
//! resolved. An actor is placed at its creation (its stub's home is
//! decided then). Where it goes is the placement policy (`policy`: Ray's
//! hybrid policy, `SPREAD`, node affinity, over a `PlacementView` of the
//! nodes, which the cluster gives it through `Remote::place`,
//! `cluster/src/choose.rs`); a task queued here may still leave while it
//! waits (`cluster/src/spill.rs`).

pub mod policy;

use crate::core::Scheduler;
use crate::error::ErrorKind;
use crate::proto::{Request, Scheduling, CPU};
use crate::remote::{Local, Placement};

impl Scheduler {
    /// Whether a task asking for `request` under `scheduling` can ever run
    /// somewhere: here (its totals fit), or, in a cluster, on a live node.
    ///
    /// # Errors
    /// `infeasible`, naming the request and what the nodes offer;
    /// `invalid-argument` for a node affinity naming no node id.
    pub(crate) fn check_placeable(
        &self,
        request: &Request,
        scheduling: &Scheduling,
    ) -> Result<(), (ErrorKind, String)> {
        if let Scheduling::Node { node, .. } = scheduling {
            // The guest's string: its form checked before it is compared
            // or written into a message.
            wray_control_plane::NodeId::parse(node)
                .map_err(|e| (ErrorKind::InvalidArgument, format!("node affinity: {e}")))?;
        }
        let feasible = self.pool.check_feasible(request);
        match self.remote() {
            None => match scheduling {
                Scheduling::Node { node, soft: false } if *node != self.node_id => Err((
                    ErrorKind::Infeasible,
                    format!(
                        "the task asks for node {node} (node affinity), and this node ({}) \
                         is in no cluster",
                        self.node_id
                    ),
                )),
                _ => feasible.map_err(|m| {
                    (
                        ErrorKind::Infeasible,
                        format!("{m} (node {})", self.node_id),
                    )
                }),
            },
            Some(remote) => remote
                .check_feasible(request, feasible.is_ok(), scheduling)
                .map_err(|m| (ErrorKind::Infeasible, m.to_string())),
        }
    }

    /// Places a task asking for `request` under `scheduling`, whose object
    /// arguments weigh `arg_bytes`: here, or (in a cluster) on the node
    /// the cluster's policy picks (`Remote::place`: Ray's hybrid policy
    /// by default, among the nodes that allow the host directories of
    /// the task's job `job`), or (`can_wait`) later, when no node has
    /// room now.
    ///
    /// # Errors
    /// `infeasible`, naming the request and what the nodes offer, when no
    /// node could run it.
    pub fn place(
        &self,
        request: &Request,
        scheduling: &Scheduling,
        arg_bytes: u64,
        can_wait: bool,
        job: wray_control_plane::JobId,
    ) -> Result<Placement, (ErrorKind, String)> {
        let Some(remote) = self.remote() else {
            return self
                .check_placeable(request, scheduling)
                .map(|()| Placement::Here);
        };
        let local = self.local(request, arg_bytes);
        remote
            .place(request, local, scheduling, can_wait, job)
            .map_err(|m| (ErrorKind::Infeasible, m.to_string()))
    }

    /// What this node offers a task asking for `request` whose object
    /// arguments weigh `arg_bytes`.
    pub fn local(&self, request: &Request, arg_bytes: u64) -> Local {
        let feasible = self.pool.check_feasible(request).is_ok();
        let (totals, free) = self.pool.resources();
        Local {
            feasible,
            fits_now: feasible && self.pool.fits_now(request),
            utilization: utilization(request, &totals, &free),
            arg_bytes,
        }
    }
}

/// The share in use of the busiest resource `request` asks for (CPU when
/// it asks for none), of a node with `totals` and `free` (amounts by
/// name): 0 idle, 1 full. Ray's hybrid policy scores a node by its
/// critical resource utilization the same way
/// (`src/ray/raylet/scheduling/policy/hybrid_scheduling_policy.cc`),
/// over its CPU, memory and object store; here over what the task
/// needs, so that a busy accelerator does not push CPU tasks away.
pub fn utilization(
    request: &Request,
    totals: &std::collections::BTreeMap<String, f64>,
    free: &std::collections::BTreeMap<String, f64>,
) -> f64 {
    let mut names: Vec<String> = request
        .amounts()
        .into_keys()
        .filter(|n| n != crate::proto::MEMORY)
        .collect();
    if names.is_empty() {
        names.push(CPU.to_string());
    }
    names
        .iter()
        .filter_map(|n| {
            let total = *totals.get(n)?;
            (total > 0.0).then(|| {
                let left = free.get(n).copied().unwrap_or(0.0).clamp(0.0, total);
                (total - left) / total
            })
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::proto::Quantity;

    fn map(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    }

    #[test]
    fn utilization_is_the_busiest_resource_the_task_asks_for() {
        let totals = map(&[("CPU", 4.0), ("GPU", 2.0), ("acc", 1.0)]);
        let free = map(&[("CPU", 3.0), ("GPU", 0.0), ("acc", 1.0)]);
        // One CPU of four in use; the GPUs' use does not count for a CPU task.
        assert_eq!(utilization(&Request::one_cpu(), &totals, &free), 0.25);
        let gpu = Request {
            gpu: Quantity::ONE,
            ..Request::one_cpu()
        };
        assert_eq!(utilization(&gpu, &totals, &free), 1.0);
        let acc = Request {
            custom: BTreeMap::from([("acc".to_string(), Quantity::ONE)]),
            ..Request::default()
        };
        assert_eq!(utilization(&acc, &totals, &free), 0.0);
        // A request for nothing is scored by the CPUs.
        assert_eq!(utilization(&Request::default(), &totals, &free), 0.25);
        // Free above the total (a stale sum) reads as idle, not negative.
        let odd = map(&[("CPU", 9.0)]);
        assert_eq!(utilization(&Request::one_cpu(), &totals, &odd), 0.0);
    }
}
