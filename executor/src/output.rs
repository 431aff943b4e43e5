//! Guests' stdout and stderr: the node's (its [`Stdio`]), or, for a job
//! that asked for it, the job's own [`JobLog`], which every instance of
//! the job (its driver, its tasks, its actors) writes into. On a node
//! other than the job's, an instance of the job writes into the job's
//! [`Outbox`](crate::job_outbox::Outbox) ([`RemoteWriter`]: whole lines,
//! bounded per task), which the cluster sends to the job's log. On a node
//! that captures output ([`Stdio::Capture`]), an instance of a job
//! without a log writes into the node's
//! [`TaskOutputs`](crate::task_output::TaskOutputs) under the task it
//! runs ([`TaskWriter`]). The store points either writer at each new
//! task ([`OutputWriter`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::WasiCtxBuilder;
use wray_control_plane::{JobId, TaskId};

use crate::config::{MemoryOutput, Stdio};
use crate::job_env::JobEnvs;
use crate::job_log::{JobLog, JobLogs};
use crate::job_outbox::RemoteWriter;
use crate::task_output::{Stream, TaskWriter};

/// The writer an instance's store points at each task it runs.
#[derive(Debug, Clone)]
pub(crate) enum OutputWriter {
    /// Into the node's table of plain tasks' output.
    Table(TaskWriter),
    /// Into the outbox of a job whose log is on another node.
    Remote(RemoteWriter),
}

impl OutputWriter {
    /// From now on the output is `task`'s (running `function`).
    pub(crate) fn begin(&self, task: TaskId, function: &str) {
        match self {
            OutputWriter::Table(w) => w.begin(task, function),
            OutputWriter::Remote(w) => w.begin(task, function),
        }
    }

    /// The current task ended (its unfinished lines go out).
    pub(crate) fn end(&self) {
        if let OutputWriter::Remote(w) = self {
            w.end();
        }
    }
}

/// Sets `wasi`'s stdout and stderr for an instance of `job` whose first
/// task is `task` (running `function`): its job's log (`logs`), else its
/// job's outbox when the log is on another node (`envs`), else the
/// node's `stdio`. The writer the instance's store points at each task,
/// where there is one.
pub(crate) fn attach(
    logs: &JobLogs,
    envs: &JobEnvs,
    wasi: &mut WasiCtxBuilder,
    job: JobId,
    stdio: &Stdio,
    (task, function): (TaskId, &str),
) -> Option<OutputWriter> {
    if let Some(log) = logs.get(job) {
        let sink = Arc::new(JobSink(log));
        wasi.stdout(LogOutput(sink.clone())).stderr(LogOutput(sink));
        return None;
    }
    if let Some(outbox) = envs.outbox(job) {
        let writer = RemoteWriter::new(outbox, task, function);
        let sink = |stream| {
            LogOutput(Arc::new(RemoteSink {
                writer: writer.clone(),
                stream,
            }))
        };
        wasi.stdout(sink(Stream::Stdout))
            .stderr(sink(Stream::Stderr));
        return Some(OutputWriter::Remote(writer));
    }
    match stdio {
        Stdio::Inherit => {
            wasi.inherit_stdout().inherit_stderr();
            None
        }
        Stdio::Memory { stdout, stderr } => {
            wasi.stdout(LogOutput(Arc::new(stdout.clone())))
                .stderr(LogOutput(Arc::new(stderr.clone())));
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
            Some(OutputWriter::Table(writer))
        }
    }
}

/// Where a [`LogOutput`]'s bytes go: every write is taken whole.
trait Sink: Send + Sync {
    fn take(&self, bytes: &[u8]);
}

/// An in-memory stream of the node's config (`Stdio::Memory`; it drops
/// what passes its capacity).
impl Sink for MemoryOutput {
    fn take(&self, bytes: &[u8]) {
        self.write(bytes);
    }
}

/// A job's log (it drops its oldest bytes when full).
struct JobSink(Arc<JobLog>);

impl Sink for JobSink {
    fn take(&self, bytes: &[u8]) {
        self.0.write(bytes);
    }
}

/// One stream of the task an instance of a job whose log is elsewhere
/// runs now (whole lines, bounded per task).
struct RemoteSink {
    writer: RemoteWriter,
    stream: Stream,
}

impl Sink for RemoteSink {
    fn take(&self, bytes: &[u8]) {
        self.writer.write(self.stream, bytes);
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
