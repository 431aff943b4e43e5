//! Running one job on a node: its component resolved (`name` or
//! `name@version`), its id issued, its log and environment attached
//! ([`Node::prepare_job`]); its driver's resources waited for and held,
//! the driver run, and the job ended ([`Node::run_prepared`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_control_plane::{JobId, TaskId};

use crate::cancel_token::CancelToken;
use crate::error::{Error, Result};
use crate::executor::component::LoadedComponent;
use crate::job_log::JobLog;
use crate::jobs::options::Checked;
use crate::node::driver::{self, DriverError, DriverOutcome};
use crate::node::Node;
use crate::resources::{Allocation, Request};

/// A job ready to run: its component resolved, its id issued, its log and
/// environment attached.
pub(crate) struct PreparedJob {
    pub(crate) job: JobId,
    loaded: Arc<LoadedComponent>,
    cancel: CancelToken,
    /// What its driver holds while it runs.
    request: Option<Request>,
}

/// Runs a closure when a deadline passes, unless dropped first.
pub(crate) struct Timer(tokio::task::JoinHandle<()>);

impl Drop for Timer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Node {
    /// Resolves `spec`'s `main` (`name`, or `name@version`), issues a job
    /// id and, with `log`, sends the output of every instance of the job
    /// to it; every instance gets `checked`'s directories and variables.
    ///
    /// # Errors
    /// [`Error::NotDeployed`], [`Error::VersionNotFound`],
    /// [`Error::NoMain`], or a control-plane error.
    pub(crate) fn prepare_job(
        &self,
        spec: &str,
        log: Option<Arc<JobLog>>,
        cancel: CancelToken,
        checked: Checked,
    ) -> Result<PreparedJob> {
        let loaded = self.loaded_spec_blocking(spec)?;
        if !loaded.record.has_main {
            return Err(Error::NoMain(spec.to_string()));
        }
        let job = self.start_job(&format!("{spec} main"))?;
        let Checked {
            mut env,
            pin,
            request,
            ..
        } = checked;
        if let Some(log) = log {
            self.exec.job_logs.insert(job, log);
            // Its guests' output on other nodes comes back here.
            env.portable.log_node = Some(self.id().to_string());
        }
        if env.portable.log_node.is_some() || !env.portable.is_empty() {
            self.exec.job_envs.insert(job, Arc::new(env), pin);
        }
        Ok(PreparedJob {
            job,
            loaded,
            cancel,
            request,
        })
    }

    /// Runs a prepared job's driver on the calling thread, once what it
    /// asked for is free (calling `started` then), then ends the job (its
    /// unfinished tasks cancelled, actors killed, objects freed) and
    /// detaches its log and environment. A job cancelled while it waits
    /// for its resources never starts.
    pub(crate) fn run_prepared(
        &self,
        prepared: PreparedJob,
        args: &[String],
        started: impl FnOnce(),
    ) -> DriverOutcome {
        let PreparedJob {
            job,
            loaded,
            cancel,
            request,
        } = prepared;
        let allocation = match &request {
            None => Some(Allocation::default()),
            Some(r) => self.driver_resources(r, &cancel),
        };
        let outcome = match allocation {
            Some(allocation) => {
                started();
                driver::run_driver(&self.exec, loaded, args, job, cancel, allocation)
            }
            None => DriverOutcome {
                result: Err(DriverError::NeverStarted(request.unwrap_or_default())),
                wall: Duration::ZERO,
                task: TaskId::driver(job),
            },
        };
        self.finish_job(job);
        outcome
    }

    /// Ends a prepared job without running it.
    pub(crate) fn abandon_job(&self, prepared: PreparedJob) {
        self.finish_job(prepared.job);
    }

    fn finish_job(&self, job: JobId) {
        self.end_job(job);
        self.exec.job_logs.remove(job);
        self.exec.job_envs.remove(job);
    }

    /// `request`, for a driver: at once, or once the node frees it; `None`
    /// when `cancel` or the node's shutdown comes first.
    fn driver_resources(&self, request: &Request, cancel: &CancelToken) -> Option<Allocation> {
        let mut waiting = match self.sched.acquire_for_driver(request) {
            Ok(allocation) => return Some(allocation),
            Err(waiting) => waiting,
        };
        let shutdown = self.sched.shutdown().clone();
        let got = self.exec.block_on(async {
            tokio::select! {
                got = &mut waiting => got.ok(),
                () = cancel.cancelled() => None,
                () = shutdown.cancelled() => None,
            }
        });
        if got.is_none() {
            // Handed over just as the wait ended: give it back.
            waiting.close();
            if let Ok(allocation) = waiting.try_recv() {
                self.sched.release_resources(&allocation);
            }
        }
        got
    }

    /// Runs `f` on the node's I/O runtime at `deadline`, unless the
    /// returned timer is dropped first.
    pub(crate) fn at(&self, deadline: Instant, f: impl FnOnce() + Send + 'static) -> Timer {
        Timer(self.exec.io.spawn(async move {
            tokio::time::sleep_until(deadline.into()).await;
            f();
        }))
    }
}
