//! Values crossing the guest boundary: sealed objects to WIT payloads and
//! back (refs checked against what the instance may name), a guest call's
//! results to objects, and the task errors of host failures.

use wray_control_plane::ObjectId;

use super::bindings::types;
use super::classify::{guest_error, trap_to_task_error};
use super::state::TaskState;
use crate::error::{ErrorKind, TaskError};
use crate::objects::{Object, Refs, StoreFull};
use crate::scheduler::Task;

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
/// `WasmExecutor::resolve_args`).
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
        .node
        .objects()
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
    codec: crate::objects::Codec,
    bytes: &[u8],
    refs: Refs,
) -> Object {
    match state.node.objects().value(codec, bytes, refs) {
        Ok(object) => object,
        Err(full) => Object::Error(system(state, full)),
    }
}

/// The `system` error of the running task for a full store.
pub(crate) fn store_full(state: &TaskState, full: StoreFull) -> TaskError {
    system(state, full)
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
                state.node.node_id()
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

pub(crate) fn system_error(spec: &Task, message: &str) -> TaskError {
    TaskError::new(ErrorKind::System, spec.label.clone(), spec.id, message)
}
