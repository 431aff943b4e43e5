//! [`WorkerPool`]: the worker threads, a pool bounded by the node's CPU slots, plus one
//! replacement for each worker blocked in `get`/`wait`, within
//! [`MAX_BLOCKED_WORKERS`].
//!
//! A function task does not keep its thread while it waits: the pool polls
//! its future and parks it ([`WorkerPool::spawn_task`], `suspend.rs`), so
//! 10,000 tasks blocked in `get` or sleeping hold no thread each. What
//! follows is about jobs that block their thread (an actor's calls).
//! An actor call blocked in `get` keeps its thread while giving its CPU slot back
//! (`scheduler/blocking.rs`): the slot's next task needs another thread.
//! So the pool runs at most `cpus + blocked` threads, where `blocked` counts
//! its threads parked in a wait ([`Worker::block`]); jobs beyond that
//! queue, first come first served, for the next thread that is done. The
//! threads follow the CPUs, never the number of tasks submitted (100,000
//! tiny tasks on 2 CPUs used to start over a thousand). Light jobs, which
//! hold less than one CPU (zero-CPU and fractional tasks, actor calls), are
//! admitted by their other resources, not by the CPU slots: each raises the
//! bound by one while it is queued or running ([`WorkerPool::spawn_light`]).
//! Blocked workers and light jobs together get at most
//! [`MAX_BLOCKED_WORKERS`] threads beyond the CPU slots; light jobs past
//! that queue. A worker whose task has given its resources back and sealed
//! its results, and is only tearing the instance down, lends its slot
//! ([`Worker::lend_slot`], at most one per slot): the slot's next task starts on
//! another thread meanwhile (a single client's chain of tasks ran 30%
//! slower when it waited for the teardown).
//!
//! # Why a chain of blocked tasks cannot deadlock
//!
//! Each wait raises the bound by one while it lasts, so a chain of tasks
//! each blocked on its child always has a thread for the child: the
//! threads that are not blocked are never fewer than the CPU slots (the
//! extra threads are capped at [`MAX_BLOCKED_WORKERS`], and so are the
//! blocked workers). The bound grows with blocked workers only up to
//! [`MAX_BLOCKED_WORKERS`]; a
//! wait that would pass it is refused ([`Worker::block`] returns
//! `None`) and fails its task with a clear error at once, rather than
//! block a thread that nothing would replace (which, once every thread
//! waited, would hang the node). A job that waits on something other than
//! objects (a WASI sleep, a socket) keeps its thread: it counts against the
//! CPU slots like a running task.
//!
//! A worker done with its job, and a task blocking in a wait, first look
//! for their next job or object for [`SPIN_BEFORE_PARKING`] (yielding the
//! CPU between looks) before they sleep: waking a thread asleep on another,
//! idle CPU is an inter-processor interrupt, which on small virtual
//! machines costs as much as a small task. While a worker looks, a job
//! queued for it wakes no sleeping thread ([`State::spinning`]).
//!
//! How a wait blocks its thread is said by its caller, never read from the
//! thread ([`WaitingThread`]): each job is handed its thread's [`Worker`],
//! which the executor keeps with the task it runs, so a guest's `get` on a
//! worker blocks through it; a driver's thread and a caller's `_blocking`
//! call wait as a thread of their own; an async caller (the HTTP API, the
//! node's I/O) as a runtime's thread, which never looks before sleeping.
//!
//! Threads are named `wray-worker-N`, N the smallest number no live worker
//! of the pool has, so the timeline has one row per worker and never more
//! rows than the pool's peak. Each thread drives its task's async guest
//! call with the node's `io` runtime (`block_on`); the node joins these
//! threads on shutdown before it shuts that runtime down. A thread idle for
//! [`KEEP_ALIVE`] exits.
//!
//! A leaf module: the executor owns the node's pool and spawns on it; the
//! scheduler's waits mark a worker blocked through the [`WaitingThread`]
//! their caller hands them, which reaches the worker's pool without naming
//! it.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

#[cfg(doc)]
use crate::bounds::MAX_BLOCKED_WORKERS;

mod spin;
mod suspend;
mod worker;

use crate::proto::bounds::{MAX_LIGHT_TASK_THREADS, MAX_SUSPENDED_TASKS};
pub use spin::{spin_until, SPIN_BEFORE_PARKING};
pub use suspend::{TaskFuture, TaskThread};
use worker::WorkerThread;
pub use worker::{WaitingThread, Worker};

/// How long an idle worker thread waits for a job before it exits.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A queued job, and how it counts against the bound until it ends or is
/// dropped unrun.
type Job = (Box<dyn FnOnce(&Worker) + Send>, Kind);

/// How a job counts against the pool's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Holds one CPU slot or more.
    Heavy,
    /// Light, with a thread of its own (`State::light`).
    Light,
    /// A light task's poll ([`WorkerPool::spawn_task`]; `State::light_tasks`).
    LightTask,
}

impl Kind {
    /// A task's poll ([`WorkerPool::spawn_task`]), light or not.
    fn task(light: bool) -> Self {
        if light {
            Kind::LightTask
        } else {
            Kind::Heavy
        }
    }
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Polls of parked tasks that were woken: taken before `jobs` (a
    /// blocked task resumes before queued tasks start).
    resumes: VecDeque<Job>,
    /// Threads waiting for a job and not yet claimed by one.
    idle: usize,
    threads: usize,
    /// Threads blocked in a wait (each replaced by another).
    blocked: usize,
    /// Light jobs queued or running (each with a thread of its own).
    light: usize,
    /// Light tasks' polls queued or running (sharing at most
    /// [`MAX_LIGHT_TASK_THREADS`] threads).
    light_tasks: usize,
    /// Tasks parked in a wait now ([`WorkerPool::spawn_task`]).
    suspended: usize,
    /// The most tasks parked at once so far.
    suspended_peak: usize,
    /// Workers finishing a job whose CPU slot is given back already (at
    /// most one per slot; see [`Worker::lend_slot`]).
    lent: usize,
    /// The most threads alive at once so far.
    peak: usize,
    /// Numbers of live threads (`wray-worker-N`).
    names: BTreeSet<usize>,
    /// Threads looking for a job before they sleep
    /// ([`SPIN_BEFORE_PARKING`]): a job queued while there are at least
    /// as many of them as queued jobs wakes no sleeping thread (each
    /// checks the queue under the lock when it stops looking).
    spinning: usize,
    closed: bool,
}

impl State {
    /// How many threads may be started now: the CPU slots, plus one per
    /// blocked worker and per light job, those two together at most
    /// `max_extra`, plus one per worker that lent its slot.
    fn limit(&self, cpus: usize, max_extra: usize) -> usize {
        let light_tasks = self.light_tasks.min(MAX_LIGHT_TASK_THREADS);
        cpus + (self.blocked + self.light + light_tasks).min(max_extra) + self.lent
    }

    /// Counts `kind` in (`1`) or out (`-1`).
    fn count(&mut self, kind: Kind, add: bool) {
        let n = match kind {
            Kind::Heavy => return,
            Kind::Light => &mut self.light,
            Kind::LightTask => &mut self.light_tasks,
        };
        if add {
            *n += 1;
        } else {
            *n -= 1;
        }
    }

    /// Jobs queued, new and resumed.
    fn queued(&self) -> usize {
        self.jobs.len() + self.resumes.len()
    }

    /// The smallest number no live thread has.
    fn next_name(&mut self) -> usize {
        let n = (0..).find(|n| !self.names.contains(n)).unwrap_or(0);
        self.names.insert(n);
        n
    }
}

struct Shared {
    /// `State::jobs.len()`, written under the lock, read without it by
    /// the threads looking for a job.
    queued: AtomicUsize,
    state: Mutex<State>,
    wake: Condvar,
    /// Signalled when the last thread exits.
    gone: Condvar,
    /// The node's CPU slots (at least 1).
    cpus: usize,
    /// Most workers blocked at once ([`MAX_BLOCKED_WORKERS`] for a node).
    max_blocked: usize,
    /// Most tasks parked at once ([`MAX_SUSPENDED_TASKS`]).
    max_suspended: usize,
}

/// Counts of a pool's threads (see [`WorkerPool::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Threads alive now.
    pub threads: usize,
    /// The most threads alive at once since the pool started.
    pub peak: usize,
    /// Threads blocked in `get`/`wait` now.
    pub blocked: usize,
    /// Threads waiting for a job now.
    pub idle: usize,
    /// The CPU slots: threads not blocked are never more.
    pub cpus: usize,
    /// Tasks parked in a wait now, holding no thread
    /// ([`WorkerPool::spawn_task`]).
    pub suspended: usize,
    /// The most tasks parked at once since the pool started.
    pub suspended_peak: usize,
    /// The most threads the pool may ever run: `cpus`, plus one per slot
    /// lent by a finishing worker ([`Worker::lend_slot`]), plus the extra threads
    /// of blocked workers and light jobs ([`MAX_BLOCKED_WORKERS`] for a
    /// node).
    pub max_threads: usize,
}

/// A pool of worker threads bounded by the node's CPU slots (see the
/// module docs).
pub struct WorkerPool {
    shared: Arc<Shared>,
}

/// A worker blocked in a wait: the pool may run one more thread until it
/// is dropped (see [`Worker::block`]); or a task parked in a wait, counted
/// in [`PoolStats::suspended`] until it is dropped.
#[must_use = "the worker counts as blocked only while the guard lives"]
pub struct Blocked {
    /// `None` for a thread that is not one of the pool's workers, or one
    /// blocked already.
    worker: Option<Arc<WorkerThread>>,
    /// The task counted as suspended, if that is what it counts.
    task: Option<TaskThread>,
}

impl Drop for Blocked {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            let mut state = worker.shared.state.lock();
            worker.blocked.store(false, Ordering::Relaxed);
            state.blocked -= 1;
        }
        if let Some(task) = self.task.take() {
            let mut state = task.0.shared.state.lock();
            task.0.suspended.store(false, Ordering::Relaxed);
            state.suspended -= 1;
        }
    }
}

impl WorkerPool {
    /// A pool for a node of `cpus` CPU slots (at least one thread) that
    /// lets at most `max_blocked` workers block at once (a node uses
    /// [`MAX_BLOCKED_WORKERS`]).
    pub fn new(cpus: usize, max_blocked: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                queued: AtomicUsize::new(0),
                state: Mutex::default(),
                wake: Condvar::new(),
                gone: Condvar::new(),
                cpus: cpus.max(1),
                max_blocked,
                max_suspended: MAX_SUSPENDED_TASKS,
            }),
        }
    }

    /// Runs `job`, which holds one CPU slot or more, on a pool thread: an
    /// idle one, a new one while the pool is under its bound, else the next
    /// one done with its job. The job is handed its thread's [`Worker`].
    pub fn spawn(&self, job: impl FnOnce(&Worker) + Send + 'static) {
        self.push_task(Box::new(job), Kind::Heavy, false);
    }

    /// Runs `job`, a light one (a task holding less than one whole CPU,
    /// or an actor call), as [`spawn`](Self::spawn) does, but raises the
    /// bound by one until the job ends: light jobs run as many at once as
    /// the scheduler starts (four half-GPU tasks on a 2-CPU node run
    /// together), within the pool's extra threads (see the module docs).
    pub fn spawn_light(&self, job: impl FnOnce(&Worker) + Send + 'static) {
        self.push_task(Box::new(job), Kind::Light, false);
    }

    /// Queues `job` of `kind` (a woken task's poll when `resume`, ahead of
    /// new jobs) and hands it to a thread.
    fn push_task(&self, job: Box<dyn FnOnce(&Worker) + Send>, kind: Kind, resume: bool) {
        push(&self.shared, job, kind, resume);
    }

    /// Threads alive now.
    #[cfg(test)]
    pub fn threads(&self) -> usize {
        self.shared.state.lock().threads
    }

    /// Counts of the pool's threads.
    pub fn stats(&self) -> PoolStats {
        let state = self.shared.state.lock();
        PoolStats {
            threads: state.threads,
            peak: state.peak,
            blocked: state.blocked,
            idle: state.idle,
            cpus: self.shared.cpus,
            suspended: state.suspended,
            suspended_peak: state.suspended_peak,
            max_threads: 2 * self.shared.cpus + self.shared.max_blocked,
        }
    }

    /// Closes the pool: idle threads exit now, busy ones when their job
    /// ends; jobs still queued are dropped (their tasks are abandoned with
    /// the node). Waits up to `grace` for every thread to be gone; returns
    /// how many are still running then.
    pub fn close(&self, grace: Duration) -> usize {
        let mut state = self.shared.state.lock();
        state.closed = true;
        let mut jobs = std::mem::take(&mut state.jobs);
        jobs.append(&mut state.resumes);
        self.shared.queued.store(0, Ordering::Relaxed);
        for (_, kind) in &jobs {
            state.count(*kind, false);
        }
        drop(state);
        // Dropped outside the lock: a job's captures may release things.
        drop(jobs);
        self.shared.wake.notify_all();
        let deadline = std::time::Instant::now() + grace;
        let mut state = self.shared.state.lock();
        while state.threads > 0 {
            if self
                .shared
                .gone
                .wait_until(&mut state, deadline)
                .timed_out()
            {
                break;
            }
        }
        state.threads
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.close(Duration::ZERO);
    }
}

/// Queues `job` of `kind` on `shared`'s pool (a woken task's poll when
/// `resume`, ahead of new jobs) and hands it to a thread.
fn push(shared: &Arc<Shared>, job: Box<dyn FnOnce(&Worker) + Send>, kind: Kind, resume: bool) {
    let mut state = shared.state.lock();
    if state.closed {
        drop(state);
        return; // the node is shutting down: the job is abandoned
    }
    // Counted down by the worker that ran it (under the lock it takes
    // anyway), or when the pool drops it unrun.
    state.count(kind, true);
    if resume {
        state.resumes.push_back((job, kind));
    } else {
        state.jobs.push_back((job, kind));
    }
    let queued = state.queued();
    shared.queued.store(queued, Ordering::Relaxed);
    if state.spinning >= queued {
        return; // a thread looking for a job takes it
    }
    wake_or_start(shared, state);
}

/// Hands the queue's head to an idle thread, or starts a thread for it
/// while the pool is under its bound.
fn wake_or_start(shared: &Arc<Shared>, mut state: parking_lot::MutexGuard<'_, State>) {
    if state.idle > 0 {
        state.idle -= 1;
        drop(state);
        shared.wake.notify_one();
        return;
    }
    if state.threads >= state.limit(shared.cpus, shared.max_blocked) {
        return; // a busy thread takes it when it is done
    }
    state.threads += 1;
    state.peak = state.peak.max(state.threads);
    let n = state.next_name();
    drop(state);
    let for_thread = shared.clone();
    let started = std::thread::Builder::new()
        .name(format!("wray-worker-{n}"))
        .spawn(move || work(&for_thread, n));
    if let Err(e) = started {
        tracing::error!("cannot start a worker thread: {e}; the job waits for a busy one");
        let mut state = shared.state.lock();
        state.threads -= 1;
        state.names.remove(&n);
    }
}

fn work(shared: &Arc<Shared>, name: usize) {
    let worker = Worker(Arc::new(WorkerThread {
        shared: shared.clone(),
        blocked: AtomicBool::new(false),
        lent: AtomicBool::new(false),
    }));
    let mut state = shared.state.lock();
    // Whether this thread looked for a job since its last one.
    let mut looked = false;
    loop {
        // A thread above the bound now (a blocked worker woke up, a lent
        // slot came back) stays: the bound caps the threads started, and
        // the node's resource queue, not the pool, caps what runs at once;
        // an idle thread leaves after `KEEP_ALIVE` (no start-and-exit churn
        // at every wait).
        if let Some((job, kind)) = state.resumes.pop_front().or_else(|| state.jobs.pop_front()) {
            shared.queued.store(state.queued(), Ordering::Relaxed);
            drop(state);
            // Jobs catch their own panics (a task's host bug fails that
            // task); one that still escapes must not take the thread count
            // with it.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&worker))).is_err() {
                tracing::error!("a worker job panicked (a bug in wray)");
            }
            state = shared.state.lock();
            state.count(kind, false);
            if worker.0.lent.swap(false, Ordering::Relaxed) {
                state.lent -= 1;
            }
            looked = false;
            continue;
        }
        if state.closed {
            break;
        }
        if !std::mem::replace(&mut looked, true) {
            // Look for the next job a moment before sleeping; the queue
            // is checked again under the lock at the top of the loop.
            state.spinning += 1;
            drop(state);
            spin_until(|| shared.queued.load(Ordering::Relaxed) > 0);
            state = shared.state.lock();
            state.spinning -= 1;
            continue;
        }
        state.idle += 1;
        let timed_out = shared.wake.wait_for(&mut state, KEEP_ALIVE).timed_out();
        if timed_out && state.queued() == 0 {
            // Still counted idle unless a spawn claimed us meanwhile.
            if state.idle > 0 {
                state.idle -= 1;
                break;
            }
        }
    }
    state.threads -= 1;
    state.names.remove(&name);
    if state.threads == 0 {
        shared.gone.notify_all();
    }
}

#[cfg(test)]
mod tests;
