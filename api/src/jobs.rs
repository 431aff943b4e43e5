//! The Jobs API's bodies (`POST /v1/jobs`, `GET /v1/jobs[/{id}]`, stop,
//! delete, logs).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The most bytes a job's arguments may have in all (64 KiB): they are
/// kept with the job and listed back.
pub const MAX_JOB_ARGS_BYTES: usize = 64 << 10;

/// The most arguments a job may have (each also counts toward
/// [`MAX_JOB_ARGS_BYTES`]).
pub const MAX_JOB_ARGS: usize = 4096;

/// The most directories one job may ask for.
pub const MAX_JOB_DIRS: usize = 16;

/// The longest host or guest path of a job's directory, in bytes (Linux's
/// `PATH_MAX`).
pub const MAX_JOB_PATH_BYTES: usize = 4096;

/// The most environment variables one job may set.
pub const MAX_JOB_ENV_VARS: usize = 128;

/// The most bytes a job's environment variables may have in all (names
/// and values): 64 KiB.
pub const MAX_JOB_ENV_BYTES: usize = 64 << 10;

/// The most metadata entries one job may carry.
pub const MAX_JOB_METADATA: usize = 64;

/// The most bytes a job's metadata may have in all (keys and values):
/// 16 KiB. It is kept with the job and listed back.
pub const MAX_JOB_METADATA_BYTES: usize = 16 << 10;

/// The most custom resources a job's driver may name (the node's bound on
/// custom resources, `wray_host::bounds::MAX_CUSTOM_RESOURCES`).
pub const MAX_JOB_RESOURCES: usize = 256;

/// The readers of a job's lists and maps, each stopping at its bound
/// ([`crate::bounded`]).
mod read {
    use std::collections::BTreeMap;

    use serde::Deserializer;

    use super::{
        JobDir, MAX_JOB_ARGS, MAX_JOB_DIRS, MAX_JOB_ENV_VARS, MAX_JOB_METADATA, MAX_JOB_RESOURCES,
    };
    use crate::bounded::{list, map};

    /// `main`'s arguments: at most [`MAX_JOB_ARGS`].
    pub(super) fn args<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        list(d, "`args`", "arguments", MAX_JOB_ARGS)
    }

    /// A job's directories: at most [`MAX_JOB_DIRS`].
    pub(super) fn dirs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<JobDir>, D::Error> {
        list(d, "`dirs`", "directories", MAX_JOB_DIRS)
    }

    /// A job's environment variables: at most [`MAX_JOB_ENV_VARS`].
    pub(super) fn env<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        map(d, "`env`", "variables", MAX_JOB_ENV_VARS)
    }

    /// A job's metadata: at most [`MAX_JOB_METADATA`] entries.
    pub(super) fn metadata<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        map(d, "`metadata`", "entries", MAX_JOB_METADATA)
    }

    /// The driver's custom resources: at most [`MAX_JOB_RESOURCES`].
    pub(super) fn resources<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, f64>, D::Error> {
        map(d, "`resources`", "resources", MAX_JOB_RESOURCES)
    }
}

/// `POST /v1/jobs`'s body. Only `component` is required; a field it does
/// not know is refused. The answer is the job's [`JobInfo`], which repeats
/// the options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitJob {
    /// The deployed component whose `main` runs: `name` (its current
    /// version) or `name@version` (a version the function table keeps).
    pub component: String,
    /// `main`'s arguments (at most 4,096, 64 KiB in all).
    #[serde(default, deserialize_with = "read::args")]
    pub args: Vec<String>,
    /// Host directories the job's guests read, read-only, each inside one
    /// the node allows (`wray start --allow-dir`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "read::dirs"
    )]
    pub dirs: Vec<JobDir>,
    /// Environment variables of the job's guests.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "read::env"
    )]
    pub env: BTreeMap<String, String>,
    /// CPUs the driver waits for and holds (fractional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_cpus: Option<f64>,
    /// GPUs the driver waits for and holds (fractional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_gpus: Option<f64>,
    /// Custom resources the driver waits for and holds.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "read::resources"
    )]
    pub resources: BTreeMap<String, f64>,
    /// Seconds the whole job may take from its submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Labels kept with the job and shown back.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "read::metadata"
    )]
    pub metadata: BTreeMap<String, String>,
    /// A package uploaded first (`POST /v1/packages`) that every guest of
    /// the job sees read-only, on every node its tasks reach (Ray's
    /// `runtime_env.working_dir`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<JobWorkingDir>,
}

impl SubmitJob {
    /// The component, the arguments and the options, apart.
    pub fn into_parts(self) -> (String, Vec<String>, JobOptions) {
        let options = JobOptions {
            dirs: self.dirs,
            env: self.env,
            num_cpus: self.num_cpus,
            num_gpus: self.num_gpus,
            resources: self.resources,
            timeout: self.timeout,
            metadata: self.metadata,
            working_dir: self.working_dir,
        };
        (self.component, self.args, options)
    }
}

/// A host directory a job reads, read-only, and where its guests see it
/// (`wray job submit --dir HOST[::GUEST]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobDir {
    /// An absolute path on the node's host, inside a directory the node
    /// allows (`--allow-dir`).
    pub host: String,
    /// Where the job's guests see it.
    pub guest: String,
}

/// The most bytes of a package's id (`sha256:` and 64 hex digits).
pub const PACKAGE_ID_BYTES: usize = 71;

/// The guest path a job's working directory is mounted at unless the job
/// names one: `.`, the guests' current directory (relative paths resolve
/// in it), as Ray makes `working_dir` its workers' current directory.
pub const DEFAULT_WORKING_DIR_GUEST: &str = ".";

/// A job's working directory (`wray job submit --working-dir DIR`): a
/// package the node keeps (`POST /v1/packages` stores the packed
/// directory), mounted read-only at `guest` for every guest of the job,
/// on every node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobWorkingDir {
    /// The package's id, `sha256:` and the 64 hex digits of its bytes'
    /// SHA-256 (as `POST /v1/packages` answered it).
    pub package: String,
    /// Where the job's guests see it (default `.`: their current
    /// directory).
    #[serde(default = "default_guest")]
    pub guest: String,
}

fn default_guest() -> String {
    DEFAULT_WORKING_DIR_GUEST.to_string()
}

/// `POST /v1/packages`' answer (201 when stored now, 200 when the node
/// had it), and `GET /v1/packages/{id}`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PackageInfo {
    /// Its id: `sha256:` and the 64 hex digits of its bytes' SHA-256.
    pub package: String,
    /// Bytes of the package (a tar archive).
    pub bytes: u64,
    /// Bytes of the files it unpacks to.
    pub unpacked_bytes: u64,
    /// Files and directories it unpacks to.
    pub entries: u64,
}

/// What a job asks for beyond its component and arguments (every field
/// may be left out), as Ray's Jobs API takes it: directories and
/// environment variables (its `runtime_env`), resources for the driver
/// (its entrypoint resources), a time limit and metadata. Shown back in
/// the job's info. The node checks it against every bound before the job
/// is admitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobOptions {
    /// Directories the job's driver, tasks and actors read, read-only (at
    /// most [`MAX_JOB_DIRS`]).
    #[serde(default, deserialize_with = "read::dirs")]
    pub dirs: Vec<JobDir>,
    /// Environment variables of the job's guests (at most
    /// [`MAX_JOB_ENV_VARS`], [`MAX_JOB_ENV_BYTES`] in all).
    #[serde(default, deserialize_with = "read::env")]
    pub env: BTreeMap<String, String>,
    /// CPUs the driver holds while it runs (fractional; given back while
    /// it waits in `get`, as a task's are); none by default.
    #[serde(default)]
    pub num_cpus: Option<f64>,
    /// GPUs the driver holds while it runs (fractional).
    #[serde(default)]
    pub num_gpus: Option<f64>,
    /// Custom resources the driver holds while it runs, by name (at most
    /// [`MAX_JOB_RESOURCES`]).
    #[serde(default, deserialize_with = "read::resources")]
    pub resources: BTreeMap<String, f64>,
    /// Seconds the whole job may take from its submission (waiting for
    /// its resources included), above 0 and at most a year; past it the
    /// job is stopped and ends `FAILED`, its message saying so.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// The client's own labels, kept and shown back (at most
    /// [`MAX_JOB_METADATA`] entries, [`MAX_JOB_METADATA_BYTES`] in all).
    #[serde(default, deserialize_with = "read::metadata")]
    pub metadata: BTreeMap<String, String>,
    /// The job's working directory: a package every guest of the job
    /// sees read-only, on every node its tasks reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<JobWorkingDir>,
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

impl JobStatus {
    /// Every status, in a job's order.
    pub const ALL: [JobStatus; 5] = [
        JobStatus::Pending,
        JobStatus::Running,
        JobStatus::Succeeded,
        JobStatus::Failed,
        JobStatus::Stopped,
    ];

    /// Whether the job has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Succeeded | JobStatus::Failed | JobStatus::Stopped
        )
    }

    /// Its name, as its JSON says it (`RUNNING`, ..).
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "PENDING",
            JobStatus::Running => "RUNNING",
            JobStatus::Succeeded => "SUCCEEDED",
            JobStatus::Failed => "FAILED",
            JobStatus::Stopped => "STOPPED",
        }
    }
}

/// One job (`GET /v1/jobs/{id}`; `POST /v1/jobs` answers it with 201).
/// `component` is as submitted: `name` or `name@version`.
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
    /// Its options as submitted, at the top level of the JSON.
    #[serde(flatten)]
    pub options: JobOptions,
}

/// A page of `GET /v1/jobs`: the jobs of every node, newest submission
/// first (`?order=oldest`: oldest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobList {
    /// The jobs.
    pub jobs: Vec<JobInfo>,
    /// The cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The nodes whose jobs are not in it (no answer in time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<crate::Unreachable>,
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
