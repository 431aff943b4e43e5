//! Which live nodes this node places work on ([`Health`]), and the probes
//! that find out (`watch`).
//!
//! A node in the registry is not enough to place work on: it must also
//! answer this node. A node is **suspect** in this node's view, and
//! skipped for new placements (`choose`, `spill`), while:
//!
//! - it has not yet passed one handshake with this node (it just joined:
//!   it is probed at once);
//! - a connection to it failed (refused, reset, timed out), until a probe
//!   passes again or it dies: a probe is sent at once when the node
//!   publishes a newer record, and every [`PROBE_EVERY`];
//! - it stalled: it stopped answering while this node waited for a task
//!   there ([`STALL_PROBES`] probes in a row failed, each within
//!   [`PROBE_DEADLINE`]); the tasks waiting on it are given up and run
//!   elsewhere;
//! - it failed authentication (**quarantined**): a wrong cluster token, a
//!   certificate not trusted; until it passes a handshake.
//!
//! A probe is one [`method::Ping`] call on a client of its own (its own pool, so
//! that busy transfers never delay it), within [`PROBE_DEADLINE`] for the
//! connection, the handshake and the answer together. Any answer passes,
//! an error of the node's handler too (a node of an older release does
//! not know the method): it answered.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::broadcast;
use wray_control_plane::{NodeEvent, NodeView, MAX_NODES};
use wray_peer::{PeerClient, PeerError};

use crate::protocol::{call, method, Ping, MAX_PING_TASKS};

/// How often a suspect node, and a node this node waits on for a task,
/// is probed: 1 s (a stall is seen within [`STALL_PROBES`] of them).
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How long a probe may take, connection and handshake included: 2 s, a
/// chosen bound far above a ping's round trip on one network (a
/// millisecond or so), so that a node whose CPUs are busy with guests is
/// not taken for a stalled one.
pub(crate) const PROBE_DEADLINE: Duration = Duration::from_secs(2);

/// How many probes in a row must fail before a node this node waits on
/// is taken as stalled: 3 (a stall is seen 3 to 9 s after it begins:
/// [`PROBE_EVERY`] apart, each up to [`PROBE_DEADLINE`]), so that one
/// slow answer of a loaded node does not give up its tasks.
pub(crate) const STALL_PROBES: u32 = 3;

/// Why a live node is not placed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Suspicion {
    /// It has not passed a handshake with this node yet.
    Unprobed,
    /// A connection to it failed.
    Unreachable,
    /// It stopped answering while a task waited on it.
    Stalled,
    /// It failed authentication: quarantined.
    Quarantined,
}

impl Suspicion {
    /// As `/v1/nodes` shows it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Suspicion::Unprobed => "unprobed",
            Suspicion::Unreachable => "unreachable",
            Suspicion::Stalled => "stalled",
            Suspicion::Quarantined => "quarantined",
        }
    }
}

/// Whether `e` says the peer failed authentication or cannot be talked
/// to at all: the one place that reads it (a proof of the cluster token
/// refused either way, no protocol version in common, a TLS handshake
/// that failed).
pub(crate) fn failed_authentication(e: &PeerError) -> bool {
    e.is_unusable_peer() || matches!(e, PeerError::Tls { .. })
}

/// Whether `e` happened before the peer could take a request: the
/// connection, its handshake or its authentication failed. A task whose
/// call failed so never reached the node.
pub(crate) fn unreached(e: &PeerError) -> bool {
    match e {
        PeerError::Connect { .. }
        | PeerError::Auth { .. }
        | PeerError::Incompatible { .. }
        | PeerError::Tls { .. } => true,
        PeerError::Timeout { what, .. } => *what != "request",
        _ => false,
    }
}

/// What is known of one node.
#[derive(Default)]
struct NodeHealth {
    /// Why it is not placed on, with what was seen.
    suspect: Option<(Suspicion, String)>,
    /// Tasks this node waits on there now.
    calls: usize,
    /// Probes failed in a row since the last that passed.
    failed_probes: u32,
    /// A probe is on its way.
    probing: bool,
}

impl NodeHealth {
    fn idle(&self) -> bool {
        self.suspect.is_none() && self.calls == 0 && !self.probing
    }
}

/// The health of the other live nodes, in this node's view (see the
/// module docs). At most [`MAX_NODES`] nodes are tracked (the view's own
/// bound); a node leaves the table when it dies or is well and idle.
pub(crate) struct Health {
    nodes: Mutex<HashMap<String, NodeHealth>>,
    /// Nodes found stalled: the calls waiting on them give up.
    stalls: broadcast::Sender<String>,
    /// Woken when a node becomes usable again (parked tasks may go).
    kick: Arc<tokio::sync::Notify>,
}

impl Health {
    /// An empty table; `kick` is woken when a node becomes usable.
    pub(crate) fn new(kick: Arc<tokio::sync::Notify>) -> Self {
        Health {
            nodes: Mutex::new(HashMap::new()),
            stalls: broadcast::channel(64).0,
            kick,
        }
    }

    /// Whether work may be placed on `node` (it is not suspect).
    pub(crate) fn usable(&self, node: &str) -> bool {
        self.suspicion(node).is_none()
    }

    /// Why `node` is not placed on, if it is not.
    pub(crate) fn suspicion(&self, node: &str) -> Option<(Suspicion, String)> {
        self.nodes.lock().get(node).and_then(|n| n.suspect.clone())
    }

    /// Every suspect node, by id: why, and what was seen.
    pub(crate) fn suspects(&self) -> Vec<(String, Suspicion, String)> {
        self.nodes
            .lock()
            .iter()
            .filter_map(|(id, n)| {
                let (why, seen) = n.suspect.clone()?;
                Some((id.clone(), why, seen))
            })
            .collect()
    }

    /// `node` appeared: not placed on until it passes a probe.
    pub(crate) fn joined(&self, node: &str) {
        self.update(node, |n| {
            if n.suspect.is_none() {
                n.suspect = Some((
                    Suspicion::Unprobed,
                    "not yet probed by this node".to_string(),
                ));
            }
        });
    }

    /// A call to `node` failed with `e` (which says why): it is suspect
    /// until a probe passes.
    pub(crate) fn failed(&self, node: &str, e: &PeerError) {
        let why = if failed_authentication(e) {
            Suspicion::Quarantined
        } else {
            Suspicion::Unreachable
        };
        self.suspect(node, why, e.to_string());
    }

    /// `node` is suspect of `why` (`seen`: what showed it).
    pub(crate) fn suspect(&self, node: &str, why: Suspicion, seen: String) {
        let stalled = why == Suspicion::Stalled;
        self.update(node, |n| {
            let was = n.suspect.as_ref().map(|(w, _)| *w);
            if was != Some(why) {
                tracing::warn!(
                    node,
                    "not placing work on the node ({}): {seen}",
                    why.as_str()
                );
            }
            n.suspect = Some((why, seen));
        });
        if stalled {
            let _ = self.stalls.send(node.to_string());
        }
    }

    /// `node` died: forgotten.
    pub(crate) fn forget(&self, node: &str) {
        self.nodes.lock().remove(node);
    }

    /// Counts a task this node waits on at `node` until the guard drops:
    /// `node` is probed every [`PROBE_EVERY`] meanwhile.
    pub(crate) fn waiting_on(self: &Arc<Self>, node: &str) -> Waiting {
        self.update(node, |n| n.calls = n.calls.saturating_add(1));
        Waiting {
            health: Arc::downgrade(self),
            node: node.to_string(),
        }
    }

    /// Nodes found stalled from now on, by id.
    pub(crate) fn stalls(&self) -> broadcast::Receiver<String> {
        self.stalls.subscribe()
    }

    /// The nodes to probe now (suspect, or waited on, with no probe on
    /// its way), each marked as probing.
    fn to_probe(&self) -> Vec<String> {
        let mut nodes = self.nodes.lock();
        nodes
            .iter_mut()
            .filter(|(_, n)| !n.probing && (n.suspect.is_some() || n.calls > 0))
            .map(|(id, n)| {
                n.probing = true;
                id.clone()
            })
            .collect()
    }

    /// Marks `node` as probing unless a probe is on its way; whether to
    /// probe it.
    fn start_probe(&self, node: &str) -> bool {
        let mut started = false;
        self.update(node, |n| {
            started = !n.probing;
            n.probing = true;
        });
        started
    }

    /// A probe of `node` ended with `answer`.
    fn probed(&self, node: &str, answer: Result<(), PeerError>) {
        let mut usable = false;
        let mut stalled = None;
        {
            let mut nodes = self.nodes.lock();
            let Some(n) = nodes.get_mut(node) else {
                return; // it died meanwhile
            };
            n.probing = false;
            match answer {
                Ok(()) => {
                    n.failed_probes = 0;
                    if let Some((why, _)) = n.suspect.take() {
                        if why != Suspicion::Unprobed {
                            tracing::info!(node, "the node answers again: placing work on it");
                        }
                        usable = true;
                    }
                }
                Err(e) => {
                    n.failed_probes = n.failed_probes.saturating_add(1);
                    let seen = format!("a liveness probe failed: {e}");
                    if failed_authentication(&e) {
                        n.suspect = Some((Suspicion::Quarantined, e.to_string()));
                    } else if n.calls > 0 && n.failed_probes >= STALL_PROBES {
                        stalled = Some(format!(
                            "{} liveness probes in a row failed while tasks waited on it \
                             (each within {} s); the last: {e}",
                            n.failed_probes,
                            PROBE_DEADLINE.as_secs()
                        ));
                    } else if let Some((why, _)) = &n.suspect {
                        let why = match why {
                            Suspicion::Unprobed => Suspicion::Unreachable,
                            other => *other,
                        };
                        n.suspect = Some((why, seen));
                    }
                }
            }
            if n.idle() {
                nodes.remove(node);
            }
        }
        if let Some(seen) = stalled {
            self.suspect(node, Suspicion::Stalled, seen);
        }
        if usable {
            self.kick.notify_one();
        }
    }

    /// Runs `change` on `node`'s entry (made if new, unless the table is
    /// full), dropping it when it is well and idle after.
    fn update(&self, node: &str, change: impl FnOnce(&mut NodeHealth)) {
        let mut nodes = self.nodes.lock();
        if !nodes.contains_key(node) && nodes.len() >= MAX_NODES {
            return;
        }
        let entry = nodes.entry(node.to_string()).or_default();
        change(entry);
        if entry.idle() {
            nodes.remove(node);
        }
    }
}

/// A task this node waits on at a node ([`Health::waiting_on`]).
pub(crate) struct Waiting {
    health: Weak<Health>,
    node: String,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(health) = self.health.upgrade() {
            health.update(&self.node, |n| n.calls = n.calls.saturating_sub(1));
        }
    }
}

/// Probes `addr` (node `node`): whether it answers within
/// [`PROBE_DEADLINE`] (the probe client's request timeout), and which of
/// `tasks` it holds (all true when it does not say: an older node).
///
/// # Errors
/// The call's error when it did not answer (a handler's error is an
/// answer).
pub(crate) async fn ping(
    client: &PeerClient,
    addr: &str,
    tasks: Vec<wray_control_plane::TaskId>,
) -> Result<Vec<bool>, PeerError> {
    let asked = tasks.len().min(MAX_PING_TASKS);
    let ping = Ping {
        tasks: tasks.into_iter().take(MAX_PING_TASKS).collect(),
    };
    let within =
        tokio::time::timeout(PROBE_DEADLINE, call::<method::Ping>(client, addr, ping)).await;
    let answer = match within {
        Ok(answer) => answer,
        Err(_) => {
            return Err(PeerError::Timeout {
                addr: addr.to_string(),
                what: "request",
                after: PROBE_DEADLINE,
            })
        }
    };
    match answer {
        Ok(pong) => Ok((0..asked)
            .map(|i| pong.held.get(i).copied().unwrap_or(true))
            .collect()),
        // Its handler answered: alive, and its tasks are taken as held.
        Err(PeerError::Remote { .. }) => Ok(vec![true; asked]),
        Err(e) => Err(e),
    }
}

/// A client for probes: its own pool (at most 2 connections a peer), and
/// every step within [`PROBE_DEADLINE`].
///
/// # Errors
/// As [`PeerClient::new`].
pub(crate) fn probe_client(
    mut config: wray_peer::PeerConfig,
    node_id: &str,
) -> Result<PeerClient, PeerError> {
    config.request_timeout = PROBE_DEADLINE;
    config.handshake_timeout = PROBE_DEADLINE;
    config.max_connections_per_peer = 2;
    PeerClient::new(config, node_id)
}

/// Keeps `health` current until it is dropped or the view closes: the
/// nodes alive now and each that joins are probed at once; a suspect node
/// that publishes a newer record is probed at once; every [`PROBE_EVERY`]
/// each suspect node and each node waited on is probed; a dead node is
/// forgotten.
pub(crate) async fn watch(health: Weak<Health>, view: NodeView, client: PeerClient, me: String) {
    use tokio::sync::broadcast::error::RecvError;
    let mut events = view.subscribe();
    let probe = |health: &Arc<Health>, node: &str| {
        let Some(addr) = view
            .get(node)
            .filter(|n| n.state == wray_control_plane::NodeState::Alive)
            .map(|n| n.record.peer_address)
        else {
            health.forget(node);
            return;
        };
        let (health, client, node) = (Arc::downgrade(health), client.clone(), node.to_string());
        tokio::spawn(async move {
            let answer = ping(&client, &addr, Vec::new()).await.map(|_| ());
            if let Some(health) = health.upgrade() {
                health.probed(&node, answer);
            }
        });
    };
    if let Some(h) = health.upgrade() {
        for node in view.alive().into_iter().filter(|n| n.id != me) {
            h.joined(&node.id);
            if h.start_probe(&node.id) {
                probe(&h, &node.id);
            }
        }
    }
    let mut tick = tokio::time::interval(PROBE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let event = tokio::select! {
            event = events.recv() => Some(event),
            _ = tick.tick() => None,
        };
        let Some(h) = health.upgrade() else {
            return;
        };
        match event {
            None => {
                for node in h.to_probe() {
                    probe(&h, &node);
                }
            }
            Some(Ok(NodeEvent::Joined(node))) if node != me => {
                h.joined(&node);
                if h.start_probe(&node) {
                    probe(&h, &node);
                }
            }
            Some(Ok(NodeEvent::Updated(node))) if node != me => {
                // Its next word after a failure: asked again at once.
                if !h.usable(&node) && h.start_probe(&node) {
                    probe(&h, &node);
                }
            }
            Some(Ok(NodeEvent::Died(node))) => h.forget(&node),
            Some(Err(RecvError::Lagged(_))) => {
                // Events were missed: every live node is looked at again.
                for node in view.alive().into_iter().filter(|n| n.id != me) {
                    if !h.usable(&node.id) && h.start_probe(&node.id) {
                        probe(&h, &node.id);
                    }
                }
            }
            Some(Err(RecvError::Closed)) => return,
            Some(Ok(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> PeerError {
        PeerError::Connect {
            addr: "n:1".into(),
            source: std::io::ErrorKind::ConnectionRefused.into(),
        }
    }

    #[test]
    fn a_new_node_is_usable_once_a_probe_passes() {
        let health = Health::new(Default::default());
        assert!(health.usable("n"));
        health.joined("n");
        assert_eq!(
            health.suspicion("n").map(|s| s.0),
            Some(Suspicion::Unprobed)
        );
        assert!(health.start_probe("n"));
        assert!(!health.start_probe("n"), "one probe at a time");
        health.probed("n", Ok(()));
        assert!(health.usable("n"));
        assert!(health.nodes.lock().is_empty(), "a well, idle node leaves");
    }

    #[test]
    fn a_failed_connection_or_handshake_makes_a_node_suspect_until_a_probe_passes() {
        let health = Health::new(Default::default());
        health.failed("n", &refused());
        assert_eq!(
            health.suspicion("n").map(|s| s.0),
            Some(Suspicion::Unreachable)
        );
        health.start_probe("n");
        health.probed("n", Err(refused()));
        assert!(!health.usable("n"));
        let auth = PeerError::Auth {
            addr: "m:1".into(),
            message: "bad token".into(),
        };
        health.failed("m", &auth);
        assert_eq!(
            health.suspicion("m").map(|s| s.0),
            Some(Suspicion::Quarantined)
        );
        health.start_probe("n");
        health.probed("n", Ok(()));
        assert!(health.usable("n"));
        health.forget("m");
        assert!(health.usable("m"));
    }

    #[test]
    fn a_node_waited_on_is_stalled_after_failed_probes_in_a_row() {
        let health = Arc::new(Health::new(Default::default()));
        let mut stalls = health.stalls();
        let waiting = health.waiting_on("n");
        assert_eq!(health.to_probe(), vec!["n".to_string()]);
        let timeout = || PeerError::Timeout {
            addr: "n:1".into(),
            what: "request",
            after: PROBE_DEADLINE,
        };
        health.probed("n", Err(timeout()));
        assert!(health.usable("n"), "one failed probe is not a stall");
        health.start_probe("n");
        health.probed("n", Err(timeout()));
        assert!(health.usable("n"), "two are not either");
        health.start_probe("n");
        health.probed("n", Err(timeout()));
        assert_eq!(health.suspicion("n").map(|s| s.0), Some(Suspicion::Stalled));
        assert_eq!(stalls.try_recv().ok().as_deref(), Some("n"));
        drop(waiting);
        assert!(!health.usable("n"), "a stalled node stays suspect");
    }

    #[test]
    fn only_errors_before_a_request_is_taken_are_unreached() {
        assert!(unreached(&refused()));
        assert!(unreached(&PeerError::Timeout {
            addr: "n:1".into(),
            what: "handshake",
            after: PROBE_DEADLINE,
        }));
        assert!(!unreached(&PeerError::Io {
            addr: "n:1".into(),
            source: std::io::ErrorKind::ConnectionReset.into(),
        }));
    }
}
