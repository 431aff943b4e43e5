//! Host errors, and the task errors that fill error objects.

use std::fmt;
use std::sync::Arc;

use crate::bounds::MAX_CAUSES;

use wray_control_plane::TaskId;

/// What can go wrong when starting a node, deploying a component or running
/// a driver. (Failures *inside* tasks are [`TaskError`] values, not these.)
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The node's configuration is unusable.
    #[error("invalid node configuration: {0}")]
    InvalidConfig(String),
    /// wasmtime could not be set up with this configuration.
    #[error("failed to create the wasm engine: {0}")]
    Engine(String),
    /// The bytes are not a valid component, or it does not implement the
    /// `wray:runtime/guest` world.
    #[error("component `{name}` is not usable: {reason}")]
    Component {
        /// Name the component was deployed under.
        name: String,
        /// What wasmtime or `describe` said.
        reason: String,
    },
    /// No component is deployed under this name on this node.
    #[error("component `{0}` is not deployed on this node")]
    NotDeployed(String),
    /// The component is deployed, but not in the version asked for
    /// (`name@version`): never deployed, or pruned (the function table
    /// keeps the last [`MAX_VERSIONS_KEPT`](wray_control_plane::MAX_VERSIONS_KEPT)).
    #[error("component `{name}` has no version {version}: the versions kept are {}", versions_text(.kept))]
    VersionNotFound {
        /// The component's name.
        name: String,
        /// The version asked for.
        version: u64,
        /// The versions the function table keeps, oldest first.
        kept: Vec<u64>,
    },
    /// The component has no driver entry point (it exports no `driver`).
    #[error(
        "component `{0}` has no `main`: it exports no `driver` interface (a `main` is made \
         with `#[wray::main]` in Rust, `@wray.main` in Python or `main(..)` in JavaScript; \
         a C component has none)"
    )]
    NoMain(String),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A bound of the session was reached (objects held, puts made).
    #[error("{0}")]
    Limit(String),
    /// A deploy past one of the node's bounds on what it holds of
    /// deployed components (names, versions, bytes, compiled code) or its
    /// compile slots.
    #[error(transparent)]
    DeployLimit(#[from] DeployLimit),
    /// The control plane failed.
    #[error(transparent)]
    ControlPlane(#[from] wray_control_plane::Error),
    /// A blocking call (a `_blocking` or plain synchronous method of
    /// `Node` or `Session` that waits) was made from inside a tokio
    /// runtime, where it would block a thread that serves other tasks:
    /// await its async form there instead (docs/architecture.md, "Runtime
    /// model"). Names the call.
    #[error(
        "`{0}` blocks its thread: called inside a tokio runtime, await its async form instead"
    )]
    BlockingInRuntime(&'static str),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which of the node's bounds on deployed components a deploy met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeployBound {
    /// Names deployed at once (`--max-components`).
    Names,
    /// Versions of one name kept loaded, all in use (`--max-versions`).
    Versions,
    /// Bytes of component files and their rows (`--max-component-mib`).
    ComponentBytes,
    /// Bytes of compiled code (`--max-compiled-mib`).
    CompiledBytes,
    /// Compiles at once: every compile slot stayed busy (half the CPUs).
    CompileSlots,
}

impl DeployBound {
    /// The flag that sets it (`wray start` and `wray run`).
    pub fn flag(self) -> &'static str {
        match self {
            DeployBound::Names => "--max-components",
            DeployBound::Versions => "--max-versions",
            DeployBound::ComponentBytes => "--max-component-mib",
            DeployBound::CompiledBytes => "--max-compiled-mib",
            DeployBound::CompileSlots => "--num-cpus",
        }
    }

    /// Whether it bounds bytes held (HTTP answers 507 Insufficient
    /// Storage), rather than a count (409 Conflict) or the compile slots
    /// (503, retry later).
    pub fn is_bytes(self) -> bool {
        matches!(
            self,
            DeployBound::ComponentBytes | DeployBound::CompiledBytes
        )
    }

    /// Whether it counts names or versions (HTTP 409 Conflict).
    pub fn is_count(self) -> bool {
        matches!(self, DeployBound::Names | DeployBound::Versions)
    }
}

/// A deploy refused because the node holds as much of deployed components
/// as it may ([`DeployBound`]): the message names the bound, its value and
/// flag, what is in use and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot deploy `{name}`: {reason}")]
pub struct DeployLimit {
    /// The name it was to be deployed (or loaded) under.
    pub name: String,
    /// The bound it met.
    pub bound: DeployBound,
    /// The bound's value (a count, or bytes).
    pub limit: u64,
    /// What was in use and what to do, in words.
    pub reason: String,
}

/// `1, 2, 3` (or `none`).
fn versions_text(kept: &[u64]) -> String {
    if kept.is_empty() {
        return "none".to_string();
    }
    let numbers: Vec<String> = kept.iter().map(u64::to_string).collect();
    numbers.join(", ")
}

/// Why a task failed: the WIT `error-kind`, defined once for the host
/// and the guest SDK (`wray-abi`).
pub use wray_abi::ErrorKind;

/// A failed task: what its error object holds, and what `get` on it (or on
/// anything depending on it) returns, unchanged.
///
/// `cause` is the error this one passes on (a task that failed with an
/// error its `get` returned), shared with that error's own chain, so a
/// chain through `n` tasks holds each error once. At most
/// [`MAX_CAUSES`](crate::bounds::MAX_CAUSES) deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskError {
    /// Why it failed.
    pub kind: ErrorKind,
    /// The function (`name`) or actor method (`Class.method`) that failed.
    pub function: String,
    /// The task that failed.
    pub task: TaskId,
    /// The guest's (or the host's) message.
    pub message: String,
    /// The error it passes on; `None` for a root.
    pub cause: Option<Arc<TaskError>>,
}

impl TaskError {
    /// A new task error without a cause.
    pub fn new(
        kind: ErrorKind,
        function: impl Into<String>,
        task: TaskId,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            function: function.into(),
            task,
            message: message.into(),
            cause: None,
        }
    }

    /// This error passing `cause` on: its chain becomes `cause` and
    /// `cause`'s own, cut to [`MAX_CAUSES`](crate::bounds::MAX_CAUSES)
    /// entries (the nearest kept).
    #[must_use]
    pub fn caused_by(mut self, cause: TaskError) -> Self {
        let depth = 1 + cause.causes().count();
        let cause = if depth > MAX_CAUSES {
            cause.cut_chain(MAX_CAUSES - 1)
        } else {
            cause
        };
        self.cause = Some(Arc::new(cause));
        self
    }

    /// The errors this one passes on, nearest first (the last is the root).
    pub fn causes(&self) -> impl Iterator<Item = &TaskError> {
        std::iter::successors(self.cause.as_deref(), |e| e.cause.as_deref())
    }

    /// The error that started the chain: the last cause, or this error.
    pub fn root(&self) -> &TaskError {
        self.causes().last().unwrap_or(self)
    }

    /// A copy keeping `keep` causes (the nearest).
    fn cut_chain(&self, keep: usize) -> TaskError {
        let mut top = TaskError {
            cause: None,
            ..self.clone()
        };
        if keep > 0 {
            if let Some(next) = &self.cause {
                top.cause = Some(Arc::new(next.cut_chain(keep - 1)));
            }
        }
        top
    }
}

/// `message` cut to at most `max` bytes (at a character boundary), with a
/// note of how many were cut.
pub fn cut_message(mut message: String, max: usize) -> String {
    if message.len() <= max {
        return message;
    }
    let total = message.len();
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.truncate(end);
    message.push_str(&format!(" ... ({} bytes cut)", total - end));
    message
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        wray_abi::write_task_error(f, &self.task, &self.function, self.kind, &self.message)
    }
}

impl std::error::Error for TaskError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(n: u64) -> TaskError {
        TaskError::new(
            ErrorKind::Application,
            format!("f{n}"),
            TaskId::from_parts(0, n),
            "m",
        )
    }

    #[test]
    fn a_chain_names_the_root_last_and_is_cut_to_its_bound() {
        let mut e = err(0);
        for n in 1..40 {
            e = err(n).caused_by(e);
        }
        let causes: Vec<&str> = e.causes().map(|c| c.function.as_str()).collect();
        assert_eq!(causes.len(), MAX_CAUSES);
        assert_eq!(causes[0], "f38");
        assert_eq!(e.root().function, format!("f{}", 39 - MAX_CAUSES));
        assert_eq!(err(7).root().function, "f7");
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary_saying_how_much() {
        assert_eq!(cut_message("short".into(), 16), "short");
        let cut = cut_message("é".repeat(10), 5);
        assert_eq!(cut, "éé ... (16 bytes cut)");
    }
}
