//! Turning a trap (or a failed instantiation, or a stop from outside) into
//! the task's error, and a guest's own error into one the host vouches for.

use wasmtime::Trap;

use crate::bindings::types;
use crate::bounds::MAX_ERROR_MESSAGE;
use crate::error::{cut_message, ErrorKind, TaskError};
use crate::state::{NodeRefusal, TaskState};

/// Why the host stopped a guest call from outside: the error a stopped call
/// ends with (from the epoch callback while wasm runs, or from dropping the
/// call while it waits in a host call: `executor/src/guard.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    /// The task's time limit passed.
    #[error("task time limit exceeded")]
    TimeLimit,
    /// The task was cancelled, or its actor killed.
    #[error("task cancelled")]
    Cancelled,
    /// The node is shutting down.
    #[error("the node is shutting down")]
    Shutdown,
}

/// The task error of a failed instantiation for `state`'s task: a memory
/// limit below what the component needs to start is `out-of-memory`
/// (naming both sizes), a stop is what [`trap_to_task_error`] says, and
/// anything else `system` (`hint` appended: why the node may refuse).
pub fn instantiate_error(error: &wasmtime::Error, state: &TaskState, hint: &str) -> TaskError {
    let current = &state.current;
    if let Some(desired) = state.limiter.refused {
        return TaskError::new(
            ErrorKind::OutOfMemory,
            current.label.clone(),
            current.id,
            format!(
                "memory limit of {} bytes is below the {desired} bytes the component needs \
                 to start (its initial memory): raise max_memory",
                state.limiter.limit
            ),
        );
    }
    if let Some(refusal) = state.limiter.node_refused {
        return TaskError::new(
            ErrorKind::OutOfMemory,
            current.label.clone(),
            current.id,
            budget_spent(&refusal, "to start, its memory needs"),
        );
    }
    if error.is::<Stopped>() {
        return trap_to_task_error(error, state);
    }
    TaskError::new(
        ErrorKind::System,
        current.label.clone(),
        current.id,
        format!("cannot instantiate: {error:#}{hint}"),
    )
}

/// The task error for `error`, raised while `state`'s task ran: a cancelled
/// task is `cancelled`, a refused memory growth `out-of-memory`, a passed
/// deadline or spent fuel `timeout` (each naming the limit and what was
/// used), an abort after the SDK's panic hook `panic`, anything else
/// `trap`.
pub fn trap_to_task_error(error: &wasmtime::Error, state: &TaskState) -> TaskError {
    let current = &state.current;
    let make =
        |kind, message: String| TaskError::new(kind, current.label.clone(), current.id, message);
    let stopped = error.downcast_ref::<Stopped>().copied();
    if current.is_cancelled() || stopped == Some(Stopped::Cancelled) {
        return make(ErrorKind::Cancelled, "cancelled while running".to_string());
    }
    if stopped == Some(Stopped::Shutdown) {
        return make(
            ErrorKind::Cancelled,
            "stopped: the node is shutting down".to_string(),
        );
    }
    if let Some(desired) = state.limiter.refused {
        return make(
            ErrorKind::OutOfMemory,
            format!(
                "memory limit of {} bytes exceeded: the guest tried to grow its memory to {desired} bytes",
                state.limiter.limit
            ),
        );
    }
    if let Some(refusal) = state.limiter.node_refused {
        return make(
            ErrorKind::OutOfMemory,
            budget_spent(&refusal, "the guest tried to grow its memory to"),
        );
    }
    let trap = error.downcast_ref::<Trap>().copied();
    if stopped == Some(Stopped::TimeLimit) || trap == Some(Trap::Interrupt) {
        let limit = current.limits.timeout.map_or_else(
            || "none".to_string(),
            |t| format!("{:.3} s", t.as_secs_f64()),
        );
        let used = current.started.elapsed().as_secs_f64();
        return make(
            ErrorKind::Timeout,
            format!("time limit of {limit} exceeded: the task ran for {used:.3} s"),
        );
    }
    if trap == Some(Trap::OutOfFuel) {
        let limit = current.limits.fuel.unwrap_or(u64::MAX);
        return make(
            ErrorKind::Timeout,
            format!("fuel limit of {limit} units exceeded: the task burned all {limit}"),
        );
    }
    if let Some(message) = &state.panic_message {
        return make(ErrorKind::Panic, message.clone());
    }
    let message = match trap {
        Some(t) => t.to_string(),
        None => format!("{error:#}"),
    };
    make(ErrorKind::Trap, message)
}

/// The message of a growth the node's guest memory budget refused: the
/// budget and its flag, what the node's instances held, what was asked.
fn budget_spent(refusal: &NodeRefusal, asked: &str) -> String {
    format!(
        "the node's guest memory budget of {} bytes (--guest-memory {} MiB) has no room: \
         its instances hold {} bytes, and {asked} {} bytes ({} more); end actors or tasks \
         that hold memory, or raise --guest-memory",
        refusal.limit,
        refusal.limit >> 20,
        refusal.used,
        refusal.desired,
        refusal.grow_by
    )
}

/// Whether a guest may report `kind` for its own failure: the others
/// (limits, traps, cancellation, the host's own failures) only the host
/// observes.
fn guest_may_claim(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Application | ErrorKind::InvalidArgument | ErrorKind::NotFound
    )
}

/// The error of a task whose guest returned `claimed`: the task and
/// function are the running task's, whatever the guest wrote; the kind is
/// the guest's only where a guest can know it (`application`,
/// `invalid-argument`, `not-found`), else `application` with the claimed
/// kind named in the message; the message is cut to
/// [`MAX_ERROR_MESSAGE`] bytes. The cause chain is kept only when the
/// claimed first cause is an error `get` returned to this task (same task,
/// function and kind), and is then that error's own record, not the
/// guest's words.
pub(crate) fn guest_error(claimed: types::TaskError, state: &TaskState) -> TaskError {
    let current = &state.current;
    let kind = ErrorKind::from(claimed.kind);
    let (kind, message) = if guest_may_claim(kind) {
        (kind, claimed.message)
    } else {
        (
            ErrorKind::Application,
            format!("{kind}: {}", claimed.message),
        )
    };
    let message = cut_message(message, MAX_ERROR_MESSAGE);
    let error = TaskError::new(kind, current.label.clone(), current.id, message);
    let seen = claimed.causes.first().and_then(|first| {
        let (task, kind) = (first.task.into(), ErrorKind::from(first.kind));
        state.seen_error(|e| e.task == task && e.kind == kind && e.function == first.function)
    });
    match seen {
        Some(cause) => error.caused_by(cause.clone()),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_guest_observable_kinds_may_be_claimed() {
        assert!(guest_may_claim(ErrorKind::Application));
        assert!(guest_may_claim(ErrorKind::InvalidArgument));
        for kind in [
            ErrorKind::OutOfMemory,
            ErrorKind::Timeout,
            ErrorKind::Cancelled,
            ErrorKind::System,
            ErrorKind::ActorDied,
            ErrorKind::Trap,
            ErrorKind::Panic,
            ErrorKind::Infeasible,
        ] {
            assert!(!guest_may_claim(kind), "{kind}");
        }
    }
}
