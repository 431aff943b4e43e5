//! Jobs, as Ray's Jobs API has them: a deployed component's `main` run in
//! the background as the driver of a job of its own, whose guests (the
//! driver, its tasks, its actors) write their stdout and stderr into the
//! job's [`JobLog`]. [`Jobs`] submits them, lists them, stops them and
//! forgets finished ones; every table it keeps is bounded
//! ([`JobsConfig`]).
//!
//! A job may name a kept version of its component (`app@3`) and take
//! [`JobOptions`] (`options`): directories and environment variables for
//! its guests, resources its driver waits for and holds (the job stays
//! `PENDING` meanwhile), a time limit for the whole job, and metadata.
//! `run` prepares and runs one job on a node. The options are the API's
//! type (`wray_api::JobOptions`, whose reader stops at each bound); the
//! checks against the node are `options`'.
//!
//! Each running job holds one thread (a driver blocks its thread as
//! `wray run`'s does); [`JobsConfig::max_running`] bounds them.

mod options;
mod run;

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use wray_control_plane::{JobId, TaskId};

use crate::cancel_token::CancelToken;
use crate::error::Error;
use crate::job_env::allowed_text;
use crate::job_log::{JobLog, DEFAULT_LOG_BYTES};
use crate::node::driver::DriverOutcome;
use crate::node::state::unix_now;
use crate::node::Node;

pub(crate) use options::{CheckOptions, Checked};
pub use options::{JobDir, JobOptions};
use run::PreparedJob;
pub use wray_api::jobs::{MAX_JOB_ARGS, MAX_JOB_ARGS_BYTES};

/// The bounds of a [`Jobs`] table.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Jobs running at once; one more is refused with [`JobError::Busy`]
    /// (default 64).
    pub max_running: usize,
    /// Jobs remembered, running or finished (default 256); the oldest
    /// finished one is forgotten to make room.
    pub max_kept: usize,
    /// Bytes of output each job's log keeps (default 1 MiB: so at most
    /// `max_kept` MiB in all).
    pub log_bytes: usize,
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            max_running: 64,
            max_kept: 256,
            log_bytes: DEFAULT_LOG_BYTES,
        }
    }
}

/// Where a job is, and what [`Jobs`] knows of one: the API's types
/// (`GET /v1/jobs/{id}` answers a [`JobInfo`] as it is).
pub use wray_api::jobs::{JobInfo, JobStatus};

/// Why a [`Jobs`] call failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The component could not run as a job (not deployed, no `main`) or
    /// the control plane refused a job id.
    #[error(transparent)]
    Node(#[from] Error),
    /// As many jobs run as [`JobsConfig::max_running`] allows, or every
    /// remembered one is still running.
    #[error("{running} jobs are running, the most this node runs at once is {max}: try again when one ends")]
    Busy {
        /// Jobs running now.
        running: usize,
        /// The bound.
        max: usize,
    },
    /// No job with this id is remembered.
    #[error("no job {0} on this node (it keeps its last {1} finished jobs)")]
    NotFound(JobId, usize),
    /// The job has not ended (a running job's record cannot be deleted).
    #[error("job {0} is still running: stop it first")]
    StillRunning(JobId),
    /// The arguments are longer than [`MAX_JOB_ARGS_BYTES`].
    #[error("the job's arguments have {0} bytes, the most is {MAX_JOB_ARGS_BYTES}")]
    ArgsTooLong(usize),
    /// The OS refused a thread for the driver.
    #[error("cannot start a thread for the job: {0}")]
    Thread(std::io::Error),
    /// An option is malformed or past its bound (the message names it).
    #[error("{0}")]
    BadOptions(String),
    /// A directory the node does not let jobs read.
    #[error(
        "the job may not read {path}: {reason}; {}",
        allowed_text(.allowed)
    )]
    DirNotAllowed {
        /// The host path asked for.
        path: String,
        /// Why it is refused.
        reason: String,
        /// The directories the node allows (`--allow-dir`).
        allowed: Vec<std::path::PathBuf>,
    },
    /// The driver asks for resources this node can never give.
    #[error("the job's driver cannot start here: {0}")]
    Infeasible(String),
    /// The job's directories are on no other live node of the cluster:
    /// its tasks could run nowhere but here.
    #[error(
        "the job's directories {} are on no other live node of cluster `{cluster}`: {} do not \
         allow them (start them with --allow-dir covering them, or leave out --dir: \
         --working-dir takes a local directory to every node)",
        .dirs.join(", "),
        .nodes.join(", ")
    )]
    DirsNotInCluster {
        /// The cluster's name.
        cluster: String,
        /// The host directories, as resolved on the job's node.
        dirs: Vec<String>,
        /// The live nodes that lack them.
        nodes: Vec<String>,
    },
    /// The job's working directory cannot be used here (its package is
    /// not kept, or is malformed).
    #[error("the job's working directory: {0}")]
    WorkingDir(crate::working_dir::WorkingDirError),
}

impl From<crate::job_env::DirError> for JobError {
    fn from(e: crate::job_env::DirError) -> Self {
        match e {
            crate::job_env::DirError::Bad(m) => JobError::BadOptions(m),
            crate::job_env::DirError::NotAllowed {
                path,
                reason,
                allowed,
            } => JobError::DirNotAllowed {
                path,
                reason,
                allowed,
            },
        }
    }
}

/// Why a job was stopped before it ended on its own.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    /// A client asked ([`Jobs::stop`]): it ends `Stopped`.
    Asked,
    /// Its `timeout` (seconds) passed: it ends `Failed`.
    TimedOut(f64),
}

/// One remembered job.
struct Entry {
    job: JobId,
    log: Arc<JobLog>,
    cancel: CancelToken,
    info: Mutex<JobInfo>,
    /// Why it was stopped, if it was.
    stop: Mutex<Option<Stop>>,
}

impl Entry {
    fn info(&self) -> JobInfo {
        let mut info = self.info.lock().clone();
        info.log_bytes = self.log.written();
        info
    }

    fn status(&self) -> JobStatus {
        self.info.lock().status
    }

    /// Its `timeout` option, in seconds.
    fn timeout(&self) -> Option<f64> {
        self.info.lock().options.timeout
    }

    fn started(&self) {
        let mut info = self.info.lock();
        info.status = JobStatus::Running;
        info.start_time = Some(unix_now());
    }

    /// Stops it for `why` unless it has ended; whether it had not. The
    /// first reason given is the one it ends with.
    fn stop(&self, why: Stop) -> bool {
        if self.status().is_terminal() {
            return false;
        }
        self.stop.lock().get_or_insert(why);
        self.cancel.cancel();
        true
    }

    fn ended(&self, outcome: &DriverOutcome) {
        let stop = *self.stop.lock();
        let mut info = self.info.lock();
        (info.status, info.message) = match (&outcome.result, stop) {
            (Ok(()), _) => (JobStatus::Succeeded, None),
            (Err(e), Some(Stop::Asked)) => (JobStatus::Stopped, Some(format!("stopped: {e}"))),
            (Err(e), Some(Stop::TimedOut(secs))) => (
                JobStatus::Failed,
                Some(format!(
                    "timed out: the job ran past its timeout of {secs} s and was stopped ({e})"
                )),
            ),
            (Err(e), None) => (JobStatus::Failed, Some(e.to_string())),
        };
        info.end_time = Some(unix_now());
        drop(info);
        self.log.close();
    }
}

/// The jobs of a node (see the module docs).
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    config: JobsConfig,
    /// Remembered jobs, oldest first.
    entries: Mutex<VecDeque<Arc<Entry>>>,
    /// The drivers' threads not yet joined.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Inner {
    fn running(entries: &VecDeque<Arc<Entry>>) -> usize {
        entries.iter().filter(|e| !e.status().is_terminal()).count()
    }

    /// Remembers `entry`, forgetting the oldest finished job to make room.
    ///
    /// # Errors
    /// [`JobError::Busy`] when `max_running` jobs run, or no finished job
    /// can be forgotten.
    fn insert(&self, entry: Arc<Entry>) -> Result<(), JobError> {
        let mut entries = self.entries.lock();
        let running = Self::running(&entries);
        let busy = JobError::Busy {
            running,
            max: self.config.max_running,
        };
        if running >= self.config.max_running {
            return Err(busy);
        }
        if entries.len() >= self.config.max_kept.max(1) {
            let Some(old) = entries.iter().position(|e| e.status().is_terminal()) else {
                return Err(busy);
            };
            entries.remove(old);
        }
        entries.push_back(entry);
        Ok(())
    }

    fn find(&self, job: JobId) -> Result<Arc<Entry>, JobError> {
        self.entries
            .lock()
            .iter()
            .find(|e| e.job == job)
            .cloned()
            .ok_or(JobError::NotFound(job, self.config.max_kept))
    }
}

impl Jobs {
    /// An empty table bounded by `config`.
    pub fn new(config: JobsConfig) -> Self {
        Jobs {
            inner: Arc::new(Inner {
                config,
                entries: Mutex::new(VecDeque::new()),
                threads: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Runs `main(args)` of deployed component `component` on `node` as a
    /// new job, in the background, with no options; see
    /// [`Jobs::submit_with_blocking`].
    ///
    /// # Errors
    /// As [`Jobs::submit_with_blocking`].
    pub fn submit_blocking<N>(
        &self,
        node: N,
        component: &str,
        args: Vec<String>,
    ) -> Result<JobInfo, JobError>
    where
        N: Deref<Target = Node> + Send + 'static,
    {
        self.submit_with_blocking(node, component, args, JobOptions::default())
    }

    /// Runs `main(args)` of deployed component `component` (`name`, or
    /// `name@version` for a kept version) on `node` as a new job, in the
    /// background, with `options`; returns once the job has its id (its
    /// driver may not have started: it waits for the resources it asked
    /// for).
    ///
    /// # Errors
    /// [`JobError::Node`] for a component that is not deployed (or not in
    /// that version) or has no `main`; [`JobError::ArgsTooLong`];
    /// [`JobError::BadOptions`], [`JobError::DirNotAllowed`] or
    /// [`JobError::Infeasible`] for options the node refuses;
    /// [`JobError::Busy`] past the bounds; [`JobError::Thread`].
    ///
    /// Blocks the calling thread until the job has its id: call it outside
    /// an async runtime ([`Jobs::submit_async`] inside one); inside one it
    /// refuses with [`Error::BlockingInRuntime`] (as [`JobError::Node`]).
    pub fn submit_with_blocking<N>(
        &self,
        node: N,
        component: &str,
        args: Vec<String>,
        options: JobOptions,
    ) -> Result<JobInfo, JobError>
    where
        N: Deref<Target = Node> + Send + 'static,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            // Blocking here would hold a thread the runtime serves other
            // tasks on (and tokio's `blocking_recv` panics there).
            return Err(Error::BlockingInRuntime("Jobs::submit_with_blocking").into());
        }
        let admitted = self.spawn_job(node, component, args, options)?;
        admitted
            .blocking_recv()
            .unwrap_or_else(|_| Err(thread_ended()))
    }

    /// [`Jobs::submit_with_blocking`] as a future: the job is prepared (its
    /// component loaded, compiled if need be) on its own thread, and the
    /// future resolves once it has its id.
    ///
    /// # Errors
    /// As [`Jobs::submit_with_blocking`].
    pub async fn submit_async<N>(
        &self,
        node: N,
        component: &str,
        args: Vec<String>,
        options: JobOptions,
    ) -> Result<JobInfo, JobError>
    where
        N: Deref<Target = Node> + Send + 'static,
    {
        let admitted = self.spawn_job(node, component, args, options)?;
        admitted.await.unwrap_or_else(|_| Err(thread_ended()))
    }

    /// Starts job's thread, which prepares and remembers the job, then
    /// runs it; the receiver gets its info once it has an id, or why it
    /// cannot run.
    fn spawn_job<N>(
        &self,
        node: N,
        component: &str,
        args: Vec<String>,
        options: JobOptions,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<JobInfo, JobError>>, JobError>
    where
        N: Deref<Target = Node> + Send + 'static,
    {
        if args.len() > MAX_JOB_ARGS {
            return Err(JobError::BadOptions(format!(
                "the job has {} arguments, the most is {}",
                args.len(),
                MAX_JOB_ARGS
            )));
        }
        let size = args
            .iter()
            .map(String::len)
            .fold(0usize, usize::saturating_add);
        if size > MAX_JOB_ARGS_BYTES {
            return Err(JobError::ArgsTooLong(size));
        }
        // Checked again (under the lock) when the job is remembered; this
        // one spares a thread for a job that cannot run.
        let (running, max) = (self.running(), self.inner.config.max_running);
        if running >= max {
            return Err(JobError::Busy { running, max });
        }
        let submitted = Instant::now();
        let checked = options.check(&node)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let inner = self.inner.clone();
        let asked = Asked {
            component: component.to_string(),
            args,
            options,
            // No deadline when it reaches past what an Instant holds.
            deadline: checked.timeout.and_then(|t| submitted.checked_add(t)),
        };
        let thread = std::thread::Builder::new()
            .name("wray-job".into())
            .spawn(move || {
                let args = asked.args.clone();
                let deadline = asked.deadline;
                let Some((entry, prepared)) = admit(&node, &inner, asked, checked, tx) else {
                    return;
                };
                let _timer = deadline.zip(entry.timeout()).map(|(at, secs)| {
                    let entry = entry.clone();
                    node.at(at, move || {
                        entry.stop(Stop::TimedOut(secs));
                    })
                });
                let outcome = node.run_prepared(prepared, &args, || entry.started());
                entry.ended(&outcome);
            })
            .map_err(JobError::Thread)?;
        let mut threads = self.inner.threads.lock();
        threads.retain(|t| !t.is_finished());
        threads.push(thread);
        drop(threads);
        Ok(rx)
    }

    /// Every remembered job, oldest first.
    pub fn list(&self) -> Vec<JobInfo> {
        self.inner.entries.lock().iter().map(|e| e.info()).collect()
    }

    /// Job `job`.
    ///
    /// # Errors
    /// [`JobError::NotFound`].
    pub fn info(&self, job: JobId) -> Result<JobInfo, JobError> {
        Ok(self.inner.find(job)?.info())
    }

    /// Job `job`'s log, and the job's status now.
    ///
    /// # Errors
    /// [`JobError::NotFound`].
    pub fn log(&self, job: JobId) -> Result<(Arc<JobLog>, JobStatus), JobError> {
        let entry = self.inner.find(job)?;
        Ok((entry.log.clone(), entry.status()))
    }

    /// Asks job `job` to stop: its driver, tasks and actors are cancelled
    /// (within one epoch tick) and it ends `Stopped`. `false` when it had
    /// already ended.
    ///
    /// # Errors
    /// [`JobError::NotFound`].
    pub fn stop(&self, job: JobId) -> Result<bool, JobError> {
        Ok(self.inner.find(job)?.stop(Stop::Asked))
    }

    /// Forgets finished job `job` and its log.
    ///
    /// # Errors
    /// [`JobError::NotFound`]; [`JobError::StillRunning`].
    pub fn delete(&self, job: JobId) -> Result<(), JobError> {
        let mut entries = self.inner.entries.lock();
        let index = entries
            .iter()
            .position(|e| e.job == job)
            .ok_or(JobError::NotFound(job, self.inner.config.max_kept))?;
        if !entries[index].status().is_terminal() {
            return Err(JobError::StillRunning(job));
        }
        entries.remove(index);
        Ok(())
    }

    /// The remembered jobs by status: each of [`JobStatus::ALL`] with its
    /// count, zero included (the `wray_jobs` series of `/metrics`).
    pub fn counts(&self) -> [(JobStatus, usize); 5] {
        let entries = self.inner.entries.lock();
        let mut counts = JobStatus::ALL.map(|s| (s, 0));
        for e in entries.iter() {
            let status = e.status();
            if let Some((_, n)) = counts.iter_mut().find(|(s, _)| *s == status) {
                *n += 1;
            }
        }
        counts
    }

    /// How many jobs run now.
    pub fn running(&self) -> usize {
        Inner::running(&self.inner.entries.lock())
    }

    /// Waits up to `timeout` for every running job to end on its own;
    /// `true` when none runs any more.
    pub async fn drain(&self, timeout: Duration) -> bool {
        // No deadline when `timeout` reaches past what an Instant holds.
        let deadline = Instant::now().checked_add(timeout);
        while self.running() > 0 {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// Stops every running job and joins the drivers' threads.
    pub fn stop_all(&self) {
        for entry in self.inner.entries.lock().iter() {
            entry.stop(Stop::Asked);
        }
        let threads = std::mem::take(&mut *self.inner.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs::new(JobsConfig::default())
    }
}

/// What a client submitted, with its deadline.
struct Asked {
    component: String,
    args: Vec<String>,
    options: JobOptions,
    deadline: Option<Instant>,
}

/// Why a submitter got no answer from its job's thread.
fn thread_ended() -> JobError {
    JobError::Thread(std::io::Error::other(
        "the job's thread ended before the job had an id",
    ))
}

/// On a job's own thread: prepares the job and remembers it, answering
/// the submitter through `tx` with its info or why it cannot run; the
/// entry and the prepared job when it may run.
fn admit<N: Deref<Target = Node>>(
    node: &N,
    inner: &Inner,
    asked: Asked,
    checked: Checked,
    tx: tokio::sync::oneshot::Sender<Result<JobInfo, JobError>>,
) -> Option<(Arc<Entry>, PreparedJob)> {
    let log = Arc::new(JobLog::new(inner.config.log_bytes));
    let cancel = CancelToken::new();
    let prepared =
        match node.prepare_job(&asked.component, Some(log.clone()), cancel.clone(), checked) {
            Ok(p) => p,
            Err(e) => {
                let _ = tx.send(Err(e.into()));
                return None;
            }
        };
    let job = prepared.job;
    let entry = Arc::new(Entry {
        job,
        log,
        cancel,
        stop: Mutex::new(None),
        info: Mutex::new(JobInfo {
            job_id: job.to_string(),
            component: asked.component,
            args: asked.args,
            status: JobStatus::Pending,
            message: None,
            submitted_at: unix_now(),
            start_time: None,
            end_time: None,
            driver_task: TaskId::driver(job).to_string(),
            node_id: node.id().to_string(),
            log_bytes: 0,
            options: asked.options,
        }),
    });
    if let Err(e) = inner.insert(entry.clone()) {
        let _ = tx.send(Err(e));
        node.abandon_job(prepared);
        return None;
    }
    let _ = tx.send(Ok(entry.info()));
    Some((entry, prepared))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_reads_as_its_json_says_it() {
        use JobStatus::*;
        for s in [Pending, Running, Succeeded, Failed, Stopped] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
