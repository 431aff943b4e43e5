//! A node's drain (`wray stop`, SIGTERM), as Ray drains a node: it
//! leaves without doubling or losing its peers' work.
//!
//! 1. It publishes that it is draining (`NodeRecord::draining`): the other
//!    nodes place nothing new there (`Forwarder::candidates`), and a task
//!    that reaches it anyway is handed back ([`code::MOVED`], no node
//!    named: its owner places it again).
//! 2. It hands back at once, to their owners, the forwarded tasks queued
//!    here that have not started (the spillback path: each owner places
//!    its task again; it never ran here), and again as long as it drains.
//! 3. It lets the tasks running here finish, within its `--grace`, and
//!    sends their results to their owners, which wait for them: an owner
//!    re-sends only what was handed back, since the node stays alive
//!    (its lease held) while it drains.
//! 4. When the grace ends, the forwarded tasks still running are stopped
//!    and answered [`code::CUT`]: their owners run them again elsewhere,
//!    as after the node's death. Then the node deregisters (its lease
//!    revoked) and exits.
//!
//! Actor calls forwarded here are not handed back (their actor lives
//! here): they run while the node drains, and are cut at the grace like
//! the rest.
//!
//! [`code::MOVED`]: crate::protocol::code::MOVED
//! [`code::CUT`]: crate::protocol::code::CUT

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use wray_control_plane::TaskId;

use crate::serve::Service;

/// How often a draining node looks again for queued tasks to hand back
/// and for the running ones to have ended: 50 ms.
const DRAIN_TICK: Duration = Duration::from_millis(50);

/// How long the answers of the tasks cut at the grace get to leave, at
/// most, before the node deregisters: 2 s.
const CUT_ANSWERS: Duration = Duration::from_secs(2);

/// What a drain did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Queued tasks handed back to their owners.
    pub(crate) handed_back: usize,
    /// Running tasks stopped at the grace.
    pub(crate) cut: usize,
}

impl Service {
    /// Drains this node (see the module docs) within `grace`; returns
    /// once no forwarded task runs here any more (each cut at the grace
    /// answered, [`CUT_ANSWERS`] at most). The node then leaves.
    ///
    /// # Cancel safety
    /// Dropped, the drain stops where it is; the node stays draining.
    pub(crate) async fn drain(&self, grace: Duration) -> Drained {
        let deadline = Instant::now() + grace;
        let grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        self.drain.grace_ms.store(grace_ms, Ordering::Relaxed);
        self.drain.draining.store(true, Ordering::SeqCst);
        self.drain.started.notify_one();
        let mut drained = Drained::default();
        let running = self.running.lock().len();
        tracing::info!(
            running,
            grace_s = grace.as_secs(),
            "draining: no new work here; queued tasks go back to their owners"
        );
        loop {
            drained.handed_back += self.hand_back_queued();
            if self.running.lock().is_empty() || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(DRAIN_TICK.min(deadline.saturating_duration_since(Instant::now())))
                .await;
        }
        drained.cut = self.cut_running();
        let answered = Instant::now() + CUT_ANSWERS;
        while !self.running.lock().is_empty() && Instant::now() < answered {
            tokio::time::sleep(DRAIN_TICK).await;
        }
        tracing::info!(
            handed_back = drained.handed_back,
            cut = drained.cut,
            "drained: the forwarded tasks ran out, were handed back, or were cut at the grace"
        );
        drained
    }

    /// Hands every forwarded task queued here back to its owner: how many.
    fn hand_back_queued(&self) -> usize {
        let Some(sched) = self.sched.upgrade() else {
            return 0;
        };
        let mut handed = 0;
        for task in sched.take_peer_tasks() {
            // Cancelled meanwhile: nothing to hand back.
            let Some(spec) = task.take() else {
                continue;
            };
            if let Some(back) = sched.hand_back(spec) {
                // No node named: the owner places it by what it knows.
                let _ = back.send(String::new());
                handed += 1;
            }
        }
        handed
    }

    /// Stops the forwarded tasks running here at the grace (their
    /// answers say so: [`code::CUT`](crate::protocol::code::CUT)):
    /// how many.
    fn cut_running(&self) -> usize {
        let Some(sched) = self.sched.upgrade() else {
            return 0;
        };
        let running: Vec<TaskId> = self.running.lock().keys().copied().collect();
        self.drain.cut.lock().extend(running.iter().copied());
        let mut cut = 0;
        for task in running {
            // An actor call too: the actor goes with the node.
            if sched.cancel(task, true, true) {
                cut += 1;
            }
        }
        if cut > 0 {
            tracing::warn!(
                cut,
                "the grace ended: forwarded tasks still running are stopped, to run elsewhere"
            );
        }
        cut
    }
}
