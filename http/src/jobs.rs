//! The Jobs API, as Ray's: `POST /v1/jobs` ([`SubmitJob`]) runs a
//! deployed component's `main(args)` in the background as a job of its
//! own, with its options (directories, environment variables, driver
//! resources, a time limit, metadata); list, status, stop and delete;
//! `GET /v1/jobs/{id}/logs` answers what its guests wrote, and with
//! `?follow=true` streams it (chunked) until the job ends.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use std::sync::Arc;
use wray_api::SubmitJob;
use wray_host::{JobError, JobId, Jobs};

use crate::body::ResponseBody;
use crate::error::ApiError;
use crate::log_stream::LogStream;
use wray_api::ErrorCode;

/// `Wray-Log-Next`: the offset to ask for next (`?offset=`).
const LOG_NEXT: HeaderName = HeaderName::from_static("wray-log-next");
/// `Wray-Log-Dropped`: bytes between the offset asked for and the first
/// byte answered that the log had already dropped.
const LOG_DROPPED: HeaderName = HeaderName::from_static("wray-log-dropped");
/// `Wray-Job-Status`: the job's status when the answer was made.
const JOB_STATUS: HeaderName = HeaderName::from_static("wray-job-status");

/// Parses `body` and submits the job; 201 with its info.
///
/// # Errors
/// 400 `bad_json` for a body that is not a [`SubmitJob`], `bad_component`
/// for a malformed `name@version`; as [`job_error`].
pub(crate) async fn submit(
    jobs: &Jobs,
    node: Arc<wray_host::Node>,
    body: &[u8],
) -> Result<wray_api::JobInfo, ApiError> {
    let submit: SubmitJob = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            ErrorCode::BadJson,
            format!("the body is not a job (`{{\"component\": name, \"args\": [strings], ..}}`, see docs/http-api.md): {e}"),
        )
    })?;
    let (component, args, options) = submit.into_parts();
    wray_host::split_version(&component)
        .map_err(|e| ApiError::bad_request(ErrorCode::BadComponent, e.to_string()))?;
    // Resolving the component may compile it, and the control plane may
    // be remote: the job's own thread does it while this waits.
    let info = jobs
        .submit_async(node, &component, args, options)
        .await
        .map_err(job_error)?;
    Ok(info)
}

/// The id in a job route.
///
/// # Errors
/// 400 `bad_id` for anything but 16 hex digits.
pub(crate) fn parse_job(id: &str) -> Result<JobId, ApiError> {
    crate::error::parse_id(id)
}

/// The answer for a failed jobs call.
pub(crate) fn job_error(e: JobError) -> ApiError {
    use wray_host::Error;
    match &e {
        JobError::Node(Error::NotDeployed(_)) => {
            ApiError::not_found(ErrorCode::UnknownComponent, e.to_string())
        }
        JobError::Node(Error::NoMain(_)) => ApiError::bad_request(ErrorCode::NoMain, e.to_string()),
        JobError::Node(Error::VersionNotFound { .. }) => {
            ApiError::not_found(ErrorCode::UnknownVersion, e.to_string())
        }
        JobError::Node(Error::DeployLimit(limit)) => ApiError::deploy_limit(limit),
        JobError::BadOptions(_) => ApiError::bad_request(ErrorCode::BadJobOptions, e.to_string()),
        JobError::DirNotAllowed { .. } => {
            ApiError::bad_request(ErrorCode::DirNotAllowed, e.to_string())
        }
        JobError::DirsNotInCluster { .. } => {
            ApiError::bad_request(ErrorCode::DirsNotInCluster, e.to_string())
        }
        JobError::WorkingDir(w) => {
            let mut answer = crate::packages::package_error(w.clone());
            answer.message = e.to_string();
            answer
        }
        JobError::Infeasible(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::Infeasible,
            e.to_string(),
        ),
        JobError::NotFound(..) => ApiError::not_found(ErrorCode::UnknownJob, e.to_string()),
        JobError::StillRunning(_) => {
            ApiError::new(StatusCode::CONFLICT, ErrorCode::JobRunning, e.to_string())
        }
        JobError::ArgsTooLong(_) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::ArgsTooLong,
            e.to_string(),
        ),
        JobError::Busy { .. } | JobError::Thread(_) | JobError::Node(_) => {
            ApiError::busy(e.to_string())
        }
    }
}

/// `GET /v1/jobs/{id}/logs`: the log from `offset` (what is kept of it),
/// or with `follow`, a stream of it until the job ends.
///
/// # Errors
/// As [`parse_job`]; 404 `unknown_job`.
pub(crate) fn logs(
    jobs: &Jobs,
    id: &str,
    offset: u64,
    follow: bool,
) -> Result<Response<ResponseBody>, ApiError> {
    let (log, status) = jobs.log(parse_job(id)?).map_err(job_error)?;
    let mut response = if follow {
        Response::new(ResponseBody::from(LogStream::follow(log, offset)))
    } else {
        let chunk = log.read(offset, usize::MAX);
        let mut r = Response::new(ResponseBody::from(Full::new(Bytes::from(chunk.bytes))));
        r.headers_mut()
            .insert(LOG_NEXT, HeaderValue::from(chunk.next));
        r.headers_mut()
            .insert(LOG_DROPPED, HeaderValue::from(chunk.dropped));
        r
    };
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(JOB_STATUS, HeaderValue::from_static(status.as_str()));
    Ok(response)
}
