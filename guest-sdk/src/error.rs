//! The error a task, a `get` or a `wait` can end with.

use core::fmt;

use crate::bindings::types as wit;
use crate::ids::TaskId;

/// A result whose error defaults to [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Why a task failed: the WIT `error-kind`, defined once for the SDK and
/// the host (`wray-abi`).
pub use wray_abi::ErrorKind;

/// A failed task, as returned by [`get`](crate::get) on its result or on
/// anything that depends on it: the original error travels unchanged through
/// dependencies, so [`task`](Error::task) and [`function`](Error::function)
/// name the task that failed first.
///
/// A remote function or method that returns an `Err` holding an `Error`
/// (`get(&child)?`), or an error whose [`source`](std::error::Error::source)
/// chain holds one, fails with an `application` error of its own whose
/// [`causes`](Error::causes) start with that error, as Ray's `RayTaskError`
/// keeps its cause: [`root`](Error::root) is the error that started it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    function: String,
    task: TaskId,
    message: String,
    causes: Vec<Error>,
}

impl Error {
    /// Creates an error of `kind` raised by `function` (a remote function's
    /// name or `Class.method`) in task `task`.
    pub fn new(
        kind: ErrorKind,
        function: impl Into<String>,
        task: TaskId,
        message: impl Into<String>,
    ) -> Self {
        Error {
            kind,
            function: function.into(),
            task,
            message: message.into(),
            causes: Vec::new(),
        }
    }

    /// This error passing `cause` on: its causes become `cause` and
    /// `cause`'s own causes, nearest first.
    #[must_use]
    pub fn caused_by(mut self, mut cause: Error) -> Self {
        let rest = core::mem::take(&mut cause.causes);
        self.causes = core::iter::once(cause).chain(rest).collect();
        self
    }

    /// The errors this one passes on, nearest first (each without causes of
    /// its own); empty for a root. The node keeps at most 16.
    pub fn causes(&self) -> &[Error] {
        &self.causes
    }

    /// The error that started the chain: the last of [`causes`](Error::causes),
    /// or this error.
    pub fn root(&self) -> &Error {
        self.causes.last().unwrap_or(self)
    }

    /// Why the task failed.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The remote function (`name`) or actor method (`Class.method`) that failed.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// The id of the task that failed.
    pub fn task(&self) -> TaskId {
        self.task
    }

    /// The guest's message (or the host's, for traps and limits).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        wray_abi::write_task_error(f, &self.task, &self.function, self.kind, &self.message)
    }
}

impl std::error::Error for Error {}

impl From<wit::ErrorKind> for ErrorKind {
    fn from(kind: wit::ErrorKind) -> Self {
        match kind {
            wit::ErrorKind::Application => ErrorKind::Application,
            wit::ErrorKind::Panic => ErrorKind::Panic,
            wit::ErrorKind::Trap => ErrorKind::Trap,
            wit::ErrorKind::OutOfMemory => ErrorKind::OutOfMemory,
            wit::ErrorKind::Timeout => ErrorKind::Timeout,
            wit::ErrorKind::InvalidArgument => ErrorKind::InvalidArgument,
            wit::ErrorKind::NotFound => ErrorKind::NotFound,
            wit::ErrorKind::ActorDied => ErrorKind::ActorDied,
            wit::ErrorKind::System => ErrorKind::System,
            wit::ErrorKind::Infeasible => ErrorKind::Infeasible,
            wit::ErrorKind::Cancelled => ErrorKind::Cancelled,
        }
    }
}

impl From<ErrorKind> for wit::ErrorKind {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Application => wit::ErrorKind::Application,
            ErrorKind::Panic => wit::ErrorKind::Panic,
            ErrorKind::Trap => wit::ErrorKind::Trap,
            ErrorKind::OutOfMemory => wit::ErrorKind::OutOfMemory,
            ErrorKind::Timeout => wit::ErrorKind::Timeout,
            ErrorKind::InvalidArgument => wit::ErrorKind::InvalidArgument,
            ErrorKind::NotFound => wit::ErrorKind::NotFound,
            ErrorKind::ActorDied => wit::ErrorKind::ActorDied,
            ErrorKind::System => wit::ErrorKind::System,
            ErrorKind::Infeasible => wit::ErrorKind::Infeasible,
            ErrorKind::Cancelled => wit::ErrorKind::Cancelled,
        }
    }
}

impl From<wit::TaskError> for Error {
    fn from(e: wit::TaskError) -> Self {
        Error {
            kind: e.kind.into(),
            function: e.function,
            task: e.task.into(),
            message: e.message,
            causes: e.causes.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<wit::ErrorCause> for Error {
    fn from(e: wit::ErrorCause) -> Self {
        Error::new(e.kind.into(), e.function, e.task.into(), e.message)
    }
}

impl From<Error> for wit::ErrorCause {
    fn from(e: Error) -> Self {
        wit::ErrorCause {
            kind: e.kind.into(),
            function: e.function,
            task: e.task.into(),
            message: e.message,
        }
    }
}

impl From<Error> for wit::TaskError {
    fn from(e: Error) -> Self {
        wit::TaskError {
            kind: e.kind.into(),
            function: e.function,
            task: e.task.into(),
            message: e.message,
            causes: e.causes.into_iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_task_function_kind_and_message() {
        let e = Error::new(
            ErrorKind::OutOfMemory,
            "Counter.add",
            TaskId { hi: 0, lo: 2 },
            "limit 64 MiB",
        );
        assert_eq!(
            e.to_string(),
            "task 00000000000000000000000000000002 (Counter.add) failed: out-of-memory: limit 64 MiB"
        );
    }

    #[test]
    fn a_chain_keeps_the_nearest_cause_first_and_the_root_last() {
        let task = |lo| TaskId { hi: 0, lo };
        let root = Error::new(ErrorKind::Timeout, "leaf", task(1), "slow");
        let mid = Error::new(ErrorKind::Application, "mid", task(2), "m").caused_by(root.clone());
        let top = Error::new(ErrorKind::Application, "top", task(3), "t").caused_by(mid);
        let names: Vec<&str> = top.causes().iter().map(Error::function).collect();
        assert_eq!(names, ["mid", "leaf"]);
        assert_eq!(top.root(), &root);
        assert_eq!(root.root(), &root);
        assert!(top.causes()[0].causes().is_empty());
    }
}
