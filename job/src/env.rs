//! [`JobEnv`]: what a job's guests get beyond the node's own WASI set-up,
//! the job's part of Ray's `runtime_env`: directories preopened read-only
//! (the job's `dirs` and its working directory) and environment
//! variables. Every instance of the job (its driver, its tasks, its
//! actors) is made with them, on every node its tasks reach; the node's
//! own `--dir` directories stay.
//!
//! What travels with a forwarded task is the job's [`PortableEnv`]: its
//! variables, its directories as asked, its working directory's package
//! and the node whose job log takes the output. The node it reaches
//! checks it against the same bounds ([`PortableEnv::check`]) and its own
//! allowed directories ([`check_dir`]), and holds the job's environment
//! until the job ends there.
//!
//! [`JobEnvs`] holds them by job: the jobs this node runs (at most one
//! entry per running job: the job's end removes it), and the jobs whose
//! tasks other nodes sent here (at most [`MAX_ADOPTED_JOBS`], the oldest
//! forgotten first; the job's end, told by the node that sent them, or
//! that node's death removes one).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use wray_api::jobs::{MAX_JOB_DIRS, MAX_JOB_ENV_BYTES, MAX_JOB_ENV_VARS, MAX_JOB_PATH_BYTES};
use wray_control_plane::{JobId, NodeId};

use crate::id_map::BoundedIdMap;
use crate::outbox::Outbox;
use crate::working_dir::{PackageId, Pinned};
use wray_config::Preopen;

/// The most jobs whose tasks other nodes sent here that a node holds the
/// environment of at once; past it the oldest is forgotten (its later
/// tasks here bring it again).
pub(crate) const MAX_ADOPTED_JOBS: usize = 4_096;

/// A job's directories and environment variables on this node, checked
/// (see `Jobs::submit_with_blocking`, and [`PortableEnv::check`] for a job whose
/// tasks another node sent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobEnv {
    /// Directories the job's guests read (read-only) here: its `dirs`,
    /// then its working directory; host paths canonical.
    pub preopens: Vec<Preopen>,
    /// What travels with its tasks to other nodes.
    pub portable: PortableEnv,
}

/// What of a job's environment travels with its tasks to other nodes
/// (in the `RunTask` message), as the job asked for it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortableEnv {
    /// Environment variables of the job's guests.
    pub vars: Vec<(String, String)>,
    /// Host directories, as asked (absolute paths), and where the guests
    /// see them.
    pub dirs: Vec<(String, String)>,
    /// The job's working directory, if it has one.
    pub working_dir: Option<WorkingDirRef>,
    /// The node whose job log takes the output of the job's guests
    /// (`None`: the job has no log).
    pub log_node: Option<String>,
}

/// A job's working directory as it travels: a package, and where the
/// guests see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkingDirRef {
    /// The package.
    pub package: PackageId,
    /// Its size, in bytes.
    pub bytes: u64,
    /// Where the job's guests see it.
    pub guest: String,
}

impl PortableEnv {
    /// Whether it carries nothing but the log's node.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty() && self.dirs.is_empty() && self.working_dir.is_none()
    }

    /// Checks it against the bounds a job's options are held to (it came
    /// from a peer): counts, byte sizes, variable names, paths, the log's
    /// node id.
    ///
    /// # Errors
    /// [`EnvBoundError`], naming the bound or the value.
    pub fn check(&self) -> Result<(), EnvBoundError> {
        if self.vars.len() > MAX_JOB_ENV_VARS {
            return Err(EnvBoundError::Vars(self.vars.len()));
        }
        let bytes = self
            .vars
            .iter()
            .map(|(k, v)| k.len().saturating_add(v.len()))
            .fold(0usize, usize::saturating_add);
        if bytes > MAX_JOB_ENV_BYTES {
            return Err(EnvBoundError::VarBytes(bytes));
        }
        if let Some((k, _)) = self
            .vars
            .iter()
            .find(|(k, v)| k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0'))
        {
            return Err(EnvBoundError::VarName(cut(k)));
        }
        if self.dirs.len() > MAX_JOB_DIRS {
            return Err(EnvBoundError::Dirs(self.dirs.len()));
        }
        let paths = self
            .dirs
            .iter()
            .flat_map(|(h, g)| [h, g])
            .chain(self.working_dir.iter().map(|w| &w.guest));
        for p in paths {
            if p.is_empty() || p.len() > MAX_JOB_PATH_BYTES || p.contains('\0') {
                return Err(EnvBoundError::Path(cut(p)));
            }
        }
        if let Some(node) = &self.log_node {
            NodeId::parse(node)?;
        }
        Ok(())
    }
}

/// A job's environment from a peer past the bounds a job's options are
/// held to.
#[derive(Debug, thiserror::Error)]
pub enum EnvBoundError {
    /// More variables than `MAX_JOB_ENV_VARS`.
    #[error("the job has {0} variables, the most is {MAX_JOB_ENV_VARS}")]
    Vars(usize),
    /// Variables of more bytes (names and values) than
    /// `MAX_JOB_ENV_BYTES`.
    #[error("the job's variables have {0} bytes, the most is {MAX_JOB_ENV_BYTES}")]
    VarBytes(usize),
    /// A variable (its name, cut short) with an empty name, `=` or a NUL.
    #[error("variable `{0}` has an empty name, `=` or a NUL")]
    VarName(String),
    /// More directories than `MAX_JOB_DIRS`.
    #[error("the job has {0} directories, the most is {MAX_JOB_DIRS}")]
    Dirs(usize),
    /// A path (cut short) empty, too long or with a NUL.
    #[error("path `{0}` is empty, longer than {MAX_JOB_PATH_BYTES} bytes or has a NUL")]
    Path(String),
    /// The log's node id is malformed.
    #[error(transparent)]
    LogNode(#[from] wray_control_plane::Error),
}

/// Why a job may not read a directory here.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// A path that is malformed or not a directory.
    #[error("{0}")]
    Bad(String),
    /// A path the node does not let jobs read.
    #[error("the job may not read {path}: {reason}; {}", allowed_text(.allowed))]
    NotAllowed {
        /// The host path asked for.
        path: String,
        /// Why it is refused.
        reason: String,
        /// The directories the node allows (`--allow-dir`).
        allowed: Vec<PathBuf>,
    },
}

/// What the node allows jobs to read, for a refusal.
pub fn allowed_text(allowed: &[PathBuf]) -> String {
    if allowed.is_empty() {
        return "the node allows jobs no directory (start it with --allow-dir DIR)".to_string();
    }
    let dirs: Vec<String> = allowed.iter().map(|d| d.display().to_string()).collect();
    format!(
        "the node allows jobs to read under {} (--allow-dir)",
        dirs.join(", ")
    )
}

/// Host directory `host`, seen at `guest`, as a preopen, if the node
/// allows it: an absolute host path without `..`, under one of `allowed`
/// as written and once every link is resolved, of a directory.
///
/// # Errors
/// [`DirError`] naming the path and why.
pub fn check_dir(host: &str, guest: &str, allowed: &[PathBuf]) -> Result<Preopen, DirError> {
    if host.len() > MAX_JOB_PATH_BYTES || guest.len() > MAX_JOB_PATH_BYTES {
        return Err(DirError::Bad(format!(
            "a directory's path has more than {MAX_JOB_PATH_BYTES} bytes"
        )));
    }
    if guest.is_empty() || guest.contains('\0') || host.contains('\0') {
        return Err(DirError::Bad(format!(
            "directory {} -> `{}`: a path is empty or contains a NUL",
            cut(host),
            cut(guest)
        )));
    }
    let refuse = |reason: String| DirError::NotAllowed {
        path: cut(host),
        reason,
        allowed: allowed.to_vec(),
    };
    let path = Path::new(host);
    if !path.is_absolute() {
        return Err(refuse("it is not an absolute path".into()));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(refuse("it contains `..`".into()));
    }
    // Allowed as written and as resolved (an allowed directory given
    // through a link is still allowed).
    let resolved: Vec<PathBuf> = allowed
        .iter()
        .filter_map(|a| std::fs::canonicalize(a).ok())
        .collect();
    let inside = |p: &Path| allowed.iter().chain(&resolved).any(|a| p.starts_with(a));
    if !inside(path) {
        return Err(refuse(
            "it is not inside a directory the node allows".into(),
        ));
    }
    let canonical = std::fs::canonicalize(path)
        .map_err(|e| DirError::Bad(format!("directory {}: {e}", cut(host))))?;
    if !resolved.iter().any(|a| canonical.starts_with(a)) {
        return Err(refuse(format!(
            "it resolves to {} (through a link), outside the directories the node allows",
            cut(&canonical.to_string_lossy())
        )));
    }
    if !canonical.is_dir() {
        return Err(DirError::Bad(format!("{} is not a directory", cut(host))));
    }
    Ok(Preopen {
        host: canonical,
        guest: guest.to_string(),
    })
}

/// `text`, cut to 256 bytes for an error message.
fn cut(text: &str) -> String {
    crate::bounds::truncate(text.to_string(), 256)
}

/// One job's environment as held.
struct Entry {
    env: Arc<JobEnv>,
    /// Its working directory's package, held while the job runs here.
    _pin: Option<Pinned>,
    /// Where its guests' output goes, on a node other than the job's.
    outbox: Option<Arc<Outbox>>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(outbox) = &self.outbox {
            outbox.close();
        }
    }
}

#[derive(Default)]
struct Tables {
    /// The jobs this node runs.
    own: HashMap<JobId, Entry>,
    /// The jobs whose tasks other nodes sent here.
    adopted: Option<BoundedIdMap<JobId, Entry>>,
}

impl Tables {
    fn adopted(&mut self) -> &mut BoundedIdMap<JobId, Entry> {
        self.adopted
            .get_or_insert_with(|| BoundedIdMap::new(MAX_ADOPTED_JOBS))
    }

    fn get(&self, job: &JobId) -> Option<&Entry> {
        self.own
            .get(job)
            .or_else(|| self.adopted.as_ref().and_then(|a| a.get(job)))
    }
}

/// The environments of the jobs that have one here, by job (see the
/// module docs).
#[derive(Default)]
pub struct JobEnvs(RwLock<Tables>);

impl JobEnvs {
    /// Gives every instance of `job` (run by this node) made from now on
    /// `env`, holding `pin` (its working directory) until the job ends.
    pub fn insert(&self, job: JobId, env: Arc<JobEnv>, pin: Option<Pinned>) {
        let entry = Entry {
            env,
            _pin: pin,
            outbox: None,
        };
        let old = self.0.write().own.insert(job, entry);
        drop(old);
    }

    /// Gives every instance of `job` (whose tasks another node sent here)
    /// made from now on `env`, with its output into `outbox`, unless the
    /// job has an environment here already; whether it was taken.
    pub fn adopt(
        &self,
        job: JobId,
        env: Arc<JobEnv>,
        pin: Option<Pinned>,
        outbox: Option<Arc<Outbox>>,
    ) -> bool {
        let entry = Entry {
            env,
            _pin: pin,
            outbox,
        };
        let mut tables = self.0.write();
        if tables.get(&job).is_some() {
            drop(tables);
            drop(entry);
            return false;
        }
        let evicted = tables.adopted().insert(job, entry);
        drop(tables);
        drop(evicted);
        true
    }

    /// Forgets `job`'s environment (the job ended), whichever table holds
    /// it.
    pub fn remove(&self, job: JobId) {
        let mut tables = self.0.write();
        let own = tables.own.remove(&job);
        let adopted = tables.adopted().remove(&job);
        drop(tables);
        drop((own, adopted));
    }

    /// Forgets the environment of `job` if another node sent its tasks
    /// here (the job ended here).
    pub fn remove_adopted(&self, job: JobId) {
        let gone = self.0.write().adopted().remove(&job);
        drop(gone);
    }

    /// Forgets the environments of the jobs whose log is on node `node`
    /// (it died: their output has nowhere to go, and they end): those
    /// jobs.
    pub fn forget_node(&self, node: &str) -> Vec<JobId> {
        let mut tables = self.0.write();
        let gone = tables
            .adopted()
            .take_where(|_, e| e.env.portable.log_node.as_deref() == Some(node));
        drop(tables);
        gone.into_iter().map(|(job, _)| job).collect()
    }

    /// The nodes the logs of the jobs adopted here are on.
    pub fn log_nodes(&self) -> Vec<String> {
        let tables = self.0.read();
        let Some(adopted) = &tables.adopted else {
            return Vec::new();
        };
        adopted
            .values()
            .filter_map(|e| e.env.portable.log_node.clone())
            .collect()
    }

    /// Whether `job` has an environment here.
    pub fn has(&self, job: JobId) -> bool {
        self.0.read().get(&job).is_some()
    }

    /// `job`'s environment, if it has one here.
    pub fn get(&self, job: JobId) -> Option<Arc<JobEnv>> {
        self.0.read().get(&job).map(|e| e.env.clone())
    }

    /// Where `job`'s guests' output goes, when its log is on another
    /// node.
    pub fn outbox(&self, job: JobId) -> Option<Arc<Outbox>> {
        self.0.read().get(&job).and_then(|e| e.outbox.clone())
    }

    /// The host directories `job`'s tasks need (its `dirs`, as asked):
    /// a node runs them only if it allows each
    /// (`NodeRecord::allows_dirs`).
    pub fn host_dirs(&self, job: JobId) -> Vec<String> {
        self.0.read().get(&job).map_or_else(Vec::new, |e| {
            e.env.portable.dirs.iter().map(|(h, _)| h.clone()).collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_must_be_inside_an_allowed_one_as_written_and_resolved() {
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("allowed");
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, allowed.join("escape")).unwrap();
        let allow = vec![allowed.clone()];
        let at = |p: &Path| check_dir(&p.to_string_lossy(), "/data", &allow);

        let ok = at(&allowed.join("sub")).unwrap();
        assert_eq!(ok.host, std::fs::canonicalize(allowed.join("sub")).unwrap());
        for (path, why) in [
            (outside.clone(), "not inside"),
            (allowed.join("escape"), "through a link"),
            (allowed.join("sub/../../outside"), "`..`"),
            (PathBuf::from("relative"), "not an absolute path"),
        ] {
            let err = at(&path).unwrap_err().to_string();
            assert!(err.contains(why), "{}: {err}", path.display());
            assert!(err.contains(&allowed.display().to_string()), "{err}");
        }
        let err = check_dir(&allowed.to_string_lossy(), "/d", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--allow-dir"), "{err}");
        let err = at(&allowed.join("missing")).unwrap_err().to_string();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn a_portable_env_from_a_peer_is_held_to_the_jobs_bounds() {
        let good = PortableEnv {
            vars: vec![("K".into(), "v".into())],
            dirs: vec![("/data".into(), "/data".into())],
            working_dir: None,
            log_node: Some("node-0123456789abcdef".into()),
        };
        good.check().unwrap();
        let cases: Vec<(PortableEnv, &str)> = vec![
            (
                PortableEnv {
                    vars: (0..=MAX_JOB_ENV_VARS)
                        .map(|i| (format!("K{i}"), String::new()))
                        .collect(),
                    ..good.clone()
                },
                "the most is 128",
            ),
            (
                PortableEnv {
                    vars: vec![("K".into(), "v".repeat(MAX_JOB_ENV_BYTES))],
                    ..good.clone()
                },
                "the most is 65536",
            ),
            (
                PortableEnv {
                    vars: vec![("A=B".into(), String::new())],
                    ..good.clone()
                },
                "`=`",
            ),
            (
                PortableEnv {
                    dirs: vec![("/x".into(), "/x".into()); MAX_JOB_DIRS + 1],
                    ..good.clone()
                },
                "the most is 16",
            ),
            (
                PortableEnv {
                    dirs: vec![("/x".into(), String::new())],
                    ..good.clone()
                },
                "empty",
            ),
            (
                PortableEnv {
                    log_node: Some("node-1".into()),
                    ..good.clone()
                },
                "node id",
            ),
        ];
        for (env, says) in cases {
            let err = env.check().unwrap_err().to_string();
            assert!(err.contains(says), "{err} should say {says}");
        }
    }

    #[test]
    fn an_adopted_job_is_taken_once_and_forgotten_with_its_log_node() {
        let envs = JobEnvs::default();
        let env = |node: &str| {
            Arc::new(JobEnv {
                preopens: Vec::new(),
                portable: PortableEnv {
                    vars: vec![("K".into(), node.into())],
                    dirs: vec![("/srv/data".into(), "/data".into())],
                    working_dir: None,
                    log_node: Some(node.into()),
                },
            })
        };
        let outbox = Outbox::new("node-a");
        assert!(envs.adopt(JobId(1), env("node-a"), None, Some(outbox.clone())));
        assert!(
            !envs.adopt(JobId(1), env("node-b"), None, None),
            "taken once"
        );
        assert_eq!(envs.get(JobId(1)).unwrap().portable.vars[0].1, "node-a");
        assert_eq!(envs.host_dirs(JobId(1)), ["/srv/data"]);
        assert!(envs.outbox(JobId(1)).is_some());
        envs.adopt(JobId(2), env("node-b"), None, None);
        let mut logs = envs.log_nodes();
        logs.sort_unstable();
        assert_eq!(logs, ["node-a", "node-b"]);
        assert_eq!(envs.forget_node("node-a"), [JobId(1)], "the jobs it ends");
        assert!(envs.forget_node("node-a").is_empty());
        assert!(!envs.has(JobId(1)) && envs.has(JobId(2)));
        assert!(outbox.is_closed(), "its outbox closed with it");
        envs.remove_adopted(JobId(2));
        assert!(!envs.has(JobId(2)));
    }
}
