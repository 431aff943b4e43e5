//! The owner's side of a forwarded task ([`Forwarder`], the scheduler's
//! [`Remote`]): where a task that does not fit here goes, sending it with
//! its objects, sealing its results here when it ends, and running it
//! again elsewhere when the node it ran on dies or cannot be reached (up
//! to [`MAX_RETRIES`] times, as Ray's `max_retries`; an error the task
//! itself raised is not retried).

use std::sync::{Arc, Weak};

use wray_control_plane::{ActorId, JobId, NodeEvent, NodeState, NodeView};
use wray_peer::PeerClient;

use crate::deadline::Deadline;
use crate::error::{ErrorKind, TaskError};
use crate::handles;
use crate::objects::Object;
use crate::proto::{Request, Scheduling, Target};
use crate::protocol::{
    call, code, method, send, CancelTask, Encoded, JobEnded, PeerMethod, Release, RunTask,
    WireError, MAX_RESOURCE_NAMES,
};
use crate::scheduler::remote::{Infeasible, Local, Placement, Remote};
use crate::scheduler::task::{Actor, PendingTask, Task};
use crate::scheduler::Scheduler;
use crate::transfer::{all_sealed, receive, ship, Traffic};

/// How many times a task is run again after the node running it died or
/// could not be reached (Ray's default `max_retries`).
pub(crate) const MAX_RETRIES: u32 = 3;

/// How many times a task handed back by the node it was sent to (it had
/// no room, another had) goes to the node that one named; past it, the
/// nodes that handed it back are left out of its placement.
const MAX_MOVES: usize = 8;

/// The scheduler's view of the other nodes, and the sender of forwarded
/// tasks.
pub(crate) struct Forwarder {
    pub(crate) sched: Weak<Scheduler>,
    pub(crate) node_id: String,
    pub(crate) cluster: String,
    pub(crate) view: NodeView,
    /// For tasks: no request deadline (a task runs as long as its limit;
    /// the node's death ends the wait).
    pub(crate) tasks: PeerClient,
    /// For pulls and releases.
    pub(crate) client: PeerClient,
    /// For liveness probes (`health`): a pool of its own.
    pub(crate) probes: PeerClient,
    /// Which live nodes are placed on (`health`).
    pub(crate) health: Arc<crate::health::Health>,
    pub(crate) runtime: tokio::runtime::Handle,
    /// Tasks run again after their node died, broke their connection or
    /// stalled while it held them.
    pub(crate) retried: std::sync::atomic::AtomicU64,
    /// Tasks and actor constructors placed again because their node could
    /// not be reached before it took them (not retries).
    pub(crate) resent: std::sync::atomic::AtomicU64,
    /// Tasks run again because their draining node stopped them at its
    /// grace (not retries).
    pub(crate) preempted: std::sync::atomic::AtomicU64,
    /// Tasks moved: sent on from this node's queue to a node with room
    /// (spillback), or handed back by the node they were sent to and
    /// placed again.
    pub(crate) moved: std::sync::atomic::AtomicU64,
    /// Actors restarted on another node after theirs died.
    pub(crate) actors_restarted: std::sync::atomic::AtomicU64,
    /// Tasks (functions, actor constructors and calls) this node sent to
    /// another node to run, each attempt counted: what it owns and placed
    /// elsewhere.
    pub(crate) forwarded: std::sync::atomic::AtomicU64,
    /// The constructors of the actors this node owns that may restart,
    /// by actor (see `actors`).
    pub(crate) kept: parking_lot::Mutex<std::collections::HashMap<ActorId, Kept>>,
    /// What this node believes each other node has free (`load`): its
    /// last word less what was sent to it since, so that a burst of tasks
    /// spreads rather than all going to the node that looked free (its
    /// record is republished every 200 ms at most).
    pub(crate) loads: crate::load::Loads,
    /// Hybrid placement's threshold (`--spread-threshold`, 0 to 1): this
    /// node's busiest resource used under it, a task that fits stays here.
    pub(crate) spread_threshold: f64,
    /// Woken when a node may have room again (a forwarded task ended):
    /// the spill loop looks at this node's queue (`spill`).
    pub(crate) kick: Arc<tokio::sync::Notify>,
    /// Tasks of this node's that no node had room for and this node can
    /// never run (`Placement::Later`), oldest first, with what they ask:
    /// sent to the first node with room (`spill`). At most the node's
    /// pending tasks.
    pub(crate) parked: parking_lot::Mutex<std::collections::VecDeque<(Arc<PendingTask>, Request)>>,
    /// The nodes each job's tasks were sent to, told when it ends.
    pub(crate) job_nodes: crate::jobs::JobNodes,
    /// Itself (it lives in an `Arc`: its tasks hold it while they run).
    pub(crate) this: Weak<Forwarder>,
    /// Object bytes sent and received (shared with the service).
    pub(crate) traffic: Arc<crate::transfer::Traffic>,
    /// The jobs' environments, which travel with their tasks.
    pub(crate) jobs: crate::JobState,
}

/// The constructor of an actor this node owns that may be restarted
/// (`actors`): its spec, the objects its arguments name (held here until
/// the actor dies for good) and its task-table entry.
pub(crate) struct Kept {
    pub(crate) spec: crate::proto::TaskSpec,
    pub(crate) holds: Vec<wray_control_plane::ObjectId>,
    pub(crate) entry: Option<Arc<crate::scheduler::task_table::TaskEntry>>,
}

/// Why one attempt at a forwarded task did not end with its results.
pub(crate) enum Failure {
    /// The node was dead (or gone) before the task was sent: another node,
    /// and the task never ran (not counted as a retry).
    Unsent(String),
    /// The node died or could not be reached: worth another node.
    Lost(String),
    /// The node queued the task and handed it back, naming a node with
    /// room for it (spillback): the task never ran there.
    Moved(String),
    /// The node drained and stopped the task at its grace (as Ray's
    /// preempted nodes): run again elsewhere, not counted as a retry,
    /// since the task did not fail; the node is not asked again.
    Cut(String),
    /// The node has no such actor (yet: a handle can reach a third node
    /// before the actor's constructor reaches the actor's node).
    NoActor(String),
    /// Cancelled here.
    Cancelled,
    /// Anything else: the task fails with it.
    Failed(String),
}

impl Forwarder {
    /// Runs `task` on `node`, again elsewhere if that node is lost.
    async fn run(self: Arc<Self>, task: Arc<PendingTask>, mut node: String, request: Request) {
        let Some(sched) = self.sched.upgrade() else {
            self.unsend(&node, &request);
            return;
        };
        let Some(spec) = task.take() else {
            // Cancelled meanwhile: it was counted as sent when placed.
            self.unsend(&node, &request);
            return;
        };
        // Nodes lost (not tried again), and nodes that handed it back.
        let mut lost = Vec::new();
        let mut moved_from: Vec<String> = Vec::new();
        let mut attempt = 0;
        let failure = loop {
            if let Some(entry) = &spec.entry {
                entry.started_on(&node);
            }
            // Counted as sent to `node` since it was placed there. A node
            // that does not allow the job's directories is passed over.
            let attempted = match self.lacks_job_dirs(&node, &spec) {
                Some(why) => Err(Failure::Unsent(why)),
                None => self.attempt(&sched, &spec, &node, false).await,
            };
            self.unsend(&node, &spec.request);
            let failure = match attempted {
                Ok(_) => return,
                Err(f) => f,
            };
            let mut hint = None;
            let why = match &failure {
                Failure::Lost(why) => {
                    // Run again: it may have run (in part) there.
                    if attempt >= MAX_RETRIES {
                        break Failure::Failed(format!(
                            "{why}; given up after {attempt} retries (max_retries {MAX_RETRIES})"
                        ));
                    }
                    attempt = attempt.saturating_add(1);
                    self.retried
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::warn!(task = %spec.id, node, "retrying a task elsewhere: {why}");
                    lost.push(node.clone());
                    why.clone()
                }
                Failure::Unsent(why) => {
                    lost.push(node.clone());
                    why.clone()
                }
                Failure::Cut(why) => {
                    self.preempted
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::info!(task = %spec.id, node, "running a task again elsewhere (not a retry): {why}");
                    lost.push(node.clone());
                    why.clone()
                }
                Failure::Moved(to) => {
                    self.moved
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    moved_from.push(node.clone());
                    // Past a few moves, the nodes that handed it back are
                    // not asked again (their estimates disagree).
                    if moved_from.len() <= MAX_MOVES {
                        hint = Some(to.clone());
                    }
                    format!("node {node} handed the task back")
                }
                _ => break failure,
            };
            let mut skip = lost.clone();
            skip.extend(self.lacking_job_dirs(spec.id.job()));
            if moved_from.len() > MAX_MOVES {
                skip.extend(moved_from.iter().cloned());
            } else {
                skip.push(node.clone());
            }
            let local = sched.local(&spec.request, 0);
            // The node a hand-back names, if this node too sees room there;
            // else this node's own choice.
            let placed = match hint.filter(|h| !skip.contains(h)) {
                Some(h) if h == self.node_id && local.fits_now => Ok(Placement::Here),
                Some(h) if self.has_room(&h, &spec.request) => Ok(Placement::Node(h)),
                _ => self.choose(&spec.request, local, &spec.scheduling, &skip, true),
            };
            match placed {
                Ok(Placement::Node(next)) => {
                    self.record_sent(&next, &spec.request);
                    if let Some(entry) = &spec.entry {
                        entry.started_on(&next);
                    }
                    node = next;
                }
                Ok(Placement::Here) => {
                    sched.run_here(spec);
                    return;
                }
                Ok(Placement::Later) => {
                    let request = spec.request.clone();
                    self.park(PendingTask::ready(spec), request);
                    return;
                }
                Err(m) => break Failure::Failed(format!("{why}; {m}")),
            }
        };
        let (kind, message) = match failure {
            Failure::Cancelled => (
                ErrorKind::Cancelled,
                "cancelled while it ran on another node".to_string(),
            ),
            Failure::Unsent(m)
            | Failure::Lost(m)
            | Failure::Cut(m)
            | Failure::Moved(m)
            | Failure::NoActor(m)
            | Failure::Failed(m) => (ErrorKind::System, m),
        };
        let error = TaskError::new(kind, spec.label.clone(), spec.id, message);
        if kind != ErrorKind::Cancelled {
            // No node ran it to this end: this node's row is the task's.
            if let Some(entry) = &spec.entry {
                entry.ended_here();
            }
        }
        sched.finish(&spec, Err(error));
        sched.release_all(&spec.holds);
    }

    /// One attempt at `spec` on `node`: sent, waited for, its results
    /// sealed here (`detached`: an actor constructor's option). For an
    /// actor's task: why the actor is dead there, if it is.
    pub(crate) async fn attempt(
        &self,
        sched: &Arc<Scheduler>,
        spec: &Task,
        node: &str,
        detached: bool,
    ) -> Result<Option<TaskError>, Failure> {
        let Some(peer) = self
            .view
            .get(node)
            .filter(|p| p.state == wray_control_plane::NodeState::Alive)
        else {
            return Err(Failure::Unsent(format!(
                "node {node} died or left the cluster"
            )));
        };
        let addr = peer.record.peer_address.clone();
        // The refs inside its arguments' values, at any depth, are sent
        // with it: made first.
        let roots = spec.referenced();
        tokio::select! {
            () = all_sealed(sched, &roots) => {}
            () = spec.cancel.cancelled() => return Err(Failure::Cancelled),
        }
        let objects = ship(sched.objects(), &roots).map_err(|e| Failure::Failed(e.to_string()))?;
        self.traffic.shipped(&objects);
        let deadline = Deadline::of(spec.spec.limits.timeout, Traffic::size_of(&objects));
        let actors = handles::refs(sched, &objects, false);
        let component_name = sched.component(&spec.component).map(|r| r.name.clone());
        let request = RunTask {
            spec: spec.spec.clone(),
            component_name,
            objects,
            actors,
            detached,
            env: self.jobs.portable(spec.id.job()),
        };
        self.job_nodes.note(spec.id.job(), node);
        let mut deaths = self.view.subscribe();
        let died = async {
            loop {
                match deaths.recv().await {
                    Ok(NodeEvent::Died(id)) if id == node => return,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await
                    }
                    _ => {}
                }
            }
        };
        // Probed while it holds the task (`health`): a node that stops
        // answering is given up within seconds.
        let mut stalls = self.health.stalls();
        let stalled = async {
            loop {
                match stalls.recv().await {
                    Ok(id) if id == node => return,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await
                    }
                    _ => {}
                }
            }
        };
        let _waiting = self.health.waiting_on(node);
        self.forwarded
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let answer = tokio::select! {
            answer = call::<method::RunTask>(&self.tasks, &addr, request) => answer,
            () = died => return Err(Failure::Lost(format!("node {node} died while it ran the task"))),
            () = stalled => {
                let seen = self
                    .health
                    .suspicion(node)
                    .map_or_else(|| "it stopped answering".to_string(), |(_, seen)| seen);
                return Err(Failure::Lost(format!(
                    "node {node} ({addr}) stalled while it held the task: {seen}"
                )));
            }
            why = self.overdue(spec.id, node, &addr, deadline) => return Err(Failure::Lost(why)),
            () = spec.cancel.cancelled() => {
                // Stop it there too (what it submitted with it).
                let client = self.client.clone();
                let cancel = CancelTask { task: spec.id };
                self.runtime.spawn(async move {
                    if let Err(e) = call::<method::CancelTask>(&client, &addr, cancel).await {
                        tracing::debug!("cancelling a forwarded task on its node: {e}");
                    }
                });
                return Err(Failure::Cancelled);
            }
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) if crate::health::unreached(&e) => {
                // It never reached the node: placed again, not a retry.
                self.health.failed(node, &e);
                self.resent
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Err(Failure::Unsent(format!(
                    "node {node} ({addr}) could not be reached: {e}"
                )));
            }
            Err(e) if e.is_retryable() => {
                self.health.failed(node, &e);
                return Err(Failure::Lost(format!("node {node} ({addr}): {e}")));
            }
            Err(wray_peer::PeerError::Remote { code, message, .. }) if code == code::MOVED => {
                return Err(Failure::Moved(message));
            }
            Err(wray_peer::PeerError::Remote { code, message, .. })
                if code == code::ANSWER_FAILED =>
            {
                return Err(Failure::Failed(format!(
                    "the task ran on node {node}, but its answer could not be sent back: {message}"
                )));
            }
            // Its node drained and stopped it at its grace (`drain`).
            Err(wray_peer::PeerError::Remote { code, message, .. }) if code == code::CUT => {
                return Err(Failure::Cut(message));
            }
            Err(e @ wray_peer::PeerError::Remote { code, .. })
                if code == code::NOT_FOUND && matches!(spec.target, Target::ActorCall { .. }) =>
            {
                return Err(Failure::NoActor(format!(
                    "node {node} refused the task: {e}"
                )))
            }
            Err(e @ wray_peer::PeerError::Remote { .. }) => {
                return Err(Failure::Failed(format!(
                    "node {node} refused the task: {e}"
                )))
            }
            // An answer that could not be read (`PeerError::Protocol`)
            // among them: the task ran there.
            Err(e) => {
                return Err(Failure::Failed(format!(
                    "the task's exchange with node {node} failed: {e}"
                )))
            }
        };
        let done = answer;
        if let Some(free) = done.available.filter(|f| f.len() <= MAX_RESOURCE_NAMES) {
            self.loads.answered(node, free);
            self.kick.notify_one();
        }
        let received = receive(
            sched.objects(),
            &self.client,
            &self.traffic,
            &addr,
            done.objects,
            &spec.returns,
        )
        .await;
        if let Ok((extras, _)) = &received {
            // Counted among the holders of the actors whose handles came
            // back before the node that sent them lets its copies go.
            handles::learn(sched, &self.view, done.actors, extras).await;
        }
        // What the node kept for this answer, released (not when it kept
        // nothing: one call per task fewer).
        if !done.nothing_kept {
            let release = Release { task: spec.id };
            let client = self.client.clone();
            let to = addr.clone();
            self.runtime.spawn(async move {
                let _ = call::<method::Release>(&client, &to, release).await;
            });
        }
        let (extras, returned) = received.map_err(|e| Failure::Lost(e.to_string()))?;
        let mut returned: Vec<Option<(wray_control_plane::ObjectId, Object)>> =
            returned.into_iter().map(Some).collect();
        let mut values = Vec::with_capacity(spec.returns.len());
        let mut error = None;
        for id in &spec.returns {
            let found = returned
                .iter_mut()
                .find(|r| r.as_ref().is_some_and(|(r, _)| r == id))
                .and_then(Option::take);
            match found {
                Some((_, Object::Error(e))) => {
                    error.get_or_insert(e);
                }
                Some((_, value)) => values.push(value),
                None => {
                    error.get_or_insert_with(|| {
                        TaskError::new(
                            ErrorKind::System,
                            spec.label.clone(),
                            spec.id,
                            format!("node {node} answered without return object {id}"),
                        )
                    });
                }
            }
        }
        sched.finish(spec, error.map_or(Ok(values), Err));
        sched.release_all(&spec.holds);
        for id in &extras {
            sched.objects().release(id);
        }
        Ok(done.actor_died.and_then(WireError::into_error))
    }
}

impl Forwarder {
    /// Counts a task asking for `request` as sent to `node` (until
    /// [`Forwarder::unsend`]).
    pub(crate) fn record_sent(&self, node: &str, request: &Request) {
        self.loads.sent(node, request);
    }

    /// Forgets one task asking for `request` sent to `node` (it ended, or
    /// was not sent): the spill loop looks again, since room may show.
    pub(crate) fn unsend(&self, node: &str, request: &Request) {
        self.loads.ended(node, request);
        self.kick.notify_one();
    }

    /// Whether `node` is another live node with room for `request` now,
    /// as this node estimates it.
    pub(crate) fn has_room(&self, node: &str, request: &Request) -> bool {
        if node == self.node_id {
            return false;
        }
        let Some(info) = self
            .view
            .get(node)
            .filter(|n| n.state == NodeState::Alive && !n.record.draining)
        else {
            return false;
        };
        if !self.health.usable(node) {
            return false;
        }
        let estimate = self.loads.estimate(node, &info.record.resources_available);
        request.fits(&estimate.free)
    }
}

impl Remote for Forwarder {
    fn place(
        &self,
        request: &Request,
        local: Local,
        scheduling: &Scheduling,
        can_wait: bool,
        job: JobId,
    ) -> Result<Placement, Infeasible> {
        // Only the nodes that allow the job's host directories.
        let skip = self.lacking_job_dirs(job);
        let placed = self.choose(request, local, scheduling, &skip, can_wait)?;
        if let Placement::Node(node) = &placed {
            self.record_sent(node, request);
        }
        Ok(placed)
    }

    fn check_feasible(
        &self,
        request: &Request,
        here: bool,
        scheduling: &Scheduling,
    ) -> Result<(), Infeasible> {
        self.feasible(request, here, scheduling)
    }

    fn park(&self, task: Arc<PendingTask>, request: Request) {
        self.parked.lock().push_back((task, request));
        self.kick.notify_one();
    }

    fn alive(&self, node: &str) -> bool {
        self.is_alive(node)
    }

    fn unplace(&self, node: &str, request: &Request) {
        self.unsend(node, request);
    }

    fn forward(&self, task: Arc<PendingTask>, node: String, request: Request) {
        let Some(me) = self.me() else {
            return;
        };
        self.runtime.spawn(me.run(task, node, request));
    }

    fn run_actor(&self, actor: Arc<Actor>, task: Arc<PendingTask>, dead: Option<TaskError>) {
        let Some(me) = self.me() else {
            actor.abandon();
            return;
        };
        self.runtime.spawn(me.run_actor_tasks(actor, task, dead));
    }

    fn actor_gone(&self, actor: ActorId) {
        self.forget_constructor(actor);
    }

    fn kill_actor(&self, node: &str, actor: ActorId, why: String) {
        let Some(me) = self.me() else {
            return;
        };
        let node = node.to_string();
        self.runtime
            .spawn(async move { me.send_kill(&node, actor, why).await });
    }

    fn hold_actor(
        &self,
        node: &str,
        actor: ActorId,
    ) -> futures_util::future::BoxFuture<'static, bool> {
        let Some(me) = self.me() else {
            return Box::pin(async { false });
        };
        let node = node.to_string();
        Box::pin(async move { me.send_hold(&node, actor, true).await })
    }

    fn job_ended(&self, job: JobId) {
        let nodes = self.job_nodes.take(job);
        let body = Encoded::<method::JobEnded>::new(JobEnded { job });
        for node in nodes {
            let Some(peer) = self.view.get(&node).filter(|p| p.state == NodeState::Alive) else {
                continue;
            };
            let (client, body) = (self.client.clone(), body.clone());
            self.runtime.spawn(async move {
                let addr = peer.record.peer_address;
                if let Err(e) = send(&client, &addr, &body).await {
                    tracing::debug!(%job, node, "telling a node a job ended: {e}");
                }
            });
        }
    }

    fn let_go_actor(&self, node: &str, actor: ActorId) {
        let Some(me) = self.me() else {
            return;
        };
        let node = node.to_string();
        self.runtime.spawn(async move {
            me.send_hold(&node, actor, false).await;
        });
    }
}

impl Forwarder {
    /// Sends `request` to every live node but this one and `skip`, all
    /// at once: the first node whose answer `pick` takes, with what it
    /// made of it (`None` when no node's did; a node that cannot be
    /// reached, or answers what is not `M`'s answer, is passed over).
    pub(crate) async fn first_answer<M: PeerMethod, T>(
        &self,
        request: &Encoded<M>,
        skip: Option<&str>,
        pick: impl Fn(M::Answer) -> Option<T>,
    ) -> Option<(String, T)> {
        use futures_util::stream::{FuturesUnordered, StreamExt};
        let mut asked: FuturesUnordered<_> = self
            .view
            .alive()
            .into_iter()
            .filter(|n| n.id != self.node_id && Some(n.id.as_str()) != skip)
            .map(|n| {
                let (client, request) = (self.client.clone(), request.clone());
                async move {
                    let answer = send(&client, &n.peer_address, &request).await;
                    (n.id, answer)
                }
            })
            .collect();
        while let Some((node, answer)) = asked.next().await {
            match answer {
                Ok(answer) => {
                    if let Some(taken) = pick(answer) {
                        return Some((node, taken));
                    }
                }
                Err(e) => tracing::debug!(node, method = M::NAME, "asking every node: {e}"),
            }
        }
        None
    }

    /// Whether node `node` is alive, as the view says.
    pub(crate) fn is_alive(&self, node: &str) -> bool {
        self.view
            .get(node)
            .is_some_and(|n| n.state == wray_control_plane::NodeState::Alive)
    }

    /// This forwarder as an `Arc` (it is always held in one).
    fn me(&self) -> Option<Arc<Self>> {
        self.this.upgrade()
    }
}
