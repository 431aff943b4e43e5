//! Guests' stdout and stderr: the node's (its [`Stdio`]), or, for a job
//! that asked for it, the job's own [`JobLog`], which every instance of
//! the job (its driver, its tasks, its actors) writes into.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use parking_lot::RwLock;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::WasiCtxBuilder;
use wray_control_plane::JobId;

use crate::config::Stdio;
use crate::job_log::JobLog;

/// The logs of the jobs that have one, by job.
#[derive(Default)]
pub(crate) struct JobLogs(RwLock<HashMap<JobId, Arc<JobLog>>>);

impl JobLogs {
    /// Sends the output of every instance of `job` made from now on to
    /// `log`.
    pub(crate) fn insert(&self, job: JobId, log: Arc<JobLog>) {
        self.0.write().insert(job, log);
    }

    /// Forgets `job`'s log (its instances made afterwards write to the
    /// node's stdio).
    pub(crate) fn remove(&self, job: JobId) {
        self.0.write().remove(&job);
    }

    /// Whether `job` has a log.
    pub(crate) fn has(&self, job: JobId) -> bool {
        self.0.read().contains_key(&job)
    }

    /// Sets `wasi`'s stdout and stderr for an instance of `job`: its job's
    /// log, else the node's `stdio`.
    pub(crate) fn attach(&self, wasi: &mut WasiCtxBuilder, job: JobId, stdio: &Stdio) {
        if let Some(log) = self.0.read().get(&job) {
            let out = LogOutput(log.clone());
            wasi.stdout(out.clone()).stderr(out);
            return;
        }
        match stdio {
            Stdio::Inherit => {
                wasi.inherit_stdout().inherit_stderr();
            }
            Stdio::Memory { stdout, stderr } => {
                wasi.stdout(stdout.clone()).stderr(stderr.clone());
            }
        }
    }
}

/// A WASI output stream into a [`JobLog`]: every write succeeds at once
/// (the log drops its oldest bytes when full).
#[derive(Clone)]
struct LogOutput(Arc<JobLog>);

/// How much a guest may write per `check-write` permit: 64 KiB (any size
/// works; this bounds one copy).
const PERMIT: usize = 64 << 10;

impl IsTerminal for LogOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for LogOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.0.write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[async_trait::async_trait]
impl OutputStream for LogOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.0.write(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(PERMIT)
    }
}

#[async_trait::async_trait]
impl Pollable for LogOutput {
    async fn ready(&mut self) {}
}
