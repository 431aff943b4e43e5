//! The Jobs API, as Ray's: `POST /v1/jobs` ([`SubmitJob`]) runs a
//! deployed component's `main(args)` in the background as a job of its
//! own, with its options (directories, environment variables, driver
//! resources, a time limit, metadata); list, status, stop and delete;
//! `GET /v1/jobs/{id}/logs` answers what its guests wrote, and with
//! `?follow=true` streams it (chunked) until the job ends.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame};
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;
use wray_api::SubmitJob;
use wray_host::{JobError, JobId, JobLog, Jobs};

use crate::body::ResponseBody;
use crate::error::ApiError;

/// The largest piece of log sent at once (64 KiB).
const CHUNK: usize = 64 << 10;

/// Pieces of log queued for a slow follower before the reader waits.
const QUEUED_CHUNKS: usize = 4;

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
pub(crate) fn submit(
    jobs: &Jobs,
    node: &'static wray_host::Node,
    body: &[u8],
) -> Result<wray_api::JobInfo, ApiError> {
    let submit: SubmitJob = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            "bad_json",
            format!("the body is not a job (`{{\"component\": name, \"args\": [strings], ..}}`, see docs/http-api.md): {e}"),
        )
    })?;
    let (component, args, options) = submit.into_parts();
    wray_host::split_version(&component)
        .map_err(|e| ApiError::bad_request("bad_component", e.to_string()))?;
    // Resolving the component may compile it, and the control plane may
    // be remote: off the async threads.
    let info = tokio::task::block_in_place(|| jobs.submit_with(node, &component, args, options))
        .map_err(job_error)?;
    Ok(info)
}

/// The id in a job route.
///
/// # Errors
/// 400 `bad_id` for anything but 16 hex digits.
pub(crate) fn parse_job(id: &str) -> Result<JobId, ApiError> {
    id.parse::<JobId>()
        .map_err(|e| ApiError::bad_request("bad_id", e.to_string()))
}

/// The answer for a failed jobs call.
pub(crate) fn job_error(e: JobError) -> ApiError {
    use wray_host::Error;
    match &e {
        JobError::Node(Error::NotDeployed(_)) => {
            ApiError::not_found("unknown_component", e.to_string())
        }
        JobError::Node(Error::NoMain(_)) => ApiError::bad_request("no_main", e.to_string()),
        JobError::Node(Error::VersionNotFound { .. }) => {
            ApiError::not_found("unknown_version", e.to_string())
        }
        JobError::Node(Error::DeployLimit(limit)) => ApiError::deploy_limit(limit),
        JobError::BadOptions(_) => ApiError::bad_request("bad_job_options", e.to_string()),
        JobError::DirNotAllowed { .. } => ApiError::bad_request("dir_not_allowed", e.to_string()),
        JobError::Infeasible(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "infeasible",
            e.to_string(),
        ),
        JobError::NotFound(..) => ApiError::not_found("unknown_job", e.to_string()),
        JobError::StillRunning(_) => {
            ApiError::new(StatusCode::CONFLICT, "job_running", e.to_string())
        }
        JobError::ArgsTooLong(_) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "args_too_long",
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

/// A job's log as a chunked body: what is kept from an offset on, then
/// each write as it comes, until the job ends (or the client goes). A
/// gap the log dropped is marked by a line `[wray: N bytes of log
/// dropped]`.
pub(crate) struct LogStream(mpsc::Receiver<Bytes>);

impl LogStream {
    /// Follows `log` from `offset` on a task of the current runtime.
    fn follow(log: Arc<JobLog>, mut offset: u64) -> Self {
        let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
        tokio::spawn(async move {
            loop {
                let chunk = log.read(offset, CHUNK);
                if chunk.dropped > 0 {
                    let gap = format!("[wray: {} bytes of log dropped]\n", chunk.dropped);
                    if tx.send(Bytes::from(gap)).await.is_err() {
                        return;
                    }
                }
                offset = chunk.next;
                if !chunk.bytes.is_empty() {
                    if tx.send(Bytes::from(chunk.bytes)).await.is_err() {
                        return;
                    }
                    continue;
                }
                if chunk.done {
                    return;
                }
                tokio::select! {
                    () = log.wait_past(offset) => {}
                    () = tx.closed() => return,
                }
            }
        });
        LogStream(rx)
    }
}

impl Body for LogStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}
