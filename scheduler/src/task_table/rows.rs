//! What snapshots show of a task: [`TaskRow`], its [`SpanRow`]s and its
//! [`TaskStatus`].

use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use wray_control_plane::TaskId;

use crate::error::TaskError;

/// Failed tasks' errors kept for `errors()`.
pub(crate) const MAX_ERRORS: usize = 10_000;

/// A task that ended with an error, as `errors()` keeps it.
#[derive(Debug, Clone)]
pub struct FailedTask {
    /// When it ended.
    pub time: SystemTime,
    /// The task.
    pub task: TaskId,
    /// Its function (`name`, `component/name`) or method (`Class.method`).
    pub function: Arc<str>,
    /// Its error: its own (`error.task == task`), or the error object of
    /// an argument, passed on unchanged.
    pub error: TaskError,
    /// The node it ran on, when another node ran it (that node keeps the
    /// error too).
    pub node: Option<Arc<str>>,
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    /// Waiting for its object arguments (Ray's `PENDING_ARGS_AVAIL`).
    PendingArgs,
    /// Ready, waiting for resources (Ray's `PENDING_NODE_ASSIGNMENT`).
    Queued,
    /// Running in an instance.
    Running,
    /// Running, blocked in `get`/`wait`.
    Blocked,
    /// Finished with its values.
    Finished,
    /// Finished with an error.
    Failed,
    /// Cancelled before or while it ran.
    Cancelled,
}

impl TaskStatus {
    /// Its name as the state API writes it (`PENDING_ARGS`, `RUNNING`, ..).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::PendingArgs => "PENDING_ARGS",
            TaskStatus::Queued => "QUEUED",
            TaskStatus::Running => "RUNNING",
            TaskStatus::Blocked => "BLOCKED",
            TaskStatus::Finished => "FINISHED",
            TaskStatus::Failed => "FAILED",
            TaskStatus::Cancelled => "CANCELLED",
        }
    }

    /// Whether the task has ended (finished, failed or cancelled).
    pub fn is_done(self) -> bool {
        matches!(
            self,
            TaskStatus::Finished | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// One task as a snapshot shows it ([`TaskTable::tasks`](super::TaskTable::tasks), the session's
/// `tasks-*.jsonl`, the timeline): ids as hex, times in nanoseconds since
/// the node started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRow {
    /// Its id (32 hex digits).
    pub task_id: String,
    /// The task that submitted it (`None` for a driver).
    #[serde(default)]
    pub parent_task_id: Option<String>,
    /// Function name, `Class.method` or `Class.new`.
    pub function: String,
    /// Where it is.
    pub state: TaskStatus,
    /// The worker thread it ran on (its name).
    #[serde(default)]
    pub worker: Option<String>,
    /// The node it was sent to, when another node runs it (that node
    /// lists it with its worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Its resource request, in Ray's notation (`{CPU: 1}`).
    pub resources: String,
    /// When it was submitted.
    pub submitted_ns: u64,
    /// When its arguments existed.
    #[serde(default)]
    pub ready_ns: Option<u64>,
    /// When it started running.
    #[serde(default)]
    pub started_ns: Option<u64>,
    /// When it ended.
    #[serde(default)]
    pub ended_ns: Option<u64>,
    /// Its blocked intervals and profile spans, as far as they are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<SpanRow>,
    /// Spans it opened past [`MAX_SPANS_PER_TASK`] (counted, not kept).
    ///
    /// [`MAX_SPANS_PER_TASK`]: crate::bounds::MAX_SPANS_PER_TASK
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_spans: u64,
    /// Its error message, if it failed (`None` also when the error was
    /// dropped from the bounded error list).
    #[serde(default)]
    pub error: Option<String>,
}

/// A span of a [`TaskRow`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanRow {
    /// What it was (`get`, or a profile span's name).
    pub name: String,
    /// When it began, in nanoseconds since the node started.
    pub start_ns: u64,
    /// When it ended (`None`: still open).
    #[serde(default)]
    pub end_ns: Option<u64>,
}

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::TaskStatus;

    #[test]
    fn a_status_names_itself_as_serde_writes_it() {
        use TaskStatus::*;
        for s in [
            PendingArgs,
            Queued,
            Running,
            Blocked,
            Finished,
            Failed,
            Cancelled,
        ] {
            let written = serde_json::to_value(s).ok();
            assert_eq!(written.as_ref().and_then(|w| w.as_str()), Some(s.as_str()));
        }
    }
}
