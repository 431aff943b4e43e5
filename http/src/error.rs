//! The JSON error every 4xx and 5xx answer carries
//! ([`wray_api::ErrorBody`]): `{"error": {"code": .., "message": ..}}`,
//! plus the task error's fields (`kind`, `function`, `task`, `causes`)
//! when a task failed.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};
use wray_api::{ErrorBody, ErrorCode, ErrorDetail, TaskCause, TaskFailure};
use wray_host::{ErrorKind, TaskError};

/// An answer other than success: its status and what to tell the client.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A short machine-readable code (`unknown_function`, `body_too_large`).
    pub code: ErrorCode,
    /// What was wrong, for a person.
    pub message: String,
    /// Seconds to wait before retrying (503 only).
    pub retry_after: Option<u32>,
    /// The failed task's error.
    pub task: Option<Box<TaskFailure>>,
}

impl ApiError {
    /// An error of `status` and `code` saying `message`.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
            task: None,
        }
    }

    /// 400: the request is malformed (`code` says how).
    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 404: nothing of that name or id (`code` says what).
    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// 401 (answered with `WWW-Authenticate: Bearer`): no token, or not
    /// this node's.
    pub fn unauthorized(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code, message)
    }

    /// 503 with `Retry-After: 1`: the node is too busy for this request now.
    pub fn busy(message: impl Into<String>) -> Self {
        ApiError {
            retry_after: Some(1),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Busy, message)
        }
    }

    /// The answer for a deploy (or a version loaded for a call or a
    /// rollback) past one of the node's bounds on what it holds: 507
    /// `too_much_deployed` for bytes, 409 `too_many_deployed` for names
    /// and versions, 503 `busy` when every compile slot stayed busy. The
    /// message names the bound and its flag.
    pub fn deploy_limit(limit: &wray_host::DeployLimit) -> Self {
        let message = limit.to_string();
        if limit.bound.is_bytes() {
            Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                ErrorCode::TooMuchDeployed,
                message,
            )
        } else if limit.bound.is_count() {
            Self::new(StatusCode::CONFLICT, ErrorCode::TooManyDeployed, message)
        } else {
            Self::busy(message)
        }
    }

    /// The answer for a task that failed with `e`: 400 for an
    /// `invalid-argument`, 404 for `not-found`, 504 for a `timeout`, 409 for
    /// `cancelled`, 422 for `infeasible`, 500 for the rest (the guest
    /// failed, not the request).
    pub fn task(e: &TaskError) -> Self {
        let status = match e.kind {
            ErrorKind::InvalidArgument => StatusCode::BAD_REQUEST,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::Cancelled => StatusCode::CONFLICT,
            ErrorKind::Infeasible => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let task = TaskFailure {
            kind: e.kind.as_str().to_string(),
            function: e.function.clone(),
            task: e.task.to_string(),
            message: e.message.clone(),
            causes: e
                .causes()
                .map(|c| TaskCause {
                    kind: c.kind.as_str().to_string(),
                    function: c.function.clone(),
                    task: c.task.to_string(),
                    message: c.message.clone(),
                })
                .collect(),
        };
        ApiError {
            task: Some(Box::new(task)),
            ..Self::new(status, ErrorCode::TaskFailed, e.to_string())
        }
    }

    /// The body of this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                task: self.task.as_deref().cloned(),
                ..ErrorDetail::new(self.code, self.message.clone())
            },
        }
    }

    /// The HTTP response.
    pub fn to_response(&self) -> Response<Full<Bytes>> {
        // A struct of strings: encoding cannot fail.
        let body = serde_json::to_vec(&self.body()).unwrap_or_default();
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(secs) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 6750 §3: the scheme the client must use.
            headers.insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"wray\""),
            );
        }
        response
    }
}

/// An id in a route (a task's, an object's, an actor's, a job's), parsed.
///
/// # Errors
/// 400 `bad_id`, saying what the id should look like.
pub(crate) fn parse_id<T>(text: &str) -> Result<T, ApiError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e: T::Err| ApiError::bad_request(ErrorCode::BadId, e.to_string()))
}
