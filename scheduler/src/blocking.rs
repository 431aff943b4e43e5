//! Blocking until objects exist: the host side of `get`, `wait` and the
//! mapping calls that wait for their object.
//!
//! A wait is a future. It ends when enough objects are sealed or its own
//! timeout passes; the task's time limit, `cancel` and the node's shutdown
//! end it from outside by dropping the task's whole call (see
//! `executor/src/guard.rs`). Dropping it at any await point leaves nothing behind:
//! its subscriptions are taken back, and CPUs it was waiting to take again
//! go back to the node.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{oneshot, Notify};
use wray_control_plane::ObjectId;

use crate::core::Scheduler;
use crate::objects::Subscription;
use crate::resources::{Allocation, Quantity};
use crate::task_table::TaskEntry;
use crate::worker_pool::WaitingThread;

/// The task that blocks, and the thread it blocks.
pub struct Blocker<'a> {
    /// Its entry in the task table.
    pub entry: Option<&'a TaskEntry>,
    /// Its allocation, when it gives its CPUs back while blocked.
    pub allocation: Option<&'a mut Allocation>,
    /// The thread the wait blocks, as the caller knows it: whether it
    /// looks before sleeping and lets a pool start a replacement.
    pub thread: &'a WaitingThread,
}

impl Blocker<'_> {
    /// A wait for no task, on a runtime's thread (an async caller: the HTTP
    /// API, the cluster's handlers on the node's I/O runtime).
    pub fn on_runtime() -> Blocker<'static> {
        Blocker {
            entry: None,
            allocation: None,
            thread: &WaitingThread::Runtime,
        }
    }
}

/// Counts sealed objects and wakes the blocked task once enough are: one
/// wake-up per wait, not one per object (waking a task re-enters its
/// guest's fiber, far dearer than a check).
struct Latch {
    sealed: AtomicUsize,
    /// How many sealings end the wait (`usize::MAX` while the wait is still
    /// subscribing).
    target: AtomicUsize,
    wake: Notify,
}

impl Latch {
    fn new() -> Self {
        Latch {
            sealed: AtomicUsize::new(0),
            target: AtomicUsize::new(usize::MAX),
            wake: Notify::new(),
        }
    }

    /// One subscribed object was sealed: wake the task if that was enough.
    fn bump(&self) {
        // SeqCst, as `arm`: of a bump and an arm racing, at least one sees
        // the other.
        let now = self.sealed.fetch_add(1, Ordering::SeqCst) + 1;
        if now >= self.target.load(Ordering::SeqCst) {
            self.wake.notify_one();
        }
    }

    /// Sets how many sealings end the wait; whether that many happened.
    fn arm(&self, target: usize) -> bool {
        self.target.store(target, Ordering::SeqCst);
        self.sealed.load(Ordering::SeqCst) >= target
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    /// At least the requested number of objects is sealed.
    Ready,
    /// The wait's own timeout passed first.
    TimedOut,
    /// Not waited: [`MAX_BLOCKED_WORKERS`] worker threads are blocked
    /// already, and this one would have no replacement (see
    /// `resources/src/worker_pool.rs`), or [`MAX_SUSPENDED_TASKS`] tasks
    /// are parked already. The caller fails its task with
    /// [`too_many_blocked`].
    ///
    /// [`MAX_BLOCKED_WORKERS`]: crate::bounds::MAX_BLOCKED_WORKERS
    /// [`MAX_SUSPENDED_TASKS`]: crate::bounds::MAX_SUSPENDED_TASKS
    Refused,
}

/// Why a wait was [`WaitEnd::Refused`], naming the bound.
pub fn too_many_blocked(node: &str) -> String {
    format!(
        "node {node} has the most tasks blocked in get or wait it allows \
         ({} parked, MAX_SUSPENDED_TASKS; or {} actor threads, MAX_BLOCKED_WORKERS): \
         one more would leave the tasks they wait for without a worker thread",
        crate::bounds::MAX_SUSPENDED_TASKS,
        crate::bounds::MAX_BLOCKED_WORKERS
    )
}

/// The waiters one wait registered, taken back when it ends (however it
/// ends: a timed-out or dropped wait leaves no waiter behind).
struct Subscriptions<'a> {
    rt: &'a Scheduler,
    pending: Vec<(ObjectId, u64)>,
}

impl Drop for Subscriptions<'_> {
    fn drop(&mut self) {
        for (id, token) in self.pending.drain(..) {
            self.rt.objects.unsubscribe(&id, token);
        }
    }
}

/// CPUs a blocked task waits to take again; given back to the node if the
/// wait is dropped before it got them or before it took them over.
struct Resume {
    rt: Arc<Scheduler>,
    rx: Option<oneshot::Receiver<Allocation>>,
}

impl Drop for Resume {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            // After `close` a dispatch can no longer send (it gives the
            // allocation back itself); one that sent already is received
            // here and given back.
            rx.close();
            if let Ok(allocation) = rx.try_recv() {
                self.rt.release_resources(&allocation);
            }
        }
    }
}

impl Scheduler {
    /// Waits until the calls task `watch` made through stubs have ended
    /// (the last one on each actor: its results or its error sealed
    /// here), then stops watching (`calls_out`).
    ///
    /// # Cancel safety
    /// Dropped midway, it gives back what it held.
    pub async fn calls_ended(self: &Arc<Self>, watch: crate::calls_out::Watch<'_>) {
        let ended = watch.end();
        let held = ended.objects();
        if !held.is_empty() {
            let blocker = Blocker::on_runtime();
            self.wait_sealed(held, held.len(), None, blocker).await;
        }
    }

    /// Waits until `need` of `ids` are sealed or `until` passes. Ids that
    /// name no object count as sealed (`get` on them fails at once with
    /// `not-found`, so nothing is waited for). A task with an allocation
    /// gives its CPUs back while blocked (keeping GPUs and the rest) and
    /// takes them again before returning. A worker thread that blocks (as
    /// `blocker.thread` says) lets the pool start a replacement until it
    /// wakes; past
    /// [`MAX_BLOCKED_WORKERS`](crate::bounds::MAX_BLOCKED_WORKERS) blocked
    /// workers the wait is [`WaitEnd::Refused`] instead.
    ///
    /// # Cancel safety
    /// Dropping the future takes its waiters back and, if it was waiting
    /// for CPUs, gives them back to the node.
    pub async fn wait_sealed(
        self: &Arc<Self>,
        ids: &[ObjectId],
        need: usize,
        until: Option<Instant>,
        blocker: Blocker<'_>,
    ) -> WaitEnd {
        // Enough sealed already (a wait over tasks that have finished, the
        // usual case): no waiter is made. One pass under one lock, ending
        // at the `need`th.
        let enough = self.objects.with_pending(ids.len(), |pending| {
            ids.iter().filter(|id| !pending(id)).take(need).count() >= need
        });
        if enough {
            return WaitEnd::Ready;
        }
        if until.is_some_and(|u| u <= Instant::now()) {
            // A poll: look, do not wait (no waiter, no timer).
            return WaitEnd::TimedOut;
        }
        let latch = Arc::new(Latch::new());
        let mut subs = Subscriptions {
            rt: self,
            pending: Vec::new(),
        };
        let mut sealed = 0;
        for id in ids {
            let l = latch.clone();
            let waiter = Box::new(move || l.bump());
            match self.objects.subscribe(id, waiter) {
                Subscription::Ready | Subscription::Unknown => sealed += 1,
                Subscription::Pending(token) => subs.pending.push((*id, token)),
            }
        }
        // Ready already, or armed to be woken when the rest are sealed.
        if sealed >= need || latch.arm(need - sealed) {
            return WaitEnd::Ready;
        }
        let done = || sealed + latch.sealed.load(Ordering::Acquire) >= need;
        // Before the CPUs go back: the tasks they start may need the
        // replacement thread.
        let Some(_worker) = blocker.thread.block() else {
            return WaitEnd::Refused;
        };
        if let Some(e) = blocker.entry {
            e.blocked(true);
        }
        let mut cpu = None;
        if let Some(allocation) = blocker.allocation {
            let (amount, start) = self.pool.release_cpu(allocation);
            self.start(start);
            cpu = Some((allocation, amount));
        }
        // A short wait (a small task's result, an actor call's reply)
        // ends before the thread would have gone to sleep: look for it a
        // moment first (see `worker_pool::SPIN_BEFORE_PARKING`), unless
        // the thread serves many calls at once (`WaitingThread::looks_first`).
        let spin = crate::worker_pool::SPIN_BEFORE_PARKING;
        if blocker.thread.looks_first()
            && until.is_none_or(|u| Instant::now().checked_add(spin).is_some_and(|t| u > t))
        {
            crate::worker_pool::spin_until(done);
        }
        let end = loop {
            if done() {
                break WaitEnd::Ready;
            }
            let woken = latch.wake.notified();
            match until {
                None => woken.await,
                Some(until) => {
                    let deadline = tokio::time::Instant::from_std(until);
                    if tokio::time::timeout_at(deadline, woken).await.is_err() {
                        break if done() {
                            WaitEnd::Ready
                        } else {
                            WaitEnd::TimedOut
                        };
                    }
                }
            }
        };
        drop(subs);
        if let Some((allocation, amount)) = cpu {
            self.reacquire(allocation, amount).await;
            self.pin_worker(blocker.thread, allocation);
        }
        if let Some(e) = blocker.entry {
            e.blocked(false);
        }
        end
    }

    /// Takes `cpu` CPUs again into `allocation` for a task that was
    /// blocked, waiting (ahead of queued tasks) until they are free.
    ///
    /// # Cancel safety
    /// Dropped while waiting, the CPUs (and the rest of `allocation`, which
    /// waits with them) go back to the node.
    async fn reacquire(self: &Arc<Self>, allocation: &mut Allocation, cpu: Quantity) {
        let Some(rx) = self.pool.reacquire_or_queue(allocation, cpu) else {
            return;
        };
        let mut resume = Resume {
            rt: self.clone(),
            rx: Some(rx),
        };
        if let Some(rx) = resume.rx.as_mut() {
            if let Ok(back) = rx.await {
                *allocation = back;
            }
        }
        // Received (or the sender is gone): nothing to give back.
        resume.rx = None;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use wray_control_plane::{JobId, TaskId};

    use super::*;
    use crate::config::NodeConfig;
    use crate::objects::{Object, ObjectStore};
    use crate::proto::Request;
    use crate::queue::ResourcePool;
    use crate::resources::{NodeResources, ResourceTotals};

    /// A scheduler of one CPU, with no executor.
    fn scheduler() -> Arc<Scheduler> {
        let pool = ResourcePool::new(NodeResources::new(&ResourceTotals {
            cpu_ids: vec![0],
            gpus: Vec::new(),
            memory: 0,
            custom: BTreeMap::new(),
        }));
        let objects = Arc::new(ObjectStore::new());
        Arc::new(Scheduler::new(
            NodeConfig::default(),
            "n".into(),
            objects,
            pool,
            None,
            crate::core::Outlets::none(),
        ))
    }

    fn ids(n: u32) -> Vec<ObjectId> {
        let driver = TaskId::driver(JobId(1));
        (0..n).map(|i| driver.return_object(i).unwrap()).collect()
    }

    fn pending(s: &Scheduler, ids: &[ObjectId]) {
        for id in ids {
            s.objects.register_pending(*id);
            s.objects.acquire(id);
        }
    }

    fn free_cpus(s: &Scheduler) -> f64 {
        s.pool.resources().1.get("CPU").copied().unwrap_or(0.0)
    }

    /// The node's one CPU, taken by a task.
    fn one_cpu(s: &Scheduler) -> Allocation {
        let task = crate::queue::test_task(1);
        s.pool
            .push_ready(task, Request::one_cpu(), crate::queue::Movable::No)
            .remove(0)
            .allocation
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// Polls `fut` once: `None` while it is still waiting.
    async fn poll_once<F: std::future::Future>(fut: std::pin::Pin<&mut F>) -> Option<F::Output> {
        tokio::time::timeout(Duration::ZERO, fut).await.ok()
    }

    #[test]
    fn a_wait_ends_when_enough_are_sealed_and_unknown_ids_count_as_sealed() {
        let s = scheduler();
        let ids = ids(3);
        pending(&s, &ids);
        runtime().block_on(async {
            let none = Blocker::on_runtime();
            let mut wait = std::pin::pin!(s.wait_sealed(&ids, 2, None, none));
            assert_eq!(poll_once(wait.as_mut()).await, None);
            s.objects.seal(ids[2], Object::empty());
            assert_eq!(poll_once(wait.as_mut()).await, None, "one of two");
            s.objects.seal(ids[0], Object::empty());
            assert_eq!(wait.await, WaitEnd::Ready);
            // An id that names nothing is not waited for.
            let unknown = [TaskId::driver(JobId(9)).return_object(0).unwrap()];
            let none = Blocker::on_runtime();
            assert_eq!(s.wait_sealed(&unknown, 1, None, none).await, WaitEnd::Ready);
        });
    }

    #[test]
    fn a_poll_looks_without_waiting() {
        let s = scheduler();
        let ids = ids(2);
        pending(&s, &ids);
        s.objects.seal(ids[0], Object::empty());
        runtime().block_on(async {
            let now = Some(Instant::now());
            let b = Blocker::on_runtime;
            assert_eq!(s.wait_sealed(&ids, 1, now, b()).await, WaitEnd::Ready);
            assert_eq!(s.wait_sealed(&ids, 2, now, b()).await, WaitEnd::TimedOut);
        });
    }

    #[test]
    fn a_blocked_task_lends_its_cpu_and_takes_it_back() {
        let s = scheduler();
        let ids = ids(1);
        pending(&s, &ids);
        let mut allocation = one_cpu(&s);
        assert_eq!(free_cpus(&s), 0.0);
        runtime().block_on(async {
            let blocker = Blocker {
                allocation: Some(&mut allocation),
                ..Blocker::on_runtime()
            };
            let mut wait = std::pin::pin!(s.wait_sealed(&ids, 1, None, blocker));
            assert_eq!(poll_once(wait.as_mut()).await, None);
            assert_eq!(free_cpus(&s), 1.0, "lent while blocked");
            s.objects.seal(ids[0], Object::empty());
            assert_eq!(wait.await, WaitEnd::Ready);
        });
        assert_eq!(free_cpus(&s), 0.0, "taken back");
        assert_eq!(allocation.cpu.len(), 1);
    }

    #[test]
    fn a_dropped_wait_leaves_no_waiter_and_its_cpu_with_the_node() {
        let s = scheduler();
        let ids = ids(1);
        pending(&s, &ids);
        let mut allocation = one_cpu(&s);
        runtime().block_on(async {
            let blocker = Blocker {
                allocation: Some(&mut allocation),
                ..Blocker::on_runtime()
            };
            let mut wait = Box::pin(s.wait_sealed(&ids, 1, None, blocker));
            assert_eq!(poll_once(wait.as_mut()).await, None);
            drop(wait); // the task was cancelled mid-wait
        });
        assert_eq!(free_cpus(&s), 1.0);
        assert!(allocation.cpu.is_empty(), "the CPU stays with the node");
        // Sealing later wakes no one (the waiter was taken back).
        assert!(s.objects.seal(ids[0], Object::empty()));
    }
}
