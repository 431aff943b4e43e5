//! Facts about the running task, and its log.

use crate::bindings::{runtime, types as wit};
use crate::ids::{ActorId, TaskId};

/// Severity of a log line written with [`log`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal progress.
    Info,
    /// Something looks wrong but the task goes on.
    Warn,
    /// Something failed.
    Error,
}

impl From<LogLevel> for wit::LogLevel {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Trace => wit::LogLevel::Trace,
            LogLevel::Debug => wit::LogLevel::Debug,
            LogLevel::Info => wit::LogLevel::Info,
            LogLevel::Warn => wit::LogLevel::Warn,
            LogLevel::Error => wit::LogLevel::Error,
        }
    }
}

/// The id of the running task (the driver's id inside `main`).
pub fn task_id() -> TaskId {
    runtime::task_id().into()
}

/// The id of the actor whose constructor or method is running (Ray's
/// `ray.get_runtime_context().get_actor_id()`): the same on every node and
/// after a restart; `None` in a remote function's task and in a driver.
/// For a typed handle to the running actor, see
/// [`ActorHandle::current`](crate::ActorHandle::current).
pub fn current_actor_id() -> Option<ActorId> {
    runtime::current_actor().map(Into::into)
}

/// The id of the node running the task.
pub fn node_id() -> String {
    runtime::node_id()
}

/// Writes `message` to the host's log, attributed to the running task and
/// its function.
pub fn log(level: LogLevel, message: &str) {
    runtime::log(level.into(), message);
}

/// A task error raised by this guest in the running task.
pub(crate) fn task_error(
    kind: crate::ErrorKind,
    function: &str,
    message: impl Into<String>,
) -> wit::TaskError {
    wit::TaskError {
        kind: kind.into(),
        function: function.to_string(),
        task: runtime::task_id(),
        message: message.into(),
        causes: Vec::new(),
    }
}
