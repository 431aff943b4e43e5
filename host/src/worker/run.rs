//! Running one remote-function task in a fresh instance.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::Store;

use crate::bindings::{types, Guest};
use wray_control_plane::ObjectId;

use crate::component::LoadedComponent;
use crate::engine::ticks;
use crate::error::{ErrorKind, TaskError};
use crate::object_store::{Object, ObjectStore};
use crate::runtime::Runtime;
use crate::task::{PendingTask, TaskKind, TaskSpec};
use crate::worker::classify::trap_to_task_error;
use crate::worker::mapping::TaskStore;
use crate::worker::state::{CurrentTask, TaskState};

impl Runtime {
    /// Runs a remote-function task that holds a CPU slot, seals its results,
    /// and gives the slot back.
    pub(crate) fn run_function_task(self: Arc<Self>, task: Arc<PendingTask>) {
        if let Some(mut spec) = task.take() {
            let holds = std::mem::take(&mut spec.holds);
            let returns = spec.returns.clone();
            if let Err(e) = self.execute_function(spec) {
                self.complete(&returns, Err(e));
            }
            self.release_all(&holds);
        }
        self.release_cpu();
    }

    /// Runs the task and seals its results while its instance still holds
    /// what it made (a result may contain refs to objects it put).
    fn execute_function(self: &Arc<Self>, mut spec: TaskSpec) -> Result<(), TaskError> {
        let args = self.resolve_args(&mut spec)?;
        let TaskKind::Function { name } = &spec.kind else {
            return Err(system_error(&spec, "not a remote-function task"));
        };
        let (mut store, guest) = self.instantiate(&spec, true)?;
        store.data_mut().hold_all(payload_refs(&args));
        let result = guest
            .wray_runtime_app()
            .call_invoke(&mut *store, name, &args);
        let result = finish_call(result, store.data(), spec.returns.len());
        self.complete(&spec.returns, result);
        Ok(())
    }

    /// A fresh instance of `spec`'s component, in a store running `spec` as
    /// its current task (holding a CPU slot or not).
    pub(crate) fn instantiate(
        self: &Arc<Self>,
        spec: &TaskSpec,
        holds_cpu: bool,
    ) -> Result<(TaskStore, Guest), TaskError> {
        let current = CurrentTask::new(spec.id, spec.label.clone(), holds_cpu, self.deadline());
        let mut store = self.new_store(spec.component.clone(), current, &[]);
        let guest = spec
            .component
            .pre
            .instantiate(&mut *store)
            .map_err(|e| system_error(spec, &format!("cannot instantiate: {e:#}")))?;
        Ok((store, guest))
    }

    /// When a task starting now must end.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.config
            .task_timeout
            .and_then(|t| Instant::now().checked_add(t))
    }

    /// A store for `current`, with the memory limit and the epoch deadline
    /// armed.
    pub(crate) fn new_store(
        self: &Arc<Self>,
        component: Arc<LoadedComponent>,
        current: CurrentTask,
        args: &[String],
    ) -> TaskStore {
        let deadline = current.deadline;
        let mut store = Store::new(
            &self.engine,
            TaskState::new(self.clone(), component, current, args),
        );
        store.limiter(|s| &mut s.limiter);
        // Lists are lifted into host memory; bounding them per call is
        // pointless when a guest's memory is bounded by its memory limit.
        store.set_hostcall_fuel(usize::MAX);
        arm_deadline(&mut store, deadline);
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

/// Arms `store`'s epoch deadline (`None`: effectively never).
pub(crate) fn arm_deadline(store: &mut Store<TaskState>, deadline: Option<Instant>) {
    let ticks = deadline.map_or(u64::MAX / 2, |d| {
        ticks(d.saturating_duration_since(Instant::now()))
    });
    store.set_epoch_deadline(ticks);
    store.epoch_deadline_trap();
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
