//! Host errors, and the task errors that fill error objects.

use std::fmt;

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
    /// The component has no driver entry point.
    #[error("component `{0}` has no `#[wray::main]` entry point")]
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
    /// The control plane failed.
    #[error(transparent)]
    ControlPlane(#[from] wray_control_plane::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a task failed: the WIT `error-kind`, defined once for the host
/// and the guest SDK (`wray-abi`).
pub use wray_abi::ErrorKind;

/// A failed task: what its error object holds, and what `get` on it (or on
/// anything depending on it) returns, unchanged.
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
}

impl TaskError {
    /// A new task error.
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
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        wray_abi::write_task_error(f, &self.task, &self.function, self.kind, &self.message)
    }
}

impl std::error::Error for TaskError {}
