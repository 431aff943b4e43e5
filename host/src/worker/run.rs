//! Running one remote-function task in a fresh instance, under its limits.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::Store;

use crate::bindings::{types, Guest};
use wray_control_plane::ObjectId;

use crate::component::LoadedComponent;
use crate::error::{ErrorKind, TaskError};
use crate::object_store::{Object, ObjectStore};
use crate::resources::Allocation;
use crate::runtime::Runtime;
use crate::task::{PendingTask, TaskKind, TaskSpec};
use crate::worker::classify::trap_to_task_error;
use crate::worker::mapping::TaskStore;
use crate::worker::reuse::Idle;
use crate::worker::state::{CurrentTask, TaskState};

impl Runtime {
    /// Runs a remote-function task holding `allocation`, seals its results,
    /// and gives the resources back.
    pub(crate) fn run_function_task(
        self: Arc<Self>,
        task: Arc<PendingTask>,
        allocation: Allocation,
    ) {
        let mut allocation = allocation;
        if let Some(mut spec) = task.take() {
            let holds = std::mem::take(&mut spec.holds);
            let returns = spec.returns.clone();
            let entry = spec.entry.clone();
            if let Err(e) = self.execute_function(spec, &mut allocation) {
                if let Some(entry) = &entry {
                    self.registry.ended(entry, Some(&e));
                }
                self.complete(&returns, Err(e));
            }
            self.release_all(&holds);
        }
        if allocation != Allocation::default() {
            self.release_resources(&allocation);
        }
    }

    /// Ends a task that ran on `store`: keeps the instance for the next task
    /// when `keep` (reusable functions; the cache has room), else tears it
    /// down; then gives the task's resources back and seals `result`, in
    /// that order: whoever sees the results sees the resources free, and no
    /// more instances live than the resources (and the cache) allow. What the
    /// instance held is kept until the results are sealed (a result may
    /// contain refs to objects it put). `allocation` is emptied.
    fn end_task(
        self: &Arc<Self>,
        spec: &TaskSpec,
        mut store: TaskStore,
        guest: Guest,
        keep: bool,
        result: Result<Vec<Object>, TaskError>,
        allocation: &mut Allocation,
    ) {
        let held = std::mem::take(&mut store.data_mut().current.allocation);
        *allocation = Allocation::default();
        let rejected = if keep {
            let hash = &spec.component.record.hash;
            self.reusable
                .put(hash, Idle { store, guest }, self.config.num_cpus)
                .map(|idle| idle.store)
        } else {
            Some(store)
        };
        let mut holds = rejected.map(|mut store| std::mem::take(&mut store.data_mut().holds));
        self.release_resources(&held);
        self.finish(spec, result);
        if let Some(holds) = &mut holds {
            holds.release_all(&self.objects);
        }
    }

    /// Runs the task, then tears its instance down, gives its resources
    /// back and seals its results, in that order: whoever sees the results
    /// sees the resources free, and no more instances live than the
    /// resources allow. What the instance held is kept until the results
    /// are sealed (a result may contain refs to objects it put).
    /// `allocation` is emptied.
    fn execute_function(
        self: &Arc<Self>,
        mut spec: TaskSpec,
        allocation: &mut Allocation,
    ) -> Result<(), TaskError> {
        if spec.cancel.load(std::sync::atomic::Ordering::Acquire) {
            return Err(TaskError::new(
                ErrorKind::Cancelled,
                spec.label.clone(),
                spec.id,
                "cancelled before it ran",
            ));
        }
        let args = self.resolve_args(&mut spec)?;
        let TaskKind::Function { name } = &spec.kind else {
            return Err(system_error(&spec, "not a remote-function task"));
        };
        if let Some(entry) = &spec.entry {
            entry.started();
        }
        self.pin_worker(allocation);
        let reuse = spec
            .component
            .record
            .function(name)
            .is_some_and(|f| f.declared.reuse);
        if reuse {
            return self.execute_reused(&spec, name, args, allocation);
        }
        let (mut store, guest) = self.instantiate(&spec, true, allocation.clone())?;
        store.data_mut().hold_all(payload_refs(&args));
        let result = guest
            .wray_runtime_app()
            .call_invoke(&mut *store, name, &args);
        let result = finish_call(result, store.data(), spec.returns.len());
        self.end_task(&spec, store, guest, false, result, allocation);
        Ok(())
    }

    /// Runs a reusable function's task on a cached instance of its component
    /// (or a new one, after its `init`), calling `reinit` first on a reused
    /// one; keeps the instance for the next task unless it trapped.
    fn execute_reused(
        self: &Arc<Self>,
        spec: &TaskSpec,
        name: &str,
        args: Vec<types::Arg>,
        allocation: &mut Allocation,
    ) -> Result<(), TaskError> {
        let hash = &spec.component.record.hash;
        let (mut store, guest, fresh) = match self.reusable.take(hash) {
            Some(idle) => (idle.store, idle.guest, false),
            None => {
                let (store, guest) = self.instantiate(spec, true, allocation.clone())?;
                (store, guest, true)
            }
        };
        let state = store.data_mut();
        state.begin(CurrentTask::for_spec(spec, true, allocation.clone()));
        state.hold_all(payload_refs(&args));
        rearm_limits(&mut store);
        let app = guest.wray_runtime_app();
        let (hook, prepared) = if fresh {
            ("init", app.call_init(&mut *store))
        } else {
            ("reinit", app.call_reinit(&mut *store))
        };
        let result = match prepared {
            Ok(Ok(())) => {
                let r = app.call_invoke(&mut *store, name, &args);
                (r.is_ok(), finish_call(r, store.data(), spec.returns.len()))
            }
            Ok(Err(message)) => (
                false,
                Err(TaskError::new(
                    ErrorKind::Application,
                    spec.label.clone(),
                    spec.id,
                    format!("the component's {hook} hook failed: {message}"),
                )),
            ),
            Err(trap) => (false, Err(trap_to_task_error(&trap, store.data()))),
        };
        let (ran, result) = result;
        let keep = ran && !store.data().current.is_cancelled();
        self.end_task(spec, store, guest, keep, result, allocation);
        Ok(())
    }

    /// Pins the calling worker thread to `allocation`'s cores when the node
    /// pins (it has fewer CPUs than the machine); all allowed cores for a
    /// task without CPUs.
    pub(crate) fn pin_worker(&self, allocation: &Allocation) {
        if let Some(allowed) = &self.pin {
            let cores: Vec<u32> = allocation.cpu.iter().map(|g| g.id).collect();
            crate::resources::pin::pin_current_thread(&cores, allowed);
        }
    }

    /// A fresh instance of `spec`'s component, in a store running `spec` as
    /// its current task (giving its CPUs back while blocked or not).
    pub(crate) fn instantiate(
        self: &Arc<Self>,
        spec: &TaskSpec,
        holds_cpu: bool,
        allocation: Allocation,
    ) -> Result<(TaskStore, Guest), TaskError> {
        let current = CurrentTask::for_spec(spec, holds_cpu, allocation);
        let mut store = self.new_store(spec.component.clone(), current, &[]);
        let guest = spec
            .component
            .pre
            .instantiate(&mut *store)
            .map_err(|e| system_error(spec, &format!("cannot instantiate: {e:#}")))?;
        Ok((store, guest))
    }

    /// A store for `current`, with its memory limit, time limit, fuel and
    /// cancel flag armed.
    pub(crate) fn new_store(
        self: &Arc<Self>,
        component: Arc<LoadedComponent>,
        current: CurrentTask,
        args: &[String],
    ) -> TaskStore {
        let mut store = Store::new(
            &self.engine,
            TaskState::new(self.clone(), component, current, args),
        );
        store.limiter(|s| &mut s.limiter);
        // Lists are lifted into host memory; bounding them per call is
        // pointless when a guest's memory is bounded by its memory limit.
        store.set_hostcall_fuel(usize::MAX);
        arm_limits(&mut store);
        TaskStore(store)
    }

    /// The task's arguments with object arguments replaced by their values;
    /// an argument holding an error fails the task with that error,
    /// unchanged (errors propagate through dependencies).
    pub(crate) fn resolve_args(&self, spec: &mut TaskSpec) -> Result<Vec<types::Arg>, TaskError> {
        std::mem::take(&mut spec.args)
            .into_iter()
            .map(|arg| match arg {
                types::Arg::Value(p) => Ok(types::Arg::Value(p)),
                types::Arg::Object(id) => match self.objects.get(&id.into()).as_deref() {
                    Some(object @ Object::Value { .. }) => {
                        Ok(types::Arg::Value(to_payload(object)))
                    }
                    Some(Object::Error(e)) => Err(e.clone()),
                    None => Err(system_error(
                        spec,
                        &format!(
                            "argument {} is not sealed",
                            wray_control_plane::ObjectId::from(id)
                        ),
                    )),
                },
            })
            .collect()
    }
}

/// The WIT payload of a sealed value (the bytes are copied).
pub(crate) fn to_payload(object: &Object) -> types::Payload {
    match object {
        Object::Value { codec, data, refs } => types::Payload {
            codec: (*codec).into(),
            data: data.bytes().to_vec(),
            refs: refs.iter().map(|r| (*r).into()).collect(),
        },
        Object::Error(_) => types::Payload {
            codec: types::Codec::Raw,
            data: Vec::new(),
            refs: Vec::new(),
        },
    }
}

/// The refs inside the value arguments of a task about to run.
pub(crate) fn payload_refs(args: &[types::Arg]) -> impl Iterator<Item = ObjectId> + '_ {
    args.iter()
        .flat_map(|a| match a {
            types::Arg::Value(p) => p.refs.as_slice(),
            types::Arg::Object(_) => &[],
        })
        .map(|r| ObjectId::from(*r))
}

/// A sealed value from a WIT payload (large ones go to the arena).
pub(crate) fn from_payload(store: &ObjectStore, p: types::Payload) -> Object {
    let refs = p.refs.into_iter().map(Into::into).collect();
    store.value(p.codec.into(), &p.data, refs)
}

/// Arms `store` for its current task: an epoch callback that, every tick
/// (10 ms), stops the guest when its task was cancelled or its deadline
/// passed; and its fuel, when the node meters fuel.
pub(crate) fn arm_limits(store: &mut Store<TaskState>) {
    store.epoch_deadline_callback(|mut ctx| {
        let state = ctx.data_mut();
        if state.current.is_cancelled() {
            wasmtime::bail!("task cancelled");
        }
        if state.current.deadline.is_some_and(|d| Instant::now() >= d) {
            state.timed_out = true;
            wasmtime::bail!("task time limit exceeded");
        }
        Ok(wasmtime::UpdateDeadline::Continue(1))
    });
    rearm_limits(store);
}

/// Re-arms `store` for a new current task (a reused or actor instance,
/// whose callback from [`arm_limits`] reads the task's deadline and cancel
/// flag as they are now): the next epoch tick checks, and fuel is refilled
/// to the task's limit.
pub(crate) fn rearm_limits(store: &mut Store<TaskState>) {
    if store.data().rt.config.fuel_metering {
        let fuel = store.data().current.limits.fuel.unwrap_or(u64::MAX);
        // Cannot fail: fuel is enabled.
        let _ = store.set_fuel(fuel);
    }
    store.set_epoch_deadline(1);
}

/// The outcome of a guest call that returns `result<list<payload>,
/// task-error>`: `expected` objects, or the task's error.
pub(crate) fn finish_call(
    result: wasmtime::Result<Result<Vec<types::Payload>, types::TaskError>>,
    state: &TaskState,
    expected: usize,
) -> Result<Vec<Object>, TaskError> {
    match result {
        Ok(Ok(payloads)) if payloads.len() == expected => Ok(payloads
            .into_iter()
            .map(|p| from_payload(&state.rt.objects, p))
            .collect()),
        Ok(Ok(payloads)) => Err(TaskError::new(
            ErrorKind::InvalidArgument,
            state.current.label.clone(),
            state.current.id,
            format!(
                "returned {} values, declared num_returns = {expected}",
                payloads.len()
            ),
        )),
        Ok(Err(e)) => Err(e.into()),
        Err(trap) => Err(trap_to_task_error(&trap, state)),
    }
}

pub(crate) fn system_error(spec: &TaskSpec, message: &str) -> TaskError {
    TaskError::new(ErrorKind::System, spec.label.clone(), spec.id, message)
}
