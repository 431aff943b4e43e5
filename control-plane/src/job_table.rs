//! The job table: every job (one driver's run) gets its id here, so that
//! job ids are unique across the cluster, and is listed while it lives
//! (Ray's GCS job table). On etcd (`EtcdJobTable`) a job started through
//! one node is found by any other, with the node that runs it.

use std::collections::HashMap;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::function_table::now_ms;
use crate::{JobId, Result};

/// The most live jobs the embedded table keeps; a job started past it is
/// refused (each holds a driver: a node never has this many).
pub const MAX_LIVE_JOBS: usize = 100_000;

/// One live job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Its id.
    pub id: JobId,
    /// What drives it (`wordcount main`, `session`, ...).
    pub driver: String,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// The node that runs its driver (`node-<16 hex>`); `None` in a table
    /// of one process, or in a record written before nodes had ids.
    #[serde(default)]
    pub node_id: Option<String>,
}

/// The job table, as every control-plane backend provides it.
#[async_trait]
pub trait JobTable: Send + Sync {
    /// Starts a job driven by `driver` and returns its new, unique id.
    ///
    /// # Errors
    /// [`Error::Unavailable`](crate::Error::Unavailable) when the backend
    /// cannot be reached; [`Error::DirectoryFull`](crate::Error::DirectoryFull)
    /// when it holds [`MAX_LIVE_JOBS`] live jobs.
    async fn start_job(&self, driver: &str) -> Result<JobId>;

    /// Records that job `job` ended (a no-op for an unknown job).
    ///
    /// # Errors
    /// [`Error::Unavailable`](crate::Error::Unavailable).
    async fn end_job(&self, job: JobId) -> Result<()>;

    /// The live jobs, oldest first.
    ///
    /// # Errors
    /// [`Error::Unavailable`](crate::Error::Unavailable).
    async fn live_jobs(&self) -> Result<Vec<JobRecord>>;

    /// Job `job`, if it is live.
    ///
    /// # Errors
    /// [`Error::Corrupt`](crate::Error::Corrupt) for a damaged record;
    /// [`Error::Unavailable`](crate::Error::Unavailable).
    async fn get_job(&self, job: JobId) -> Result<Option<JobRecord>>;
}

/// The in-process job table of a single node.
#[derive(Default)]
pub struct EmbeddedJobTable {
    jobs: Mutex<HashMap<JobId, JobRecord>>,
    node_id: Option<String>,
}

impl EmbeddedJobTable {
    /// An empty table; its records name no node.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty table whose records name node `node_id`.
    pub fn for_node(node_id: impl Into<String>) -> Self {
        Self {
            jobs: Mutex::default(),
            node_id: Some(node_id.into()),
        }
    }

    /// Starts a job driven by `driver` and returns its new id, at once
    /// (the table is in this process: nothing to wait for).
    ///
    /// # Errors
    /// [`Error::DirectoryFull`](crate::Error::DirectoryFull) when it holds
    /// [`MAX_LIVE_JOBS`] live jobs.
    pub fn start(&self, driver: &str) -> Result<JobId> {
        let mut jobs = self.jobs.lock();
        if jobs.len() >= MAX_LIVE_JOBS {
            return Err(crate::Error::DirectoryFull {
                what: "job table",
                held: jobs.len() as u64,
                limit: MAX_LIVE_JOBS as u64,
            });
        }
        // Random ids (see `JobId::random`); a repeat among live jobs is
        // drawn again.
        let id = loop {
            let id = JobId::random();
            if !jobs.contains_key(&id) {
                break id;
            }
        };
        let started_ms = now_ms();
        let record = JobRecord {
            id,
            driver: driver.to_string(),
            started_ms,
            node_id: self.node_id.clone(),
        };
        jobs.insert(id, record);
        Ok(id)
    }

    /// Records that job `job` ended, at once (a no-op for an unknown job).
    pub fn end(&self, job: JobId) {
        self.jobs.lock().remove(&job);
    }
}

#[async_trait]
impl JobTable for EmbeddedJobTable {
    async fn start_job(&self, driver: &str) -> Result<JobId> {
        self.start(driver)
    }

    async fn end_job(&self, job: JobId) -> Result<()> {
        self.end(job);
        Ok(())
    }

    async fn live_jobs(&self) -> Result<Vec<JobRecord>> {
        let mut jobs: Vec<JobRecord> = self.jobs.lock().values().cloned().collect();
        jobs.sort_by_key(|j| (j.started_ms, j.id));
        Ok(jobs)
    }

    async fn get_job(&self, job: JobId) -> Result<Option<JobRecord>> {
        Ok(self.jobs.lock().get(&job).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_get_distinct_ids_and_are_listed_while_live() {
        let table = EmbeddedJobTable::new();
        let a = table.start_job("a").await.unwrap();
        let b = table.start_job("b").await.unwrap();
        assert_ne!(a, b);
        let live: Vec<_> = table
            .live_jobs()
            .await
            .unwrap()
            .into_iter()
            .map(|j| j.id)
            .collect();
        assert_eq!(live.len(), 2);
        assert!(live.contains(&a) && live.contains(&b));
        table.end_job(a).await.unwrap();
        let live = table.live_jobs().await.unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].id, b);
        assert_eq!(table.get_job(b).await.unwrap().unwrap().driver, "b");
        assert!(table.get_job(a).await.unwrap().is_none());
    }
}
