//! The job table: every job (one driver's run) gets its id here, so that
//! job ids are unique across the cluster, and is listed while it lives
//! (Ray's GCS job table).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

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
}

/// The job table, as every control-plane backend provides it.
#[async_trait]
pub trait JobTable: Send + Sync {
    /// Starts a job driven by `driver` and returns its new, unique id.
    ///
    /// # Errors
    /// [`Error::Unavailable`](crate::Error::Unavailable) when the backend
    /// cannot be reached or holds [`MAX_LIVE_JOBS`] live jobs.
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
}

/// The in-process job table of a single node.
#[derive(Default)]
pub struct EmbeddedJobTable {
    jobs: Mutex<HashMap<JobId, JobRecord>>,
}

impl EmbeddedJobTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[async_trait]
impl JobTable for EmbeddedJobTable {
    async fn start_job(&self, driver: &str) -> Result<JobId> {
        let mut jobs = self.jobs.lock();
        if jobs.len() >= MAX_LIVE_JOBS {
            return Err(crate::Error::Unavailable(format!(
                "{MAX_LIVE_JOBS} jobs are live, the most the embedded job table keeps"
            )));
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
        };
        jobs.insert(id, record);
        Ok(id)
    }

    async fn end_job(&self, job: JobId) -> Result<()> {
        self.jobs.lock().remove(&job);
        Ok(())
    }

    async fn live_jobs(&self) -> Result<Vec<JobRecord>> {
        let mut jobs: Vec<JobRecord> = self.jobs.lock().values().cloned().collect();
        jobs.sort_by_key(|j| (j.started_ms, j.id));
        Ok(jobs)
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
    }
}
