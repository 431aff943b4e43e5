//! Actor mailboxes: each actor's calls run one at a time in submission
//! order; its instance lives in the executor (keyed by actor id). A
//! [`Mailbox`] is generic over what it queues (the scheduler's queued task:
//! see `task::Actor`), so it depends on nothing else of the scheduler; the
//! scheduler kills actors and starts their next call
//! (`Scheduler::actor_died`, `Scheduler::run_actor_next`).
//!
//! An actor's queue holds its tasks in the order they were submitted (the
//! constructor first). The head runs once its object arguments exist and the
//! previous call has finished; a later call never overtakes an earlier one
//! whose arguments are still pending. The constructor waits in the node's
//! resource queue for the actor's request (none by default, as Ray's actors
//! use 0 CPUs while running); the actor then holds those resources until it
//! dies. A trap kills the actor (the instance may be in any state), as does
//! `kill-actor` and a host bug while a call runs: later calls fail with
//! `actor-died`, as in Ray, and its resources go back to the node. A method
//! returning an error value does not kill it. An actor whose handles are
//! all gone, here ([`Mailbox::release`]) and on every other node of the
//! cluster ([`Mailbox::held_by`]), exits once nothing of it is running or
//! queued ([`Mailbox::exit_if_released`]), unless it was created detached.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::ActorId;

use crate::cancel_token::CancelToken;
use crate::error::{ErrorKind, TaskError};
use crate::functions::InUse;
use crate::proto::{Limits, TaskSpec};
use crate::resources::Allocation;

/// The most nodes counted as holding one actor's handle (a cluster's
/// nodes, with room to spare); past it a node's hold is refused.
pub const MAX_HOLDERS: usize = 4_096;

/// What a mailbox queues: a task that knows whether its arguments are
/// ready.
pub trait Queued {
    /// Whether every dependency is sealed.
    fn is_ready(&self) -> bool;
}

struct Inner<T> {
    queue: VecDeque<Arc<T>>,
    running: bool,
    /// Why the actor is dead, once it is.
    dead: Option<TaskError>,
    /// Its resources, from admission until it dies.
    allocation: Option<Allocation>,
    /// Whether its constructor got its resources.
    admitted: bool,
    /// The cancel token of the call running now.
    running_cancel: Option<CancelToken>,
    /// Whether its last handle is gone: it exits once idle.
    released: bool,
    /// Whether another node owns it now (a stub; see
    /// [`Mailbox::hand_over`]).
    handed_over: bool,
    /// The other nodes holding its handle (an actor whose instance is
    /// here), each with its stubs' count ([`Mailbox::held_by`]): it lives
    /// on while any holds it, whether or not a handle is left here.
    holders: BTreeMap<String, u32>,
    /// Keeps its component's version loaded while it lives.
    pin: Option<InUse>,
    /// Times it was restarted.
    restarted: u32,
    /// Calls taken to run here, its constructor's runs included (a stub
    /// counts the calls it sent to the actor's node).
    calls: u64,
    /// The name its component was loaded under (kept after it dies).
    component_name: Option<Arc<str>>,
}

/// What [`Mailbox::snapshot`] reads of an actor at one moment.
#[derive(Debug, Clone)]
pub struct MailboxSnapshot {
    /// Its constructor has ended (and it is not dead).
    pub alive: bool,
    /// Why it died, once it has.
    pub dead: Option<TaskError>,
    /// Calls taken to run, its constructor's runs included.
    pub calls: u64,
    /// Calls waiting in its queue.
    pub queued: usize,
    /// A call runs now.
    pub running: bool,
    /// Times it was restarted.
    pub restarted: u32,
    /// The name its component was loaded under, when known here.
    pub component_name: Option<Arc<str>>,
}

/// Where an actor whose instance lives on another node of the cluster
/// runs: its mailbox here (a stub) orders this node's calls and sends
/// each, one at a time, to that node.
#[derive(Debug)]
pub struct Home {
    /// The node its instance lives on (another one after a restart).
    node: Mutex<String>,
    /// Whether this node owns it (created it, or was handed it): the
    /// owner's stub killed (or its job ended) kills the actor there. Any
    /// stub whose handles here are gone lets go of it there: the actor
    /// exits once no node holds it.
    pub owner: bool,
}

impl Home {
    /// An actor living on `node`, owned here or not.
    pub fn new(node: String, owner: bool) -> Self {
        Self {
            node: Mutex::new(node),
            owner,
        }
    }

    /// The node its instance lives on now.
    pub fn node(&self) -> String {
        self.node.lock().clone()
    }

    /// Notes that its instance lives on `node` now (restarted there).
    pub fn moved(&self, node: String) {
        *self.node.lock() = node;
    }
}

/// How an actor comes back after the node it lived on died (Ray's
/// `max_restarts` and `max_task_retries`; both 0 by default, as Ray's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restarts {
    /// Times it is created again, its constructor re-run.
    pub max_restarts: u32,
    /// Times a call running when its node died is run again.
    pub max_task_retries: u32,
}

/// An actor's life as its waiters see it ([`Mailbox::life`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Life {
    /// Its constructor has not ended yet.
    Starting,
    /// Its constructor ended and it is alive.
    Alive,
    /// It died, of this.
    Dead(TaskError),
}

/// One actor of a node: its identity, its queue and its state.
pub struct Mailbox<T> {
    /// Its id.
    pub id: ActorId,
    /// Its class (the component's actor type it was made from).
    pub class: String,
    /// Content hash of its component.
    pub component: Arc<str>,
    /// Limits of each call (unless the call sets its own).
    pub limits: Limits,
    /// Where its instance lives, when not on this node.
    pub home: Option<Home>,
    /// Created detached: it outlives its handles (and its owner node).
    pub detached: bool,
    /// Its restart policy.
    pub restarts: Restarts,
    /// Its name in the actor directory, once it took one there.
    pub name: std::sync::OnceLock<String>,
    /// When this node made it (its instance, or its stub).
    pub created: std::time::SystemTime,
    inner: Mutex<Inner<T>>,
    life: tokio::sync::watch::Sender<Life>,
}

impl<T: Queued> Mailbox<T> {
    /// A new actor `id` of `class` in `component`, its calls held to
    /// `limits`: starting, on this node, no name, no restarts.
    pub fn new(id: ActorId, class: String, component: Arc<str>, limits: Limits) -> Self {
        Self {
            id,
            class,
            component,
            limits,
            home: None,
            detached: false,
            restarts: Restarts::default(),
            name: std::sync::OnceLock::new(),
            created: std::time::SystemTime::now(),
            life: tokio::sync::watch::Sender::new(Life::Starting),
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                running: false,
                dead: None,
                allocation: None,
                admitted: false,
                running_cancel: None,
                released: false,
                handed_over: false,
                holders: BTreeMap::new(),
                pin: None,
                restarted: 0,
                calls: 0,
                component_name: None,
            }),
        }
    }

    /// The same actor living on another node (`home`): admitted at once
    /// (the resources it holds are that node's).
    pub fn elsewhere(mut self, home: Home) -> Self {
        self.home = Some(home);
        self.inner.get_mut().admitted = true;
        self
    }

    /// The same actor, created detached.
    pub fn detached(mut self, detached: bool) -> Self {
        self.detached = detached;
        self
    }

    /// The same actor, with restart policy `restarts`.
    pub fn with_restarts(mut self, restarts: Restarts) -> Self {
        self.restarts = restarts;
        self
    }

    /// Restarts the actor, if it is alive and has restarts left: its
    /// `constructor` goes to the head of its queue, before `retry` (the
    /// call that was running, to run again) and the calls waiting. To be
    /// called while a call runs (the one its node's death ended), before
    /// [`Mailbox::end_call`]. The restarts done so far, counting this
    /// one; `None` when none is left (or it is dead).
    pub fn restart(&self, constructor: Arc<T>, retry: Option<Arc<T>>) -> Option<u32> {
        self.restart_when(constructor, retry, true)
    }

    /// [`Mailbox::restart`] of an actor none of whose calls runs now (its
    /// node seen dead while it was idle; a running call's end restarts a
    /// busy one): `None` too when one runs.
    pub fn restart_idle(&self, constructor: Arc<T>) -> Option<u32> {
        self.restart_when(constructor, None, false)
    }

    fn restart_when(
        &self,
        constructor: Arc<T>,
        retry: Option<Arc<T>>,
        running: bool,
    ) -> Option<u32> {
        let mut inner = self.inner.lock();
        if inner.dead.is_some()
            || inner.restarted >= self.restarts.max_restarts
            || inner.running != running
        {
            return None;
        }
        inner.restarted = inner.restarted.saturating_add(1);
        if let Some(call) = retry {
            inner.queue.push_front(call);
        }
        inner.queue.push_front(constructor);
        self.life.send_replace(Life::Starting);
        Some(inner.restarted)
    }

    /// Puts `call` (the one running now, lost with the actor's node) back
    /// at the head of the queue, to run again once [`Mailbox::end_call`]
    /// ended it (a stub that found its restarted actor elsewhere).
    pub fn retry_first(&self, call: Arc<T>) {
        self.inner.lock().queue.push_front(call);
    }

    /// Times the actor was restarted.
    pub fn restarted(&self) -> u32 {
        self.inner.lock().restarted
    }

    /// Notes that another node owns the actor now (a stub here whose
    /// handle this node sent in a task's results): this stub's death no
    /// longer kills it (its owner's kill or job end does).
    pub fn hand_over(&self) {
        self.inner.lock().handed_over = true;
    }

    /// Whether this node owns the actor: its kill or its job's end here
    /// kills it where it lives.
    pub fn owned_here(&self) -> bool {
        let handed_over = self.inner.lock().handed_over;
        !handed_over && self.home.as_ref().is_none_or(|h| h.owner)
    }

    /// Watches the actor's life: its constructor's end, its death.
    pub fn life(&self) -> tokio::sync::watch::Receiver<Life> {
        self.life.subscribe()
    }

    /// Keeps `pin` (its component's version) until the actor dies.
    pub fn keep(&self, pin: Option<InUse>) {
        let mut inner = self.inner.lock();
        if inner.dead.is_none() {
            if let Some(pin) = &pin {
                inner.component_name = Some(pin.name());
            }
            inner.pin = pin;
        }
    }

    /// The actor now, as listings show it.
    pub fn snapshot(&self) -> MailboxSnapshot {
        let inner = self.inner.lock();
        MailboxSnapshot {
            alive: inner.dead.is_none() && *self.life.borrow() == Life::Alive,
            dead: inner.dead.clone(),
            calls: inner.calls,
            queued: inner.queue.len(),
            running: inner.running,
            restarted: inner.restarted,
            component_name: inner.component_name.clone(),
        }
    }

    /// Gives the actor its resources: its constructor may run now.
    pub fn admit(&self, allocation: Allocation) {
        let mut inner = self.inner.lock();
        inner.admitted = true;
        inner.allocation = Some(allocation);
    }

    /// What the actor holds of the node's resources.
    pub fn allocation(&self) -> Allocation {
        self.inner.lock().allocation.clone().unwrap_or_default()
    }

    /// Why the actor is dead, if it is.
    pub fn dead(&self) -> Option<TaskError> {
        self.inner.lock().dead.clone()
    }

    /// Marks the actor dead of `cause` and stops its running call: the
    /// resources it held, for the caller to give back (see
    /// `Scheduler::actor_died`); `None` when it was dead already.
    pub fn mark_dead(&self, cause: TaskError) -> Option<Option<Allocation>> {
        let mut inner = self.inner.lock();
        if inner.dead.is_some() {
            return None;
        }
        inner.dead = Some(cause.clone());
        inner.pin = None;
        self.life.send_replace(Life::Dead(cause));
        if let Some(token) = &inner.running_cancel {
            token.cancel();
        }
        Some(inner.allocation.take())
    }

    /// Notes that the actor's last handle here is gone (see
    /// [`Mailbox::exit_if_released`]).
    pub fn release(&self) {
        self.inner.lock().released = true;
    }

    /// Notes that a handle of the actor (whose instance is here) arrived
    /// here again after the ones here were gone.
    pub fn held_here(&self) {
        let mut inner = self.inner.lock();
        if inner.dead.is_none() {
            inner.released = false;
        }
    }

    /// Notes that node `node` holds `stubs` more handles of the actor
    /// (whose instance is here): it keeps a stub (Ray's borrowers,
    /// counted per node). False when the actor is dead, or
    /// [`MAX_HOLDERS`] other nodes hold it already.
    pub fn held_by(&self, node: &str, stubs: u32) -> bool {
        let mut inner = self.inner.lock();
        if inner.dead.is_some()
            || (inner.holders.len() >= MAX_HOLDERS && !inner.holders.contains_key(node))
        {
            return false;
        }
        let count = inner.holders.entry(node.to_string()).or_insert(0);
        *count = count.saturating_add(stubs);
        true
    }

    /// Notes that a stub of node `node` went (its handles there are gone).
    pub fn let_go_by(&self, node: &str) {
        let mut inner = self.inner.lock();
        if let Some(count) = inner.holders.get_mut(node) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                inner.holders.remove(node);
            }
        }
    }

    /// Forgets the holders that `alive` says are gone (their nodes died);
    /// whether any was.
    pub fn holders_gone(&self, alive: impl Fn(&str) -> bool) -> bool {
        let mut inner = self.inner.lock();
        let before = inner.holders.len();
        inner.holders.retain(|node, _| alive(node));
        inner.holders.len() != before
    }

    /// Marks the actor dead of `cause()` if its last handle is gone (here
    /// and on every other node) and nothing of it runs or waits in its
    /// queue (its constructor included), as [`Mailbox::mark_dead`] does;
    /// `None` otherwise, when it was created detached (an instance here),
    /// or when it was dead already. Called whenever it may have become
    /// idle: on release and after its calls.
    pub fn exit_if_released(
        &self,
        cause: impl FnOnce() -> TaskError,
    ) -> Option<Option<Allocation>> {
        let mut inner = self.inner.lock();
        if !inner.released
            || !inner.holders.is_empty()
            || (self.detached && self.home.is_none())
            || inner.running
            || !inner.queue.is_empty()
            || inner.dead.is_some()
        {
            return None;
        }
        let cause = cause();
        inner.dead = Some(cause.clone());
        inner.pin = None;
        self.life.send_replace(Life::Dead(cause));
        Some(inner.allocation.take())
    }

    /// Appends a submitted task to the queue.
    pub fn enqueue(&self, task: Arc<T>) {
        self.inner.lock().queue.push_back(task);
    }

    /// Takes the head of the queue to run it, if it is ready and nothing is
    /// running: (the task, why the actor is dead if it is).
    pub fn take_next(&self) -> Option<(Arc<T>, Option<TaskError>)> {
        let mut inner = self.inner.lock();
        if inner.running || !inner.queue.front().is_some_and(|t| t.is_ready()) {
            return None;
        }
        if !inner.admitted && inner.dead.is_none() {
            return None; // the constructor waits for resources
        }
        let task = inner.queue.pop_front()?;
        inner.running = true;
        if inner.dead.is_none() {
            inner.calls = inner.calls.saturating_add(1);
        }
        Some((task, inner.dead.clone()))
    }

    /// Gives up the call taken by [`Mailbox::take_next`] without running
    /// it (nothing can run it any more).
    pub fn abandon(&self) {
        self.inner.lock().running = false;
    }

    /// Ends the running call: `instance` (what it ran on, if it is to be
    /// kept) goes to `keep` unless the call killed the actor (`died`) or
    /// the actor died meanwhile; then returns what was not kept, for the
    /// caller to drop outside the lock (see `Scheduler::actor_died`). `keep` runs
    /// under the actor's lock, so a concurrent `die` either sees the
    /// instance kept (and drops it) or keeps it from being kept.
    pub fn end_call<I>(&self, died: bool, instance: Option<I>, keep: impl FnOnce(I)) -> Option<I> {
        let mut inner = self.inner.lock();
        inner.running = false;
        inner.running_cancel = None;
        match instance {
            Some(instance) if !died && inner.dead.is_none() => {
                keep(instance);
                self.constructed();
                None
            }
            other => other,
        }
    }

    /// Notes that the actor's constructor ended well (its instance is
    /// kept, here or on its home node).
    pub fn constructed(&self) {
        self.life.send_if_modified(|life| {
            let starting = *life == Life::Starting;
            if starting {
                *life = Life::Alive;
            }
            starting
        });
    }

    /// Records `cancel` as the running task's, so that `kill` stops it; a
    /// kill that came first (between taking the task and now) cancels it
    /// at once.
    pub fn starting(&self, cancel: &CancelToken) {
        let mut inner = self.inner.lock();
        if inner.dead.is_some() {
            cancel.cancel();
        }
        inner.running_cancel = Some(cancel.clone());
    }

    /// The error of `task`, which cannot run because the actor died of
    /// `cause` (its first cause).
    pub fn died_error(&self, task: &TaskSpec, cause: &TaskError) -> TaskError {
        TaskError::new(
            ErrorKind::ActorDied,
            task.label.clone(),
            task.id,
            format!("actor {} ({}) is dead: {cause}", self.id, self.class),
        )
        .caused_by(cause.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use wray_control_plane::TaskId;

    use super::*;

    /// A queued call whose readiness the test sets.
    struct Call(AtomicBool);

    impl Queued for Call {
        fn is_ready(&self) -> bool {
            self.0.load(Ordering::Acquire)
        }
    }

    fn call(ready: bool) -> Arc<Call> {
        Arc::new(Call(AtomicBool::new(ready)))
    }

    fn mailbox() -> Mailbox<Call> {
        let limits = Limits {
            max_memory: 1 << 20,
            timeout: None,
            fuel: None,
        };
        Mailbox::new(TaskId::from_parts(1, 2), "C".into(), Arc::from("h"), limits)
    }

    fn cause(m: &str) -> TaskError {
        TaskError::new(ErrorKind::ActorDied, "C.kill", TaskId::from_parts(1, 2), m)
    }

    #[test]
    fn calls_run_one_at_a_time_in_order_and_a_pending_head_blocks_the_rest() {
        let m = mailbox();
        let (a, b, c) = (call(true), call(false), call(true));
        for t in [&a, &b, &c] {
            m.enqueue(t.clone());
        }
        assert!(
            m.take_next().is_none(),
            "the constructor waits for resources"
        );
        m.admit(Allocation::default());
        let (first, dead) = m.take_next().unwrap();
        assert!(Arc::ptr_eq(&first, &a) && dead.is_none());
        assert!(m.take_next().is_none(), "one call at a time");
        assert_eq!(m.end_call(false, Some(7), |_| {}), None, "kept");
        assert!(
            m.take_next().is_none(),
            "b's arguments are pending: c waits"
        );
        b.0.store(true, Ordering::Release);
        assert!(Arc::ptr_eq(&m.take_next().unwrap().0, &b));
        m.end_call(false, None::<u8>, |_| {});
        assert!(Arc::ptr_eq(&m.take_next().unwrap().0, &c));
    }

    #[test]
    fn a_dead_actor_gives_its_resources_back_once_and_refuses_its_instance() {
        let m = mailbox();
        m.enqueue(call(true));
        m.admit(Allocation::default());
        m.take_next().unwrap();
        let token = CancelToken::new();
        m.starting(&token);
        assert_eq!(
            m.mark_dead(cause("killed")),
            Some(Some(Allocation::default()))
        );
        assert!(token.is_cancelled(), "the running call is stopped");
        assert_eq!(m.mark_dead(cause("again")), None, "dead once");
        // The instance of the stopped call comes back to the caller to drop.
        let mut kept = false;
        assert_eq!(m.end_call(false, Some(1), |_| kept = true), Some(1));
        assert!(!kept);
        // Later calls still run, to fail with the cause.
        m.enqueue(call(true));
        let (_, dead) = m.take_next().unwrap();
        assert!(dead.unwrap().message.contains("killed"));
    }

    #[test]
    fn a_released_actor_exits_only_when_nothing_runs_or_waits() {
        let m = mailbox();
        m.enqueue(call(true)); // the constructor
        m.release();
        assert_eq!(m.exit_if_released(|| cause("exit")), None, "queued");
        m.admit(Allocation::default());
        m.take_next().unwrap();
        assert_eq!(m.exit_if_released(|| cause("exit")), None, "running");
        m.end_call(false, None::<u8>, |_| {});
        assert!(m.exit_if_released(|| cause("exit")).is_some());
        assert!(m.dead().unwrap().message.contains("exit"));
        assert_eq!(m.exit_if_released(|| cause("exit")), None, "dead once");
    }

    #[test]
    fn an_actor_with_handles_never_exits_by_itself() {
        let m = mailbox();
        m.admit(Allocation::default());
        assert_eq!(m.exit_if_released(|| cause("exit")), None);
        assert!(m.dead().is_none());
    }
}
