//! [`Worker`]: a worker thread as its jobs see it (blocking in a wait,
//! lending its slot), and [`WaitingThread`]: the thread a wait would
//! block, as the waiting code's caller knows it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[cfg(doc)]
use super::SPIN_BEFORE_PARKING;
use super::{wake_or_start, Blocked, Shared, TaskThread};

/// The thread a wait would block, as the waiting code's caller knows it:
/// whether the wait looks for what it waits for before sleeping
/// ([`SPIN_BEFORE_PARKING`]), and whether it lets a pool start a
/// replacement thread. Said by the caller, never read from the thread.
#[derive(Debug, Clone)]
pub enum WaitingThread {
    /// A pool's worker running a job (the [`Worker`] the job was handed):
    /// the wait looks first, and the pool may run one more thread while it
    /// sleeps ([`Worker::block`]).
    Worker(Worker),
    /// A task whose future the pool polls ([`super::WorkerPool::spawn_task`]):
    /// the wait looks first, then parks the task and gives its thread back
    /// to the pool; nothing to replace.
    Task(TaskThread),
    /// A thread of its own: a job's driver, or an embedding program's
    /// thread in a `_blocking` call. The wait looks first; nothing to
    /// replace.
    Own,
    /// One of a runtime's threads, serving many connections or calls at
    /// once (an async caller: the HTTP API's, the node's I/O runtime): the
    /// wait never looks, since the look would hold up everything else the
    /// thread serves (with the look on the HTTP API's threads, the
    /// fresh-instance rate at 64 connections fell from about 13k to 9k
    /// requests per second here). Nothing to replace.
    Runtime,
}

impl WaitingThread {
    /// Whether a wait on this thread may look for what it waits for before
    /// sleeping ([`spin_until`]): on a pool's worker and on a thread of its
    /// own, not on a runtime's.
    pub fn looks_first(&self) -> bool {
        !matches!(self, Self::Runtime)
    }

    /// The thread is about to block in a wait: on a pool's worker, see
    /// [`Worker::block`]; any other thread gets a guard that changes
    /// nothing.
    ///
    /// `None` when the worker's pool has its `max_blocked` workers blocked
    /// already: the wait must fail instead (see the module docs).
    ///
    /// On a task the pool polls, the guard counts it as suspended
    /// ([`super::PoolStats::suspended`]); `None` past
    /// [`MAX_SUSPENDED_TASKS`](crate::proto::bounds::MAX_SUSPENDED_TASKS).
    pub fn block(&self) -> Option<Blocked> {
        match self {
            Self::Worker(worker) => worker.block(),
            Self::Task(task) => task.suspend(),
            Self::Own | Self::Runtime => Some(Blocked {
                worker: None,
                task: None,
            }),
        }
    }

    /// The pool's worker running the wait's task now, if it is one.
    pub fn worker(&self) -> Option<Worker> {
        match self {
            Self::Worker(worker) => Some(worker.clone()),
            Self::Task(task) => task.worker(),
            Self::Own | Self::Runtime => None,
        }
    }
}

/// One of a pool's worker threads, as the jobs it runs see it: each job is
/// handed it ([`WorkerPool::spawn`]) and may keep a clone while it runs, to
/// block in a wait ([`Worker::block`]) or lend its slot
/// ([`Worker::lend_slot`]) on that thread. Used on its own thread, while
/// one of its jobs runs.
#[derive(Clone)]
pub struct Worker(pub(super) Arc<WorkerThread>);

/// What a worker thread's jobs share of it.
pub(super) struct WorkerThread {
    /// The pool it works for.
    pub(super) shared: Arc<Shared>,
    /// Whether it is blocked in a wait now.
    pub(super) blocked: AtomicBool,
    /// Whether it lent its slot until its job ends ([`Worker::lend_slot`]).
    pub(super) lent: AtomicBool,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("blocked", &self.0.blocked.load(Ordering::Relaxed))
            .field("lent", &self.0.lent.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// The thread is about to block in a wait: until the returned guard is
    /// dropped its pool may run one more thread, so the task it waits for
    /// finds one. A worker blocked already (a wait inside a wait) gets a
    /// guard that changes nothing.
    ///
    /// `None` when the pool's `max_blocked` ([`MAX_BLOCKED_WORKERS`])
    /// workers are blocked already: the wait must fail instead (see the
    /// module docs).
    pub fn block(&self) -> Option<Blocked> {
        let thread = &self.0;
        let shared = &thread.shared;
        let mut state = shared.state.lock();
        if thread.blocked.load(Ordering::Relaxed) {
            return Some(Blocked {
                worker: None,
                task: None,
            });
        }
        if state.blocked >= shared.max_blocked {
            return None;
        }
        state.blocked += 1;
        thread.blocked.store(true, Ordering::Relaxed);
        if state.queued() > 0 {
            wake_or_start(shared, state);
        } else {
            drop(state);
        }
        Some(Blocked {
            worker: Some(thread.clone()),
            task: None,
        })
    }

    /// The job is done with its CPU slot before it ends (its task's
    /// resources are given back and its results sealed; it is tearing the
    /// instance down): until the job returns, the pool may start one more
    /// thread, so the slot's next task need not wait for the teardown. At
    /// most one lent slot per CPU slot (so finishing threads never
    /// outnumber the CPUs: 100,000 tiny tasks once kept a thousand threads
    /// busy tearing down); a no-op past that, or on a worker that is
    /// blocked or lent already.
    pub fn lend_slot(&self) {
        let thread = &self.0;
        let shared = &thread.shared;
        let mut state = shared.state.lock();
        if thread.blocked.load(Ordering::Relaxed) || thread.lent.load(Ordering::Relaxed) {
            return;
        }
        if state.lent >= shared.cpus {
            return;
        }
        state.lent += 1;
        thread.lent.store(true, Ordering::Relaxed);
        if state.queued() > 0 {
            wake_or_start(shared, state);
        }
    }
}

impl TaskThread {
    /// The task is about to wait: it counts as suspended until the guard
    /// is dropped (its future parks, and its thread goes back to the pool,
    /// when the wait is pending). A task counted already (a wait inside a
    /// wait) gets a guard that changes nothing. `None` when the pool has
    /// its `max_suspended` tasks parked already.
    fn suspend(&self) -> Option<Blocked> {
        let task = &self.0;
        let mut state = task.shared.state.lock();
        if task.suspended.load(Ordering::Relaxed) {
            return Some(Blocked {
                worker: None,
                task: None,
            });
        }
        if state.suspended >= task.shared.max_suspended {
            return None;
        }
        state.suspended += 1;
        state.suspended_peak = state.suspended_peak.max(state.suspended);
        task.suspended.store(true, Ordering::Relaxed);
        Some(Blocked {
            worker: None,
            task: Some(self.clone()),
        })
    }
}
