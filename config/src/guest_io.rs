//! What a guest sees of the host: the directories it may read
//! ([`Preopen`], `--dir`) and where its stdout and stderr go ([`Stdio`];
//! [`MemoryOutput`] for a test's or an embedder's in-memory capture).

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::task_output::TaskOutputs;

/// A host directory a guest may read, and where the guest sees it
/// (`--dir HOST[::GUEST]`). Guests get read-only access, nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preopen {
    /// Directory on the host.
    pub host: PathBuf,
    /// Path inside the guest.
    pub guest: String,
}

impl Preopen {
    /// Parses `HOST[::GUEST]`; without `::GUEST` the guest sees the host path.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when either side is empty.
    pub fn parse(spec: &str) -> Result<Self> {
        let (host, guest) = match spec.split_once("::") {
            Some((h, g)) => (h, g),
            None => (spec, spec),
        };
        if host.is_empty() || guest.is_empty() {
            return Err(Error::InvalidConfig(format!(
                "--dir `{spec}`: expected HOST[::GUEST] with neither side empty"
            )));
        }
        Ok(Self {
            host: PathBuf::from(host),
            guest: guest.to_string(),
        })
    }
}

/// Where guests' stdout and stderr go.
#[derive(Debug, Clone, Default)]
pub enum Stdio {
    /// The node process's own stdout/stderr.
    #[default]
    Inherit,
    /// In-memory buffers (tests read them back).
    Memory {
        /// Guests' stdout.
        stdout: MemoryOutput,
        /// Guests' stderr.
        stderr: MemoryOutput,
    },
    /// Each task's output, bounded, into the node's log and a table of
    /// recent outputs ([`TaskOutputs`], read by task id): what a
    /// long-running node (`wray start`) keeps.
    Capture(Arc<TaskOutputs>),
}

impl Stdio {
    /// In-memory buffers of up to 64 MiB each.
    pub fn memory() -> Self {
        Stdio::Memory {
            stdout: MemoryOutput::new(64 << 20),
            stderr: MemoryOutput::new(64 << 20),
        }
    }

    /// Each task's output kept in a table of its own, with the default
    /// bounds ([`crate::task_output`]).
    pub fn capture() -> Self {
        Stdio::Capture(Arc::new(TaskOutputs::default()))
    }

    /// What guests wrote to stdout so far (empty for [`Stdio::Inherit`]
    /// and [`Stdio::Capture`]).
    pub fn stdout_text(&self) -> String {
        match self {
            Stdio::Inherit | Stdio::Capture(_) => String::new(),
            Stdio::Memory { stdout, .. } => String::from_utf8_lossy(&stdout.contents()).into(),
        }
    }
}

/// An in-memory output stream of at most `capacity` bytes, shared by its
/// clones: what [`Stdio::Memory`] collects (the executor writes guests'
/// bytes into it; tests read them back). Bytes past the capacity are
/// dropped, not an error: a guest's write never fails on it.
#[derive(Debug, Clone)]
pub struct MemoryOutput {
    bytes: Arc<parking_lot::Mutex<Vec<u8>>>,
    capacity: usize,
}

impl MemoryOutput {
    /// An empty stream holding at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: Arc::default(),
            capacity,
        }
    }

    /// Appends what of `bytes` fits under the capacity.
    pub fn write(&self, bytes: &[u8]) {
        let mut held = self.bytes.lock();
        let room = self.capacity.saturating_sub(held.len());
        held.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// A copy of everything written so far.
    pub fn contents(&self) -> Vec<u8> {
        self.bytes.lock().clone()
    }
}
