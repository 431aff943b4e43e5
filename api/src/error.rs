//! The body of every 4xx and 5xx answer:
//! `{"error": {"code", "message", "task"?}}`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::codes::{ErrorCode, UnknownCode};

/// An error answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong, for a program (`code`) and a person (`message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// A short machine-readable code: `bad_json`, `unknown_component`,
    /// `task_failed`, `busy`, ...: one of `ErrorCode`'s, kept a string so
    /// that a client reads a newer node's new code (`error_code()` reads
    /// it as an `ErrorCode`).
    #[schema(value_type = ErrorCode)]
    pub code: String,
    /// What was wrong, with which input, and what to do.
    pub message: String,
    /// When a task failed (`code` is `task_failed`): its error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskFailure>,
}

impl ErrorDetail {
    /// The detail of an error of `code` saying `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorDetail {
            code: code.as_str().to_string(),
            message: message.into(),
            task: None,
        }
    }

    /// Its code as this API names it.
    ///
    /// # Errors
    /// [`UnknownCode`] for a code this release does not know (a newer
    /// node's).
    pub fn error_code(&self) -> Result<ErrorCode, UnknownCode> {
        self.code.parse()
    }
}

/// A failed task's error and what it passes on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskFailure {
    /// `invalid-argument`, `not-found`, `timeout`, `cancelled`,
    /// `infeasible`, `application`, `panic`, `trap`, `out-of-memory`,
    /// `actor-died` or `system`.
    pub kind: String,
    /// The function that failed.
    pub function: String,
    /// The failed task's id (hex).
    pub task: String,
    /// The error's message.
    pub message: String,
    /// The errors it passes on, nearest first; the last is the root.
    #[serde(default)]
    pub causes: Vec<TaskCause>,
}

/// One error of a cause chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskCause {
    /// Its kind, as [`TaskFailure::kind`].
    pub kind: String,
    /// The function that raised it.
    pub function: String,
    /// The task that raised it (hex).
    pub task: String,
    /// Its message.
    pub message: String,
}
