//! Actor instances: each live actor's store, bindings and `actor-instance`
//! handle, kept by the executor keyed by actor id, and running an actor's
//! tasks on them. The actor's queue, resources and death are its
//! scheduler mailbox's ([`Actor`]).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use wasmtime::component::ResourceAny;
use wray_control_plane::FunctionKind;

use super::classify::{guest_error, trap_to_task_error};
use super::exports::Guest;
use super::guard::{rearm_limits, StopWhen};
use super::schemas::ArgSchemas;
use super::state::CurrentTask;
use super::store::TaskStore;
use super::values::{finish_call, host_bug, payload_refs, system_error};
use super::WasmExecutor;
use crate::error::{ErrorKind, TaskError};
use crate::objects::Object;
use crate::proto::Target;
use crate::scheduler::task::Actor;
use crate::scheduler::{PendingTask, Task};
use crate::worker_pool::{WaitingThread, Worker};

/// A live actor instance: its store, its bindings, and the handle of its
/// `actor-instance` resource.
pub struct Instance {
    store: TaskStore,
    guest: Guest,
    handle: ResourceAny,
    /// Its component's parameter schemas (method calls' JSON arguments are
    /// checked against them).
    schemas: Arc<ArgSchemas>,
}

/// How one task of an actor ended: its result, the instance to keep (if
/// any), and why the actor died (if it did).
type CallEnd = (
    Result<Vec<Object>, TaskError>,
    Option<Instance>,
    Option<TaskError>,
);

impl WasmExecutor {
    /// Runs tasks of `actor` on this (worker) thread: `task`, then each
    /// next one that is ready by then (calls queued back to back run on one
    /// thread, with no hand-over). A panic in the host while a task runs
    /// fails the task and kills the actor.
    /// Its guests' waits block `worker`'s thread.
    pub fn run_actor(
        self: &Arc<Self>,
        worker: &Worker,
        actor: &Arc<Actor>,
        task: Arc<PendingTask>,
        dead: Option<TaskError>,
    ) {
        let thread = WaitingThread::Worker(worker.clone());
        let mut next = Some((task, dead));
        while let Some((task, dead)) = next.take() {
            self.run_actor_task(&thread, actor, task, dead);
            next = actor.take_next();
        }
        // Idle now: an actor whose last handle is gone exits.
        self.sched.exit_if_released(actor);
    }

    /// Runs one task of the actor and puts the instance back (or lets the
    /// actor die).
    fn run_actor_task(
        self: &Arc<Self>,
        thread: &WaitingThread,
        actor: &Arc<Actor>,
        task: Arc<PendingTask>,
        dead: Option<TaskError>,
    ) {
        let mut kept = None;
        let mut died = None;
        if let Some(mut spec) = task.take() {
            let holds = std::mem::take(&mut spec.holds);
            let instance = self.instances.lock().remove(&actor.id);
            let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                self.block_on(self.actor_task(thread, actor, &mut spec, instance, dead))
            }));
            let result = match ran {
                Ok((result, instance, why)) => {
                    if let Some(instance) = &instance {
                        instance.store.data().end_output();
                    }
                    (kept, died) = (instance, why);
                    result
                }
                Err(panic) => {
                    let e = host_bug(&spec.label, spec.id, &*panic);
                    died = Some(e.clone());
                    Err(e)
                }
            };
            self.sched.finish(&spec, result);
            self.sched.release_all(&holds);
        }
        let rejected = actor.end_call(died.is_some(), kept, |instance| {
            self.instances.lock().insert(actor.id, instance);
        });
        // Outside the actor's lock, as in `Actor::die`.
        drop(rejected);
        if let Some(cause) = died {
            self.sched.actor_died(actor, cause);
        }
    }

    /// Runs `spec` (the constructor or a call) of `actor` on `instance`.
    async fn actor_task(
        self: &Arc<Self>,
        thread: &WaitingThread,
        actor: &Actor,
        spec: &mut Task,
        instance: Option<Instance>,
        dead: Option<TaskError>,
    ) -> CallEnd {
        let mut instance = instance;
        let mut died = None;
        let result = match (&dead, instance.as_mut()) {
            (Some(cause), _) => Err(actor.died_error(spec, cause)),
            (None, _) if matches!(spec.target, Target::ActorCreate { .. }) => {
                match self.construct(thread, actor, spec).await {
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
                let (result, trapped) = self.call(thread, actor, inst, spec).await;
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
        let killed = if dead.is_none() { actor.dead() } else { None };
        let result = match (result, killed) {
            // Killed while this call ran (or before it took the instance):
            // it reports the kill.
            (Err(_), Some(cause)) => {
                died = None;
                Err(actor.died_error(spec, &cause))
            }
            (result, _) => result,
        };
        (result, instance, died)
    }

    async fn construct(
        self: &Arc<Self>,
        thread: &WaitingThread,
        actor: &Actor,
        spec: &mut Task,
    ) -> Result<Instance, TaskError> {
        let args = self.resolve_args(spec)?;
        let Target::ActorCreate { class, .. } = &spec.target else {
            return Err(system_error(spec, "not an actor constructor"));
        };
        let Some(component) = self.component(&actor.component) else {
            return Err(system_error(spec, "the actor's component is not loaded"));
        };
        component
            .schemas
            .check(FunctionKind::ActorClass, Some(class), class, &args)
            .map_err(|m| {
                TaskError::new(
                    ErrorKind::InvalidArgument,
                    spec.label.clone(),
                    spec.id,
                    m.to_string(),
                )
            })?;
        actor.starting(&spec.cancel);
        let current = CurrentTask::for_spec(spec, false, actor.allocation(), thread.clone());
        let (mut store, mut guest) = self
            .instantiate(&component, actor.id.job(), current)
            .await?;
        if let Err(e) = store.data_mut().hold_all(payload_refs(&args)) {
            return Err(trap_to_task_error(&e.into(), store.data()));
        }
        let stop = StopWhen::of(store.data());
        let created = stop
            .guard(guest.create_actor(&mut store, class, &args))
            .await;
        match created {
            Ok(Ok(handle)) => Ok(Instance {
                store,
                guest,
                handle,
                schemas: component.schemas.clone(),
            }),
            Ok(Err(e)) => Err(guest_error(e, store.data())),
            Err(trap) => Err(trap_to_task_error(&trap, store.data())),
        }
    }

    /// Runs one method call; the bool says whether the instance trapped.
    async fn call(
        self: &Arc<Self>,
        thread: &WaitingThread,
        actor: &Actor,
        inst: &mut Instance,
        spec: &mut Task,
    ) -> (Result<Vec<Object>, TaskError>, bool) {
        let args = match self.resolve_args(spec) {
            Ok(a) => a,
            Err(e) => return (Err(e), false),
        };
        let Target::ActorCall { method, .. } = &spec.target else {
            return (Err(system_error(spec, "not an actor call")), false);
        };
        let kind = FunctionKind::ActorMethod;
        if let Err(m) = inst.schemas.check(kind, Some(&actor.class), method, &args) {
            let error = TaskError::new(
                ErrorKind::InvalidArgument,
                spec.label.clone(),
                spec.id,
                m.to_string(),
            );
            return (Err(error), false);
        }
        actor.starting(&spec.cancel);
        let current = CurrentTask::for_spec(spec, false, actor.allocation(), thread.clone());
        if let Some(entry) = &spec.entry {
            entry.started();
        }
        self.sched.pin_worker(thread, &current.allocation);
        let state = inst.store.data_mut();
        state.begin(current);
        if let Err(e) = state.hold_all(payload_refs(&args)) {
            return (Err(trap_to_task_error(&e.into(), inst.store.data())), true);
        }
        rearm_limits(&mut inst.store);
        let stop = StopWhen::of(inst.store.data());
        let result = stop
            .guard(inst.guest.call_actor(
                &mut inst.store,
                inst.handle,
                method,
                &args,
                spec.result_codec.map(Into::into),
            ))
            .await;
        let trapped = result.is_err();
        (
            finish_call(result, inst.store.data(), spec.returns.len()),
            trapped,
        )
    }
}
