//! The body of every answer: whole (one buffer, or several sent one after
//! another without being joined), or a job's log as it grows; the answers
//! handlers make of them ([`Answer`], [`json`]); and a request's body,
//! read within its bounds ([`read_body`]).
//!
//! A value from the object store is answered without a copy: its bytes
//! become a [`Bytes`] that keeps the store's object alive
//! ([`Bytes::from_owner`]) until hyper has written them, and several
//! results go out as `[`, each value, `,` ... `]` in turn.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use crate::delivery::Delivering;
use crate::error::ApiError;
use crate::log_stream::LogStream;
use wray_api::ErrorCode;

/// An answer's body.
pub(crate) enum ResponseBody {
    /// One buffer.
    Full(Full<Bytes>),
    /// Buffers sent in order, never joined (their total length known).
    Chunks(Chunks),
    /// A job's log, followed until the job ends.
    Log(LogStream),
    /// A body whose delivery matters: a read-once value, or a relayed
    /// answer pulled as it is sent.
    Delivering(Delivering),
}

impl From<Delivering> for ResponseBody {
    fn from(body: Delivering) -> Self {
        ResponseBody::Delivering(body)
    }
}

impl From<Full<Bytes>> for ResponseBody {
    fn from(body: Full<Bytes>) -> Self {
        ResponseBody::Full(body)
    }
}

impl From<LogStream> for ResponseBody {
    fn from(body: LogStream) -> Self {
        ResponseBody::Log(body)
    }
}

impl From<Vec<Bytes>> for ResponseBody {
    fn from(chunks: Vec<Bytes>) -> Self {
        let len = chunks.iter().map(|c| c.len() as u64).sum();
        ResponseBody::Chunks(Chunks {
            left: chunks.into(),
            len,
        })
    }
}

/// Buffers sent one after another.
pub(crate) struct Chunks {
    left: VecDeque<Bytes>,
    /// Bytes not sent yet.
    len: u64,
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ResponseBody::Full(b) => Pin::new(b).poll_frame(cx),
            ResponseBody::Log(b) => Pin::new(b).poll_frame(cx),
            ResponseBody::Delivering(b) => Pin::new(b).poll_frame(cx),
            ResponseBody::Chunks(c) => {
                let next = c.left.pop_front();
                if let Some(chunk) = &next {
                    c.len = c.len.saturating_sub(chunk.len() as u64);
                }
                Poll::Ready(next.map(|b| Ok(Frame::data(b))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Full(b) => b.is_end_stream(),
            ResponseBody::Log(b) => b.is_end_stream(),
            ResponseBody::Delivering(b) => b.is_end_stream(),
            ResponseBody::Chunks(c) => c.left.is_empty(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Full(b) => b.size_hint(),
            ResponseBody::Log(b) => b.size_hint(),
            ResponseBody::Delivering(b) => b.size_hint(),
            ResponseBody::Chunks(c) => SizeHint::with_exact(c.len),
        }
    }
}

/// A handler's answer.
pub(crate) type Answer = Result<Response<ResponseBody>, ApiError>;

/// Reads `req`'s body: at most `limit` bytes within `timeout`.
pub(crate) async fn read_body<B>(
    req: Request<B>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError>
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let too_large = |n: String| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::BodyTooLarge,
            format!("the body has {n} bytes, the most this route takes is {limit}"),
        )
    };
    if let Some(len) = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > u64::try_from(limit).unwrap_or(u64::MAX) {
            return Err(too_large(len.to_string()));
        }
    }
    let body = Limited::new(req.into_body(), limit);
    match tokio::time::timeout(timeout, body.collect()).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::BodyTimeout,
            format!("the body did not arrive within {} s", timeout.as_secs()),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(too_large("more than that".into()))
        }
        Ok(Err(e)) => Err(ApiError::bad_request(
            ErrorCode::BadBody,
            format!("reading the body: {e}"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// 500 `encoding`: a value that would not encode (a host bug).
pub(crate) fn encoding(e: serde_json::Error) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::Encoding,
        format!("encoding the answer: {e}"),
    )
}

/// `value` as a JSON answer of `status`.
pub(crate) fn json(status: StatusCode, value: &impl serde::Serialize) -> Answer {
    let body = serde_json::to_vec(value).map_err(encoding)?;
    Ok(body_response(status, "application/json", Bytes::from(body)))
}

/// An answer of `status` whose body is `body`, of `content_type`.
pub(crate) fn body_response(
    status: StatusCode,
    content_type: &'static str,
    body: Bytes,
) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::from(Full::new(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn chunks_are_sent_in_order_with_their_length_known() {
        let parts: Vec<Bytes> = ["[", "1", ",", "22", "]"].map(Bytes::from).into();
        let body = ResponseBody::from(parts);
        assert_eq!(body.size_hint().exact(), Some(6));
        let all = body.collect().await.unwrap().to_bytes();
        assert_eq!(&all[..], b"[1,22]");
    }
}
