//! [`NodeView`]: a cluster's nodes as one node sees them, kept by a
//! backend's background task through [`ViewShared`] (the embedded registry
//! writes it directly; the etcd one from a list and a watch).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use super::{ClusterMember, NodeEvent, NodeRecord, NodeState, MAX_DEAD_KEPT, MAX_NODES};
use crate::function_table::now_ms;

/// Events a subscriber may fall behind by before it is told it lagged
/// (`broadcast::error::RecvError::Lagged`: read [`NodeView::snapshot`]).
const EVENT_BUFFER: usize = 1024;

/// What the view knows.
#[derive(Default)]
pub(super) struct Known {
    alive: BTreeMap<String, NodeRecord>,
    pub(super) dead: BTreeMap<String, ClusterMember>,
    /// Dead ids, oldest death first: the first is forgotten past
    /// [`MAX_DEAD_KEPT`].
    dead_order: VecDeque<String>,
    malformed: u64,
    /// How long a dead node is kept (`None`: until [`MAX_DEAD_KEPT`]
    /// deaths push it out).
    keep_dead: Option<Duration>,
}

impl Known {
    /// Forgets the dead nodes that died more than `keep_dead` ago.
    fn prune(&mut self, now_ms: u64) {
        let Some(keep) = self.keep_dead else { return };
        let keep_ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX);
        while let Some(oldest) = self.dead_order.front() {
            let died = self.dead.get(oldest).and_then(|d| d.died_at_ms);
            if died.is_some_and(|d| now_ms.saturating_sub(d) < keep_ms) {
                return;
            }
            if let Some(gone) = self.dead_order.pop_front() {
                self.dead.remove(&gone);
            }
        }
    }
}

/// The state a backend keeps current and every [`NodeView`] clone reads.
pub(crate) struct ViewShared {
    pub(super) known: Mutex<Known>,
    events: broadcast::Sender<NodeEvent>,
    synced: watch::Sender<bool>,
}

impl ViewShared {
    /// An empty view, not yet synced.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            known: Mutex::new(Known::default()),
            events: broadcast::channel(EVENT_BUFFER).0,
            synced: watch::channel(false).0,
        })
    }

    /// Whether node `id` is alive in the view.
    pub(crate) fn is_alive(&self, id: &str) -> bool {
        self.known.lock().alive.contains_key(id)
    }

    /// `record` is present: Joined if it was not alive, Updated if it
    /// changed. A new node past [`MAX_NODES`] is skipped and counted.
    pub(crate) fn upsert(&self, record: NodeRecord) {
        let mut known = self.known.lock();
        let id = record.id.clone();
        let event = match known.alive.get(&id) {
            Some(old) if *old == record => return,
            Some(_) => NodeEvent::Updated(id.clone()),
            None if known.alive.len() >= MAX_NODES => {
                known.malformed += 1;
                tracing::warn!(node = %id, "node view is full ({MAX_NODES} nodes): node skipped");
                return;
            }
            None => NodeEvent::Joined(id.clone()),
        };
        if known.dead.remove(&id).is_some() {
            known.dead_order.retain(|d| *d != id);
        }
        known.alive.insert(id, record);
        // No receiver is not an error: nobody subscribed.
        let _ = self.events.send(event);
    }

    /// Node `id`'s record disappeared: it is DEAD (a no-op unless alive).
    pub(crate) fn died(&self, id: &str) {
        let mut known = self.known.lock();
        Self::bury(&mut known, id, &self.events);
    }

    /// A full listing at one moment: every record in it is present, and
    /// every node alive before and missing from it died.
    pub(crate) fn relist(&self, records: Vec<NodeRecord>) {
        let present: std::collections::BTreeSet<String> =
            records.iter().map(|r| r.id.clone()).collect();
        {
            let mut known = self.known.lock();
            let gone: Vec<String> = known
                .alive
                .keys()
                .filter(|id| !present.contains(*id))
                .cloned()
                .collect();
            for id in gone {
                Self::bury(&mut known, &id, &self.events);
            }
        }
        for record in records {
            self.upsert(record);
        }
    }

    fn bury(known: &mut Known, id: &str, events: &broadcast::Sender<NodeEvent>) {
        let Some(record) = known.alive.remove(id) else {
            return;
        };
        known.dead.insert(
            id.to_string(),
            ClusterMember {
                record,
                state: NodeState::Dead,
                died_at_ms: Some(now_ms()),
            },
        );
        known.dead_order.push_back(id.to_string());
        known.prune(now_ms());
        while known.dead_order.len() > MAX_DEAD_KEPT {
            if let Some(oldest) = known.dead_order.pop_front() {
                known.dead.remove(&oldest);
            }
        }
        let _ = events.send(NodeEvent::Died(id.to_string()));
    }

    /// A record under `key` failed its checks: skipped, counted, logged.
    pub(crate) fn malformed(&self, key: &str, reason: &crate::Error) {
        self.known.lock().malformed += 1;
        tracing::warn!(key, "malformed node record skipped: {reason}");
    }

    /// The view has read the whole cluster at least once.
    pub(crate) fn set_synced(&self) {
        self.synced.send_replace(true);
    }

    /// A receiver that sees [`set_synced`](Self::set_synced).
    pub(crate) fn synced_receiver(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }
}

/// Aborts the backend's task that keeps a view when the last clone of the
/// view is dropped.
pub(crate) struct ViewTask(pub(crate) JoinHandle<()>);

impl Drop for ViewTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A cluster's nodes, as this node sees them: cheap to clone, kept current
/// in the background by the registry that made it.
///
/// A node is ALIVE while its record is present, DEAD once the view saw the
/// record disappear (the last [`MAX_DEAD_KEPT`] deaths are kept, with
/// `died_at_ms`, and each forgotten after
/// [`forget_dead_after`](NodeView::forget_dead_after)'s time when set). A backend outage alone never makes a node DEAD: the view
/// keeps the last known set until the backend answers again.
#[derive(Clone)]
pub struct NodeView {
    shared: Arc<ViewShared>,
    /// `None` for the embedded registry, whose view needs no task.
    _task: Option<Arc<ViewTask>>,
}

impl std::fmt::Debug for NodeView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = self.shared.known.lock();
        f.debug_struct("NodeView")
            .field("alive", &known.alive.len())
            .field("dead", &known.dead.len())
            .finish_non_exhaustive()
    }
}

impl NodeView {
    /// A view of `shared`, whose keeping task (if any) stops when the last
    /// clone is dropped.
    pub(crate) fn new(shared: Arc<ViewShared>, task: Option<ViewTask>) -> Self {
        Self {
            shared,
            _task: task.map(Arc::new),
        }
    }

    /// Forgets each dead node `keep` after it died (the view keeps the
    /// last [`MAX_DEAD_KEPT`] deaths without it).
    pub fn forget_dead_after(&self, keep: Duration) {
        let mut known = self.shared.known.lock();
        known.keep_dead = Some(keep);
        known.prune(now_ms());
    }

    /// Every known node: the live ones, then the dead ones (those that
    /// died within [`forget_dead_after`](Self::forget_dead_after)'s
    /// time), each by id.
    pub fn snapshot(&self) -> Vec<ClusterMember> {
        let mut known = self.shared.known.lock();
        known.prune(now_ms());
        let alive = known.alive.values().map(|record| ClusterMember {
            record: record.clone(),
            state: NodeState::Alive,
            died_at_ms: None,
        });
        alive.chain(known.dead.values().cloned()).collect()
    }

    /// The records of the live nodes, by id.
    pub fn alive(&self) -> Vec<NodeRecord> {
        self.shared.known.lock().alive.values().cloned().collect()
    }

    /// Node `id`, alive or among the dead kept.
    pub fn get(&self, id: &str) -> Option<ClusterMember> {
        let mut known = self.shared.known.lock();
        known.prune(now_ms());
        if let Some(record) = known.alive.get(id) {
            return Some(ClusterMember {
                record: record.clone(),
                state: NodeState::Alive,
                died_at_ms: None,
            });
        }
        known.dead.get(id).cloned()
    }

    /// The state of node `id`, if known.
    pub fn state(&self, id: &str) -> Option<NodeState> {
        self.get(id).map(|info| info.state)
    }

    /// Membership events from now on, in the order the view applied them.
    /// A subscriber more than 1,024 events behind gets `Lagged` and should
    /// read [`snapshot`](Self::snapshot) again.
    pub fn subscribe(&self) -> broadcast::Receiver<NodeEvent> {
        self.shared.events.subscribe()
    }

    /// Whether the view has read the whole cluster at least once (it has
    /// not while the backend was unreachable since the view was made).
    pub fn is_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// How many records the view skipped: malformed (failing
    /// [`decode_node_record`](super::decode_node_record)) or past
    /// [`MAX_NODES`]. A record read again by a relist counts again.
    pub fn malformed(&self) -> u64 {
        self.shared.known.lock().malformed
    }
}
