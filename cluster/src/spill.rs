//! Spillback: a task waiting in this node's queue moves to another node
//! as soon as that node has room and this one has none (Ray's raylets
//! spill back queued work the same way).
//!
//! [`spill_loop`] runs for as long as the node is in its cluster. It looks
//! at the queue when another node publishes a new record (a slot freed
//! there is seen within the watch's latency of its publication), when a
//! task this node sent ends (its answer says what that node has free:
//! `load`), and every [`SPILL_TICK`] while tasks wait. For each waiting
//! task it may move, oldest first, it picks the least used node whose
//! estimated free resources fit it, and takes the task out of the queue
//! ([`ResourcePool::take_movable`]): a task of this node's is then
//! forwarded there as any placed task is; a task another node forwarded
//! here is handed back to that node (its owner), naming the node with
//! room ([`code::MOVED`]), and the owner places it again by what it
//! knows (it sends it to that node if it sees room there too, else where
//! its own estimate says, else keeps it). Before the queue, the tasks this
//! node keeps unplaced (no node had room, and this one cannot run them:
//! `Placement::Later`) go to the first node with room.
//!
//! Handing back cannot ping-pong: the owner, which knows what it sent
//! where, decides each time, and keeps a task unplaced rather than send
//! it where it sees no room; the node that handed one back counts it as
//! going to the node it named until that node's next word (`load`).
//!
//! A task runs at most once: taking it out of the queue happens under the
//! queue's lock, which dispatch takes to start it here, and whoever takes
//! its spec first (the forward here, the hand-back, a cancel) has it.
//!
//! [`ResourcePool::take_movable`]: crate::scheduler::queue::ResourcePool::take_movable
//! [`code::MOVED`]: crate::protocol::code::MOVED

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, Notify};
use wray_control_plane::NodeEvent;

use crate::choose::Candidate;
use crate::error::{ErrorKind, TaskError};
use crate::forward::Forwarder;
use crate::scheduler::placement::utilization;
use crate::scheduler::queue::{Movable, Moved};
use crate::scheduler::remote::Remote;
use crate::scheduler::Scheduler;

/// How often the queue is looked at while tasks wait in it and nothing
/// else woke the loop: what a send's estimate takes to age (`load`'s
/// slack) is seen within this.
const SPILL_TICK: Duration = Duration::from_millis(50);

/// Moves waiting tasks to nodes with room, until the forwarder goes (see
/// the module docs): `events` are the cluster's membership changes,
/// `kick` is notified when a node may have room again.
pub(crate) async fn spill_loop(
    forwarder: Weak<Forwarder>,
    kick: Arc<Notify>,
    mut events: broadcast::Receiver<NodeEvent>,
) {
    loop {
        let waiting = match forwarder.upgrade() {
            Some(f) => f.waiting(),
            None => return,
        };
        let event = tokio::select! {
            event = events.recv() => Some(event),
            () = kick.notified() => None,
            () = tokio::time::sleep(SPILL_TICK), if waiting => None,
        };
        let Some(forwarder) = forwarder.upgrade() else {
            return;
        };
        match event {
            Some(Ok(NodeEvent::Joined(node) | NodeEvent::Updated(node))) => {
                forwarder.loads.recorded(&node);
            }
            Some(Ok(NodeEvent::Died(node))) => forwarder.loads.forget(&node),
            Some(Err(RecvError::Closed)) => return,
            Some(Err(RecvError::Lagged(_))) | None => {}
        }
        forwarder.spill();
    }
}

impl Forwarder {
    /// Whether tasks wait in this node's queue, or unplaced.
    fn waiting(&self) -> bool {
        !self.parked.lock().is_empty() || self.sched.upgrade().is_some_and(|s| s.queued() > 0)
    }

    /// Sends the tasks waiting here unplaced, then those waiting in the
    /// queue, to the nodes with room for them (see the module docs).
    pub(crate) fn spill(&self) {
        let Some(sched) = self.sched.upgrade() else {
            return;
        };
        let parked = !self.parked.lock().is_empty();
        if sched.queued() == 0 && !parked {
            return;
        }
        let all = self.candidates(&[]);
        let mut room: Vec<Candidate> = all
            .iter()
            .filter(|c| c.free.values().any(|v| *v > 0.0))
            .cloned()
            .collect();
        if parked {
            self.unpark(&sched, &all, &mut room);
        }
        if room.is_empty() || sched.queued() == 0 {
            return;
        }
        let moved = sched.take_movable(|request, _| take_room(&mut room, request));
        for m in moved {
            self.move_task(&sched, m);
        }
    }

    /// Sends the tasks kept here unplaced (`Placement::Later`), oldest
    /// first, to the nodes of `room` that fit them; fails those no live
    /// node of `all` could run any more (its nodes died), and drops those
    /// cancelled meanwhile.
    fn unpark(&self, sched: &Arc<Scheduler>, all: &[Candidate], room: &mut [Candidate]) {
        let mut send = Vec::new();
        let mut gone = Vec::new();
        {
            let mut parked = self.parked.lock();
            let mut stuck: Vec<crate::proto::Request> = Vec::new();
            parked.retain(|(task, request)| {
                let cancelled = match task.spec.lock().as_ref() {
                    // Taken: cancelled before it was parked again.
                    None => return false,
                    Some(spec) => spec.cancel.is_cancelled(),
                };
                if cancelled || !all.iter().any(|c| request.fits(&c.totals)) {
                    gone.push((task.clone(), request.clone(), cancelled));
                    return false;
                }
                if stuck.contains(request) {
                    return true;
                }
                match take_room(room, request) {
                    Some(node) => {
                        send.push((task.clone(), request.clone(), node));
                        false
                    }
                    None => {
                        stuck.push(request.clone());
                        true
                    }
                }
            });
        }
        for (task, request, node) in send {
            self.record_sent(&node, &request);
            self.forward(task, node, request);
        }
        for (task, request, cancelled) in gone {
            let Some(spec) = task.take() else {
                continue;
            };
            let (kind, message) = if cancelled {
                (ErrorKind::Cancelled, "cancelled before it ran".to_string())
            } else {
                (ErrorKind::Infeasible, self.infeasible(&request))
            };
            let error = TaskError::new(kind, spec.label.clone(), spec.id, message);
            sched.finish(&spec, Err(error));
            sched.release_all(&spec.holds);
        }
    }

    /// Sends `m` on to the node picked for it: forwarded there (a task of
    /// this node's), or handed back to its owner naming that node.
    fn move_task(&self, sched: &Arc<Scheduler>, m: Moved) {
        self.moved.fetch_add(1, Ordering::Relaxed);
        match m.movable {
            Movable::Own => {
                tracing::debug!(node = m.node, "a queued task moves to a node with room");
                self.record_sent(&m.node, &m.request);
                self.forward(m.task, m.node, m.request);
            }
            Movable::Peer => {
                // Cancelled meanwhile: nothing to hand back.
                let Some(task) = m.task.take() else {
                    return;
                };
                tracing::debug!(
                    task = %task.id,
                    node = m.node,
                    "a queued task goes back to its owner for a node with room"
                );
                self.loads.named(&m.node, &m.request);
                if let Some(back) = sched.hand_back(task) {
                    // Its owner stopped waiting (it died): nothing more.
                    let _ = back.send(m.node);
                }
            }
            // Never taken out of the queue.
            Movable::No => {}
        }
    }
}

/// The least used node of `room` whose free resources fit `request`
/// (ties: the fewest tasks sent, then by id), with `request` taken off
/// what it has free; `None` when none fits.
fn take_room(room: &mut [Candidate], request: &crate::proto::Request) -> Option<String> {
    let used = |c: &Candidate| utilization(request, &c.totals, &c.free);
    let best = room
        .iter_mut()
        .filter(|c| request.fits(&c.free))
        .min_by(|a, b| {
            used(a)
                .total_cmp(&used(b))
                .then_with(|| a.outstanding.cmp(&b.outstanding))
                .then_with(|| a.id.cmp(&b.id))
        })?;
    for (name, amount) in request.amounts() {
        if let Some(have) = best.free.get_mut(&name) {
            *have -= amount;
        }
    }
    best.outstanding = best.outstanding.saturating_add(1);
    Some(best.id.clone())
}
