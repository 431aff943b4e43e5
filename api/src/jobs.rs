//! The Jobs API's bodies (`POST /v1/jobs`, `GET /v1/jobs[/{id}]`, stop,
//! delete, logs).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/jobs`'s body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitJob {
    /// The deployed component whose `main` runs.
    pub component: String,
    /// `main`'s arguments.
    #[serde(default)]
    pub args: Vec<String>,
}

/// Where a job is (Ray's `JobStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    /// Submitted; its driver has not started.
    Pending,
    /// Its driver runs.
    Running,
    /// `main` returned `Ok`.
    Succeeded,
    /// `main` returned an error, trapped, or ran past a limit.
    Failed,
    /// Stopped before it ended.
    Stopped,
}

/// One job (`GET /v1/jobs/{id}`; `POST /v1/jobs` answers it with 201).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobInfo {
    /// The job's id (16 hex digits).
    pub job_id: String,
    /// The component whose `main` it runs.
    pub component: String,
    /// `main`'s arguments.
    pub args: Vec<String>,
    /// Where it is.
    pub status: JobStatus,
    /// Why it failed or was stopped.
    #[serde(default)]
    pub message: Option<String>,
    /// When it was submitted, in seconds since the Unix epoch.
    pub submitted_at: f64,
    /// When its driver started (seconds since the Unix epoch).
    #[serde(default)]
    pub start_time: Option<f64>,
    /// When it ended (seconds since the Unix epoch).
    #[serde(default)]
    pub end_time: Option<f64>,
    /// The driver's task id.
    pub driver_task: String,
    /// The node running it.
    pub node_id: String,
    /// Bytes its guests wrote to stdout and stderr (dropped ones included).
    pub log_bytes: u64,
}

/// `POST /v1/jobs/{id}/stop`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct JobStopped {
    /// Whether it was running (false: it had ended already).
    pub stopped: bool,
}

/// `DELETE /v1/jobs/{id}`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct JobDeleted {
    /// The job forgotten.
    pub deleted: String,
}

/// `GET /v1/jobs/{id}/logs`'s query.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobLogsQuery {
    /// Start at this byte of everything the job wrote (dropped bytes
    /// count); `Wray-Log-Next` answers where to go on from.
    pub offset: Option<u64>,
    /// Stream what is kept, then each write, until the job ends.
    pub follow: Option<bool>,
}
