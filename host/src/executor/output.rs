//! Guests' stdout and stderr: the node's (its [`Stdio`]), or, for a job
//! that asked for it, the job's own [`JobLog`], which every instance of
//! the job (its driver, its tasks, its actors) writes into. On a node that
//! captures output ([`Stdio::Capture`]), an instance of a job without a
//! log writes into the node's [`TaskOutputs`](crate::task_output::TaskOutputs)
//! under the task it runs ([`TaskWriter`], which its store points at each
//! new task).

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
use wray_control_plane::{JobId, TaskId};

use crate::config::Stdio;
use crate::job_log::JobLog;
use crate::task_output::{Stream, TaskWriter};

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

    /// Sets `wasi`'s stdout and stderr for an instance of `job` whose
    /// first task is `task` (running `function`): its job's log, else the
    /// node's `stdio`. With [`Stdio::Capture`], the writer the instance's
    /// store points at each task it runs.
    pub(crate) fn attach(
        &self,
        wasi: &mut WasiCtxBuilder,
        job: JobId,
        stdio: &Stdio,
        (task, function): (TaskId, &str),
    ) -> Option<TaskWriter> {
        if let Some(log) = self.0.read().get(&job) {
            let sink = Arc::new(JobSink(log.clone()));
            wasi.stdout(LogOutput(sink.clone())).stderr(LogOutput(sink));
            return None;
        }
        match stdio {
            Stdio::Inherit => {
                wasi.inherit_stdout().inherit_stderr();
                None
            }
            Stdio::Memory { stdout, stderr } => {
                wasi.stdout(stdout.clone()).stderr(stderr.clone());
                None
            }
            Stdio::Capture(outputs) => {
                let writer = TaskWriter::new(outputs.clone(), task, function);
                let sink = |stream| {
                    LogOutput(Arc::new(TaskSink {
                        writer: writer.clone(),
                        stream,
                    }))
                };
                wasi.stdout(sink(Stream::Stdout))
                    .stderr(sink(Stream::Stderr));
                Some(writer)
            }
        }
    }
}

/// Where a [`LogOutput`]'s bytes go: every write is taken whole.
trait Sink: Send + Sync {
    fn take(&self, bytes: &[u8]);
}

/// A job's log (it drops its oldest bytes when full).
struct JobSink(Arc<JobLog>);

impl Sink for JobSink {
    fn take(&self, bytes: &[u8]) {
        self.0.write(bytes);
    }
}

/// One stream of the task an instance runs now (bounded per task).
struct TaskSink {
    writer: TaskWriter,
    stream: Stream,
}

impl Sink for TaskSink {
    fn take(&self, bytes: &[u8]) {
        self.writer.write(self.stream, bytes);
    }
}

/// A WASI output stream into a [`Sink`]: every write succeeds at once.
#[derive(Clone)]
struct LogOutput(Arc<dyn Sink>);

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
        self.0.take(buf);
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
        self.0.take(&bytes);
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
