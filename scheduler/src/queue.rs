//! The node's resources and the queue of tasks waiting for them.
//!
//! A task runs once its arguments exist and its resource request fits in
//! what is free. Ready tasks queue by *scheduling class* (their request, as
//! Ray groups them), each class FIFO; a dispatch starts, in submission order
//! across classes, every head whose request fits, so a task waiting for a GPU
//! never holds up tasks that only need a CPU. A task blocked in `get`/`wait`
//! gives its CPUs back (it keeps GPUs and the rest) and, once its objects
//! exist, queues as a *resumer*; resumers take freed CPUs before new tasks
//! do, so started work finishes first and nested tasks can never deadlock
//! the node (Ray releases a blocked worker's CPU the same way).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::resources::{Allocation, NodeResources, Quantity, Request};
use crate::task::PendingTask;

/// A ready task and what it asked for.
struct Queued {
    seq: u64,
    task: Arc<PendingTask>,
    movable: Movable,
}

/// Whether a task waiting in the queue may leave this node for another
/// one that has room first (spillback, `cluster/src/spill.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Movable {
    /// It stays: an actor's constructor (its actor lives here), a task
    /// bound to this node, or any task on a node of its own.
    No,
    /// A task this node owns: it may be forwarded to another node.
    Own,
    /// A task another node forwarded here: it may be handed back to its
    /// owner, which places it again.
    Peer,
}

/// A queued task [`ResourcePool::take_movable`] took out of the queue.
pub struct Moved {
    /// Its place in the queue (submission order).
    seq: u64,
    /// The task (its spec still in it).
    pub task: Arc<PendingTask>,
    /// What it asked for.
    pub request: Request,
    /// Whether it is this node's or a peer's.
    pub movable: Movable,
    /// The node the chooser picked.
    pub node: String,
}

/// How many queued tasks of one scheduling class one
/// [`ResourcePool::take_movable`] looks at: a round moves at most this
/// many of a class, and a long queue costs a round no more.
const MOVE_SCAN: usize = 4_096;

struct State {
    node: NodeResources,
    classes: HashMap<Request, VecDeque<Queued>>,
    next_seq: u64,
    queued: usize,
    /// Blocked tasks whose objects exist, waiting for CPUs again.
    resumers: VecDeque<(Quantity, oneshot::Sender<Allocation>, Allocation)>,
    /// Jobs' drivers waiting for the resources they asked for (Ray's
    /// entrypoint resources), first come first served (one per running
    /// job at most: the jobs table bounds them).
    drivers: VecDeque<(Request, oneshot::Sender<Allocation>)>,
}

/// A task that may start now, with what it holds.
pub struct Start {
    /// The task.
    pub task: Arc<PendingTask>,
    /// The resources it holds while it runs.
    pub allocation: Allocation,
}

/// The node's resources, the ready queue, and blocked tasks waiting to
/// resume.
pub struct ResourcePool {
    state: Mutex<State>,
    /// The node with everything free: feasibility needs no lock.
    totals: NodeResources,
}

impl ResourcePool {
    /// A pool of `node`'s resources, all free, with nothing queued.
    pub fn new(node: NodeResources) -> Self {
        Self {
            totals: node.clone(),
            state: Mutex::new(State {
                node,
                classes: HashMap::new(),
                next_seq: 0,
                queued: 0,
                resumers: VecDeque::new(),
                drivers: VecDeque::new(),
            }),
        }
    }

    /// Whether `request` could ever run on this node.
    ///
    /// # Errors
    /// [`Infeasible`](crate::remote::Infeasible), naming the
    /// request and the node's totals.
    pub fn check_feasible(&self, request: &Request) -> Result<(), crate::remote::Infeasible> {
        self.totals
            .check_feasible(request)
            .map_err(crate::remote::Infeasible)
    }

    /// (totals, free) by resource name.
    pub fn resources(
        &self,
    ) -> (
        std::collections::BTreeMap<String, f64>,
        std::collections::BTreeMap<String, f64>,
    ) {
        let s = self.state.lock();
        (s.node.totals(), s.node.available())
    }

    /// Whether `request` could start now: nothing is queued ahead of it
    /// and what is free covers it.
    pub fn fits_now(&self, request: &Request) -> bool {
        let s = self.state.lock();
        s.queued == 0 && s.node.fits(request)
    }

    /// Ready tasks waiting for resources now.
    pub fn queued(&self) -> usize {
        self.state.lock().queued
    }

    /// Queues a ready task asking for `request` (`movable`: whether it
    /// may leave for another node while it waits); returns the tasks that
    /// may start now.
    #[must_use]
    pub fn push_ready(
        &self,
        task: Arc<PendingTask>,
        request: Request,
        movable: Movable,
    ) -> Vec<Start> {
        let mut s = self.state.lock();
        let seq = s.next_seq;
        s.next_seq += 1;
        s.queued += 1;
        s.classes
            .entry(request)
            .or_default()
            .push_back(Queued { seq, task, movable });
        Self::dispatch(&mut s)
    }

    /// Takes out of the queue the waiting tasks that `pick` sends to
    /// another node, oldest first (spillback): `pick` is asked, for each
    /// movable task in submission order, which node it goes to (`None`:
    /// it stays). A class whose task stays is not asked again this round
    /// (its later tasks ask the same), and at most [`MOVE_SCAN`] tasks of
    /// a class are looked at. A task taken out here can no longer start
    /// here: whoever takes its spec first (the forward, or a cancel) has
    /// it, so it never runs twice.
    pub fn take_movable(
        &self,
        mut pick: impl FnMut(&Request, Movable) -> Option<String>,
    ) -> Vec<Moved> {
        let mut s = self.state.lock();
        if s.queued == 0 {
            return Vec::new();
        }
        // The movable tasks at the front of each class, by seq.
        let mut candidates: Vec<(u64, &Request, Movable)> = Vec::new();
        for (request, queue) in &s.classes {
            candidates.extend(
                queue
                    .iter()
                    .take(MOVE_SCAN)
                    .filter(|q| q.movable != Movable::No)
                    .map(|q| (q.seq, request, q.movable)),
            );
        }
        candidates.sort_unstable_by_key(|c| c.0);
        let mut stuck: Vec<&Request> = Vec::new();
        let mut chosen: HashMap<u64, String> = HashMap::new();
        for (seq, request, movable) in candidates {
            if stuck.contains(&request) {
                continue;
            }
            match pick(request, movable) {
                Some(node) => {
                    chosen.insert(seq, node);
                }
                None => stuck.push(request),
            }
        }
        if chosen.is_empty() {
            return Vec::new();
        }
        let mut moved = Vec::with_capacity(chosen.len());
        let State {
            classes, queued, ..
        } = &mut *s;
        for (request, queue) in classes.iter_mut() {
            let scanned = queue.len().min(MOVE_SCAN);
            let front: Vec<Queued> = queue.drain(..scanned).collect();
            let mut kept = Vec::with_capacity(front.len());
            for q in front {
                match chosen.remove(&q.seq) {
                    Some(node) => {
                        *queued -= 1;
                        moved.push(Moved {
                            seq: q.seq,
                            task: q.task,
                            request: request.clone(),
                            movable: q.movable,
                            node,
                        });
                    }
                    None => kept.push(q),
                }
            }
            for q in kept.into_iter().rev() {
                queue.push_front(q);
            }
        }
        moved.sort_unstable_by_key(|m| m.seq);
        moved
    }

    /// Takes every queued task another node forwarded here out of the
    /// queue (a draining node hands them back to their owners): those
    /// tasks, in no order. As with [`ResourcePool::take_movable`], a task
    /// taken out here can no longer start here.
    pub fn take_peers(&self) -> Vec<Arc<PendingTask>> {
        let mut s = self.state.lock();
        let State {
            classes, queued, ..
        } = &mut *s;
        let mut taken = Vec::new();
        for queue in classes.values_mut() {
            queue.retain(|q| {
                let peer = q.movable == Movable::Peer;
                if peer {
                    taken.push(q.task.clone());
                }
                !peer
            });
        }
        *queued = queued.saturating_sub(taken.len());
        taken
    }

    /// Removes a queued task (cancelled before it started); true if it was
    /// queued.
    pub fn remove(&self, task: &Arc<PendingTask>) -> bool {
        let mut s = self.state.lock();
        for queue in s.classes.values_mut() {
            if let Some(i) = queue.iter().position(|q| Arc::ptr_eq(&q.task, task)) {
                queue.remove(i);
                s.queued -= 1;
                return true;
            }
        }
        false
    }

    /// Gives back everything in `allocation`; returns the tasks that may
    /// start now.
    #[must_use]
    pub fn release(&self, allocation: &Allocation) -> Vec<Start> {
        let mut s = self.state.lock();
        s.node.release(allocation);
        Self::dispatch(&mut s)
    }

    /// Gives back the CPUs of `allocation` (its task is blocking); returns
    /// how many to take again and the tasks that may start now.
    #[must_use]
    pub fn release_cpu(&self, allocation: &mut Allocation) -> (Quantity, Vec<Start>) {
        let mut s = self.state.lock();
        let cpu = s.node.release_cpu(allocation);
        (cpu, Self::dispatch(&mut s))
    }

    /// Takes `cpu` CPUs again into `allocation` for a task that was blocked,
    /// at once when they are free and no other blocked task waits first
    /// (`None`); else queues the task as a resumer, ahead of queued tasks,
    /// and returns where `allocation` (with the CPUs) will arrive. The
    /// allocation waits in the queue meanwhile: if the receiver is dropped
    /// first, [`dispatch`](Self::dispatch) gives it back to the node.
    pub fn reacquire_or_queue(
        &self,
        allocation: &mut Allocation,
        cpu: Quantity,
    ) -> Option<oneshot::Receiver<Allocation>> {
        let mut s = self.state.lock();
        if s.resumers.is_empty() && s.node.try_reacquire_cpu(allocation, cpu) {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        s.resumers.push_back((cpu, tx, std::mem::take(allocation)));
        Some(rx)
    }

    /// Takes `request` for a job's driver: at once when it fits and no
    /// other driver waits first (`Ok`), else queues it and returns where
    /// the allocation will arrive. Waiting drivers take freed resources
    /// after blocked tasks resuming and before queued tasks (a driver
    /// that does not fit holds up no task). Drop the receiver to stop
    /// waiting: after [`oneshot::Receiver::close`], give back what
    /// `try_recv` still finds.
    pub fn acquire_for_driver(
        &self,
        request: &Request,
    ) -> Result<Allocation, oneshot::Receiver<Allocation>> {
        let mut s = self.state.lock();
        if s.drivers.is_empty() {
            if let Some(allocation) = s.node.try_allocate(request) {
                return Ok(allocation);
            }
        }
        let (tx, rx) = oneshot::channel();
        s.drivers.push_back((request.clone(), tx));
        Err(rx)
    }

    /// Hands freed resources to the waiting drivers they fit, in order;
    /// one whose receiver is gone is dropped.
    fn start_drivers(s: &mut State) {
        for (request, tx) in std::mem::take(&mut s.drivers) {
            if tx.is_closed() {
                continue;
            }
            match s.node.try_allocate(&request) {
                Some(allocation) => {
                    if let Err(allocation) = tx.send(allocation) {
                        s.node.release(&allocation);
                    }
                }
                None => s.drivers.push_back((request, tx)),
            }
        }
    }

    fn dispatch(s: &mut State) -> Vec<Start> {
        while let Some((cpu, tx, _)) = s.resumers.front() {
            let cpu = *cpu;
            if tx.is_closed() {
                // Its task stopped waiting (cancelled, timed out) before
                // its turn: it must not hold the queue up.
                if let Some((_, _, allocation)) = s.resumers.pop_front() {
                    s.node.release(&allocation);
                }
                continue;
            }
            if !s.node.cpu_fits(cpu) {
                // Resumers go first: nothing new starts before them.
                return Vec::new();
            }
            if let Some((_, tx, mut allocation)) = s.resumers.pop_front() {
                s.node.try_reacquire_cpu(&mut allocation, cpu);
                if let Err(allocation) = tx.send(allocation) {
                    // Its task stopped waiting (cancelled, timed out): the
                    // node takes everything it held back.
                    s.node.release(&allocation);
                }
            }
        }
        if !s.drivers.is_empty() {
            Self::start_drivers(s);
        }
        let mut start = Vec::new();
        if s.queued == 0 {
            return start;
        }
        // Classes found not to fit during this dispatch (by head seq).
        let mut blocked: Vec<u64> = Vec::new();
        let State {
            node,
            classes,
            queued,
            ..
        } = s;
        loop {
            // The oldest head among classes not yet found not to fit.
            let head = classes
                .iter_mut()
                .filter_map(|(r, q)| Some((q.front()?.seq, r, q)))
                .filter(|(seq, _, _)| !blocked.contains(seq))
                .min_by_key(|(seq, _, _)| *seq);
            let Some((seq, request, queue)) = head else {
                break;
            };
            match node.try_allocate(request) {
                Some(allocation) => {
                    if let Some(q) = queue.pop_front() {
                        *queued -= 1;
                        start.push(Start {
                            task: q.task,
                            allocation,
                        });
                    }
                }
                None => blocked.push(seq),
            }
        }
        if classes.len() > 64 {
            // Many one-off shapes: drop the empty classes.
            classes.retain(|_, q| !q.is_empty());
        }
        start
    }
}

/// A queued function task numbered `n`, for tests.
#[cfg(test)]
pub(crate) fn test_task(n: u64) -> Arc<PendingTask> {
    use crate::proto::{Limits, Target, TaskSpec};
    PendingTask::new(crate::task::Task::new(
        TaskSpec {
            id: wray_control_plane::TaskId::from_parts(1, n),
            target: Target::Function { name: "f".into() },
            label: "f".into(),
            component: Arc::from("h"),
            args: Vec::new(),
            returns: Vec::new(),
            result_codec: None,
            shared_reuse: false,
            request: Request::default(),
            limits: Limits {
                max_memory: 1 << 20,
                timeout: None,
                fuel: None,
            },
            parent: None,
        },
        None,
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::resources::ResourceTotals;

    /// A pool of `cpus` CPUs and one `acc` unit.
    fn pool(cpus: u32) -> ResourcePool {
        ResourcePool::new(NodeResources::new(&ResourceTotals {
            cpu_ids: (0..cpus).collect(),
            gpus: Vec::new(),
            memory: 0,
            custom: BTreeMap::from([("acc".to_string(), Quantity::ONE)]),
        }))
    }

    fn task(n: u64) -> Arc<PendingTask> {
        test_task(n)
    }

    fn acc() -> Request {
        Request {
            custom: BTreeMap::from([("acc".to_string(), Quantity::ONE)]),
            ..Request::default()
        }
    }

    /// The task numbers of `started`, in order.
    fn numbers(started: &[Start]) -> Vec<u64> {
        started
            .iter()
            .map(|s| s.task.spec.lock().as_ref().unwrap().id.to_parts().1)
            .collect()
    }

    #[test]
    fn a_task_waiting_for_a_scarce_resource_holds_up_no_other_class() {
        let p = pool(1);
        let first = p.push_ready(task(1), acc(), Movable::No);
        assert_eq!(numbers(&first), [1]);
        // 2 waits for `acc`; 3 and 4 need only a CPU and pass it, in order.
        assert!(p.push_ready(task(2), acc(), Movable::No).is_empty());
        let cpu = p.push_ready(task(3), Request::one_cpu(), Movable::No);
        assert_eq!(numbers(&cpu), [3]);
        assert!(p
            .push_ready(task(4), Request::one_cpu(), Movable::No)
            .is_empty());
        assert_eq!(p.queued(), 2);
        // The CPU comes back: 4 starts; `acc` comes back: 2 starts.
        assert_eq!(numbers(&p.release(&cpu[0].allocation)), [4]);
        assert_eq!(numbers(&p.release(&first[0].allocation)), [2]);
        assert_eq!(p.queued(), 0);
    }

    #[test]
    fn one_class_starts_first_come_first_served_and_removal_skips_a_task() {
        let p = pool(1);
        let running = p.push_ready(task(1), Request::one_cpu(), Movable::No);
        let (t2, t3) = (task(2), task(3));
        assert!(p
            .push_ready(t2.clone(), Request::one_cpu(), Movable::No)
            .is_empty());
        assert!(p.push_ready(t3, Request::one_cpu(), Movable::No).is_empty());
        assert!(p.remove(&t2), "cancelled while queued");
        assert!(!p.remove(&t2), "removed once");
        assert_eq!(numbers(&p.release(&running[0].allocation)), [3]);
    }

    #[test]
    fn a_blocked_task_gives_its_cpu_back_and_resumes_before_new_tasks() {
        let p = pool(1);
        let mut blocked = p
            .push_ready(task(1), Request::one_cpu(), Movable::No)
            .remove(0)
            .allocation;
        // It blocks in `get`: its CPU runs task 2.
        let (cpu, started) = p.release_cpu(&mut blocked);
        assert_eq!((cpu, numbers(&started)), (Quantity::ONE, vec![]));
        let second = p.push_ready(task(2), Request::one_cpu(), Movable::No);
        assert_eq!(numbers(&second), [2]);
        assert!(p
            .push_ready(task(3), Request::one_cpu(), Movable::No)
            .is_empty());
        // Its object exists: it queues for the CPU ahead of task 3.
        let mut rx = p
            .reacquire_or_queue(&mut blocked, cpu)
            .expect("no CPU free");
        assert!(
            p.release(&second[0].allocation).is_empty(),
            "the resumer first"
        );
        let back = rx.try_recv().expect("the CPU went to the resumer");
        assert_eq!(back.cpu.len(), 1);
        // Done: task 3 gets the CPU.
        assert_eq!(numbers(&p.release(&back)), [3]);
    }

    #[test]
    fn a_resumer_that_stopped_waiting_gives_everything_back() {
        let p = pool(1);
        let blocked = p
            .push_ready(task(1), acc(), Movable::No)
            .remove(0)
            .allocation;
        let mut blocked_cpu = p
            .push_ready(task(2), Request::one_cpu(), Movable::No)
            .remove(0)
            .allocation;
        let (cpu, _) = p.release_cpu(&mut blocked_cpu);
        let other = p.push_ready(task(3), Request::one_cpu(), Movable::No);
        let rx = p.reacquire_or_queue(&mut blocked_cpu, cpu).expect("queued");
        drop(rx); // cancelled while waiting for its CPU
        assert!(
            p.push_ready(task(4), acc(), Movable::No).is_empty(),
            "acc is still held"
        );
        // Task 3 ends: the dead resumer is skipped, its (empty) allocation
        // dropped, and the CPU is free again.
        assert!(p.release(&other[0].allocation).is_empty());
        assert_eq!(p.resources().1.get("CPU"), Some(&1.0));
        assert_eq!(numbers(&p.release(&blocked)), [4]);
    }

    #[test]
    fn a_waiting_driver_takes_freed_resources_before_queued_tasks_and_holds_none_up() {
        let p = pool(1);
        let running = p.push_ready(task(1), Request::one_cpu(), Movable::No);
        let mut rx = p
            .acquire_for_driver(&Request::one_cpu())
            .expect_err("the CPU is taken");
        // A task needing what is free still starts: the driver waits for a CPU.
        assert_eq!(numbers(&p.push_ready(task(2), acc(), Movable::No)), [2]);
        assert!(p
            .push_ready(task(3), Request::one_cpu(), Movable::No)
            .is_empty());
        assert!(
            p.release(&running[0].allocation).is_empty(),
            "the driver first"
        );
        let driver = rx.try_recv().expect("the CPU went to the driver");
        assert_eq!(driver.cpu.len(), 1);
        assert_eq!(numbers(&p.release(&driver)), [3]);
    }

    #[test]
    fn a_driver_that_stopped_waiting_is_skipped() {
        let p = pool(1);
        let running = p.push_ready(task(1), Request::one_cpu(), Movable::No);
        let rx = p
            .acquire_for_driver(&Request::one_cpu())
            .expect_err("taken");
        drop(rx);
        assert!(p
            .push_ready(task(2), Request::one_cpu(), Movable::No)
            .is_empty());
        assert_eq!(numbers(&p.release(&running[0].allocation)), [2]);
    }

    #[test]
    fn a_task_is_started_here_or_moved_never_both() {
        const N: u64 = 2_000;
        let p = std::sync::Arc::new(pool(1));
        let mut first = Vec::new();
        for n in 0..N {
            let movable = if n % 7 == 0 {
                Movable::No
            } else {
                Movable::Own
            };
            first.extend(p.push_ready(task(n), Request::one_cpu(), movable));
        }
        assert_eq!(numbers(&first), [0], "one CPU: the first starts");
        // Here: each start gives its CPU back at once, starting the next.
        let here = {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut ran = numbers(&first);
                let mut running = first;
                while let Some(start) = running.pop() {
                    let next = p.release(&start.allocation);
                    ran.extend(numbers(&next));
                    running.extend(next);
                }
                ran
            })
        };
        // Meanwhile: every third movable task asked for moves elsewhere.
        let mut moved = Vec::new();
        let mut asked = 0u64;
        while p.queued() > 0 {
            let taken = p.take_movable(|_, movable| {
                assert_eq!(movable, Movable::Own);
                asked += 1;
                (asked % 3 == 0).then(|| "elsewhere".to_string())
            });
            moved.extend(
                taken
                    .iter()
                    .map(|m| m.task.spec.lock().as_ref().unwrap().id.to_parts().1),
            );
        }
        let mut ran = here.join().unwrap();
        assert!(moved.iter().all(|n| n % 7 != 0), "a task bound here moved");
        ran.extend(&moved);
        ran.sort_unstable();
        assert_eq!(ran, (0..N).collect::<Vec<_>>(), "each task once");
    }

    #[test]
    fn moving_takes_the_oldest_first_and_skips_a_class_that_stays() {
        let p = pool(1);
        let _running = p.push_ready(task(0), Request::one_cpu(), Movable::No);
        for n in 1..=3 {
            assert!(p.push_ready(task(n), acc(), Movable::Own).is_empty() || n == 1);
        }
        for n in 4..=6 {
            assert!(p
                .push_ready(task(n), Request::one_cpu(), Movable::Own)
                .is_empty());
        }
        // Only CPU tasks have room elsewhere, one of them.
        let mut room = 1;
        let mut asked_acc = 0;
        let taken = p.take_movable(|request, _| {
            if request.cpu.as_f64() > 0.0 && request.custom.is_empty() {
                (room > 0).then(|| {
                    room -= 1;
                    "b".to_string()
                })
            } else {
                asked_acc += 1;
                None
            }
        });
        let got: Vec<u64> = taken
            .iter()
            .map(|m| m.task.spec.lock().as_ref().unwrap().id.to_parts().1)
            .collect();
        assert_eq!(got, [4], "the oldest CPU task");
        assert_eq!(asked_acc, 1, "a class that stays is asked once");
        assert_eq!(taken[0].node, "b");
    }

    #[test]
    fn a_draining_node_takes_every_queued_peer_task_and_nothing_else() {
        let p = pool(1);
        let running = p.push_ready(task(0), Request::one_cpu(), Movable::Peer);
        assert_eq!(numbers(&running), [0], "the first starts");
        for (n, movable) in [
            (1, Movable::Peer),
            (2, Movable::Own),
            (3, Movable::No),
            (4, Movable::Peer),
        ] {
            assert!(p
                .push_ready(task(n), Request::one_cpu(), movable)
                .is_empty());
        }
        let mut taken: Vec<u64> = p
            .take_peers()
            .iter()
            .map(|t| t.spec.lock().as_ref().unwrap().id.to_parts().1)
            .collect();
        taken.sort_unstable();
        assert_eq!(taken, [1, 4], "the queued peer tasks, not the running one");
        assert_eq!(p.queued(), 2);
        assert!(p.take_peers().is_empty());
        // The rest start in order as the CPU frees up.
        let mut started = Vec::new();
        let mut next = running;
        while let Some(start) = next.pop() {
            next = p.release(&start.allocation);
            started.extend(numbers(&next));
        }
        assert_eq!(started, [2, 3]);
    }
}
