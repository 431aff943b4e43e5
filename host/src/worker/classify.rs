//! Turning a trap (or a failed instantiation) into the task's error.

use wasmtime::Trap;

use crate::error::{ErrorKind, TaskError};
use crate::worker::state::TaskState;

/// The task error for `error`, raised while `state`'s task ran: a refused
/// memory growth is `out-of-memory`, a passed deadline `timeout`, an abort
/// after the SDK's panic hook `panic`, anything else `trap`.
pub(crate) fn trap_to_task_error(error: &wasmtime::Error, state: &TaskState) -> TaskError {
    let current = &state.current;
    let make =
        |kind, message: String| TaskError::new(kind, current.label.clone(), current.id, message);
    if let Some(desired) = state.limiter.refused {
        return make(
            ErrorKind::OutOfMemory,
            format!(
                "memory limit of {} bytes exceeded: the guest tried to grow its memory to {desired} bytes",
                state.limiter.limit
            ),
        );
    }
    let trap = error.downcast_ref::<Trap>().copied();
    if state.timed_out || trap == Some(Trap::Interrupt) {
        let limit = state.rt.config.task_timeout.map_or_else(
            || "none".to_string(),
            |t| format!("{:.3} s", t.as_secs_f64()),
        );
        return make(
            ErrorKind::Timeout,
            format!("task time limit exceeded (limit {limit})"),
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
