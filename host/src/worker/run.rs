//! Running one remote-function task in a fresh (or reused) instance, under
//! its limits.
//!
//! A task runs on a worker thread as one future (`Runtime::block_on`): the
//! instance is made and called with wasmtime's async API, each guest call
//! guarded by [`StopWhen`] so that a time limit, a cancel or the node's
//! shutdown stops it even inside a blocking host call. A panic anywhere in
//! the host while the task runs (a host bug) is caught at the worker
//! boundary: the task fails with a `system` error and the node goes on.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use wasmtime::Store;
use wray_control_plane::{JobId, ObjectId};

use crate::bindings::{types, Guest};
use crate::component::LoadedComponent;
use crate::error::{ErrorKind, TaskError};
use crate::object_store::{Codec, Object, Refs, StoreFull};
use crate::resources::Allocation;
use crate::runtime::Runtime;
use crate::task::{PendingTask, TaskKind, TaskSpec};
use crate::worker::classify::{guest_error, trap_to_task_error};
use crate::worker::guard::{arm_limits, rearm_limits, StopWhen};
use crate::worker::mapping::TaskStore;
use crate::worker::reuse::Idle;
use crate::worker::state::{CurrentTask, TaskState};

impl Runtime {
    /// Runs a remote-function task holding `allocation`, seals its results,
    /// and gives the resources back. Never panics: a host bug fails the task.
    pub(crate) fn run_function_task(
        self: Arc<Self>,
        task: Arc<PendingTask>,
        allocation: Allocation,
    ) {
        let mut allocation = allocation;
        if let Some(mut spec) = task.take() {
            let holds = std::mem::take(&mut spec.holds);
            let (returns, entry) = (spec.returns.clone(), spec.entry.clone());
            let (label, id) = (spec.label.clone(), spec.id);
            let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                self.block_on(self.execute_function(spec, &mut allocation))
            }));
            let failed = match ran {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(panic) => Some(host_bug(&label, id, &*panic)),
            };
            if let Some(e) = failed {
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
    /// contain refs to objects it put).
    fn end_task(
        self: &Arc<Self>,
        spec: &TaskSpec,
        mut store: TaskStore,
        guest: Guest,
        keep: bool,
        result: Result<Vec<Object>, TaskError>,
    ) {
        let held = std::mem::take(&mut store.data_mut().current.allocation);
        let rejected = if keep {
            let key = (spec.id.job(), spec.component.record.hash.clone());
            self.reusable
                .put(key, Idle { store, guest }, self.config.num_cpus)
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
    /// back and seals its results (see [`Runtime::end_task`]). The
    /// allocation moves into the task's store (`allocation` is left empty)
    /// once there is one.
    async fn execute_function(
        self: &Arc<Self>,
        mut spec: TaskSpec,
        allocation: &mut Allocation,
    ) -> Result<(), TaskError> {
        if spec.cancel.is_cancelled() {
            return Err(TaskError::new(
                ErrorKind::Cancelled,
                spec.label.clone(),
                spec.id,
                "cancelled before it ran",
            ));
        }
        if self.config.fail_point.as_deref() == Some(spec.label.as_str()) {
            panic!("fail point `{}` reached", spec.label);
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
            return self.execute_reused(&spec, name, args, allocation).await;
        }
        let current = CurrentTask::for_spec(&spec, true, std::mem::take(allocation));
        let (mut store, guest) = self
            .instantiate(&spec.component, spec.id.job(), current)
            .await?;
        let stop = StopWhen::of(store.data());
        let result = match store.data_mut().hold_all(payload_refs(&args)) {
            Err(trap) => Err(trap),
            Ok(()) => {
                stop.guard(
                    guest
                        .wray_runtime_app()
                        .call_invoke(&mut *store, name, &args),
                )
                .await
            }
        };
        let result = finish_call(result, store.data(), spec.returns.len());
        self.end_task(&spec, store, guest, false, result);
        Ok(())
    }

    /// Runs a reusable function's task on a cached instance of its component
    /// in its job (or a new one, after its `init`), calling `reinit` first
    /// on a reused one; keeps the instance for the next task of the job
    /// unless it trapped. Instances are never shared between jobs: what one
    /// task leaves in an instance is seen only by later tasks of its job.
    async fn execute_reused(
        self: &Arc<Self>,
        spec: &TaskSpec,
        name: &str,
        args: Vec<types::Arg>,
        allocation: &mut Allocation,
    ) -> Result<(), TaskError> {
        let key = (spec.id.job(), spec.component.record.hash.clone());
        let current = CurrentTask::for_spec(spec, true, std::mem::take(allocation));
        let (mut store, guest, fresh) = match self.reusable.take(&key) {
            Some(idle) => (idle.store, idle.guest, false),
            None => {
                let (store, guest) = self
                    .instantiate(&spec.component, spec.id.job(), current.clone())
                    .await?;
                (store, guest, true)
            }
        };
        store.data_mut().begin(current);
        rearm_limits(&mut store);
        let stop = StopWhen::of(store.data());
        let app = guest.wray_runtime_app();
        let (hook, prepared) = match store.data_mut().hold_all(payload_refs(&args)) {
            Err(trap) => ("hold", Err(trap)),
            Ok(()) if fresh => ("init", stop.guard(app.call_init(&mut *store)).await),
            Ok(()) => ("reinit", stop.guard(app.call_reinit(&mut *store)).await),
        };
        let (ran, result) = match prepared {
            Ok(Ok(())) => {
                let r = stop.guard(app.call_invoke(&mut *store, name, &args)).await;
                (r.is_ok(), finish_call(r, store.data(), spec.returns.len()))
            }
            Ok(Err(message)) => (
                false,
                Err(TaskError::new(
                    ErrorKind::Application,
                    spec.label.clone(),
                    spec.id,
                    format!(
                        "the component's {hook} hook failed: {}",
                        crate::bounds::truncate(message, crate::bounds::MAX_LOG_LINE)
                    ),
                )),
            ),
            Err(trap) => (false, Err(trap_to_task_error(&trap, store.data()))),
        };
        let keep = ran && !store.data().current.is_cancelled() && !store.is_tainted();
        self.end_task(spec, store, guest, keep, result);
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

    /// A fresh instance of `component` in job `job`, in a store running
    /// `current` as its current task. When every instance slot of the node
    /// is taken (blocked tasks keep theirs: a fork bomb takes them all),
    /// the task fails at once with a clear error rather than wait: waiting
    /// tasks would hold their CPUs and slow the bomb's collapse. A failed
    /// instantiation ends the task (its store, and with it `current`'s
    /// allocation, is dropped: see [`TaskState`]).
    pub(crate) async fn instantiate(
        self: &Arc<Self>,
        component: &Arc<LoadedComponent>,
        job: JobId,
        current: CurrentTask,
    ) -> Result<(TaskStore, Guest), TaskError> {
        let mut store = self.new_store(component.clone(), job, current, &[]);
        let stop = StopWhen::of(store.data());
        match stop
            .guard(component.pre.instantiate_async(&mut *store))
            .await
        {
            Ok(guest) => Ok((store, guest)),
            Err(e) if e.is::<crate::worker::classify::Stopped>() => {
                Err(trap_to_task_error(&e, store.data()))
            }
            Err(e) => {
                let state = store.data();
                let hint = if e.is::<wasmtime::PoolConcurrencyLimitError>() {
                    " (every instance slot of the node is taken: tasks blocked in `get` \
                     keep theirs; see max_instances)"
                } else {
                    ""
                };
                Err(TaskError::new(
                    ErrorKind::System,
                    state.current.label.clone(),
                    state.current.id,
                    format!("cannot instantiate: {e:#}{hint}"),
                ))
            }
        }
    }

    /// A store for `current` in `job`, with its memory limit, time limit,
    /// fuel and cancel token armed.
    pub(crate) fn new_store(
        self: &Arc<Self>,
        component: Arc<LoadedComponent>,
        job: JobId,
        current: CurrentTask,
        args: &[String],
    ) -> TaskStore {
        let mut store = Store::new(
            &self.engine,
            TaskState::new(self.clone(), component, job, current, args),
        );
        store.limiter(|s| &mut s.limiter);
        arm_limits(&mut store);
        TaskStore::new(store)
    }

    /// The task's arguments with object arguments replaced by their values,
    /// except rkyv objects in a file (shared memory or spilled): those stay
    /// `object` arguments, which the guest maps into its memory and decodes
    /// there (the one copy; the SDK's `ArgReader`) rather than receive a
    /// host copy of the bytes that wasmtime copies again into its memory.
    /// The instance holds them while it runs ([`payload_refs`]). An
    /// argument holding an error fails the task with that error, unchanged
    /// (errors propagate through dependencies).
    pub(crate) fn resolve_args(&self, spec: &mut TaskSpec) -> Result<Vec<types::Arg>, TaskError> {
        std::mem::take(&mut spec.args)
            .into_iter()
            .map(|arg| match arg {
                types::Arg::Value(p) => Ok(types::Arg::Value(p)),
                types::Arg::Object(id) => match self.objects.get(&id.into()).as_deref() {
                    Some(Object::Value {
                        codec: Codec::Rkyv,
                        data,
                        ..
                    }) if data.file_range().is_some() => Ok(types::Arg::Object(id)),
                    Some(object @ Object::Value { .. }) => {
                        Ok(types::Arg::Value(to_payload(object)))
                    }
                    Some(Object::Error(e)) => Err(e.clone()),
                    None => Err(system_error(
                        spec,
                        &format!("argument {} is not sealed", ObjectId::from(id)),
                    )),
                },
            })
            .collect()
    }
}

/// The `system` error of a task during whose run the host panicked (a host
/// bug): the panic's message, so the bug can be reported.
pub(crate) fn host_bug(
    label: &str,
    task: wray_control_plane::TaskId,
    panic: &(dyn std::any::Any + Send),
) -> TaskError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    tracing::error!(%task, function = label, "host bug while running a task: {message}");
    TaskError::new(
        ErrorKind::System,
        label,
        task,
        format!("the host failed while running the task (a bug in wray): {message}"),
    )
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

/// The objects the arguments of a task about to run name: the refs inside
/// its values, and the object arguments left for the guest to map (see
/// [`Runtime::resolve_args`]).
pub(crate) fn payload_refs(args: &[types::Arg]) -> impl Iterator<Item = ObjectId> + '_ {
    args.iter()
        .flat_map(|a| match a {
            types::Arg::Value(p) => p.refs.as_slice(),
            types::Arg::Object(id) => std::slice::from_ref(id),
        })
        .map(|r| ObjectId::from(*r))
}

/// A sealed value (or the error saying why it could not be stored) from a
/// payload the guest of `state` hands over (its refs checked by
/// [`guest_refs`]).
pub(crate) fn from_payload(state: &TaskState, p: types::Payload) -> Object {
    match guest_refs(state, &p.refs) {
        Ok(refs) => store_value(state, p.codec.into(), &p.data, refs),
        Err(e) => Object::Error(e),
    }
}

/// The refs of a value the guest of `state` hands over, each once and
/// charged to the store's inline budget; every one must be an id the guest
/// may name and not an object it is still making (see
/// [`TaskState::forbidden_ref`]).
///
/// # Errors
/// The error object for the value: [`ref_error`] naming the first ref it
/// may not name, or `system` when the store has no room for the refs.
pub(crate) fn guest_refs(state: &TaskState, refs: &[types::ObjectId]) -> Result<Refs, TaskError> {
    let refs = state
        .rt
        .objects
        .refs(refs.iter().map(|r| ObjectId::from(*r)).collect())
        .map_err(|full| system(state, full))?;
    match state.forbidden_ref(refs.iter()) {
        Some(bad) => Err(ref_error(state, bad)),
        None => Ok(refs),
    }
}

/// `bytes` stored as a value holding `refs`, or the `system` error naming
/// why the store has no room.
pub(crate) fn store_value(
    state: &TaskState,
    codec: crate::object_store::Codec,
    bytes: &[u8],
    refs: Refs,
) -> Object {
    match state.rt.objects.value(codec, bytes, refs) {
        Ok(object) => object,
        Err(full) => Object::Error(system(state, full)),
    }
}

/// The `system` error of the running task for a full store.
fn system(state: &TaskState, full: StoreFull) -> TaskError {
    TaskError::new(
        ErrorKind::System,
        state.current.label.clone(),
        state.current.id,
        full.to_string(),
    )
}

/// The error of a value naming object `bad`, which its task may not name:
/// `not-found`, worded as for an object that does not exist whether it
/// exists in another job or not at all; `invalid-argument` for an object
/// the task is still making itself.
pub(crate) fn ref_error(state: &TaskState, bad: ObjectId) -> TaskError {
    let (kind, message) = if state.visible(&bad) && state.waits_on_itself(&bad) {
        (
            ErrorKind::InvalidArgument,
            format!("a value may not contain object {bad}: the task is still making it"),
        )
    } else {
        (
            ErrorKind::NotFound,
            format!(
                "a value refers to object {bad}, which does not exist on node {}",
                state.rt.node_id
            ),
        )
    };
    TaskError::new(kind, state.current.label.clone(), state.current.id, message)
}

/// The outcome of a guest call that returns `result<list<payload>,
/// task-error>`: `expected` objects, or the task's error.
pub(crate) fn finish_call(
    result: wasmtime::Result<Result<Vec<types::Payload>, types::TaskError>>,
    state: &TaskState,
    expected: usize,
) -> Result<Vec<Object>, TaskError> {
    match result {
        Ok(Ok(payloads)) if payloads.len() == expected => {
            let objects: Vec<Object> = payloads
                .into_iter()
                .map(|p| from_payload(state, p))
                .collect();
            // A value the task may not return fails the whole task.
            match objects.iter().find_map(|o| match o {
                Object::Error(e) => Some(e.clone()),
                Object::Value { .. } => None,
            }) {
                Some(e) => Err(e),
                None => Ok(objects),
            }
        }
        Ok(Ok(payloads)) => Err(TaskError::new(
            ErrorKind::InvalidArgument,
            state.current.label.clone(),
            state.current.id,
            format!(
                "returned {} values, declared num_returns = {expected}",
                payloads.len()
            ),
        )),
        Ok(Err(e)) => Err(guest_error(e, state)),
        Err(trap) => Err(trap_to_task_error(&trap, state)),
    }
}

pub(crate) fn system_error(spec: &TaskSpec, message: &str) -> TaskError {
    TaskError::new(ErrorKind::System, spec.label.clone(), spec.id, message)
}
