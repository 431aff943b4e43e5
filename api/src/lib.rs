//! wray's HTTP API as types: the one contract between a node's server
//! (`wray-http`) and its clients (`wray-cli`, and anyone reading the
//! OpenAPI document). Every request and response body is a serde type
//! here, each query a struct of its parameters; the server's OpenAPI
//! document is generated from them (`utoipa`), so a renamed field breaks
//! the build rather than a client.
//!
//! - [`error`]: the body of every 4xx and 5xx answer; [`codes`]: every
//!   code it carries ([`ErrorCode`]).
//! - [`components`]: deployed components, their exports and listings.
//! - [`calls`]: function calls, actors and objects.
//! - [`state`]: the cluster's state (health, nodes, resources, tasks,
//!   objects, errors, logs).
//! - [`jobs`]: the Jobs API's bodies and their bounds; [`bounded`] reads
//!   a client's lists and maps no further than those bounds.
//! - [`paging`]: the `?limit=` and `?after=` of the listings that can
//!   grow, and their bounds; the cluster listings' order, node filter and
//!   the nodes they could not read.
//! - [`encoding`]: how names and values travel in paths and queries
//!   (percent-encoded, one rule for clients and the server).
//!
//! The peer protocol between nodes joins these types with the cluster.

pub mod bounded;
pub mod calls;
pub mod codes;
pub mod components;
pub mod encoding;
pub mod error;
pub mod jobs;
pub mod paging;
pub mod state;

pub use calls::{
    Accepted, ActorInfo, ActorList, ActorState, InvokeQuery, Killed, NewActor, ObjectQuery,
};
pub use codes::{ErrorCode, UnknownCode};
pub use components::{
    ComponentInfo, ComponentList, ComponentRecord, Declared, DeployQuery, ExportKind,
    FunctionExport, ListError, Param, Undeployed, VersionInfo, VersionList, View,
};
pub use encoding::{decode, encode, DecodeError};
pub use error::{ErrorBody, ErrorDetail, TaskCause, TaskFailure};
pub use jobs::{
    JobDeleted, JobDir, JobInfo, JobList, JobLogsQuery, JobOptions, JobStatus, JobStopped,
    JobWorkingDir, PackageInfo, SubmitJob, DEFAULT_WORKING_DIR_GUEST, PACKAGE_ID_BYTES,
};
pub use paging::{
    ClusterListQuery, JobFilter, ListQuery, LocalQuery, Order, Unreachable, DEFAULT_LIMIT,
    MAX_LIMIT,
};
pub use state::{
    CauseInfo, ControlPlaneHealth, ErrorInfo, ErrorList, GpuSummary, Health, LogsQuery, NodeInfo,
    NodeLogs, ObjectInfo, ObjectList, ObjectListing, Resources, StatusSnapshot, TaskInfo, TaskList,
    TaskLogs, TaskOutputInfo, TimelineQuery, DEFAULT_TIMELINE_TASKS, MAX_TIMELINE_TASKS,
};

/// The `View` header's name (`Wray-View`): `node` when a function-table
/// read was answered from the node's own view because the control plane
/// is unreachable (see [`View`]).
pub const VIEW_HEADER: &str = "wray-view";

/// The header naming the task of a function call (`Wray-Task-Id`, 32 hex
/// digits): its output is `GET /v1/tasks/{id}/logs`.
pub const TASK_ID_HEADER: &str = "wray-task-id";
