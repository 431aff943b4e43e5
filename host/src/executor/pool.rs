//! The worker threads: an elastic pool that starts a thread whenever a job
//! arrives and none is idle, and lets a thread go after it has been idle for
//! [`KEEP_ALIVE`].
//!
//! Elastic because a task blocked in `get` keeps its thread while giving its
//! CPU slot back: the slot's next task needs another thread, so the number
//! of threads follows the number of tasks started and not finished, while
//! the CPU slots (not this pool) bound how many run at once. Each thread
//! drives its task's async guest call with the node's `io` runtime
//! (`block_on`); the node joins these threads on shutdown before it shuts
//! that runtime down.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// How long an idle worker thread waits for a job before it exits.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job and not yet claimed by one.
    idle: usize,
    threads: usize,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Signalled when the last thread exits.
    gone: Condvar,
}

/// An elastic pool of worker threads.
pub struct WorkerPool {
    shared: Arc<Shared>,
    max_threads: usize,
}

impl WorkerPool {
    /// A pool of at most `max_threads` threads (jobs beyond that queue).
    pub fn new(max_threads: usize) -> Self {
        Self {
            shared: Arc::default(),
            max_threads: max_threads.max(1),
        }
    }

    /// Runs `job` on a pool thread, starting one if none is idle.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let mut state = self.shared.state.lock();
        if state.closed {
            return; // the node is shutting down: the job is abandoned
        }
        state.jobs.push_back(Box::new(job));
        if state.idle > 0 {
            state.idle -= 1;
            drop(state);
            self.shared.wake.notify_one();
            return;
        }
        if state.threads >= self.max_threads {
            return; // a busy thread takes it when it is done
        }
        state.threads += 1;
        drop(state);
        let shared = self.shared.clone();
        let started = std::thread::Builder::new()
            .name("wray-worker".into())
            .spawn(move || work(&shared));
        if let Err(e) = started {
            tracing::error!("cannot start a worker thread: {e}; the job waits for a busy one");
            self.shared.state.lock().threads -= 1;
        }
    }

    /// Threads alive now.
    pub fn threads(&self) -> usize {
        self.shared.state.lock().threads
    }

    /// Closes the pool: idle threads exit now, busy ones when their job
    /// ends; jobs still queued are dropped (their tasks are abandoned with
    /// the node). Waits up to `grace` for every thread to be gone; returns
    /// how many are still running then.
    pub fn close(&self, grace: Duration) -> usize {
        let mut state = self.shared.state.lock();
        state.closed = true;
        let jobs = std::mem::take(&mut state.jobs);
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

fn work(shared: &Shared) {
    let mut state = shared.state.lock();
    loop {
        if let Some(job) = state.jobs.pop_front() {
            drop(state);
            // Jobs catch their own panics (a task's host bug fails that
            // task); one that still escapes must not take the thread count
            // with it.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                tracing::error!("a worker job panicked (a bug in wray)");
            }
            state = shared.state.lock();
            continue;
        }
        if state.closed {
            break;
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
    if state.threads == 0 {
        shared.gone.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn runs_every_job_and_grows_while_jobs_block() {
        let pool = WorkerPool::new(64);
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        // Eight jobs that block until released: the pool must grow to run
        // the ninth.
        for _ in 0..8 {
            let gate = gate.clone();
            let tx = tx.clone();
            pool.spawn(move || {
                let mut open = gate.0.lock();
                while !*open {
                    gate.1.wait(&mut open);
                }
                tx.send(1).unwrap();
            });
        }
        let tx9 = tx.clone();
        pool.spawn(move || tx9.send(9).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 9);
        *gate.0.lock() = true;
        gate.1.notify_all();
        let rest: Vec<_> = (0..8)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        assert_eq!(rest, vec![1; 8]);
        assert!(pool.threads() >= 9);
    }

    #[test]
    fn idle_threads_are_reused() {
        let pool = WorkerPool::new(64);
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            pool.spawn(move || tx.send(i).unwrap());
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            pool.threads() <= 2,
            "{} threads for sequential jobs",
            pool.threads()
        );
    }

    #[test]
    fn closing_waits_for_busy_threads_and_a_panicking_job_is_survived() {
        let pool = WorkerPool::new(4);
        pool.spawn(|| panic!("a bug"));
        let (started_tx, started) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || {
            started_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            tx.send(()).unwrap();
        });
        started.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(pool.close(Duration::from_secs(10)), 0);
        assert!(rx.try_recv().is_ok(), "the busy job ran to its end");
        // A closed pool takes no more jobs.
        pool.spawn(|| unreachable!());
        assert_eq!(pool.threads(), 0);
    }
}
