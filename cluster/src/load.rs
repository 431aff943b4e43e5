//! What this node believes the other nodes have free now ([`Loads`]):
//! the newest word from each node, less what this node sent it since.
//!
//! A node republishes its record (what it has free) at most every 200 ms,
//! so that word is stale by up to that much plus the watch's latency. Two
//! things make it fresher here:
//!
//! - **Answers.** A forwarded task's answer carries what its node had free
//!   as it answered (`TaskDone::available`): newer than its record, it
//!   becomes the base (the slot the task held is seen free at once, not
//!   200 ms later).
//! - **What was sent.** Each task placed on a node is counted as sent
//!   there, with when, until it ends. What a node said at instant `t`
//!   already reflects the tasks sent well before `t`; those sent after
//!   `t - SLACK` (they may not have reached it yet) are taken off what it
//!   said. So a burst spreads (each placement sees the one before it)
//!   without counting twice the tasks a node already reports.
//!
//! Estimates err on the side of too little free: a node that had room
//! all along is seen to again at its next word. One that was sent more
//! than it had (another owner sent it work meanwhile) queues it and hands
//! it back when a node has room first (`spill`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::proto::Request;

/// How long before a node's word a task sent to it may still be on its
/// way (not reflected in that word): a message's trip and the task's
/// arguments' shipping, on one network.
const SLACK: Duration = Duration::from_millis(100);

/// The most sends counted per node; past it the oldest are forgotten
/// (their amounts are in the node's newer words by then).
const MAX_SENT_PER_NODE: usize = 65_536;

/// A node as this node knows its load.
#[derive(Default)]
struct NodeLoad {
    /// Tasks sent and not seen end, oldest first: when placed, what they
    /// asked for.
    sent: VecDeque<(Instant, BTreeMap<String, f64>)>,
    /// What it had free as of its last answer, and when that came.
    answered: Option<(BTreeMap<String, f64>, Instant)>,
    /// Tasks of other nodes' this node handed back to their owners naming
    /// this node, oldest first: when, and what they ask (the owners may
    /// send them there; nothing tells this node when they end, so each
    /// counts only until this node's next word from it).
    named: VecDeque<(Instant, BTreeMap<String, f64>)>,
    /// When its last record came.
    recorded: Option<Instant>,
}

/// Every other node's load as this node knows it, by node id.
#[derive(Default)]
pub(crate) struct Loads {
    nodes: Mutex<HashMap<String, NodeLoad>>,
}

/// One node's estimate: what it has free, and how many tasks this node
/// sent it that have not ended.
#[derive(Debug, Clone)]
pub(crate) struct Estimate {
    /// Amounts by name (can be negative: more was sent than it said it
    /// had; read as none).
    pub free: BTreeMap<String, f64>,
    /// Tasks sent and not seen end.
    pub outstanding: usize,
}

impl Loads {
    /// Counts a task asking for `request` as sent to `node` now.
    pub(crate) fn sent(&self, node: &str, request: &Request) {
        let mut nodes = self.nodes.lock();
        let load = nodes.entry(node.to_string()).or_default();
        if load.sent.len() >= MAX_SENT_PER_NODE {
            load.sent.pop_front();
        }
        load.sent.push_back((Instant::now(), request.amounts()));
    }

    /// Forgets one task asking for `request` sent to `node` (it ended, or
    /// was not sent after all): the oldest such.
    pub(crate) fn ended(&self, node: &str, request: &Request) {
        let amounts = request.amounts();
        let mut nodes = self.nodes.lock();
        let Some(load) = nodes.get_mut(node) else {
            return;
        };
        if let Some(i) = load.sent.iter().position(|(_, a)| *a == amounts) {
            load.sent.remove(i);
        }
        if load.sent.is_empty()
            && load.named.is_empty()
            && load.answered.is_none()
            && load.recorded.is_none()
        {
            nodes.remove(node);
        }
    }

    /// Counts a task another node owns, handed back to it naming `node`
    /// now, as going there (until `node`'s next word).
    pub(crate) fn named(&self, node: &str, request: &Request) {
        let mut nodes = self.nodes.lock();
        let load = nodes.entry(node.to_string()).or_default();
        if load.named.len() >= MAX_SENT_PER_NODE {
            load.named.pop_front();
        }
        load.named.push_back((Instant::now(), request.amounts()));
    }

    /// Notes what `node` had free as it answered a task, just now.
    pub(crate) fn answered(&self, node: &str, free: BTreeMap<String, f64>) {
        let mut nodes = self.nodes.lock();
        nodes.entry(node.to_string()).or_default().answered = Some((free, Instant::now()));
    }

    /// Notes that a new record of `node` came just now.
    pub(crate) fn recorded(&self, node: &str) {
        let mut nodes = self.nodes.lock();
        let load = nodes.entry(node.to_string()).or_default();
        let now = Instant::now();
        load.recorded = Some(now);
        // Named long enough before this word: in it, if they went there.
        if let Some(cutoff) = now.checked_sub(SLACK) {
            while load.named.front().is_some_and(|(when, _)| *when <= cutoff) {
                load.named.pop_front();
            }
        }
    }

    /// Forgets `node` (it died).
    pub(crate) fn forget(&self, node: &str) {
        self.nodes.lock().remove(node);
    }

    /// What `node` has free now, by its last record's `available` (seen
    /// at an unknown time when no record came since this node joined:
    /// taken as long ago) or its newer answer, less what was sent since.
    pub(crate) fn estimate(&self, node: &str, available: &BTreeMap<String, f64>) -> Estimate {
        let nodes = self.nodes.lock();
        let Some(load) = nodes.get(node) else {
            return Estimate {
                free: available.clone(),
                outstanding: 0,
            };
        };
        let (base, at) = match (&load.answered, load.recorded) {
            (Some((free, at)), recorded) if recorded.is_none_or(|r| *at >= r) => {
                (free.clone(), Some(*at))
            }
            (_, recorded) => (available.clone(), recorded),
        };
        let mut free = base;
        // Sends after `cutoff` may not be in the word the base is.
        let cutoff = at.and_then(|at| at.checked_sub(SLACK));
        for queue in [&load.sent, &load.named] {
            for (when, amounts) in queue.iter().rev() {
                if cutoff.is_some_and(|c| *when <= c) {
                    break;
                }
                for (name, amount) in amounts {
                    if let Some(have) = free.get_mut(name) {
                        *have -= amount;
                    }
                }
            }
        }
        Estimate {
            free,
            outstanding: load.sent.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(n: f64) -> BTreeMap<String, f64> {
        BTreeMap::from([("CPU".to_string(), n)])
    }

    #[test]
    fn a_send_counts_until_a_newer_word_from_the_node_reflects_it() {
        let loads = Loads::default();
        // No word since joining: every send is taken off the record's.
        loads.sent("n", &Request::one_cpu());
        let e = loads.estimate("n", &cpus(4.0));
        assert_eq!((e.free["CPU"], e.outstanding), (3.0, 1));
        // A record long after the send reflects it: not taken off again.
        std::thread::sleep(SLACK * 2);
        loads.recorded("n");
        assert_eq!(loads.estimate("n", &cpus(3.0)).free["CPU"], 3.0);
        // A send after the record is taken off it.
        loads.sent("n", &Request::one_cpu());
        let e = loads.estimate("n", &cpus(3.0));
        assert_eq!((e.free["CPU"], e.outstanding), (2.0, 2));
        // The task's answer, newer than the record, is the base now.
        loads.ended("n", &Request::one_cpu());
        loads.answered("n", cpus(3.0));
        let e = loads.estimate("n", &cpus(0.0));
        assert_eq!((e.free["CPU"], e.outstanding), (2.0, 1));
    }

    #[test]
    fn a_task_named_in_a_hand_back_counts_until_the_next_word() {
        let loads = Loads::default();
        loads.recorded("n");
        loads.named("n", &Request::one_cpu());
        let e = loads.estimate("n", &cpus(2.0));
        assert_eq!((e.free["CPU"], e.outstanding), (1.0, 0));
        std::thread::sleep(SLACK * 2);
        loads.recorded("n");
        assert_eq!(loads.estimate("n", &cpus(2.0)).free["CPU"], 2.0);
    }

    #[test]
    fn an_unknown_node_is_taken_at_its_word_and_a_dead_one_forgotten() {
        let loads = Loads::default();
        assert_eq!(loads.estimate("m", &cpus(2.0)).free["CPU"], 2.0);
        loads.sent("m", &Request::one_cpu());
        loads.forget("m");
        assert_eq!(loads.estimate("m", &cpus(2.0)).outstanding, 0);
        // Ending a send never seen does nothing.
        loads.ended("m", &Request::one_cpu());
        assert_eq!(loads.estimate("m", &cpus(2.0)).free["CPU"], 2.0);
    }
}
