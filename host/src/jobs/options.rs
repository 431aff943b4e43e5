//! A job's options, as Ray's Jobs API takes them: directories and
//! environment variables (its `runtime_env`), resources for the driver
//! (its entrypoint resources), a time limit and metadata.
//! [`JobOptions`] is what a client sends; [`JobOptions::check`] holds it
//! to its bounds and to the node (the directories it allows, the
//! resources it has) before the job is admitted, each bound checked
//! before it sizes anything and named when refused.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::bounds::{MAX_CUSTOM_RESOURCES, MAX_TIMEOUT};
use crate::config::Preopen;
use crate::job_env::{check_dir, JobEnv, PortableEnv, WorkingDirRef};
use crate::jobs::JobError;
use crate::node::Node;
use crate::proto::ResourceOptions;
use crate::resources::Request;
use crate::working_dir::{PackageId, Pinned};

pub use wray_api::jobs::{
    JobDir, JobOptions, MAX_JOB_DIRS, MAX_JOB_ENV_BYTES, MAX_JOB_ENV_VARS, MAX_JOB_METADATA,
    MAX_JOB_METADATA_BYTES, MAX_JOB_PATH_BYTES, MAX_JOB_RESOURCES,
};

// The API's bound on a job's custom resources is the node's.
const _: () = assert!(MAX_JOB_RESOURCES == MAX_CUSTOM_RESOURCES);

/// [`JobOptions`] checked, in the node's terms.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// The job's directories, variables and working directory (empty
    /// when it has none).
    pub env: JobEnv,
    /// Its working directory's package, held while the job runs.
    pub pin: Option<Pinned>,
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
                .check_feasible_here(r)
                .map_err(|e| JobError::Infeasible(e.to_string()))?;
        }
        let config = node.config();
        let mut preopens: Vec<Preopen> = Vec::with_capacity(self.dirs.len() + 1);
        let taken = |preopens: &[Preopen], guest: &str| {
            if preopens
                .iter()
                .chain(&config.preopens)
                .any(|p| p.guest == guest)
            {
                return Err(JobError::BadOptions(format!(
                    "guest path {} is named twice (by the job, or by the node's own --dir)",
                    cut(guest)
                )));
            }
            Ok(())
        };
        for dir in &self.dirs {
            let preopen = check_dir(&dir.host, &dir.guest, &config.allow_dirs)?;
            taken(&preopens, &preopen.guest)?;
            preopens.push(preopen);
        }
        // As resolved here: what the other nodes publish is resolved too.
        let dirs: Vec<(String, String)> = preopens
            .iter()
            .map(|p| (p.host.to_string_lossy().into_owned(), p.guest.clone()))
            .collect();
        let hosts: Vec<String> = dirs.iter().map(|(h, _)| h.clone()).collect();
        if let Some((cluster, nodes)) = node.nodes_lacking_dirs(&hosts) {
            return Err(JobError::DirsNotInCluster {
                cluster,
                dirs: hosts,
                nodes,
            });
        }
        let mut pin = None;
        let mut working_dir = None;
        if let Some(w) = &self.working_dir {
            let bad = |m: String| JobError::BadOptions(format!("`working_dir`: {m}"));
            let id = PackageId::parse(&w.package).map_err(|e| bad(e.to_string()))?;
            if w.guest.is_empty() || w.guest.contains('\0') || w.guest.len() > MAX_JOB_PATH_BYTES {
                return Err(bad(format!(
                    "guest path `{}` is empty, has a NUL or more than {MAX_JOB_PATH_BYTES} bytes",
                    cut(&w.guest)
                )));
            }
            taken(&preopens, &w.guest)?;
            let pinned = node.working_dirs.pin(id).map_err(JobError::WorkingDir)?;
            let bytes = node.working_dirs.info(id).map_or(0, |k| k.bytes);
            preopens.push(Preopen {
                host: pinned.path().to_path_buf(),
                guest: w.guest.clone(),
            });
            working_dir = Some(WorkingDirRef {
                package: id,
                bytes,
                guest: w.guest.clone(),
            });
            pin = Some(pinned);
        }
        let env = JobEnv {
            preopens,
            portable: PortableEnv {
                vars: self
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                dirs,
                working_dir,
                log_node: None,
            },
        };
        Ok(Checked {
            env,
            pin,
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
