//! Every `code` an error answer carries ([`ErrorCode`]): one enum, its
//! strings written once (the [`error_codes!`] table below), so that the
//! server cannot answer a code the contract does not name and a client
//! can match on one.
//!
//! An [`ErrorDetail`](crate::ErrorDetail) keeps its `code` as the string
//! on the wire (a client of an older release reads a newer node's new
//! code without failing); [`ErrorDetail::error_code`](crate::ErrorDetail::error_code)
//! reads it as an [`ErrorCode`].

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Declares [`ErrorCode`]: each variant with its doc and its wire string.
/// (`$code` is a `tt`, not a `literal`: utoipa reads the `serde(rename)`
/// of a literal fragment as no rename at all.)
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])+ $variant:ident = $code:tt,)+) => {
        /// A short machine-readable code of an error answer (the
        /// `error.code` of every 4xx and 5xx), serialized as its string
        /// (`unknown_component`, `bad_query`, ...).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        pub enum ErrorCode {
            $($(#[doc = $doc])+ #[serde(rename = $code)] $variant,)+
        }

        impl ErrorCode {
            /// Every code, in the order declared.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// Its string on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                }
            }
        }
    };
}

error_codes! {
    // --- the request: its path, query, headers and body ---
    /// 404: no route has the path.
    NoRoute = "no_route",
    /// 405: the path has routes, none of this method.
    MethodNotAllowed = "method_not_allowed",
    /// 414: the path is longer than the server reads.
    PathTooLong = "path_too_long",
    /// 400: a path parameter is not UTF-8 once percent-decoded (or, relayed,
    /// not a path).
    BadPath = "bad_path",
    /// 400: a relayed request's method is not an HTTP method.
    BadMethod = "bad_method",
    /// 400: a query parameter the route does not take, or out of range.
    BadQuery = "bad_query",
    /// 400: an id in the path is not one (task, actor, job, object,
    /// package).
    BadId = "bad_id",
    /// 400: the body is not the JSON the route takes.
    BadJson = "bad_json",
    /// 400: the body could not be read.
    BadBody = "bad_body",
    /// 413: the body is larger than the route takes.
    BodyTooLarge = "body_too_large",
    /// 408: the body did not arrive in time.
    BodyTimeout = "body_timeout",
    /// 500: the answer could not be encoded.
    Encoding = "encoding",
    /// 401: no bearer token.
    NoToken = "no_token",
    /// 401: the bearer token is not this node's.
    BadToken = "bad_token",
    /// 421: `Host` is not this node's address or name.
    HostNotAllowed = "host_not_allowed",
    /// 403: a cross-origin request that would change state.
    CrossOrigin = "cross_origin",
    /// 403: a state-changing request a web page could send without the
    /// token's header.
    SimpleRequest = "simple_request",
    /// 503: the node is too busy now; retry after `Retry-After` seconds.
    Busy = "busy",

    // --- components and their versions ---
    /// 400: the component name breaks the name rule.
    BadName = "bad_name",
    /// 400: a deploy that names no component.
    NoName = "no_name",
    /// 400: not a wray component, or a schema that does not compile.
    InvalidComponent = "invalid_component",
    /// 500: the deploy failed on the node.
    DeployFailed = "deploy_failed",
    /// 500: a damaged entry of the function table.
    CorruptEntry = "corrupt_entry",
    /// 404: no component is deployed under the name.
    UnknownComponent = "unknown_component",
    /// 404: the component has no such function.
    UnknownFunction = "unknown_function",
    /// 404: no such kept version of the component.
    UnknownVersion = "unknown_version",
    /// 400: a rollback that names no version.
    NoVersion = "no_version",
    /// 400: a version that is not a number.
    BadVersion = "bad_version",
    /// 500: a kept version could not be loaded.
    LoadFailed = "load_failed",
    /// 507: deploying it would pass the node's bound on deployed bytes.
    TooMuchDeployed = "too_much_deployed",
    /// 409: deploying it would pass the node's bound on names or versions.
    TooManyDeployed = "too_many_deployed",

    // --- calls, actors and objects ---
    /// 400: the body's argument count is not the function's.
    WrongArgumentCount = "wrong_argument_count",
    /// A task failed (its status by the error's kind); `task` holds its
    /// error.
    TaskFailed = "task_failed",
    /// 507: the results are larger than a call answers.
    ResultTooLarge = "result_too_large",
    /// 406: the value is not JSON (nor one raw value).
    NotJson = "not_json",
    /// 406: raw bytes asked of a value that is JSON.
    NotRaw = "not_raw",
    /// 404: no such object here, or read already.
    UnknownObject = "unknown_object",
    /// 404: no such live actor here.
    UnknownActor = "unknown_actor",
    /// 404: the component has no such actor class.
    UnknownClass = "unknown_class",
    /// 404: the actor's class has no such method.
    UnknownMethod = "unknown_method",
    /// 404: no node keeps the task (`GET /v1/tasks/{id}`).
    UnknownTask = "unknown_task",
    /// 404: the node keeps no output of the task.
    UnknownTaskLogs = "unknown_task_logs",
    /// 404: the node keeps no task output at all.
    NoTaskLogs = "no_task_logs",

    // --- jobs and packages ---
    /// 400: the component has no `main` to run as a job.
    NoMain = "no_main",
    /// 400: the job's options are not valid.
    BadJobOptions = "bad_job_options",
    /// 400: a job's component is not a valid name or version.
    BadComponent = "bad_component",
    /// 400: the node does not let jobs read a directory the job names.
    DirNotAllowed = "dir_not_allowed",
    /// 400: no node of the cluster lets jobs read all the job's
    /// directories.
    DirsNotInCluster = "dirs_not_in_cluster",
    /// 422: the job asks for resources no node has.
    Infeasible = "infeasible",
    /// 404: no such job.
    UnknownJob = "unknown_job",
    /// 409: the job still runs.
    JobRunning = "job_running",
    /// 413: the job's arguments are longer than the node takes.
    ArgsTooLong = "args_too_long",
    /// 404: the node keeps no such package.
    UnknownPackage = "unknown_package",
    /// 413: the package is larger than the node keeps.
    PackageTooLarge = "package_too_large",
    /// 400: the package is not a tar archive the node takes.
    InvalidPackage = "invalid_package",
    /// 500: the node could not read or write the package.
    PackageIo = "package_io",

    // --- the cluster: nodes, logs and relayed requests ---
    /// 404: no such live node.
    UnknownNode = "unknown_node",
    /// 504: the node did not answer in time.
    NodeUnreachable = "node_unreachable",
    /// 500: the node's log could not be read.
    LogUnreadable = "log_unreadable",
    /// 504: a relayed request took too long on the node answering it.
    RelayTimeout = "relay_timeout",
    /// 404: a request another node may not relay here.
    NotRelayable = "not_relayable",
    /// 400: a relayed log read that asks to follow.
    NoRelayedFollow = "no_relayed_follow",
    /// 404: the node's HTTP API is stopping.
    ShuttingDown = "shutting_down",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ErrorCode {
    type Err = UnknownCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorCode::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCode(s.chars().take(64).collect()))
    }
}

/// A code string no [`ErrorCode`] has (a newer node's, or not a code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an error code of this API")]
pub struct UnknownCode(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code's wire string, written out: a renamed variant or string
    /// breaks this test, not a client.
    const WIRE: &[(ErrorCode, &str)] = &[
        (ErrorCode::NoRoute, "no_route"),
        (ErrorCode::MethodNotAllowed, "method_not_allowed"),
        (ErrorCode::PathTooLong, "path_too_long"),
        (ErrorCode::BadPath, "bad_path"),
        (ErrorCode::BadMethod, "bad_method"),
        (ErrorCode::BadQuery, "bad_query"),
        (ErrorCode::BadId, "bad_id"),
        (ErrorCode::BadJson, "bad_json"),
        (ErrorCode::BadBody, "bad_body"),
        (ErrorCode::BodyTooLarge, "body_too_large"),
        (ErrorCode::BodyTimeout, "body_timeout"),
        (ErrorCode::Encoding, "encoding"),
        (ErrorCode::NoToken, "no_token"),
        (ErrorCode::BadToken, "bad_token"),
        (ErrorCode::HostNotAllowed, "host_not_allowed"),
        (ErrorCode::CrossOrigin, "cross_origin"),
        (ErrorCode::SimpleRequest, "simple_request"),
        (ErrorCode::Busy, "busy"),
        (ErrorCode::BadName, "bad_name"),
        (ErrorCode::NoName, "no_name"),
        (ErrorCode::InvalidComponent, "invalid_component"),
        (ErrorCode::DeployFailed, "deploy_failed"),
        (ErrorCode::CorruptEntry, "corrupt_entry"),
        (ErrorCode::UnknownComponent, "unknown_component"),
        (ErrorCode::UnknownFunction, "unknown_function"),
        (ErrorCode::UnknownVersion, "unknown_version"),
        (ErrorCode::NoVersion, "no_version"),
        (ErrorCode::BadVersion, "bad_version"),
        (ErrorCode::LoadFailed, "load_failed"),
        (ErrorCode::TooMuchDeployed, "too_much_deployed"),
        (ErrorCode::TooManyDeployed, "too_many_deployed"),
        (ErrorCode::WrongArgumentCount, "wrong_argument_count"),
        (ErrorCode::TaskFailed, "task_failed"),
        (ErrorCode::ResultTooLarge, "result_too_large"),
        (ErrorCode::NotJson, "not_json"),
        (ErrorCode::NotRaw, "not_raw"),
        (ErrorCode::UnknownObject, "unknown_object"),
        (ErrorCode::UnknownActor, "unknown_actor"),
        (ErrorCode::UnknownClass, "unknown_class"),
        (ErrorCode::UnknownMethod, "unknown_method"),
        (ErrorCode::UnknownTask, "unknown_task"),
        (ErrorCode::UnknownTaskLogs, "unknown_task_logs"),
        (ErrorCode::NoTaskLogs, "no_task_logs"),
        (ErrorCode::NoMain, "no_main"),
        (ErrorCode::BadJobOptions, "bad_job_options"),
        (ErrorCode::BadComponent, "bad_component"),
        (ErrorCode::DirNotAllowed, "dir_not_allowed"),
        (ErrorCode::DirsNotInCluster, "dirs_not_in_cluster"),
        (ErrorCode::Infeasible, "infeasible"),
        (ErrorCode::UnknownJob, "unknown_job"),
        (ErrorCode::JobRunning, "job_running"),
        (ErrorCode::ArgsTooLong, "args_too_long"),
        (ErrorCode::UnknownPackage, "unknown_package"),
        (ErrorCode::PackageTooLarge, "package_too_large"),
        (ErrorCode::InvalidPackage, "invalid_package"),
        (ErrorCode::PackageIo, "package_io"),
        (ErrorCode::UnknownNode, "unknown_node"),
        (ErrorCode::NodeUnreachable, "node_unreachable"),
        (ErrorCode::LogUnreadable, "log_unreadable"),
        (ErrorCode::RelayTimeout, "relay_timeout"),
        (ErrorCode::NotRelayable, "not_relayable"),
        (ErrorCode::NoRelayedFollow, "no_relayed_follow"),
        (ErrorCode::ShuttingDown, "shutting_down"),
    ];

    #[test]
    fn every_code_has_its_wire_string_both_ways() {
        assert_eq!(WIRE.len(), ErrorCode::ALL.len(), "a code not listed here");
        for (code, wire) in WIRE {
            assert_eq!(code.as_str(), *wire);
            assert_eq!(code.to_string(), *wire);
            assert_eq!(serde_json::to_string(code).unwrap(), format!("\"{wire}\""));
            let back: ErrorCode = serde_json::from_str(&format!("\"{wire}\"")).unwrap();
            assert_eq!(back, *code);
            assert_eq!(wire.parse::<ErrorCode>().unwrap(), *code);
        }
    }

    #[test]
    fn the_openapi_schema_lists_the_wire_strings() {
        let schema = serde_json::to_value(<ErrorCode as utoipa::PartialSchema>::schema()).unwrap();
        let listed: Vec<&str> = schema["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let wire: Vec<&str> = WIRE.iter().map(|(_, s)| *s).collect();
        assert_eq!(listed, wire);
    }

    #[test]
    fn a_code_this_api_does_not_name_is_an_error_naming_it() {
        let e = "made_up".parse::<ErrorCode>().unwrap_err();
        assert!(e.to_string().contains("made_up"), "{e}");
    }
}
