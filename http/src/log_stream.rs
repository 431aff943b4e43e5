//! [`LogStream`]: a job's log as a chunked answer body, followed as it
//! grows (`GET /v1/jobs/{id}/logs?follow=true`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;
use wray_host::JobLog;

/// The largest piece of log sent at once (64 KiB).
const CHUNK: usize = 64 << 10;

/// Pieces of log queued for a slow follower before the reader waits.
const QUEUED_CHUNKS: usize = 4;

/// A job's log as a chunked body: what is kept from an offset on, then
/// each write as it comes, until the job ends (or the client goes). A
/// gap the log dropped is marked by a line `[wray: N bytes of log
/// dropped]`.
pub(crate) struct LogStream(mpsc::Receiver<Bytes>);

impl LogStream {
    /// Follows `log` from `offset` on a task of the current runtime.
    pub(crate) fn follow(log: Arc<JobLog>, mut offset: u64) -> Self {
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

impl LogStream {
    /// The pieces `rx` receives, in order, until its sender goes (a log
    /// followed on another node: `relay`).
    pub(crate) fn from_channel(rx: mpsc::Receiver<Bytes>) -> Self {
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
