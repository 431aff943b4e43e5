//! [`JobEnv`]: what a job's guests get beyond the node's own WASI set-up,
//! the job's part of Ray's `runtime_env`: directories preopened read-only
//! and environment variables. Every instance of the job (its driver, its
//! tasks, its actors) is made with them; the node's own `--dir`
//! directories stay.
//!
//! [`JobEnvs`] holds them by job while the job runs (at most one entry per
//! running job: the job's end removes it).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};
use wray_control_plane::JobId;

use crate::config::Preopen;

/// A job's directories and environment variables, checked (see
/// `Jobs::submit_with`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobEnv {
    /// Directories the job's guests read (read-only), host paths
    /// canonical.
    pub preopens: Vec<Preopen>,
    /// Environment variables of the job's guests.
    pub vars: Vec<(String, String)>,
}

impl JobEnv {
    /// Whether it adds nothing to the node's set-up.
    pub fn is_empty(&self) -> bool {
        self.preopens.is_empty() && self.vars.is_empty()
    }
}

/// The environments of the running jobs that have one, by job.
#[derive(Default)]
pub(crate) struct JobEnvs(RwLock<HashMap<JobId, Arc<JobEnv>>>);

impl JobEnvs {
    /// Gives every instance of `job` made from now on `env`.
    pub(crate) fn insert(&self, job: JobId, env: Arc<JobEnv>) {
        self.0.write().insert(job, env);
    }

    /// Forgets `job`'s environment (the job ended).
    pub(crate) fn remove(&self, job: JobId) {
        self.0.write().remove(&job);
    }

    /// Whether `job` has an environment of its own.
    pub(crate) fn has(&self, job: JobId) -> bool {
        self.0.read().contains_key(&job)
    }

    /// Adds `job`'s variables and directories, if it has any, to `wasi`.
    pub(crate) fn apply(&self, wasi: &mut WasiCtxBuilder, job: JobId) {
        let Some(env) = self.0.read().get(&job).cloned() else {
            return;
        };
        wasi.envs(&env.vars);
        for p in &env.preopens {
            // Checked to be an allowed directory at submit; one removed
            // since is simply not visible to the guest.
            if let Err(e) = wasi.preopened_dir(&p.host, &p.guest, FsPerms::ReadOnly) {
                tracing::warn!(%job, dir = %p.host.display(), "cannot preopen: {e:#}");
            }
        }
    }
}
