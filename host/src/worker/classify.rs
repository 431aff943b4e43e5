//! Turning a trap (or a failed instantiation) into the task's error.

use wasmtime::Trap;

use crate::error::{ErrorKind, TaskError};
use crate::worker::state::TaskState;

/// The task error for `error`, raised while `state`'s task ran: a cancelled
/// task is `cancelled`, a refused memory growth `out-of-memory`, a passed
/// deadline or spent fuel `timeout` (each naming the limit and what was
/// used), an abort after the SDK's panic hook `panic`, anything else
/// `trap`.
pub(crate) fn trap_to_task_error(error: &wasmtime::Error, state: &TaskState) -> TaskError {
    let current = &state.current;
    let make =
        |kind, message: String| TaskError::new(kind, current.label.clone(), current.id, message);
    if current.is_cancelled() {
        return make(ErrorKind::Cancelled, "cancelled while running".to_string());
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
    let trap = error.downcast_ref::<Trap>().copied();
    if state.timed_out || trap == Some(Trap::Interrupt) {
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
