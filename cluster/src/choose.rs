//! The cluster's side of placement: the [`PlacementView`] the placement
//! policy (`scheduler/placement/policy.rs`: Ray's hybrid policy,
//! `SPREAD`, node affinity) decides over, made of this node's membership
//! view (alive, draining), its health checks (suspect nodes) and its
//! estimate of each node's load ([`Loads`]); and the [`Forwarder`]'s
//! doors to that policy.
//!
//! [`Loads`]: crate::load::Loads

use std::collections::BTreeMap;

use wray_control_plane::NodeState;

use crate::forward::Forwarder;
use crate::proto::{Request, Scheduling};
pub(crate) use crate::scheduler::placement::policy::Candidate;
use crate::scheduler::placement::policy::{self, Load, NodeFacts, PlacementView, Policy, Suspect};
use crate::scheduler::remote::{Infeasible, Local, Placement};

/// Object arguments this large keep a task here while it fits here (1
/// MiB: larger values are pulled by the other node in chunks, a round
/// trip each, rather than sent with the task).
pub(crate) const LOCALITY_BYTES: u64 = crate::protocol::INLINE_SHIP_MAX as u64;

impl PlacementView for Forwarder {
    fn this_node(&self) -> &str {
        &self.node_id
    }

    fn cluster(&self) -> &str {
        &self.cluster
    }

    fn alive(&self) -> Vec<NodeFacts> {
        self.view
            .alive()
            .into_iter()
            .map(|n| NodeFacts {
                id: n.id,
                alive: true,
                draining: n.draining,
                totals: n.resources_total,
                available: n.resources_available,
            })
            .collect()
    }

    fn node(&self, id: &str) -> Option<NodeFacts> {
        self.view.get(id).map(|n| NodeFacts {
            id: n.record.id,
            alive: n.state == NodeState::Alive,
            draining: n.record.draining,
            totals: n.record.resources_total,
            available: n.record.resources_available,
        })
    }

    fn suspect(&self, id: &str) -> Option<Suspect> {
        self.health.suspicion(id).map(|(why, seen)| Suspect {
            why: why.as_str(),
            seen,
            unprobed: why == crate::health::Suspicion::Unprobed,
        })
    }

    fn load(&self, id: &str, available: &BTreeMap<String, f64>) -> Load {
        let estimate = self.loads.estimate(id, available);
        Load {
            free: estimate.free,
            outstanding: estimate.outstanding,
        }
    }
}

impl Forwarder {
    /// The placement policy's settings on this node.
    fn policy(&self) -> Policy {
        Policy {
            spread_threshold: self.spread_threshold,
            locality_bytes: LOCALITY_BYTES,
        }
    }

    /// The live nodes other than this one, those in `skip` and those not
    /// usable now (`health`), with this node's estimate of what each has
    /// free; a draining node takes no new work (`drain`).
    pub(crate) fn candidates(&self, skip: &[String]) -> Vec<Candidate> {
        policy::candidates(self, skip)
    }

    /// Where a task asking for `request` goes under `scheduling`, given
    /// what this node offers (`local`), leaving out the nodes in `skip`
    /// (see `policy::choose`).
    ///
    /// # Errors
    /// As `policy::choose`: [`Infeasible`], naming the request and what the
    /// live nodes offer when none could ever run it, or naming the node a
    /// hard affinity asks for when that one cannot.
    pub(crate) fn choose(
        &self,
        request: &Request,
        local: Local,
        scheduling: &Scheduling,
        skip: &[String],
        can_wait: bool,
    ) -> Result<Placement, Infeasible> {
        policy::choose(
            self,
            self.policy(),
            request,
            local,
            scheduling,
            skip,
            can_wait,
        )
    }

    /// Whether some live node (this one when `here`) could ever run a task
    /// asking for `request` under `scheduling`.
    ///
    /// # Errors
    /// As `policy::feasible`.
    pub(crate) fn feasible(
        &self,
        request: &Request,
        here: bool,
        scheduling: &Scheduling,
    ) -> Result<(), Infeasible> {
        policy::feasible(self, self.policy(), request, here, scheduling)
    }

    /// No live node could ever run a task asking for `request`: what
    /// each offers.
    pub(crate) fn infeasible(&self, request: &Request) -> String {
        policy::infeasible_skipping(self, request, &[])
    }
}
