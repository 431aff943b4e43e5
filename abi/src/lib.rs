//! wray-abi: what the wray host (`wray-host`) and its guest SDKs (`wray`)
//! agree on beyond the types of the `wray:runtime` WIT world, defined once
//! for both sides.
//!
//! - [`ErrorKind`]: why a task failed, the WIT `error-kind` as a Rust enum
//!   with its names (each side converts from and to its own WIT bindings).
//! - [`INLINE_MAX`]: the size from which an object lives in shared memory
//!   rather than on the host's heap, which is also the size from which a
//!   guest maps an object rather than copy it.
//!
//! `no_std` and without dependencies, so that it builds for every guest
//! target.

#![no_std]

use core::fmt;

/// Why a task failed: the WIT `error-kind`, one variant per case, in the
/// WIT's order. Adding a kind is a WIT change: both sides' conversions
/// must name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The function returned an error value.
    Application,
    /// The guest panicked (the message is the panic message).
    Panic,
    /// The guest trapped (unreachable, out-of-bounds access, stack
    /// overflow, ...).
    Trap,
    /// The guest tried to grow its memory past the task's memory limit.
    OutOfMemory,
    /// The task ran past its time limit, or a `get`/`wait` timed out.
    Timeout,
    /// A value could not be decoded, or an argument had the wrong shape.
    InvalidArgument,
    /// The named function, actor class, method or component does not
    /// exist.
    NotFound,
    /// The actor a call was sent to is dead.
    ActorDied,
    /// The host failed to run the task (instantiation, resources, limits
    /// of the node).
    System,
    /// No node can ever satisfy the task's resource request.
    Infeasible,
    /// The task was cancelled, or its actor killed.
    Cancelled,
}

impl ErrorKind {
    /// Every kind, in the WIT's order.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Application,
        ErrorKind::Panic,
        ErrorKind::Trap,
        ErrorKind::OutOfMemory,
        ErrorKind::Timeout,
        ErrorKind::InvalidArgument,
        ErrorKind::NotFound,
        ErrorKind::ActorDied,
        ErrorKind::System,
        ErrorKind::Infeasible,
        ErrorKind::Cancelled,
    ];

    /// The kind's name in the WIT, e.g. `out-of-memory`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Application => "application",
            ErrorKind::Panic => "panic",
            ErrorKind::Trap => "trap",
            ErrorKind::OutOfMemory => "out-of-memory",
            ErrorKind::Timeout => "timeout",
            ErrorKind::InvalidArgument => "invalid-argument",
            ErrorKind::NotFound => "not-found",
            ErrorKind::ActorDied => "actor-died",
            ErrorKind::System => "system",
            ErrorKind::Infeasible => "infeasible",
            ErrorKind::Cancelled => "cancelled",
        }
    }

    /// The kind named `name` in the WIT (`out-of-memory`), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Writes a failed task's error as both sides show it: `task <id>
/// (<function>) failed: <kind>: <message>` (the host's `TaskError` and the
/// SDK's `Error` display alike, so a message reads the same in a guest's
/// log and in `wray errors`). An error of a `get` call (function `get`: a
/// timeout, say) reads `get in task <id> failed: ..`, since the task it
/// was called in has not failed.
///
/// # Errors
/// Those of `f`.
pub fn write_task_error(
    f: &mut fmt::Formatter<'_>,
    task: &dyn fmt::Display,
    function: &str,
    kind: ErrorKind,
    message: &str,
) -> fmt::Result {
    if function == "get" {
        // A `get` that timed out or found nothing: the call failed, in a
        // task that goes on.
        return write!(f, "get in task {task} failed: {kind}: {message}");
    }
    write!(f, "task {task} ({function}) failed: {kind}: {message}")
}

/// Bytes from which a value is a *large object*: the host's object store
/// keeps smaller values on its heap (within an inline budget) and puts
/// values of this size or more in its shared-memory arena (or a spill
/// file); a guest SDK `put`s values of this size or more through the
/// mapping imports (written in place) and maps rather than copies them in
/// `get` and as task arguments. 100 KiB: Ray's
/// `max_direct_call_object_size`, the size under which Ray inlines an
/// object in the task's reply instead of storing it in plasma.
pub const INLINE_MAX: usize = 100 << 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_distinct_name_that_reads_back() {
        for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(ErrorKind::from_name(k.as_str()), Some(k));
            assert!(ErrorKind::ALL[..i].iter().all(|o| o.as_str() != k.as_str()));
        }
        assert_eq!(ErrorKind::from_name("oom"), None);
    }
}
