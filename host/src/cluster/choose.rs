//! The placement policy ([`Forwarder::choose`]): which node a task goes
//! to, by Ray's scheduling strategies.
//!
//! - **`DEFAULT`, Ray's hybrid policy**
//!   (`src/ray/raylet/scheduling/policy/hybrid_scheduling_policy.cc`):
//!   1. here, when it fits what is free here and this node's busiest
//!      resource the task asks for is used under the spread threshold
//!      (`--spread-threshold`, Ray's `scheduler_spread_threshold`, 0.5), or
//!      when the task's object arguments are large (at least
//!      [`LOCALITY_BYTES`]: they are all here, its owner's; Ray's
//!      locality-aware leasing prefers the node holding the most argument
//!      bytes);
//!   2. else the least used node with room now, this one among them,
//!      each scored by its busiest resource the task asks for, a score
//!      under the threshold counting as 0 (ties: here, then the node
//!      this node has sent the fewest tasks not yet ended, then by id);
//!   3. else, none having room: queued here when it fits here at all
//!      (it moves once another node has room: `spill`), else kept here
//!      unplaced until a node has room (`Placement::Later`, a function
//!      whose arguments exist: `can_wait`), else (an actor) on the node of
//!      those whose totals fit that was sent the fewest.
//! - **`SPREAD`**: the least used node with room, here included, whatever
//!   the threshold; then as step 3.
//! - **Node affinity**: that node if it is alive, not draining, and its
//!   totals fit (queued there until it has room); else, `soft`, the
//!   default policy, or an `infeasible` error naming the node.
//!
//! A draining node (`drain`) is never picked: it takes no new work.
//!
//! What is free on another node is this node's estimate ([`Loads`]).
//!
//! [`Loads`]: crate::cluster::load::Loads

use std::collections::BTreeMap;

use wray_control_plane::{NodeRecord, NodeState};

use crate::cluster::forward::Forwarder;
use crate::proto::{Request, Scheduling};
use crate::scheduler::placement::utilization;
use crate::scheduler::remote::{Infeasible, Local, Placement};

/// Object arguments this large keep a task here while it fits here (1
/// MiB: larger values are pulled by the other node in chunks, a round
/// trip each, rather than sent with the task).
pub(crate) const LOCALITY_BYTES: u64 = crate::cluster::protocol::INLINE_SHIP_MAX as u64;

/// A node considered for a task: its id, what it has in all, and what
/// this node believes it has free.
#[derive(Clone)]
pub(crate) struct Candidate {
    pub(crate) id: String,
    pub(crate) totals: BTreeMap<String, f64>,
    pub(crate) free: BTreeMap<String, f64>,
    pub(crate) outstanding: usize,
}

impl Candidate {
    /// Its score for a task asking for `request`: the share in use of
    /// the busiest resource the task needs (0 to 1).
    fn used(&self, request: &Request) -> f64 {
        utilization(request, &self.totals, &self.free)
    }
}

/// `offers` as Ray prints resources: `node-..: {CPU: 2, node3: 1}`.
fn offers(nodes: &[NodeRecord]) -> String {
    let one = |n: &NodeRecord| {
        let parts: Vec<String> = n
            .resources_total
            .iter()
            .filter(|(k, v)| **v > 0.0 && k.as_str() != "memory")
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!("{} {{{}}}", n.id, parts.join(", "))
    };
    nodes.iter().map(one).collect::<Vec<_>>().join("; ")
}

impl Forwarder {
    /// The live nodes other than this one, those in `skip` and those not
    /// usable now (`health`), with this node's estimate of what each has
    /// free; a draining node takes no new work (`drain`).
    pub(crate) fn candidates(&self, skip: &[String]) -> Vec<Candidate> {
        self.view
            .alive()
            .into_iter()
            .filter(|n| {
                n.id != self.node_id
                    && !skip.contains(&n.id)
                    && !n.draining
                    && self.health.usable(&n.id)
            })
            .map(|n| {
                let estimate = self.loads.estimate(&n.id, &n.resources_available);
                Candidate {
                    id: n.id,
                    totals: n.resources_total,
                    free: estimate.free,
                    outstanding: estimate.outstanding,
                }
            })
            .collect()
    }

    /// Where a task asking for `request` goes under `scheduling`, given
    /// what this node offers (`local`), leaving out the nodes in `skip`
    /// (see the module docs).
    ///
    /// # Errors
    /// [`Infeasible`], naming the request and what the live nodes offer
    /// when none could ever run it, or naming the node a hard affinity
    /// asks for when that one cannot.
    pub(crate) fn choose(
        &self,
        request: &Request,
        local: Local,
        scheduling: &Scheduling,
        skip: &[String],
        can_wait: bool,
    ) -> Result<Placement, Infeasible> {
        match scheduling {
            Scheduling::Default => self.hybrid(request, local, skip, true, can_wait),
            Scheduling::Spread => self.hybrid(request, local, skip, false, can_wait),
            Scheduling::Node { node, soft } => {
                if *node == self.node_id {
                    if local.feasible {
                        return Ok(Placement::Here);
                    }
                } else if !skip.contains(node) && self.placeable(node, *soft) {
                    let there = self
                        .view
                        .get(node)
                        .filter(|n| n.state == NodeState::Alive && !n.record.draining)
                        .is_some_and(|n| request.fits(&n.record.resources_total));
                    if there {
                        return Ok(Placement::Node(node.clone()));
                    }
                }
                if *soft {
                    return self.hybrid(request, local, skip, true, can_wait);
                }
                let suspect = self.health.suspicion(node);
                Err(Infeasible(format!(
                    "the task asks for node {node} (node affinity), which {}",
                    match (self.view.state(node), suspect) {
                        (Some(NodeState::Alive), _)
                            if self.view.get(node).is_some_and(|n| n.record.draining) =>
                        {
                            "is draining".to_string()
                        }
                        (Some(NodeState::Alive), Some((why, seen))) => {
                            format!("is {} in this node's view: {seen}", why.as_str())
                        }
                        (Some(NodeState::Alive), None) if skip.contains(node) => {
                            "failed it just now (above)".to_string()
                        }
                        (Some(NodeState::Alive), None) => {
                            format!("cannot run a task asking for {request}")
                        }
                        (Some(NodeState::Dead), _) => "is dead".to_string(),
                        (None, _) => format!("is not a node of cluster `{}`", self.cluster),
                    }
                )))
            }
        }
    }

    /// The hybrid policy (`pack`: step 1 and the threshold) or `SPREAD`.
    fn hybrid(
        &self,
        request: &Request,
        local: Local,
        skip: &[String],
        pack: bool,
        can_wait: bool,
    ) -> Result<Placement, Infeasible> {
        let threshold = if pack { self.spread_threshold } else { 0.0 };
        let others = if local.fits_now && local_first(local, threshold, pack) {
            Vec::new()
        } else {
            self.candidates(skip)
        };
        if let Some(placed) = pick(request, local, &others, threshold, pack, can_wait) {
            return Ok(placed);
        }
        // A node that only awaits its first probe may take it soon: a
        // task that can wait waits (it is placed once the probe passes).
        let unprobed = self.view.alive().into_iter().any(|n| {
            n.id != self.node_id
                && !skip.contains(&n.id)
                && request.fits(&n.resources_total)
                && self.health.suspicion(&n.id).map(|(why, _)| why)
                    == Some(crate::cluster::health::Suspicion::Unprobed)
        });
        if can_wait && unprobed {
            return Ok(Placement::Later);
        }
        Err(Infeasible(self.infeasible_skipping(request, skip)))
    }

    /// Whether a task bound to `node` (`soft`: or elsewhere) may be sent
    /// there: it is usable, or, bound to it alone, only not yet probed
    /// (the call's own handshake is the probe).
    fn placeable(&self, node: &str, soft: bool) -> bool {
        self.health
            .suspicion(node)
            .is_none_or(|(why, _)| !soft && why == crate::cluster::health::Suspicion::Unprobed)
    }

    /// Whether some live node (this one when `here`) could ever run a task
    /// asking for `request` under `scheduling` (a draining node, which
    /// takes no new work, does not count).
    pub(crate) fn feasible(
        &self,
        request: &Request,
        here: bool,
        scheduling: &Scheduling,
    ) -> Result<(), Infeasible> {
        if let Scheduling::Node { soft: false, .. } = scheduling {
            let local = Local {
                feasible: here,
                fits_now: false,
                utilization: 1.0,
                arg_bytes: 0,
            };
            return self
                .choose(request, local, scheduling, &[], false)
                .map(|_| ());
        }
        let anywhere = here
            || self
                .view
                .alive()
                .iter()
                .any(|n| n.id != self.node_id && !n.draining && request.fits(&n.resources_total));
        if anywhere {
            Ok(())
        } else {
            Err(Infeasible(self.infeasible(request)))
        }
    }

    /// No live node could ever run a task asking for `request`: what
    /// each offers.
    pub(crate) fn infeasible(&self, request: &Request) -> String {
        self.infeasible_skipping(request, &[])
    }

    /// No node this node may place on (live, usable, not in `skip`) can
    /// run a task asking for `request`: what each offers, and the live
    /// nodes left out, with why (a failed connection is not mistaken for
    /// a lack of resources).
    pub(crate) fn infeasible_skipping(&self, request: &Request, skip: &[String]) -> String {
        let mut all = self.view.alive();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        let (left_out, usable): (Vec<NodeRecord>, Vec<NodeRecord>) =
            all.into_iter().partition(|n| {
                n.id != self.node_id
                    && (n.draining || skip.contains(&n.id) || !self.health.usable(&n.id))
            });
        let mut message = format!(
            "no node of cluster `{}` can run a task asking for {request}; the usable nodes \
             offer: {}",
            self.cluster,
            if usable.is_empty() {
                "nothing".to_string()
            } else {
                offers(&usable)
            }
        );
        for n in &left_out {
            let why = match self.health.suspicion(&n.id) {
                Some((why, seen)) => format!("{}: {seen}", why.as_str()),
                None if n.draining => "draining: it takes no new work".to_string(),
                None => "it failed this task just now".to_string(),
            };
            message.push_str(&format!(
                "; left out: {} ({why})",
                offers(std::slice::from_ref(n))
            ));
        }
        message
    }
}

/// Whether a task that fits here now stays here without looking further
/// (step 1): this node used under `threshold` (when packing), or large
/// object arguments, which are all here.
fn local_first(local: Local, threshold: f64, pack: bool) -> bool {
    (pack && local.utilization < threshold) || local.arg_bytes >= LOCALITY_BYTES
}

/// The placement of a task asking for `request` among this node
/// (`local`) and `others` (see the module docs; `can_wait`: it may stay
/// unplaced here): `None` when no node can ever run it.
pub(crate) fn pick(
    request: &Request,
    local: Local,
    others: &[Candidate],
    threshold: f64,
    pack: bool,
    can_wait: bool,
) -> Option<Placement> {
    if local.fits_now && local_first(local, threshold, pack) {
        return Some(Placement::Here);
    }
    let score = |used: f64| if used < threshold { 0.0 } else { used };
    // Step 2: the least used with room now; here first among equals.
    let best = others
        .iter()
        .filter(|c| request.fits(&c.free))
        .map(|c| (score(c.used(request)), c.outstanding, Some(c)))
        .chain(
            local
                .fits_now
                .then_some((score(local.utilization), 0, None)),
        )
        .min_by(|(a, na, ca), (b, nb, cb)| {
            a.total_cmp(b)
                .then_with(|| ca.is_some().cmp(&cb.is_some()))
                .then_with(|| na.cmp(nb))
                .then_with(|| ca.map(|c| &c.id).cmp(&cb.map(|c| &c.id)))
        });
    match best {
        Some((_, _, Some(c))) => return Some(Placement::Node(c.id.clone())),
        Some((_, _, None)) => return Some(Placement::Here),
        None => {}
    }
    // Step 3: none has room now: queued here, or kept here until one
    // has, or queued where it fits at all.
    if local.feasible {
        return Some(Placement::Here);
    }
    let somewhere = others.iter().any(|c| request.fits(&c.totals));
    if can_wait && somewhere {
        return Some(Placement::Later);
    }
    others
        .iter()
        .filter(|c| request.fits(&c.totals))
        .min_by(|a, b| {
            a.outstanding
                .cmp(&b.outstanding)
                .then_with(|| a.id.cmp(&b.id))
        })
        .map(|c| Placement::Node(c.id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(n: f64) -> BTreeMap<String, f64> {
        BTreeMap::from([("CPU".to_string(), n)])
    }

    fn node(id: &str, total: f64, free: f64, outstanding: usize) -> Candidate {
        Candidate {
            id: id.to_string(),
            totals: cpus(total),
            free: cpus(free),
            outstanding,
        }
    }

    fn local(fits_now: bool, utilization: f64) -> Local {
        Local {
            feasible: true,
            fits_now,
            utilization,
            arg_bytes: 0,
        }
    }

    fn at(p: Option<Placement>) -> String {
        match p {
            Some(Placement::Here) => "here".into(),
            Some(Placement::Node(n)) => n,
            Some(Placement::Later) => "later".into(),
            None => "nowhere".into(),
        }
    }

    #[test]
    fn the_default_packs_here_under_the_threshold_then_takes_the_least_used() {
        let cpu = Request::one_cpu();
        let others = [node("b", 4.0, 1.0, 0), node("c", 4.0, 3.0, 0)];
        // Here a quarter used: it stays.
        assert_eq!(
            at(pick(&cpu, local(true, 0.25), &others, 0.5, true, false)),
            "here"
        );
        // Here three quarters used: c (a quarter used) is less used.
        assert_eq!(
            at(pick(&cpu, local(true, 0.75), &others, 0.5, true, false)),
            "c"
        );
        // Others under the threshold count as idle: the fewest sent wins.
        let idle = [node("b", 4.0, 3.0, 2), node("c", 4.0, 2.0, 1)];
        assert_eq!(
            at(pick(&cpu, local(true, 0.75), &idle, 0.6, true, false)),
            "c"
        );
        // No room here: the least used with room.
        assert_eq!(
            at(pick(&cpu, local(false, 1.0), &others, 0.5, true, false)),
            "c"
        );
        // Large arguments keep it here while it fits, over the threshold.
        let heavy = Local {
            arg_bytes: LOCALITY_BYTES,
            ..local(true, 0.9)
        };
        assert_eq!(at(pick(&cpu, heavy, &others, 0.5, true, false)), "here");
    }

    #[test]
    fn with_no_room_anywhere_it_queues_here_or_where_it_fits_at_all() {
        let cpu = Request::one_cpu();
        let full = [node("b", 2.0, 0.0, 3), node("c", 2.0, 0.0, 1)];
        assert_eq!(
            at(pick(&cpu, local(false, 1.0), &full, 0.5, true, false)),
            "here"
        );
        let cannot = Local {
            feasible: false,
            ..local(false, 1.0)
        };
        // Not here at all: the node sent the fewest tasks (an actor), or
        // later (a function).
        assert_eq!(at(pick(&cpu, cannot, &full, 0.5, true, false)), "c");
        assert_eq!(at(pick(&cpu, cannot, &full, 0.5, true, true)), "later");
        let gpu = Request {
            gpu: crate::proto::Quantity::ONE,
            ..Request::default()
        };
        assert_eq!(at(pick(&gpu, cannot, &full, 0.5, true, false)), "nowhere");
    }

    #[test]
    fn spread_takes_the_least_used_and_ties_go_to_the_fewest_sent() {
        let cpu = Request::one_cpu();
        let others = [node("b", 1.0, 1.0, 2), node("c", 1.0, 1.0, 1)];
        // Here idle: a tie at 0, here first.
        assert_eq!(
            at(pick(&cpu, local(true, 0.0), &others, 0.0, false, false)),
            "here"
        );
        // Here half used: c, idle and sent fewer than b.
        assert_eq!(
            at(pick(&cpu, local(true, 0.5), &others, 0.0, false, false)),
            "c"
        );
    }
}
