//! [`EtcdJobTable`]: live jobs at `<prefix><cluster>/jobs/<16 hex>`, so a
//! job started through one node is found, with its node, by any other.
//! A new id is written only if its key was never created (create revision
//! 0): a repeat of a random id draws again.

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use super::cluster_keys::ClusterKeys;
use super::EtcdClient;
use crate::codec::{decode_json, encode_json};
use crate::function_table::now_ms;
use crate::job_table::{JobRecord, JobTable, MAX_LIVE_JOBS};
use crate::nodes::NodeId;
use crate::{Error, JobId, Result};

/// Random ids drawn before giving up (a repeat among 2^64 is already
/// unlikely; eight in a row mean something else is wrong).
const ID_ATTEMPTS: u32 = 8;

/// The largest encoded job record, in bytes.
const MAX_JOB_RECORD_BYTES: usize = 16 * 1024;

/// Job records read per request when listing.
const LIST_PAGE: i64 = 512;

/// The job table of one cluster on etcd, for one node. Cheap to share.
#[derive(Debug, Clone)]
pub struct EtcdJobTable {
    etcd: EtcdClient,
    keys: ClusterKeys,
    node_id: String,
}

impl EtcdJobTable {
    /// The job table of `cluster` on the connection `etcd`; jobs it starts
    /// name node `node_id` as theirs.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad cluster name or node id.
    pub fn new(etcd: EtcdClient, cluster: &str, node_id: &str) -> Result<Self> {
        let keys = ClusterKeys::new(&etcd.config().prefix, cluster)?;
        let node_id = NodeId::parse(node_id)?.to_string();
        Ok(Self {
            etcd,
            keys,
            node_id,
        })
    }

    /// Decodes the record of job `id` read under `key`.
    fn decode(key: &str, id: Option<JobId>, value: &[u8]) -> Result<JobRecord> {
        let record: JobRecord = decode_json(key, value, MAX_JOB_RECORD_BYTES)?;
        let corrupt = |reason: &str| Error::Corrupt {
            key: key.to_string(),
            reason: reason.to_string(),
        };
        if id.is_some_and(|id| id != record.id) || !key.ends_with(&record.id.to_string()) {
            return Err(corrupt("it holds another job"));
        }
        if let Some(node) = &record.node_id {
            NodeId::parse(node).map_err(|_| corrupt("its node_id is not a node id"))?;
        }
        Ok(record)
    }
}

#[async_trait]
impl JobTable for EtcdJobTable {
    async fn start_job(&self, driver: &str) -> Result<JobId> {
        let held = self.etcd.count(&self.keys.jobs()).await?;
        let limit = MAX_LIVE_JOBS as u64;
        if held >= limit {
            return Err(Error::DirectoryFull {
                what: "job table",
                held,
                limit,
            });
        }
        for _ in 0..ID_ATTEMPTS {
            let id = JobId::random();
            let record = JobRecord {
                id,
                driver: driver.to_string(),
                started_ms: now_ms(),
                node_id: Some(self.node_id.clone()),
            };
            let key = self.keys.job(id);
            let txn = Txn::new()
                .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key.as_str(), encode_json(&record), None)]);
            if self
                .etcd
                .txn(format!("start job {id}"), txn)
                .await?
                .succeeded()
            {
                return Ok(id);
            }
        }
        Err(Error::AlreadyExists {
            what: "job",
            name: format!("(each of {ID_ATTEMPTS} random ids)"),
            holder: String::new(),
        })
    }

    async fn end_job(&self, job: JobId) -> Result<()> {
        let key = self.keys.job(job);
        let mut kv = self.etcd.kv();
        self.etcd
            .call(format!("delete {key}"), kv.delete(key.as_str(), None))
            .await
            .map(drop)
    }

    async fn live_jobs(&self) -> Result<Vec<JobRecord>> {
        let (kvs, _) = self
            .etcd
            .range_at(&self.keys.jobs(), None, LIST_PAGE, MAX_LIVE_JOBS)
            .await?;
        let mut jobs = Vec::with_capacity(kvs.len());
        for kv in &kvs {
            let key = String::from_utf8_lossy(kv.key());
            match Self::decode(&key, None, kv.value()) {
                Ok(record) => jobs.push(record),
                Err(e) => tracing::warn!("malformed job record skipped: {e}"),
            }
        }
        jobs.sort_by_key(|j| (j.started_ms, j.id));
        Ok(jobs)
    }

    async fn get_job(&self, job: JobId) -> Result<Option<JobRecord>> {
        let key = self.keys.job(job);
        match self.etcd.get(&key).await? {
            None => Ok(None),
            Some((value, _)) => Self::decode(&key, Some(job), &value).map(Some),
        }
    }
}
