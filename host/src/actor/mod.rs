//! Actors: one long-lived instance each, whose calls run one at a time in
//! submission order.
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
//! returning an error value does not kill it.
//!
//! - [`table`]: the node's actors, live and recently dead, bounded.

pub(crate) mod table;

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use parking_lot::Mutex;
use wasmtime::component::ResourceAny;
use wray_control_plane::ActorId;

use crate::bindings::Guest;
use crate::cancel_token::CancelToken;
use crate::component::LoadedComponent;
use crate::error::{ErrorKind, TaskError};
use crate::limits::Limits;
use crate::object_store::Object;
use crate::resources::Allocation;
use crate::runtime::Runtime;
use crate::task::{PendingTask, TaskKind, TaskSpec};
use crate::worker::classify::trap_to_task_error;
use crate::worker::guard::{rearm_limits, StopWhen};
use crate::worker::mapping::TaskStore;
use crate::worker::run::{finish_call, host_bug, payload_refs, system_error};
use crate::worker::state::CurrentTask;

/// A live actor instance: its store, its bindings, and the handle of its
/// `actor-instance` resource.
struct Instance {
    store: TaskStore,
    guest: Guest,
    handle: ResourceAny,
}

struct Inner {
    queue: VecDeque<Arc<PendingTask>>,
    running: bool,
    instance: Option<Instance>,
    /// Why the actor is dead, once it is.
    dead: Option<TaskError>,
    /// Its resources, from admission until it dies.
    allocation: Option<Allocation>,
    /// Whether its constructor got its resources.
    admitted: bool,
    /// The cancel token of the call running now.
    running_cancel: Option<CancelToken>,
}

/// One actor of a node.
pub(crate) struct Actor {
    pub id: ActorId,
    pub class: String,
    pub component: Arc<LoadedComponent>,
    /// Limits of each call (unless the call sets its own).
    pub limits: Limits,
    inner: Mutex<Inner>,
}

/// How one call on the actor ended: its result, the instance to keep (if
/// any), and why the actor died (if it did).
type CallEnd = (
    Result<Vec<Object>, TaskError>,
    Option<Instance>,
    Option<TaskError>,
);

impl Actor {
    pub fn new(
        id: ActorId,
        class: String,
        component: Arc<LoadedComponent>,
        limits: Limits,
    ) -> Self {
        Self {
            id,
            class,
            component,
            limits,
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                running: false,
                instance: None,
                dead: None,
                allocation: None,
                admitted: false,
                running_cancel: None,
            }),
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

    /// Kills the actor with `cause`: its running call is stopped, its
    /// instance dropped, and its resources given back to the node. False
    /// when it was dead already.
    pub fn die(&self, rt: &Arc<Runtime>, cause: TaskError) -> bool {
        let (instance, allocation) = {
            let mut inner = self.inner.lock();
            if inner.dead.is_some() {
                return false;
            }
            inner.dead = Some(cause);
            if let Some(token) = &inner.running_cancel {
                token.cancel();
            }
            (inner.instance.take(), inner.allocation.take())
        };
        // Outside the lock: tearing the instance down seals the objects it
        // left unsealed, and their waiters may call back into this actor.
        drop(instance);
        rt.actors.died(self.id);
        if let Some(a) = allocation {
            rt.release_resources(&a);
        }
        true
    }

    /// Appends a submitted task to the queue.
    pub fn enqueue(&self, task: Arc<PendingTask>) {
        self.inner.lock().queue.push_back(task);
    }

    /// Takes the head of the queue to run it, if it is ready and nothing is
    /// running: (the task, the instance, why the actor is dead if it is).
    fn take_next(&self) -> Option<(Arc<PendingTask>, Option<Instance>, Option<TaskError>)> {
        let mut inner = self.inner.lock();
        if inner.running || !inner.queue.front().is_some_and(|t| t.is_ready()) {
            return None;
        }
        if !inner.admitted && inner.dead.is_none() {
            return None; // the constructor waits for resources
        }
        let task = inner.queue.pop_front()?;
        inner.running = true;
        Some((task, inner.instance.take(), inner.dead.clone()))
    }

    /// Starts the head of the queue on a worker thread if it is ready and
    /// nothing is running.
    pub fn try_run(self: &Arc<Self>, rt: &Arc<Runtime>) {
        if let Some((task, instance, dead)) = self.take_next() {
            let (actor, rt2) = (self.clone(), rt.clone());
            // Light: an actor runs one call at a time, like Ray's worker
            // process of its own, whatever CPUs it holds.
            rt.spawn_blocking(true, move || actor.run(&rt2, task, instance, dead));
        }
    }

    /// Runs tasks of the actor on this (worker) thread: `task`, then each
    /// next one that is ready by then (calls queued back to back run on one
    /// thread, with no hand-over). A panic in the host while a task runs
    /// fails the task and kills the actor.
    fn run(
        self: Arc<Self>,
        rt: &Arc<Runtime>,
        task: Arc<PendingTask>,
        instance: Option<Instance>,
        dead: Option<TaskError>,
    ) {
        let mut next = Some((task, instance, dead));
        while let Some((task, instance, dead)) = next.take() {
            self.run_one(rt, task, instance, dead);
            next = self.take_next();
        }
    }

    /// Runs one task of the actor and puts the instance back (or lets the
    /// actor die).
    fn run_one(
        &self,
        rt: &Arc<Runtime>,
        task: Arc<PendingTask>,
        instance: Option<Instance>,
        dead: Option<TaskError>,
    ) {
        let mut kept = None;
        let mut died = None;
        if let Some(mut spec) = task.take() {
            let holds = std::mem::take(&mut spec.holds);
            let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                rt.block_on(self.run_task(rt, &mut spec, instance, dead))
            }));
            let result = match ran {
                Ok((result, instance, why)) => {
                    (kept, died) = (instance, why);
                    result
                }
                Err(panic) => {
                    let e = host_bug(&spec.label, spec.id, &*panic);
                    died = Some(e.clone());
                    Err(e)
                }
            };
            rt.finish(&spec, result);
            rt.release_all(&holds);
        }
        let dropped = {
            let mut inner = self.inner.lock();
            inner.running = false;
            inner.running_cancel = None;
            if died.is_none() && inner.dead.is_none() {
                inner.instance = kept.take();
            }
            kept
        };
        // Outside the lock, as in `die`.
        drop(dropped);
        if let Some(cause) = died {
            self.die(rt, cause);
        }
    }

    /// Runs `spec` (the constructor or a call) on `instance`.
    async fn run_task(
        &self,
        rt: &Arc<Runtime>,
        spec: &mut TaskSpec,
        instance: Option<Instance>,
        dead: Option<TaskError>,
    ) -> CallEnd {
        let mut instance = instance;
        let mut died = None;
        let result = match (&dead, instance.as_mut()) {
            (Some(cause), _) => Err(self.died_error(spec, cause)),
            (None, _) if matches!(spec.kind, TaskKind::ActorCreate { .. }) => {
                match self.construct(rt, spec).await {
                    Ok(created) => {
                        instance = Some(created);
                        Ok(Vec::new())
                    }
                    Err(e) => {
                        died = Some(e.clone());
                        Err(e)
                    }
                }
            }
            (None, Some(inst)) => {
                let (result, trapped) = self.call(rt, inst, spec).await;
                if trapped || inst.store.is_tainted() {
                    // The actor dies with its instance, for a reason either
                    // way (a call that succeeded on a tainted store too).
                    died = Some(match &result {
                        Err(e) => e.clone(),
                        Ok(_) => system_error(
                            spec,
                            "the actor's instance is lost: a window of its memory could not \
                             be unmapped",
                        ),
                    });
                    instance = None;
                }
                result
            }
            (None, None) => Err(system_error(spec, "actor has no instance")),
        };
        let killed = if dead.is_none() {
            self.inner.lock().dead.clone()
        } else {
            None
        };
        let result = match (result, killed) {
            // Killed while this call ran: it reports the kill.
            (Err(_), Some(cause)) => {
                died = None;
                Err(self.died_error(spec, &cause))
            }
            (result, _) => result,
        };
        (result, instance, died)
    }

    /// Records `cancel` as the running task's, so that `kill` stops it; a
    /// kill that came first (between taking the task and now) cancels it
    /// at once.
    fn starting(&self, cancel: &CancelToken) {
        let mut inner = self.inner.lock();
        if inner.dead.is_some() {
            cancel.cancel();
        }
        inner.running_cancel = Some(cancel.clone());
    }

    fn died_error(&self, spec: &TaskSpec, cause: &TaskError) -> TaskError {
        TaskError::new(
            ErrorKind::ActorDied,
            spec.label.clone(),
            spec.id,
            format!("actor {} ({}) is dead: {cause}", self.id, self.class),
        )
    }

    async fn construct(
        &self,
        rt: &Arc<Runtime>,
        spec: &mut TaskSpec,
    ) -> Result<Instance, TaskError> {
        let args = rt.resolve_args(spec)?;
        self.starting(&spec.cancel);
        let current = CurrentTask::for_spec(spec, false, self.allocation());
        let (mut store, guest) = rt
            .instantiate(&self.component, self.id.job(), current)
            .await?;
        if let Err(trap) = store.data_mut().hold_all(payload_refs(&args)) {
            return Err(trap_to_task_error(&trap, store.data()));
        }
        let stop = StopWhen::of(store.data());
        let created = stop
            .guard(guest.wray_runtime_app().actor_instance().call_create(
                &mut *store,
                &self.class,
                &args,
            ))
            .await;
        match created {
            Ok(Ok(handle)) => Ok(Instance {
                store,
                guest,
                handle,
            }),
            Ok(Err(e)) => Err(crate::worker::classify::guest_error(e, store.data())),
            Err(trap) => Err(trap_to_task_error(&trap, store.data())),
        }
    }

    /// Runs one method call; the bool says whether the instance trapped.
    async fn call(
        &self,
        rt: &Arc<Runtime>,
        inst: &mut Instance,
        spec: &mut TaskSpec,
    ) -> (Result<Vec<Object>, TaskError>, bool) {
        let args = match rt.resolve_args(spec) {
            Ok(a) => a,
            Err(e) => return (Err(e), false),
        };
        let TaskKind::ActorCall { method, .. } = &spec.kind else {
            return (Err(system_error(spec, "not an actor call")), false);
        };
        self.starting(&spec.cancel);
        let current = CurrentTask::for_spec(spec, false, self.allocation());
        if let Some(entry) = &spec.entry {
            entry.started();
        }
        rt.pin_worker(&current.allocation);
        let state = inst.store.data_mut();
        state.begin(current);
        if let Err(trap) = state.hold_all(payload_refs(&args)) {
            return (Err(trap_to_task_error(&trap, inst.store.data())), true);
        }
        rearm_limits(&mut inst.store);
        let stop = StopWhen::of(inst.store.data());
        let result = stop
            .guard(inst.guest.wray_runtime_app().actor_instance().call_call(
                &mut *inst.store,
                inst.handle,
                method,
                &args,
            ))
            .await;
        let trapped = result.is_err();
        (
            finish_call(result, inst.store.data(), spec.returns.len()),
            trapped,
        )
    }
}
