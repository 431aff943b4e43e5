//! A job's environment on every node its tasks reach (Ray's
//! `runtime_env`): a forwarded task carries its job's [`PortableEnv`]
//! (`RunTask::env`), which the receiving node checks and takes
//! ([`adopt`]) before the task runs:
//!
//! - its variables, set in every instance of the job here;
//! - its host directories, each held to this node's `--allow-dir`s
//!   (refused, naming this node, when one is not allowed or missing:
//!   never a "No such file" in the middle of the job);
//! - its working directory, fetched once from the node that sent the
//!   task (which holds it: it runs the job's tasks with it), chunk by
//!   chunk, checked against its id before it is unpacked and kept
//!   ([`fetch`]);
//! - an [`Outbox`] for the output of the job's guests here, when its log
//!   is on another node: a sender ([`push`]) streams its whole lines to
//!   that node (`JobOutput`) while the tasks run, one batch at a time,
//!   so each task's lines arrive in order; a task's answer waits until
//!   its lines are there (`OUTPUT_FLUSH` at most), so that a job's log
//!   holds a task's output before the job sees its result.
//!
//! The job's environment goes when the job ends here (`JobEnded`, from
//! a node that sent its tasks), when its log's node dies, or past the
//! bound on adopted jobs. [`nodes_lacking`] is what a job's node checks
//! before it admits a job with `--dir`s; placement leaves out the nodes
//! whose records lack a job's directories for the job's tasks
//! (`Forwarder::lacking_job_dirs`, `NodeRecord::allows_dirs`), and a task
//! moved or handed back to such a node goes elsewhere
//! (`Forwarder::lacks_job_dirs`).

use std::sync::Arc;
use std::time::Duration;

use wray_control_plane::{JobId, NodeRecord, NodeState, NodeView};
use wray_peer::PeerClient;

use crate::config::Preopen;
use crate::forward::Forwarder;
use crate::job_env::{check_dir, DirError, EnvBoundError, JobEnv, JobEnvs, PortableEnv};
use crate::job_log::JobLogs;
use crate::job_outbox::Outbox;
use crate::protocol::{method, package_key, send, Encoded, JobOutput};
use crate::scheduler::task::Task;
use crate::scheduler::Scheduler;
use crate::transfer::PULL_CHUNK;
use crate::working_dir::{PackageId, Pinned, WorkingDirError, WorkingDirs};

/// How long a forwarded task's answer waits for its output to reach the
/// job's log: 10 s (past it the answer goes; the lines follow).
pub(crate) const OUTPUT_FLUSH: Duration = Duration::from_secs(10);

/// How many times a batch of output is sent again after the job's node
/// could not be reached (then it is dropped).
const OUTPUT_RETRIES: u32 = 3;

/// What of a node's jobs the cluster shares with its executor.
#[derive(Clone)]
pub struct JobState {
    /// Every job's environment here (the outboxes of those whose log is
    /// elsewhere with them).
    pub envs: Arc<JobEnvs>,
    /// The logs of the jobs this node runs.
    pub logs: Arc<JobLogs>,
    /// The working directories kept here.
    pub working_dirs: Arc<WorkingDirs>,
}

impl JobState {
    /// The host directories the tasks of job `job` need: a node runs them
    /// only if its record allows each (`NodeRecord::allows_dirs`).
    pub(crate) fn host_dirs(&self, job: JobId) -> Vec<String> {
        self.envs.host_dirs(job)
    }

    /// The environment that travels with a task of `job` to another node.
    pub(crate) fn portable(&self, job: JobId) -> Option<PortableEnv> {
        self.envs.get(job).map(|e| e.portable.clone())
    }
}

impl Forwarder {
    /// The live nodes whose records do not allow one of the host
    /// directories of job `job` (its `--dir`s): placement leaves them out
    /// for the job's tasks.
    pub(crate) fn lacking_job_dirs(&self, job: JobId) -> Vec<String> {
        let dirs = self.jobs.host_dirs(job);
        if dirs.is_empty() {
            return Vec::new();
        }
        self.view
            .alive()
            .into_iter()
            .filter(|n| !n.allows_dirs(&dirs))
            .map(|n| n.id)
            .collect()
    }

    /// Why `node` cannot run `spec`, when its record does not allow one
    /// of the host directories of `spec`'s job: a node a task was moved
    /// to or handed back for is checked again before it is sent there.
    pub(crate) fn lacks_job_dirs(&self, node: &str, spec: &Task) -> Option<String> {
        let dirs = self.jobs.host_dirs(spec.id.job());
        let record = self.view.get(node)?.record;
        (!record.allows_dirs(&dirs)).then(|| {
            format!(
                "node {node} does not allow the job's directories {} (--allow-dir)",
                dirs.join(", ")
            )
        })
    }
}

/// The live nodes other than `me` among `alive` that lack one of `dirs`
/// (their records do not allow it), and how many other live nodes there
/// are.
pub fn nodes_lacking(alive: &[NodeRecord], me: &str, dirs: &[String]) -> (Vec<String>, usize) {
    let others: Vec<&NodeRecord> = alive.iter().filter(|n| n.id != me).collect();
    let mut lacking: Vec<String> = others
        .iter()
        .filter(|n| !n.allows_dirs(dirs))
        .map(|n| n.id.clone())
        .collect();
    lacking.sort();
    (lacking, others.len())
}

/// What [`adopt`] needs of the node.
pub(crate) struct Adopting<'a> {
    pub(crate) sched: &'a Scheduler,
    pub(crate) jobs: &'a JobState,
    pub(crate) client: &'a PeerClient,
    pub(crate) view: &'a NodeView,
}

/// A node that cannot run the tasks of a job whose environment a task
/// brought.
#[derive(Debug, thiserror::Error)]
#[error("node {node} cannot run the tasks of job {job}: {why}")]
pub(crate) struct AdoptError {
    /// This node.
    node: String,
    /// The job.
    job: JobId,
    /// What it lacks or refused.
    why: Refusal,
}

/// What a node lacks or refuses of a job's environment.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// The environment is past a bound.
    #[error(transparent)]
    Bound(#[from] EnvBoundError),
    /// A directory it names may not be read here.
    #[error(transparent)]
    Dir(#[from] DirError),
    /// Its working directory could not be fetched.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// A guest path named twice.
    #[error("guest path {0} is named twice (by the job, or by this node's own --dir)")]
    GuestPathTwice(String),
}

/// A job's working directory (package) that could not be had here.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The cache refused it (its size, a bad package, no room).
    #[error(transparent)]
    Cache(#[from] WorkingDirError),
    /// A read from the node that has it failed.
    #[error("fetching working directory {id} from {from}: {source}")]
    Read {
        /// The package.
        id: PackageId,
        /// The node's peer address.
        from: String,
        /// What the channel said.
        source: wray_peer::PeerError,
    },
    /// The task unpacking it ended without an answer (it panicked).
    #[error("unpacking working directory {id}: {source}")]
    Unpack {
        /// The package.
        id: PackageId,
        /// What tokio said.
        source: tokio::task::JoinError,
    },
}

/// Takes job `job`'s environment `env`, which a task of it sent by the
/// node at peer address `from` brought, unless the job has one here
/// already (see the module docs).
///
/// # Errors
/// [`AdoptError`], naming this node and what it lacks or refused.
pub(crate) async fn adopt(
    on: Adopting<'_>,
    job: JobId,
    env: PortableEnv,
    from: &str,
) -> Result<(), AdoptError> {
    if on.jobs.envs.has(job) {
        return Ok(());
    }
    let node = on.sched.node_id();
    let refuse = |why: Refusal| AdoptError {
        node: node.to_string(),
        job,
        why,
    };
    env.check().map_err(|e| refuse(e.into()))?;
    let config = on.sched.config();
    let mut preopens: Vec<Preopen> = Vec::with_capacity(env.dirs.len() + 1);
    for (host, guest) in &env.dirs {
        preopens.push(check_dir(host, guest, &config.allow_dirs).map_err(|e| refuse(e.into()))?);
    }
    let mut pin = None;
    if let Some(w) = &env.working_dir {
        let pinned = fetch(&on.jobs.working_dirs, on.client, from, w.package, w.bytes)
            .await
            .map_err(|e| refuse(e.into()))?;
        preopens.push(Preopen {
            host: pinned.path().to_path_buf(),
            guest: w.guest.clone(),
        });
        pin = Some(pinned);
    }
    let guests: Vec<&str> = preopens
        .iter()
        .chain(&config.preopens)
        .map(|p| p.guest.as_str())
        .collect();
    if let Some(twice) = guests
        .iter()
        .enumerate()
        .find(|(i, g)| guests[..*i].contains(g))
        .map(|(_, g)| *g)
    {
        return Err(refuse(Refusal::GuestPathTwice(twice.to_string())));
    }
    let outbox = env
        .log_node
        .as_deref()
        .filter(|n| *n != node)
        .map(Outbox::new);
    let env = Arc::new(JobEnv {
        preopens,
        portable: env,
    });
    if on.jobs.envs.adopt(job, env, pin, outbox.clone()) {
        if let Some(outbox) = outbox {
            tokio::spawn(push(outbox, job, on.client.clone(), on.view.clone()));
        }
    }
    Ok(())
}

/// Package `id` of `size` bytes, held: kept here already, or fetched from
/// the node at peer address `from`, chunk by chunk into a file, checked
/// against its id, unpacked and kept. One fetch at a time on a node
/// (tasks of a job arriving together fetch its package once).
///
/// # Errors
/// [`FetchError`], naming the package and what failed.
pub(crate) async fn fetch(
    dirs: &Arc<WorkingDirs>,
    client: &PeerClient,
    from: &str,
    id: PackageId,
    size: u64,
) -> Result<Pinned, FetchError> {
    if let Ok(pinned) = dirs.pin(id) {
        return Ok(pinned);
    }
    let _turn = dirs.fetch_turn().await;
    if let Ok(pinned) = dirs.pin(id) {
        return Ok(pinned);
    }
    let mut incoming = dirs.incoming(id, size)?;
    let key = package_key(&id);
    let chunk = usize::try_from(size.min(u64::from(PULL_CHUNK))).unwrap_or(0);
    let mut buf = vec![0u8; chunk];
    let mut offset = 0u64;
    while incoming.left() > 0 {
        let n = usize::try_from(incoming.left().min(chunk as u64)).unwrap_or(chunk);
        let dest = &mut buf[..n];
        client
            .read(from, &key, offset, dest)
            .await
            .map_err(|source| FetchError::Read {
                id,
                from: from.to_string(),
                source,
            })?;
        incoming.write(dest)?;
        offset = offset.saturating_add(n as u64);
    }
    let kept = dirs.clone();
    tokio::task::spawn_blocking(move || kept.finish(incoming))
        .await
        .map_err(|source| FetchError::Unpack { id, source })??;
    Ok(dirs.pin(id)?)
}

/// Sends `outbox`'s lines (the output of job `job`'s guests here) to the
/// job's node, one batch at a time, until the outbox closes and is
/// empty, the node is gone, or it says the job has no log there.
pub(crate) async fn push(outbox: Arc<Outbox>, job: JobId, client: PeerClient, view: NodeView) {
    loop {
        let batch = loop {
            if let Some(batch) = outbox.take() {
                break batch;
            }
            if outbox.is_closed() {
                return;
            }
            outbox.queued().await;
        };
        let through = batch.through;
        let addr = view
            .get(outbox.node())
            .filter(|n| n.state == NodeState::Alive)
            .map(|n| n.record.peer_address);
        let Some(addr) = addr else {
            outbox.close();
            return;
        };
        let message = JobOutput {
            job,
            bytes: batch.bytes,
            dropped: batch.dropped,
        };
        let body = Encoded::<method::JobOutput>::new(message);
        let mut tries = 0u32;
        loop {
            match send(&client, &addr, &body).await {
                Ok(answer) if answer.written => break,
                Ok(_) => {
                    // The job has no log there (it ended).
                    outbox.close();
                    outbox.acked(through);
                    return;
                }
                Err(e) if e.is_retryable() && tries < OUTPUT_RETRIES => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100 << tries)).await;
                }
                Err(e) => {
                    tracing::debug!(%job, node = outbox.node(), "sending a job's output: {e}");
                    break;
                }
            }
        }
        outbox.acked(through);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, dirs: &[&str]) -> NodeRecord {
        NodeRecord {
            id: id.into(),
            cluster: "c".into(),
            peer_address: "127.0.0.1:1".into(),
            http_address: None,
            resources_total: Default::default(),
            resources_available: Default::default(),
            labels: Default::default(),
            start_time_ms: 0,
            version: String::new(),
            running_tasks: 0,
            object_store_used: 0,
            object_store_capacity: 0,
            object_store_spilled: 0,
            object_bytes_sent: 0,
            object_bytes_received: 0,
            allowed_dirs: dirs.iter().map(|d| d.to_string()).collect(),
            draining: false,
        }
    }

    #[test]
    fn the_nodes_lacking_a_jobs_directories_are_named() {
        let alive = [
            record("node-a", &["/data"]),
            record("node-b", &["/data/corpus"]),
            record("node-c", &[]),
        ];
        let dirs = vec!["/data/corpus/x".to_string()];
        assert_eq!(
            nodes_lacking(&alive, "node-a", &dirs),
            (vec!["node-c".to_string()], 2)
        );
        let dirs = vec!["/data/other".to_string()];
        assert_eq!(
            nodes_lacking(&alive, "node-a", &dirs),
            (vec!["node-b".to_string(), "node-c".to_string()], 2)
        );
        assert_eq!(nodes_lacking(&alive[..1], "node-a", &dirs), (vec![], 0));
    }
}
