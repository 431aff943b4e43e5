//! The placement policy: which node of a cluster a task goes to, by Ray's
//! scheduling strategies, decided over a [`PlacementView`] (what this
//! node sees of the others). The cluster gives it its view
//! (`cluster/src/choose.rs`); a test gives it a fake one.
//!
//! - **`DEFAULT`, Ray's hybrid policy**
//!   (`src/ray/raylet/scheduling/policy/hybrid_scheduling_policy.cc`):
//!   1. here, when it fits what is free here and this node's busiest
//!      resource the task asks for is used under the spread threshold
//!      (`--spread-threshold`, Ray's `scheduler_spread_threshold`, 0.5), or
//!      when the task's object arguments are large (at least
//!      [`Policy::locality_bytes`]: they are all here, its owner's; Ray's
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
//! A draining node is never picked: it takes no new work. A suspect node
//! (not usable now: see [`Suspect`]) is not picked either, except one
//! bound to by a hard affinity that only awaits its first probe.

use std::collections::BTreeMap;

use crate::placement::utilization;
use crate::proto::{Request, Scheduling};
use crate::remote::{Infeasible, Local, Placement};

/// The policy's settings.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Hybrid placement's threshold (0 to 1): this node's busiest
    /// resource used under it, a task that fits stays here (Ray's
    /// `scheduler_spread_threshold`).
    pub spread_threshold: f64,
    /// Object arguments of at least this many bytes keep a task here while
    /// it fits here.
    pub locality_bytes: u64,
}

/// What the policy knows of one node of the cluster, from its last
/// published record.
#[derive(Debug, Clone)]
pub struct NodeFacts {
    /// Its id.
    pub id: String,
    /// Alive (else recently dead).
    pub alive: bool,
    /// Draining: it takes no new work.
    pub draining: bool,
    /// What it has in all, by resource name (units: CPUs, GPUs, bytes of
    /// memory, custom units).
    pub totals: BTreeMap<String, f64>,
    /// What it said it had free, by resource name.
    pub available: BTreeMap<String, f64>,
}

/// Why a live node is not placed on now.
#[derive(Debug, Clone)]
pub struct Suspect {
    /// As `/v1/nodes` shows it (`unprobed`, `unreachable`, ...).
    pub why: &'static str,
    /// What was seen.
    pub seen: String,
    /// It only awaits its first probe (a call bound to it alone is its
    /// probe).
    pub unprobed: bool,
}

/// This node's estimate of another node's load.
#[derive(Debug, Clone, Default)]
pub struct Load {
    /// What it has free now, by resource name.
    pub free: BTreeMap<String, f64>,
    /// Tasks this node sent it that have not ended.
    pub outstanding: usize,
}

/// What the policy sees of the cluster. The cluster implements it over
/// its membership view, health and load estimates (`cluster/src/choose.rs`).
pub trait PlacementView {
    /// This node's id.
    fn this_node(&self) -> &str;
    /// The cluster's name (for messages).
    fn cluster(&self) -> &str;
    /// Every live node, this one included.
    fn alive(&self) -> Vec<NodeFacts>;
    /// Node `id`, alive or recently dead; `None` when unknown.
    fn node(&self, id: &str) -> Option<NodeFacts>;
    /// Why node `id` is not placed on now, if it is not.
    fn suspect(&self, id: &str) -> Option<Suspect>;
    /// This node's estimate of what node `id` (which said it had
    /// `available` free) has free now.
    fn load(&self, id: &str, available: &BTreeMap<String, f64>) -> Load;
}

/// A node considered for a task: its id, what it has in all, and what
/// this node believes it has free.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The node's id.
    pub id: String,
    /// Its resources in all, by name (CPUs, GPUs, custom units).
    pub totals: BTreeMap<String, f64>,
    /// What this node believes it has free, by name.
    pub free: BTreeMap<String, f64>,
    /// Tasks this node sent it that have not finished.
    pub outstanding: usize,
}

impl Candidate {
    /// Its score for a task asking for `request`: the share in use of
    /// the busiest resource the task needs (0 to 1).
    fn used(&self, request: &Request) -> f64 {
        utilization(request, &self.totals, &self.free)
    }
}

/// `nodes` as Ray prints resources: `node-..: {CPU: 2, node3: 1}`.
fn offers(nodes: &[NodeFacts]) -> String {
    let one = |n: &NodeFacts| {
        let parts: Vec<String> = n
            .totals
            .iter()
            .filter(|(k, v)| **v > 0.0 && k.as_str() != "memory")
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!("{} {{{}}}", n.id, parts.join(", "))
    };
    nodes.iter().map(one).collect::<Vec<_>>().join("; ")
}

/// The live nodes other than this one, those in `skip`, draining ones and
/// suspect ones, with this node's estimate of what each has free.
pub fn candidates<V: PlacementView + ?Sized>(view: &V, skip: &[String]) -> Vec<Candidate> {
    let me = view.this_node();
    view.alive()
        .into_iter()
        .filter(|n| {
            n.id != me && !skip.contains(&n.id) && !n.draining && view.suspect(&n.id).is_none()
        })
        .map(|n| {
            let load = view.load(&n.id, &n.available);
            Candidate {
                id: n.id,
                totals: n.totals,
                free: load.free,
                outstanding: load.outstanding,
            }
        })
        .collect()
}

/// Where a task asking for `request` goes under `scheduling`, given
/// what this node offers (`local`), leaving out the nodes in `skip`
/// (see the module docs; `can_wait`: it may stay unplaced here).
///
/// # Errors
/// [`Infeasible`], naming the request and what the live nodes offer when
/// none could ever run it, or naming the node a hard affinity asks
/// for when that one cannot.
pub fn choose<V: PlacementView + ?Sized>(
    view: &V,
    policy: Policy,
    request: &Request,
    local: Local,
    scheduling: &Scheduling,
    skip: &[String],
    can_wait: bool,
) -> Result<Placement, Infeasible> {
    let hybrid = |pack| hybrid(view, policy, request, local, skip, pack, can_wait);
    let Scheduling::Node { node, soft } = scheduling else {
        return hybrid(matches!(scheduling, Scheduling::Default));
    };
    let there = view.node(node);
    if *node == view.this_node() {
        if local.feasible {
            return Ok(Placement::Here);
        }
    } else if !skip.contains(node) && placeable(view, node, *soft) {
        let fits = there
            .as_ref()
            .filter(|n| n.alive && !n.draining)
            .is_some_and(|n| request.fits(&n.totals));
        if fits {
            return Ok(Placement::Node(node.clone()));
        }
    }
    if *soft {
        return hybrid(true);
    }
    let why = match there {
        Some(n) if n.alive && n.draining => "is draining".to_string(),
        Some(n) if n.alive => match view.suspect(node) {
            Some(s) => format!("is {} in this node's view: {}", s.why, s.seen),
            None if skip.contains(node) => "failed it just now (above)".to_string(),
            None => format!("cannot run a task asking for {request}"),
        },
        Some(_) => "is dead".to_string(),
        None => format!("is not a node of cluster `{}`", view.cluster()),
    };
    Err(Infeasible(format!(
        "the task asks for node {node} (node affinity), which {why}"
    )))
}

/// The hybrid policy (`pack`: step 1 and the threshold) or `SPREAD`.
fn hybrid<V: PlacementView + ?Sized>(
    view: &V,
    policy: Policy,
    request: &Request,
    local: Local,
    skip: &[String],
    pack: bool,
    can_wait: bool,
) -> Result<Placement, Infeasible> {
    let threshold = if pack { policy.spread_threshold } else { 0.0 };
    let others = if local.fits_now && local_first(policy, local, threshold, pack) {
        Vec::new()
    } else {
        candidates(view, skip)
    };
    if let Some(placed) = pick(policy, request, local, &others, threshold, pack, can_wait) {
        return Ok(placed);
    }
    // A node that only awaits its first probe may take it soon: a
    // task that can wait waits (it is placed once the probe passes).
    let me = view.this_node();
    let unprobed = view.alive().into_iter().any(|n| {
        n.id != me
            && !skip.contains(&n.id)
            && request.fits(&n.totals)
            && view.suspect(&n.id).is_some_and(|s| s.unprobed)
    });
    if can_wait && unprobed {
        return Ok(Placement::Later);
    }
    Err(Infeasible(infeasible_skipping(view, request, skip)))
}

/// Whether a task bound to `node` (`soft`: or elsewhere) may be sent
/// there: it is usable, or, bound to it alone, only not yet probed
/// (the call's own handshake is the probe).
fn placeable<V: PlacementView + ?Sized>(view: &V, node: &str, soft: bool) -> bool {
    view.suspect(node).is_none_or(|s| !soft && s.unprobed)
}

/// Whether some live node (this one when `here`) could ever run a task
/// asking for `request` under `scheduling` (a draining node, which
/// takes no new work, does not count).
///
/// # Errors
/// As [`choose`].
pub fn feasible<V: PlacementView + ?Sized>(
    view: &V,
    policy: Policy,
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
        return choose(view, policy, request, local, scheduling, &[], false).map(|_| ());
    }
    let me = view.this_node();
    let anywhere = here
        || view
            .alive()
            .iter()
            .any(|n| n.id != me && !n.draining && request.fits(&n.totals));
    if anywhere {
        Ok(())
    } else {
        Err(Infeasible(infeasible_skipping(view, request, &[])))
    }
}

/// No node this node may place on (live, usable, not in `skip`) can
/// run a task asking for `request`: what each offers, and the live
/// nodes left out, with why (a failed connection is not mistaken for
/// a lack of resources).
pub fn infeasible_skipping<V: PlacementView + ?Sized>(
    view: &V,
    request: &Request,
    skip: &[String],
) -> String {
    let me = view.this_node();
    let mut all = view.alive();
    all.sort_by(|a, b| a.id.cmp(&b.id));
    let (left_out, usable): (Vec<NodeFacts>, Vec<NodeFacts>) = all.into_iter().partition(|n| {
        n.id != me && (n.draining || skip.contains(&n.id) || view.suspect(&n.id).is_some())
    });
    let mut message = format!(
        "no node of cluster `{}` can run a task asking for {request}; the usable nodes \
         offer: {}",
        view.cluster(),
        if usable.is_empty() {
            "nothing".to_string()
        } else {
            offers(&usable)
        }
    );
    for n in &left_out {
        let why = match view.suspect(&n.id) {
            Some(s) => format!("{}: {}", s.why, s.seen),
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

/// Whether a task that fits here now stays here without looking further
/// (step 1): this node used under `threshold` (when packing), or large
/// object arguments, which are all here.
fn local_first(policy: Policy, local: Local, threshold: f64, pack: bool) -> bool {
    (pack && local.utilization < threshold) || local.arg_bytes >= policy.locality_bytes
}

/// The placement of a task asking for `request` among this node
/// (`local`) and `others` (see the module docs; `can_wait`: it may stay
/// unplaced here): `None` when no node can ever run it.
pub fn pick(
    policy: Policy,
    request: &Request,
    local: Local,
    others: &[Candidate],
    threshold: f64,
    pack: bool,
    can_wait: bool,
) -> Option<Placement> {
    if local.fits_now && local_first(policy, local, threshold, pack) {
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
mod tests;
