//! [`WorkerPool`]: the worker threads, a pool bounded by the node's CPU slots, plus one
//! replacement for each worker blocked in `get`/`wait`, within
//! [`MAX_BLOCKED_WORKERS`].
//!
//! A task blocked in `get` keeps its thread while giving its CPU slot back
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

/// How long a worker done with its job, or a task blocking in a wait
/// (`scheduler/blocking.rs`), looks for its next job or its objects before
/// its thread sleeps: 50 µs, longer than a trivial task or actor call
/// takes here.
///
/// A sleeping thread is woken by whoever queues its job or seals its
/// object, and when it slept on another CPU that CPU was idle: the wake is
/// an inter-processor interrupt, and on this project's 2-core virtual
/// machines that took about as long as a whole small task (perf: 38% of a
/// synchronous round trip's samples in waking threads and switching to
/// them). It is what made `1:1 actor calls sync` run at 12k or 40k per
/// second from one run of a build to the next (which CPU the actor's
/// worker slept on), and 135k with the process pinned to one CPU. Looking
/// first: 90k to 116k, and `single client tasks sync` 20.6k -> 49.4k per
/// second, the other cases unchanged (docs/benchmarks.md, "Memory growth,
/// and waking threads across CPUs"). The cost: at most 50 µs of a CPU per
/// wait or idle period, given up to any runnable thread by the yields. A
/// wait on a runtime's thread serving many calls (the HTTP API's) never
/// looks ([`WaitingThread::looks_first`]).
pub const SPIN_BEFORE_PARKING: Duration = Duration::from_micros(50);

/// Looks whether `done` for up to [`SPIN_BEFORE_PARKING`], yielding the
/// CPU between looks (so that on a machine with fewer CPUs than runnable
/// threads what is waited for runs meanwhile); whether it became so.
pub fn spin_until(done: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= SPIN_BEFORE_PARKING {
            return false;
        }
        for _ in 0..32 {
            std::hint::spin_loop();
        }
        std::thread::yield_now();
    }
}

/// How long an idle worker thread waits for a job before it exits.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A queued job, and whether it is light (counted in `State::light` until
/// it ends or is dropped unrun).
type Job = (Box<dyn FnOnce(&Worker) + Send>, bool);

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
    pub fn block(&self) -> Option<Blocked> {
        match self {
            Self::Worker(worker) => worker.block(),
            Self::Own | Self::Runtime => Some(Blocked { worker: None }),
        }
    }

    /// The pool's worker, if the thread is one.
    pub fn worker(&self) -> Option<&Worker> {
        match self {
            Self::Worker(worker) => Some(worker),
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
pub struct Worker(Arc<WorkerThread>);

/// What a worker thread's jobs share of it.
struct WorkerThread {
    /// The pool it works for.
    shared: Arc<Shared>,
    /// Whether it is blocked in a wait now.
    blocked: AtomicBool,
    /// Whether it lent its slot until its job ends ([`Worker::lend_slot`]).
    lent: AtomicBool,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("blocked", &self.0.blocked.load(Ordering::Relaxed))
            .field("lent", &self.0.lent.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job and not yet claimed by one.
    idle: usize,
    threads: usize,
    /// Threads blocked in a wait (each replaced by another).
    blocked: usize,
    /// Light jobs queued or running (each with a thread of its own).
    light: usize,
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
        cpus + (self.blocked + self.light).min(max_extra) + self.lent
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
/// is dropped (see [`Worker::block`]).
#[must_use = "the worker counts as blocked only while the guard lives"]
pub struct Blocked {
    /// `None` for a thread that is not one of the pool's workers, or one
    /// blocked already.
    worker: Option<Arc<WorkerThread>>,
}

impl Drop for Blocked {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            let mut state = worker.shared.state.lock();
            worker.blocked.store(false, Ordering::Relaxed);
            state.blocked -= 1;
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
            }),
        }
    }

    /// Runs `job`, which holds one CPU slot or more, on a pool thread: an
    /// idle one, a new one while the pool is under its bound, else the next
    /// one done with its job. The job is handed its thread's [`Worker`].
    pub fn spawn(&self, job: impl FnOnce(&Worker) + Send + 'static) {
        self.push(Box::new(job), false);
    }

    /// Runs `job`, a light one (a task holding less than one whole CPU,
    /// or an actor call), as [`spawn`](Self::spawn) does, but raises the
    /// bound by one until the job ends: light jobs run as many at once as
    /// the scheduler starts (four half-GPU tasks on a 2-CPU node run
    /// together), within the pool's extra threads (see the module docs).
    pub fn spawn_light(&self, job: impl FnOnce(&Worker) + Send + 'static) {
        self.push(Box::new(job), true);
    }

    /// Queues `job` (light or not) and hands it to a thread.
    fn push(&self, job: Box<dyn FnOnce(&Worker) + Send>, light: bool) {
        let mut state = self.shared.state.lock();
        if state.closed {
            return; // the node is shutting down: the job is abandoned
        }
        // Counted down by the worker that ran it (under the lock it takes
        // anyway), or when the pool drops it unrun.
        state.light += usize::from(light);
        state.jobs.push_back((job, light));
        self.shared
            .queued
            .store(state.jobs.len(), Ordering::Relaxed);
        if state.spinning >= state.jobs.len() {
            return; // a thread looking for a job takes it
        }
        wake_or_start(&self.shared, state);
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
        let jobs = std::mem::take(&mut state.jobs);
        self.shared.queued.store(0, Ordering::Relaxed);
        state.light -= jobs.iter().filter(|(_, light)| *light).count();
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
            return Some(Blocked { worker: None });
        }
        if state.blocked >= shared.max_blocked {
            return None;
        }
        state.blocked += 1;
        thread.blocked.store(true, Ordering::Relaxed);
        if !state.jobs.is_empty() {
            wake_or_start(shared, state);
        } else {
            drop(state);
        }
        Some(Blocked {
            worker: Some(thread.clone()),
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
        if !state.jobs.is_empty() {
            wake_or_start(shared, state);
        }
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
        if let Some((job, light)) = state.jobs.pop_front() {
            shared.queued.store(state.jobs.len(), Ordering::Relaxed);
            drop(state);
            // Jobs catch their own panics (a task's host bug fails that
            // task); one that still escapes must not take the thread count
            // with it.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&worker))).is_err() {
                tracing::error!("a worker job panicked (a bug in wray)");
            }
            state = shared.state.lock();
            state.light -= usize::from(light);
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
        if timed_out && state.jobs.is_empty() {
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
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn many_tiny_jobs_use_no_more_threads_than_cpus() {
        let pool = WorkerPool::new(2, 8);
        let (tx, rx) = mpsc::channel();
        for i in 0..20_000u32 {
            let tx = tx.clone();
            pool.spawn(move |_| tx.send(i).unwrap());
        }
        let mut got: Vec<u32> = (0..20_000)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort_unstable();
        assert!(got.into_iter().eq(0..20_000), "every job ran once");
        let stats = pool.stats();
        assert!(stats.peak <= 2, "{stats:?}");
        assert_eq!(stats.max_threads, 12, "2 CPUs, 2 lent slots, 8 blocked");
    }

    /// A wait looks before sleeping on a pool's worker and on a thread of
    /// its own (a driver's), never on a runtime's thread serving many
    /// calls: as its caller says, whatever thread it is on.
    #[test]
    fn only_waits_on_a_runtime_thread_never_look_before_sleeping() {
        assert!(!WaitingThread::Runtime.looks_first());
        assert!(WaitingThread::Own.looks_first());
        let pool = WorkerPool::new(1, 1);
        let (tx, rx) = mpsc::channel();
        pool.spawn(move |worker| {
            let thread = WaitingThread::Worker(worker.clone());
            tx.send((thread.looks_first(), thread.worker().is_some()))
                .unwrap();
        });
        assert_eq!(rx.recv().unwrap(), (true, true));
    }

    /// Jobs queued while a worker looks for one (right after its last
    /// job), as it stops looking, and once it sleeps: each runs, and
    /// bursts queued while it looks are spread over the pool's threads
    /// (a job queued while only one thread looks wakes a sleeping one).
    #[test]
    fn jobs_queued_while_a_worker_looks_for_one_all_run_without_a_lost_wakeup() {
        let pool = WorkerPool::new(2, 8);
        let (tx, rx) = mpsc::channel();
        let mut expected = 0u32;
        for round in 0..600u32 {
            // Gaps from none to past the looking time, so that jobs land
            // before, during and after a worker's look.
            let gap = SPIN_BEFORE_PARKING * (round % 7) / 4;
            let burst = 1 + round % 4;
            for _ in 0..burst {
                let tx = tx.clone();
                pool.spawn(move |_| tx.send(()).unwrap());
            }
            expected += burst;
            for _ in 0..burst {
                rx.recv_timeout(Duration::from_secs(10))
                    .unwrap_or_else(|e| panic!("round {round}: a job never ran ({e})"));
            }
            std::thread::sleep(gap);
        }
        assert!(rx.try_recv().is_err(), "{expected} jobs, each ran once");
        let stats = pool.stats();
        assert!(stats.peak <= 2, "{stats:?}");
        // A burst of two needs both threads at once: queued while one
        // thread looks (it just ran a job) and the other sleeps, the
        // second job wakes the sleeping one.
        std::thread::sleep(SPIN_BEFORE_PARKING * 20);
        let (tx, rx) = mpsc::channel();
        let ran = tx.clone();
        pool.spawn(move |_| ran.send(()).unwrap());
        rx.recv_timeout(Duration::from_secs(10)).expect("ran");
        let barrier = Arc::new(std::sync::Barrier::new(2));
        for _ in 0..2 {
            let (tx, barrier) = (tx.clone(), barrier.clone());
            pool.spawn(move |_| {
                barrier.wait();
                tx.send(()).unwrap();
            });
        }
        // Well within `KEEP_ALIVE`, after which a sleeping thread looks at
        // the queue by itself.
        for _ in 0..2 {
            rx.recv_timeout(KEEP_ALIVE / 2)
                .expect("two jobs that wait for each other ran at once");
        }
    }

    /// Job `depth` of a chain: spawns job `depth - 1` and blocks until it
    /// has answered (as a task blocked in `get` on its child), then
    /// answers `depth` plus what it got.
    fn chain(
        pool: &Arc<WorkerPool>,
        worker: &Worker,
        depth: u32,
        answer: mpsc::Sender<Result<u32, String>>,
    ) {
        if depth == 0 {
            let _ = answer.send(Ok(0));
            return;
        }
        let (tx, rx) = mpsc::channel();
        let p = pool.clone();
        pool.spawn(move |w| chain(&p, w, depth - 1, tx));
        let Some(blocked) = worker.block() else {
            let _ = answer.send(Err(format!("refused at depth {depth}")));
            return;
        };
        let got = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|e| e.to_string())
            .and_then(|got| got);
        // Unblocked before answering, so the asker sees the count back.
        drop(blocked);
        // The asker is gone when the chain was refused below it.
        let _ = answer.send(got.map(|v| v + depth));
    }

    #[test]
    fn a_chain_of_blocked_jobs_deeper_than_the_cpus_completes() {
        let pool = Arc::new(WorkerPool::new(1, 64));
        let (tx, rx) = mpsc::channel();
        let p = pool.clone();
        pool.spawn(move |w| chain(&p, w, 20, tx));
        let sum = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(sum, Ok((1..=20).sum()));
        let stats = pool.stats();
        // One thread per blocked job, plus the CPU's: never more.
        assert!(stats.peak > 1 && stats.peak <= 21, "{stats:?}");
        assert_eq!(stats.blocked, 0);
    }

    #[test]
    fn a_wait_past_the_blocked_bound_is_refused_not_a_hang() {
        let pool = Arc::new(WorkerPool::new(1, 3));
        let (tx, rx) = mpsc::channel();
        let p = pool.clone();
        pool.spawn(move |w| chain(&p, w, 10, tx));
        // Depths 10, 9 and 8 block; 7 is refused and the chain unwinds.
        let got = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(got, Err("refused at depth 7".to_string()));
        assert!(pool.stats().peak <= 4, "{:?}", pool.stats());
    }

    #[test]
    fn light_jobs_run_together_past_the_cpus_within_the_extra_threads() {
        let pool = WorkerPool::new(1, 3);
        // Three light jobs that only end together: they need three threads
        // on a one-CPU pool.
        let barrier = Arc::new(std::sync::Barrier::new(3));
        let (tx, rx) = mpsc::channel();
        for _ in 0..3 {
            let (barrier, tx) = (barrier.clone(), tx.clone());
            pool.spawn_light(move |_| {
                barrier.wait();
                tx.send(()).unwrap();
            });
        }
        for _ in 0..3 {
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        let stats = pool.stats();
        assert!(stats.peak >= 3 && stats.peak <= 4, "{stats:?}");
    }

    #[test]
    fn a_thread_not_of_the_pool_blocks_without_raising_the_bound() {
        let pool = WorkerPool::new(1, 0);
        for thread in [WaitingThread::Own, WaitingThread::Runtime] {
            let guard = thread.block();
            assert!(guard.is_some(), "a driver's wait is never refused");
            assert_eq!(pool.stats().blocked, 0);
        }
    }

    /// A wait inside a wait on one worker counts it blocked once, and a
    /// worker that lent its slot gets it back when its job ends.
    #[test]
    fn a_worker_is_blocked_once_and_its_lent_slot_comes_back() {
        let pool = Arc::new(WorkerPool::new(1, 4));
        let (tx, rx) = mpsc::channel();
        let p = pool.clone();
        pool.spawn(move |worker| {
            let outer = worker.block();
            let inner = worker.block();
            let blocked = p.stats().blocked;
            drop((inner, outer));
            worker.lend_slot();
            worker.lend_slot();
            let lent = p.shared.state.lock().lent;
            tx.send((blocked, p.stats().blocked, lent)).unwrap();
        });
        let got = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(got, (1, 0, 1), "(blocked, after, lent)");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.shared.state.lock().lent != 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the slot never came back"
            );
            std::thread::yield_now();
        }
    }

    #[test]
    fn concurrent_workers_have_distinct_names() {
        let pool = WorkerPool::new(2, 8);
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let (tx, rx) = mpsc::channel();
        for _ in 0..2 {
            let (barrier, tx) = (barrier.clone(), tx.clone());
            pool.spawn(move |_| {
                barrier.wait();
                tx.send(std::thread::current().name().map(str::to_string))
                    .unwrap();
            });
        }
        let mut names: Vec<_> = (0..2)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [Some("wray-worker-0".into()), Some("wray-worker-1".into())]
        );
    }

    #[test]
    fn idle_threads_are_reused() {
        let pool = WorkerPool::new(64, 8);
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            pool.spawn(move |_| tx.send(i).unwrap());
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
            // Until the thread is back waiting (a state, not a delay).
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while pool.stats().idle == 0 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the worker never went idle"
                );
                std::thread::yield_now();
            }
        }
        assert_eq!(pool.threads(), 1, "one thread ran 100 jobs in turn");
    }

    #[test]
    fn closing_waits_for_busy_threads_and_a_panicking_job_is_survived() {
        let pool = WorkerPool::new(4, 8);
        pool.spawn(|_| panic!("a bug"));
        let (started_tx, started) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        pool.spawn(move |_| {
            started_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            tx.send(()).unwrap();
        });
        started.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(pool.close(Duration::from_secs(10)), 0);
        assert!(rx.try_recv().is_ok(), "the busy job ran to its end");
        // A closed pool takes no more jobs.
        pool.spawn(|_| unreachable!());
        assert_eq!(pool.threads(), 0);
    }
}
