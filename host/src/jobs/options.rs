//! A job's options, as Ray's Jobs API takes them: directories and
//! environment variables (its `runtime_env`), resources for the driver
//! (its entrypoint resources), a time limit and metadata.
//! [`JobOptions`] is what a client sends; [`JobOptions::check`] holds it
//! to its bounds and to the node (the directories it allows, the
//! resources it has) before the job is admitted, each bound checked
//! before it sizes anything and named when refused.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::bounds::{MAX_CUSTOM_RESOURCES, MAX_TIMEOUT};
use crate::config::Preopen;
use crate::job_env::JobEnv;
use crate::jobs::JobError;
use crate::node::Node;
use crate::proto::ResourceOptions;
use crate::resources::Request;

pub use wray_api::jobs::{
    JobDir, JobOptions, MAX_JOB_DIRS, MAX_JOB_ENV_BYTES, MAX_JOB_ENV_VARS, MAX_JOB_METADATA,
    MAX_JOB_METADATA_BYTES, MAX_JOB_PATH_BYTES, MAX_JOB_RESOURCES,
};

// The API's bound on a job's custom resources is the node's.
const _: () = assert!(MAX_JOB_RESOURCES == MAX_CUSTOM_RESOURCES);

/// [`JobOptions`] checked, in the node's terms.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// The job's directories and variables; `None` when it has neither.
    pub env: Option<Arc<JobEnv>>,
    /// What the driver holds while it runs; `None`: nothing.
    pub request: Option<Request>,
    /// The job's time limit, from its submission.
    pub timeout: Option<Duration>,
}

/// [`JobOptions`] held to the node's bounds (the options are the API's
/// type, `wray_api::JobOptions`; the checks are the node's).
pub(crate) trait CheckOptions {
    /// Checks every option against its bound, and against `node`.
    ///
    /// # Errors
    /// As [`JobOptions::check`](CheckOptions::check).
    fn check(&self, node: &Node) -> Result<Checked, JobError>;
    /// The counts and byte sizes of the lists and maps.
    ///
    /// # Errors
    /// [`JobError::BadOptions`] naming the bound.
    fn check_sizes(&self) -> Result<(), JobError>;
    /// What the driver asks for; `None` when it asks for nothing.
    ///
    /// # Errors
    /// [`JobError::BadOptions`] naming the resource.
    fn request(&self) -> Result<Option<Request>, JobError>;
}

impl CheckOptions for JobOptions {
    /// Checks every option against its bound, and against `node`: each
    /// directory inside one the node allows (`NodeConfig::allow_dirs`:
    /// lexically, then once links are resolved), the driver's resources
    /// within what the node has.
    ///
    /// # Errors
    /// [`JobError::BadOptions`] naming the bound or the value;
    /// [`JobError::DirNotAllowed`]; [`JobError::Infeasible`].
    fn check(&self, node: &Node) -> Result<Checked, JobError> {
        self.check_sizes()?;
        let timeout = self.timeout.map(check_timeout).transpose()?;
        let request = self.request()?;
        if let Some(r) = &request {
            node.sched
                .pool
                .check_feasible(r)
                .map_err(JobError::Infeasible)?;
        }
        let config = node.config();
        let mut preopens: Vec<Preopen> = Vec::with_capacity(self.dirs.len());
        for dir in &self.dirs {
            let preopen = check_dir(dir, &config.allow_dirs)?;
            let taken = preopens
                .iter()
                .chain(&config.preopens)
                .any(|p| p.guest == preopen.guest);
            if taken {
                return Err(JobError::BadOptions(format!(
                    "guest path {} is named twice (by the job, or by the node's own --dir)",
                    cut(&preopen.guest)
                )));
            }
            preopens.push(preopen);
        }
        let env = JobEnv {
            preopens,
            vars: self
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        Ok(Checked {
            env: (!env.is_empty()).then(|| Arc::new(env)),
            request,
            timeout,
        })
    }

    /// The counts and byte sizes of the lists and maps, and the shapes of
    /// the variables.
    fn check_sizes(&self) -> Result<(), JobError> {
        let bad = |m: String| Err(JobError::BadOptions(m));
        if self.dirs.len() > MAX_JOB_DIRS {
            return bad(format!(
                "`dirs` has {} directories, the most a job may have is {MAX_JOB_DIRS}",
                self.dirs.len()
            ));
        }
        if self.env.len() > MAX_JOB_ENV_VARS {
            return bad(format!(
                "`env` has {} variables, the most a job may set is {MAX_JOB_ENV_VARS}",
                self.env.len()
            ));
        }
        let env_bytes = bytes_of(&self.env);
        if env_bytes > MAX_JOB_ENV_BYTES {
            return bad(format!(
                "`env` has {env_bytes} bytes, the most a job's variables may have is {MAX_JOB_ENV_BYTES}"
            ));
        }
        if let Some(name) = self
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains('=') || k.contains('\0'))
        {
            return bad(format!(
                "`env` variable name `{}` is empty or contains `=` or a NUL",
                cut(name)
            ));
        }
        if let Some(name) = self.env.iter().find(|(_, v)| v.contains('\0')).map(|e| e.0) {
            return bad(format!(
                "`env` variable `{}` has a NUL in its value",
                cut(name)
            ));
        }
        if self.metadata.len() > MAX_JOB_METADATA {
            return bad(format!(
                "`metadata` has {} entries, the most a job may carry is {MAX_JOB_METADATA}",
                self.metadata.len()
            ));
        }
        let metadata_bytes = bytes_of(&self.metadata);
        if metadata_bytes > MAX_JOB_METADATA_BYTES {
            return bad(format!(
                "`metadata` has {metadata_bytes} bytes, the most a job's metadata may have is {MAX_JOB_METADATA_BYTES}"
            ));
        }
        if self.resources.len() > MAX_CUSTOM_RESOURCES {
            return bad(format!(
                "`resources` names {} resources, the most is {MAX_CUSTOM_RESOURCES}",
                self.resources.len()
            ));
        }
        Ok(())
    }

    /// What the driver asks for; `None` when it asks for nothing.
    fn request(&self) -> Result<Option<Request>, JobError> {
        if self.num_cpus.is_none() && self.num_gpus.is_none() && self.resources.is_empty() {
            return Ok(None);
        }
        let asked = ResourceOptions {
            num_cpus: self.num_cpus,
            num_gpus: self.num_gpus,
            memory: None,
            custom: self
                .resources
                .iter()
                .map(|(n, q)| (n.clone(), *q))
                .collect(),
        };
        let request = Request::resolve(&asked, &ResourceOptions::default(), &Request::default())
            .map_err(JobError::BadOptions)?;
        Ok((request != Request::default()).then_some(request))
    }
}

/// `timeout` seconds as a duration: above 0 and at most a year.
fn check_timeout(secs: f64) -> Result<Duration, JobError> {
    let bad = || {
        JobError::BadOptions(format!(
            "`timeout` of {secs} s is out of range: above 0 and at most {} s (a year)",
            MAX_TIMEOUT.as_secs()
        ))
    };
    if !(secs > 0.0 && secs <= MAX_TIMEOUT.as_secs_f64()) {
        return Err(bad());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

/// `dir` as a preopen, if the node allows it: an absolute host path
/// without `..`, under one of `allowed` as written and once every link
/// is resolved, of a directory.
fn check_dir(dir: &JobDir, allowed: &[PathBuf]) -> Result<Preopen, JobError> {
    if dir.host.len() > MAX_JOB_PATH_BYTES || dir.guest.len() > MAX_JOB_PATH_BYTES {
        return Err(JobError::BadOptions(format!(
            "a directory's path has more than {MAX_JOB_PATH_BYTES} bytes"
        )));
    }
    if dir.guest.is_empty() || dir.guest.contains('\0') || dir.host.contains('\0') {
        return Err(JobError::BadOptions(format!(
            "directory {} -> `{}`: a path is empty or contains a NUL",
            cut(&dir.host),
            cut(&dir.guest)
        )));
    }
    let refuse = |reason: String| JobError::DirNotAllowed {
        path: cut(&dir.host),
        reason,
        allowed: allowed.to_vec(),
    };
    let host = Path::new(&dir.host);
    if !host.is_absolute() {
        return Err(refuse("it is not an absolute path".into()));
    }
    if host.components().any(|c| c == Component::ParentDir) {
        return Err(refuse("it contains `..`".into()));
    }
    // Allowed as written and as resolved (an allowed directory given
    // through a link is still allowed).
    let resolved: Vec<PathBuf> = allowed
        .iter()
        .filter_map(|a| std::fs::canonicalize(a).ok())
        .collect();
    let inside = |p: &Path| allowed.iter().chain(&resolved).any(|a| p.starts_with(a));
    if !inside(host) {
        return Err(refuse(
            "it is not inside a directory the node allows".into(),
        ));
    }
    let canonical = std::fs::canonicalize(host)
        .map_err(|e| JobError::BadOptions(format!("directory {}: {e}", cut(&dir.host))))?;
    if !resolved.iter().any(|a| canonical.starts_with(a)) {
        return Err(refuse(format!(
            "it resolves to {} (through a link), outside the directories the node allows",
            cut(&canonical.to_string_lossy())
        )));
    }
    if !canonical.is_dir() {
        return Err(JobError::BadOptions(format!(
            "{} is not a directory",
            cut(&dir.host)
        )));
    }
    Ok(Preopen {
        host: canonical,
        guest: dir.guest.clone(),
    })
}

/// Bytes of a map's keys and values in all (saturating).
fn bytes_of(map: &BTreeMap<String, String>) -> usize {
    map.iter()
        .map(|(k, v)| k.len().saturating_add(v.len()))
        .fold(0usize, usize::saturating_add)
}

/// `text`, cut to 256 bytes for an error message.
fn cut(text: &str) -> String {
    crate::bounds::truncate(text.to_string(), 256)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(host: &str) -> JobDir {
        JobDir {
            host: host.into(),
            guest: "/data".into(),
        }
    }

    #[test]
    fn a_directory_must_be_inside_an_allowed_one_as_written_and_resolved() {
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("allowed");
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, allowed.join("escape")).unwrap();
        let allow = vec![allowed.clone()];
        let at = |p: &Path| dir(&p.to_string_lossy());

        let ok = check_dir(&at(&allowed.join("sub")), &allow).unwrap();
        assert_eq!(ok.host, std::fs::canonicalize(allowed.join("sub")).unwrap());
        for (path, why) in [
            (outside.clone(), "not inside"),
            (allowed.join("escape"), "through a link"),
            (allowed.join("sub/../../outside"), "`..`"),
            (PathBuf::from("relative"), "not an absolute path"),
        ] {
            let err = check_dir(&at(&path), &allow).unwrap_err().to_string();
            assert!(err.contains(why), "{}: {err}", path.display());
            assert!(err.contains(&allowed.display().to_string()), "{err}");
        }
        let err = check_dir(&at(&allowed), &[]).unwrap_err().to_string();
        assert!(err.contains("--allow-dir"), "{err}");
        let err = check_dir(&at(&allowed.join("missing")), &allow)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn every_bound_is_named_when_passed() {
        let many = |n: usize| -> BTreeMap<String, String> {
            (0..n).map(|i| (format!("K{i}"), String::new())).collect()
        };
        let cases: Vec<(JobOptions, &str)> = vec![
            (
                JobOptions {
                    dirs: vec![dir("/x"); MAX_JOB_DIRS + 1],
                    ..JobOptions::default()
                },
                "the most a job may have is 16",
            ),
            (
                JobOptions {
                    env: many(MAX_JOB_ENV_VARS + 1),
                    ..JobOptions::default()
                },
                "the most a job may set is 128",
            ),
            (
                JobOptions {
                    env: BTreeMap::from([("K".into(), "v".repeat(MAX_JOB_ENV_BYTES))]),
                    ..JobOptions::default()
                },
                "the most a job's variables may have is 65536",
            ),
            (
                JobOptions {
                    env: BTreeMap::from([("A=B".into(), String::new())]),
                    ..JobOptions::default()
                },
                "contains `=`",
            ),
            (
                JobOptions {
                    metadata: many(MAX_JOB_METADATA + 1),
                    ..JobOptions::default()
                },
                "the most a job may carry is 64",
            ),
            (
                JobOptions {
                    metadata: BTreeMap::from([("k".into(), "v".repeat(MAX_JOB_METADATA_BYTES))]),
                    ..JobOptions::default()
                },
                "the most a job's metadata may have is 16384",
            ),
        ];
        for (options, bound) in cases {
            let err = options.check_sizes().unwrap_err().to_string();
            assert!(err.contains(bound), "{err}");
        }
        for t in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e12] {
            let err = check_timeout(t).unwrap_err().to_string();
            assert!(err.contains("a year"), "{err}");
        }
        assert_eq!(check_timeout(0.5).unwrap(), Duration::from_millis(500));
        let options = JobOptions {
            num_gpus: Some(-1.0),
            ..JobOptions::default()
        };
        assert!(options
            .request()
            .unwrap_err()
            .to_string()
            .contains("num_gpus"));
        let options = JobOptions {
            resources: BTreeMap::from([("CPU".into(), 1.0)]),
            ..JobOptions::default()
        };
        assert!(options
            .request()
            .unwrap_err()
            .to_string()
            .contains("num_cpus"));
        assert_eq!(JobOptions::default().request().unwrap(), None);
    }
}
