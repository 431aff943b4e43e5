//! Tasks that wait without a thread: [`WorkerPool::spawn_task`] runs a
//! task's future on the pool's threads, and parks it while it waits.
//!
//! A task's guest call is one `Send` future (wasmtime's async support: the
//! guest runs on a fiber of its own, and a host call that waits suspends
//! it). A pool thread polls it; when it is pending (after the wait's own
//! look for what it waits for, [`SPIN_BEFORE_PARKING`]) the future stays in
//! its [`Suspended`] cell, owned by whatever will wake it (an object's
//! waiter, a timer, a channel), and the thread goes back to the pool. Its
//! waker queues a resume job, which the next free thread runs before any
//! new job (`State::resumes`), polling the future on that thread: a wasmtime
//! fiber may resume on another thread than the one it was suspended on.
//!
//! So a task blocked in `get` or `wait`, or sleeping, holds no thread: its
//! instance and fiber stack stay, and the node's instance slots
//! (`max_instances`) and guest memory budget bound those. Waits that park
//! are counted ([`PoolStats::suspended`]), up to
//! [`MAX_SUSPENDED_TASKS`](crate::bounds::MAX_SUSPENDED_TASKS).
//!
//! States of a cell, one thread polling it at a time: `QUEUED` (a job to
//! poll it is queued) -> `POLLING` -> `PARKED` (pending, no job queued) or
//! back to `POLLING` when it was woken while being polled (`WOKEN`: a
//! computing guest yielding at an epoch tick is polled again at once, as
//! before) -> `DONE`. A wake in `PARKED` queues the resume job; in any
//! other state it changes at most `POLLING` into `WOKEN`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use parking_lot::Mutex;

use super::{Kind, Shared, Worker, WorkerPool};
#[cfg(doc)]
use super::{PoolStats, SPIN_BEFORE_PARKING};

/// A task's whole run, as the pool polls it.
pub type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

const QUEUED: u8 = 0;
const POLLING: u8 = 1;
const WOKEN: u8 = 2;
const PARKED: u8 = 3;
const DONE: u8 = 4;

/// One task's future between polls, and who polls it.
pub(super) struct Suspended {
    state: AtomicU8,
    /// `None` once it ended. Locked by the one thread polling it.
    future: Mutex<Option<TaskFuture>>,
    thread: TaskThread,
    io: tokio::runtime::Handle,
    light: bool,
}

/// A task run by [`WorkerPool::spawn_task`], as its waits see it: the
/// pool thread polling it now (for pinning, lending its slot), and whether
/// it waits parked now (see [`super::WaitingThread::Task`]).
#[derive(Clone)]
pub struct TaskThread(pub(super) Arc<TaskThreadInner>);

pub(super) struct TaskThreadInner {
    pub(super) shared: Arc<Shared>,
    /// The worker polling the task now; set under the task's future lock.
    pub(super) by: Mutex<Option<Worker>>,
    /// Whether one of its waits counts it as suspended now (a wait inside
    /// a wait counts once).
    pub(super) suspended: AtomicBool,
}

impl std::fmt::Debug for TaskThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskThread")
            .field("suspended", &self.0.suspended.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl TaskThread {
    /// The pool's worker polling the task now (`None` between polls).
    pub fn worker(&self) -> Option<Worker> {
        self.0.by.lock().clone()
    }
}

impl WorkerPool {
    /// Runs the future `make` returns on the pool's threads, polled inside
    /// `io`'s context (its timers and I/O), parked while it waits: see the
    /// module docs. `make` is handed the [`super::WaitingThread`] its waits
    /// must use. `light` as for [`spawn_light`](Self::spawn_light), except
    /// that light tasks share at most
    /// [`MAX_LIGHT_TASK_THREADS`](crate::bounds::MAX_LIGHT_TASK_THREADS)
    /// extra threads (they hold one only while they compute).
    ///
    /// A task still parked when the pool closes is never polled again.
    pub fn spawn_task(
        &self,
        light: bool,
        io: tokio::runtime::Handle,
        make: impl FnOnce(super::WaitingThread) -> TaskFuture,
    ) {
        let thread = TaskThread(Arc::new(TaskThreadInner {
            shared: self.shared.clone(),
            by: Mutex::new(None),
            suspended: AtomicBool::new(false),
        }));
        let future = make(super::WaitingThread::Task(thread.clone()));
        let task = Arc::new(Suspended {
            state: AtomicU8::new(QUEUED),
            future: Mutex::new(Some(future)),
            thread,
            io,
            light,
        });
        self.push_task(
            Box::new(move |worker| poll_task(&task, worker)),
            Kind::task(light),
            false,
        );
    }
}

impl Wake for Suspended {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut now = self.state.load(Ordering::Acquire);
        loop {
            let next = match now {
                PARKED => QUEUED,
                POLLING => WOKEN,
                _ => return,
            };
            match self
                .state
                .compare_exchange(now, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next == QUEUED => break,
                Ok(_) => return,
                Err(seen) => now = seen,
            }
        }
        let task = self.clone();
        super::push(
            &self.thread.0.shared,
            Box::new(move |worker| poll_task(&task, worker)),
            Kind::task(self.light),
            true,
        );
    }
}

/// Polls `task` on `worker`'s thread until it ends or parks.
fn poll_task(task: &Arc<Suspended>, worker: &Worker) {
    // Held while it is polled: a resume queued the moment it parks waits
    // here until this thread has let go of it.
    let mut slot = task.future.lock();
    *task.thread.0.by.lock() = Some(worker.clone());
    task.state.store(POLLING, Ordering::Release);
    let waker = Waker::from(task.clone());
    let mut cx = Context::from_waker(&waker);
    let ended = {
        let _io = task.io.enter();
        loop {
            let Some(future) = slot.as_mut() else {
                break true;
            };
            match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))) {
                Ok(Poll::Pending) => {}
                Ok(Poll::Ready(())) => break true,
                Err(_) => {
                    tracing::error!("a task's future panicked (a bug in wray)");
                    break true;
                }
            }
            if task
                .state
                .compare_exchange(POLLING, PARKED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                break false;
            }
            // Woken while it was polled: again, at once.
            task.state.store(POLLING, Ordering::Release);
        }
    };
    *task.thread.0.by.lock() = None;
    if ended {
        task.state.store(DONE, Ordering::Release);
        let future = slot.take();
        drop(slot);
        drop(future);
    }
}
