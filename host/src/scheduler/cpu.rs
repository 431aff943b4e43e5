//! CPU slots and the ready queue of the local scheduler.
//!
//! A task runs when it holds a CPU slot. A task blocked in `get`/`wait` gives
//! its slot back and, once its objects exist, queues as a *resumer*; resumers
//! get freed slots before new tasks do, so started work finishes first and
//! nested tasks can never deadlock the node (Ray releases a blocked worker's
//! CPU the same way).

use std::collections::VecDeque;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::task::PendingTask;

struct State {
    free: usize,
    ready: VecDeque<Arc<PendingTask>>,
    resumers: VecDeque<SyncSender<()>>,
}

/// CPU slots, the FIFO of tasks ready to run, and blocked tasks waiting to
/// resume.
pub(crate) struct CpuPool {
    total: usize,
    state: Mutex<State>,
}

impl CpuPool {
    pub fn new(total: usize) -> Self {
        Self {
            total,
            state: Mutex::new(State {
                free: total,
                ready: VecDeque::new(),
                resumers: VecDeque::new(),
            }),
        }
    }

    /// Number of slots.
    pub fn total(&self) -> usize {
        self.total
    }

    /// (free slots, ready tasks) now.
    pub fn snapshot(&self) -> (usize, usize) {
        let s = self.state.lock();
        (s.free, s.ready.len())
    }

    /// Queues a ready task; returns the tasks that may start now, each
    /// already holding a slot.
    #[must_use]
    pub fn push_ready(&self, task: Arc<PendingTask>) -> Vec<Arc<PendingTask>> {
        let mut s = self.state.lock();
        s.ready.push_back(task);
        Self::dispatch(&mut s)
    }

    /// Gives a slot back; returns the tasks that may start now.
    #[must_use]
    pub fn release(&self) -> Vec<Arc<PendingTask>> {
        let mut s = self.state.lock();
        s.free += 1;
        Self::dispatch(&mut s)
    }

    /// Takes a slot for a task that was blocked, waiting (ahead of queued
    /// tasks) until one is free.
    pub fn reacquire(&self) {
        let rx: Receiver<()> = {
            let mut s = self.state.lock();
            if s.free > 0 && s.resumers.is_empty() {
                s.free -= 1;
                return;
            }
            let (tx, rx) = sync_channel(1);
            s.resumers.push_back(tx);
            rx
        };
        // The sender is only dropped after sending (in `dispatch`).
        let _ = rx.recv();
    }

    fn dispatch(s: &mut State) -> Vec<Arc<PendingTask>> {
        let mut start = Vec::new();
        while s.free > 0 {
            if let Some(resumer) = s.resumers.pop_front() {
                s.free -= 1;
                let _ = resumer.send(());
            } else if let Some(task) = s.ready.pop_front() {
                s.free -= 1;
                start.push(task);
            } else {
                break;
            }
        }
        start
    }
}
