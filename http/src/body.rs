//! The body of every answer: whole (one buffer, or several sent one after
//! another without being joined), or a job's log as it grows.
//!
//! A value from the object store is answered without a copy: its bytes
//! become a [`Bytes`] that keeps the store's object alive
//! ([`Bytes::from_owner`]) until hyper has written them, and several
//! results go out as `[`, each value, `,` ... `]` in turn.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, SizeHint};

use crate::jobs::LogStream;

/// An answer's body.
pub(crate) enum ResponseBody {
    /// One buffer.
    Full(Full<Bytes>),
    /// Buffers sent in order, never joined (their total length known).
    Chunks(Chunks),
    /// A job's log, followed until the job ends.
    Log(LogStream),
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
            ResponseBody::Chunks(c) => c.left.is_empty(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Full(b) => b.size_hint(),
            ResponseBody::Log(b) => b.size_hint(),
            ResponseBody::Chunks(c) => SizeHint::with_exact(c.len),
        }
    }
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
