//! The etcd backend (feature `etcd`, on by default): one [`EtcdClient`]
//! (a connection, the deadline of every call) shared by
//!
//! - [`EtcdFunctionTable`] (here): the function table;
//! - [`EtcdNodeRegistry`] (`etcd/nodes.rs`, `etcd/node_watch.rs`): nodes
//!   registered under leases, and the cluster's view of them;
//! - [`EtcdActorDirectory`] (`etcd/actors.rs`): named actors;
//! - [`EtcdJobTable`] (`etcd/jobs.rs`): jobs, findable from any node.
//!
//! The cluster's keys live under `<prefix><cluster>/` (`etcd/cluster_keys.rs`);
//! the function table's directly under the prefix (`etcd/keys.rs`).
//!
//! The function table:
//!
//! - Writes of one name are compare-and-swap transactions on the mod
//!   revision of its head key (`functions/<name>`): a deploy reads the head,
//!   then writes the new head, the version record and the blob reference in
//!   one transaction that succeeds only if the head is unchanged. A lost
//!   race re-reads and tries again, up to [`WRITE_ATTEMPTS`] times, then
//!   fails with [`Error::Conflict`]; so two deploys of one name land as two
//!   versions in some order, never mixed. An undeploy and a rollback are
//!   the same compare-and-swap on the head, and so is a deploy of the
//!   bytes of a kept version (which makes that version current: nothing
//!   is uploaded, added or pruned).
//! - Component bytes are stored once per content hash, in 1 MiB chunks
//!   under an upload id, published by a manifest written after the last
//!   chunk; a read checks the manifest's numbers, each chunk's length and
//!   the whole digest (`etcd/keys.rs` has the layout).
//! - Every call has a deadline ([`EtcdConfig::request_timeout`]); an
//!   unreachable etcd gives [`Error::Unavailable`] naming the endpoints and
//!   the cause, never a hang.
//!
//! Blob collection is guarded by the same transactions: a blob is deleted
//! only if no reference key to it exists and its manifest is the one read,
//! and a deploy's transaction requires its blob's manifest to be unchanged.

mod actors;
mod blobs;
mod client;
mod cluster_keys;
mod jobs;
pub(crate) mod keys;
mod node_watch;
mod nodes;
mod watch;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp};
use tokio::sync::mpsc;

use crate::function_table::{
    check_deploy, check_name, now_ms, ComponentRecord, ComponentVersion, Deployment, FunctionTable,
    FunctionWatch, MAX_VERSIONS_KEPT, WRITE_ATTEMPTS,
};
use crate::{Error, Listed, Result};
use keys::{corrupt, decode_version, encode, Head, Kept, Keys};

pub use actors::EtcdActorDirectory;
pub use client::{EtcdClient, EtcdConfig};
pub use jobs::EtcdJobTable;
pub use nodes::EtcdNodeRegistry;

/// Heads read per request when listing.
const LIST_PAGE: i64 = 16;

/// Changes the watch's channel holds for a slow consumer (the watch then
/// waits, and etcd keeps the rest).
const WATCH_BUFFER: usize = 256;

/// The function table in etcd (the cluster backend). Cheap to share: the
/// client multiplexes calls over one connection per endpoint.
pub struct EtcdFunctionTable {
    etcd: EtcdClient,
    keys: Keys,
}

impl EtcdFunctionTable {
    /// A table on the etcd at `config.endpoints`. Connecting is lazy: this
    /// succeeds while etcd is down, and calls fail until it is up.
    ///
    /// # Errors
    /// [`Error::Unavailable`] for no endpoints or a malformed one.
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        Ok(Self::new(EtcdClient::connect(config).await?))
    }

    /// A table on the connection `etcd` (shared with the node's other
    /// tables), under its configured prefix.
    pub fn new(etcd: EtcdClient) -> Self {
        let keys = Keys::new(&etcd.config().prefix);
        Self { etcd, keys }
    }

    /// Makes kept version `version` of `name` current, if the head read
    /// (`head`, at mod revision `head_rev`) is still the head: one
    /// compare-and-swap of the head, as a rollback and a deploy of a kept
    /// version's bytes do. `Ok(None)` when the head changed meanwhile;
    /// the version, not new, when it was current already (nothing
    /// written).
    async fn make_current(
        &self,
        name: &str,
        head: &Head,
        head_rev: i64,
        version: u64,
    ) -> Result<Option<Deployment>> {
        if head.current.version == version {
            return Ok(Some(Deployment {
                current: head.current.clone(),
                new: false,
            }));
        }
        // Written with the head (a deploy writes both in one transaction),
        // so the head's revision guards it too.
        let chosen = self.version(name, version).await?;
        let head_key = self.keys.head(name);
        let written = Head {
            current: chosen.clone(),
            kept: head.kept.clone(),
        };
        let txn = Txn::new()
            .when([Compare::mod_revision(
                head_key.as_str(),
                CompareOp::Equal,
                head_rev,
            )])
            .and_then([TxnOp::put(head_key.as_str(), encode(&written), None)]);
        let done = self
            .etcd
            .txn(format!("make version {version} of {name} current"), txn)
            .await?
            .succeeded();
        Ok(done.then_some(Deployment {
            current: chosen,
            new: false,
        }))
    }

    /// The head of `name` and its mod revision, if deployed.
    async fn head(&self, name: &str) -> Result<Option<(Head, i64)>> {
        let key = self.keys.head(name);
        match self.etcd.get(&key).await? {
            None => Ok(None),
            Some((value, rev)) => Ok(Some((Head::decode(&key, name, &value)?, rev))),
        }
    }
}

/// Runs `attempt`, one compare-and-swap write of component `name`'s head,
/// until it wins: at most [`WRITE_ATTEMPTS`] times, backing off between
/// tries. `attempt` answers `Ok(None)` when the head changed under it.
///
/// # Errors
/// The first error of an attempt; [`Error::Conflict`] when every attempt
/// lost its race.
async fn write_head<T, F, Fut>(name: &str, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    for n in 1..=WRITE_ATTEMPTS {
        if n > 1 {
            backoff(n).await;
        }
        if let Some(done) = attempt().await? {
            return Ok(done);
        }
    }
    Err(Error::Conflict {
        name: name.to_string(),
        attempts: WRITE_ATTEMPTS,
    })
}

/// A pause before try `attempt` (2, 3, ...) of a write that lost a race:
/// 5 ms doubling to at most 320 ms, with up to half again at random, so
/// racing writers spread out.
async fn backoff(attempt: u32) {
    let base = Duration::from_millis(5 << attempt.clamp(1, 7).saturating_sub(1));
    tokio::time::sleep(jitter(base)).await;
}

/// `base` plus up to half of it at random.
pub(crate) fn jitter(base: Duration) -> Duration {
    let mut bytes = [0u8; 4];
    let random = getrandom::fill(&mut bytes).map_or(0, |()| u32::from_le_bytes(bytes));
    base + base.mul_f64(f64::from(random) / f64::from(u32::MAX) / 2.0)
}

impl EtcdFunctionTable {
    /// Every head of the table: the current versions ordered by name, and
    /// the damaged heads left out (one hides only itself).
    async fn list_checked(&self) -> Result<Listed<ComponentVersion>> {
        let kvs = self.etcd.range(&self.keys.heads(), LIST_PAGE).await?;
        let mut listed = Listed::default();
        for kv in &kvs {
            let key = String::from_utf8_lossy(kv.key());
            let name = self.keys.name_of_head(kv.key());
            let head = name
                .ok_or_else(|| corrupt(&key, "it is not a valid component name"))
                .and_then(|name| Head::decode(&key, name, kv.value()));
            match head {
                Ok(head) => listed.entries.push(head.current),
                Err(e) => {
                    let heads = self.keys.heads();
                    let shown = name.unwrap_or_else(|| key.strip_prefix(&heads).unwrap_or(&key));
                    listed.skip("function table", shown, &key, &e);
                }
            }
        }
        Ok(listed)
    }
}

#[async_trait]
impl FunctionTable for EtcdFunctionTable {
    async fn deploy(&self, record: ComponentRecord, bytes: Arc<[u8]>) -> Result<Deployment> {
        check_deploy(&record, &bytes)?;
        let name = record.name.clone();
        let hash = record.hash.clone();
        let head_key = self.keys.head(&name);
        write_head(&name, || async {
            let head = self.head(&name).await?;
            // The bytes of a kept version: that version, made current
            // (nothing stored, added or pruned).
            if let Some((head, head_rev)) = &head {
                if let Some(kept) = head.kept.iter().rev().find(|k| k.hash == hash) {
                    return self
                        .make_current(&name, head, *head_rev, kept.version)
                        .await;
                }
            }
            let manifest_rev = self.store_blob(&hash, &bytes).await?;
            let (mut kept, head_rev) = match head {
                Some((head, rev)) => (head.kept, rev),
                None => (Vec::new(), 0),
            };
            let version = match kept.last() {
                None => 1,
                Some(last) => last
                    .version
                    .checked_add(1)
                    .ok_or_else(|| corrupt(&head_key, "its last version is the largest number"))?,
            };
            let current = ComponentVersion {
                version,
                deployed_ms: now_ms(),
                record: record.clone(),
            };
            kept.push(Kept {
                version,
                hash: hash.clone(),
            });
            let pruned: Vec<Kept> = kept
                .drain(..kept.len().saturating_sub(MAX_VERSIONS_KEPT))
                .collect();
            let mut ops = vec![
                TxnOp::put(self.keys.version(&name, version), encode(&current), None),
                TxnOp::put(self.keys.reference(&hash, &name, version), Vec::new(), None),
            ];
            for old in &pruned {
                ops.push(TxnOp::delete(self.keys.version(&name, old.version), None));
                ops.push(TxnOp::delete(
                    self.keys.reference(&old.hash, &name, old.version),
                    None,
                ));
            }
            let head = Head {
                current: current.clone(),
                kept,
            };
            ops.push(TxnOp::put(head_key.as_str(), encode(&head), None));
            let txn = Txn::new()
                .when([
                    Compare::mod_revision(head_key.as_str(), CompareOp::Equal, head_rev),
                    Compare::mod_revision(
                        self.keys.manifest(&hash),
                        CompareOp::Equal,
                        manifest_rev,
                    ),
                ])
                .and_then(ops);
            if self
                .etcd
                .txn(format!("deploy {name}"), txn)
                .await?
                .succeeded()
            {
                let dropped: BTreeSet<String> = pruned
                    .into_iter()
                    .map(|k| k.hash)
                    .filter(|h| !head.kept.iter().any(|k| &k.hash == h))
                    .collect();
                for old in dropped {
                    // Best effort: a blob left behind is garbage, not an error.
                    let _ = self.collect_blob(&old).await;
                }
                return Ok(Some(Deployment { current, new: true }));
            }
            Ok(None)
        })
        .await
    }

    async fn current(&self, name: &str) -> Result<ComponentVersion> {
        if check_name(name).is_err() {
            return Err(Error::ComponentNotFound(name.to_string()));
        }
        match self.head(name).await? {
            Some((head, _)) => Ok(head.current),
            None => Err(Error::ComponentNotFound(name.to_string())),
        }
    }

    async fn version(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        let missing = || Error::VersionNotFound {
            name: name.to_string(),
            version,
        };
        if check_name(name).is_err() {
            return Err(missing());
        }
        let key = self.keys.version(name, version);
        match self.etcd.get(&key).await? {
            Some((value, _)) => decode_version(&key, name, Some(version), &value),
            None => Err(missing()),
        }
    }

    async fn versions(&self, name: &str) -> Result<Vec<ComponentVersion>> {
        Ok(self.versions_checked(name).await?.entries)
    }

    async fn versions_checked(&self, name: &str) -> Result<Listed<ComponentVersion>> {
        if check_name(name).is_err() {
            return Err(Error::ComponentNotFound(name.to_string()));
        }
        let prefix = self.keys.versions(name);
        let kvs = self.etcd.range(&prefix, LIST_PAGE).await?;
        if kvs.len() > MAX_VERSIONS_KEPT {
            return Err(corrupt(&prefix, "it holds more versions than are kept"));
        }
        let mut listed = Listed::default();
        let mut damaged = None;
        for kv in &kvs {
            let key = String::from_utf8_lossy(kv.key());
            // One damaged version hides only itself.
            match decode_version(&key, name, None, kv.value()) {
                Ok(v) => listed.entries.push(v),
                Err(e) => {
                    let what = format!("function table, `{name}`'s versions");
                    listed.skip(&what, name, &key, &e);
                    damaged = Some(e);
                }
            }
        }
        if listed.entries.is_empty() {
            return Err(damaged.unwrap_or_else(|| Error::ComponentNotFound(name.to_string())));
        }
        listed.entries.sort_by_key(|v| v.version);
        Ok(listed)
    }

    async fn blob(&self, hash: &str) -> Result<Arc<[u8]>> {
        self.read_blob(hash).await
    }

    async fn rollback(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        if check_name(name).is_err() {
            return Err(Error::ComponentNotFound(name.to_string()));
        }
        let attempt = write_head(name, || async {
            let Some((head, head_rev)) = self.head(name).await? else {
                return Err(Error::ComponentNotFound(name.to_string()));
            };
            if !head.kept.iter().any(|k| k.version == version) {
                return Err(Error::VersionNotFound {
                    name: name.to_string(),
                    version,
                });
            }
            self.make_current(name, &head, head_rev, version).await
        });
        Ok(attempt.await?.current)
    }

    async fn list(&self) -> Result<Vec<ComponentVersion>> {
        Ok(self.list_checked().await?.entries)
    }

    async fn list_page_checked(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Listed<ComponentVersion>> {
        let mut listed = self.list_checked().await?;
        let after_cursor = |name: &str| after.is_none_or(|a| name > a);
        listed.entries.retain(|v| after_cursor(&v.record.name));
        listed.entries.truncate(limit);
        listed.skipped.retain(|s| after_cursor(&s.name));
        Ok(listed)
    }

    async fn undeploy(&self, name: &str) -> Result<()> {
        if check_name(name).is_err() {
            return Err(Error::ComponentNotFound(name.to_string()));
        }
        let head_key = self.keys.head(name);
        write_head(name, || async {
            let Some((value, rev)) = self.etcd.get(&head_key).await? else {
                return Err(Error::ComponentNotFound(name.to_string()));
            };
            // A damaged head can still be undeployed; its references are
            // then unknown, and their blobs stay.
            let hashes: BTreeSet<String> = Head::decode(&head_key, name, &value)
                .map(|head| head.kept.into_iter().map(|k| k.hash).collect())
                .unwrap_or_default();
            let mut ops = vec![
                TxnOp::delete(head_key.as_str(), None),
                TxnOp::delete(
                    self.keys.versions(name),
                    Some(DeleteOptions::new().with_prefix()),
                ),
            ];
            for hash in &hashes {
                ops.push(TxnOp::delete(
                    self.keys.refs_by(hash, name),
                    Some(DeleteOptions::new().with_prefix()),
                ));
            }
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    head_key.as_str(),
                    CompareOp::Equal,
                    rev,
                )])
                .and_then(ops);
            if self
                .etcd
                .txn(format!("undeploy {name}"), txn)
                .await?
                .succeeded()
            {
                for hash in &hashes {
                    let _ = self.collect_blob(hash).await;
                }
                return Ok(Some(()));
            }
            Ok(None)
        })
        .await
    }

    async fn watch(&self) -> Result<FunctionWatch> {
        // Start right after the store's revision now, so that a listing
        // read after this call misses nothing; unknown (etcd down): start
        // wherever the watch first connects, and say Resync there.
        let heads = self.keys.heads();
        let options = GetOptions::new().with_prefix().with_count_only();
        let start = self
            .etcd
            .call(
                format!("get {heads}*"),
                self.etcd.kv().get(heads, Some(options)),
            )
            .await
            .ok()
            .and_then(|resp| resp.header().map(|h| h.revision()))
            .filter(|rev| *rev > 0)
            .and_then(|rev| rev.checked_add(1));
        let (events, receiver) = mpsc::channel(WATCH_BUFFER);
        let watcher = watch::Watcher {
            client: self.etcd.raw().clone(),
            keys: self.keys.clone(),
            label: self.etcd.label().to_string(),
            timeout: self.etcd.config().request_timeout,
        };
        let task = tokio::spawn(watcher.run(start, events));
        Ok(FunctionWatch::task(receiver, task))
    }

    fn backend(&self) -> String {
        self.etcd.label().to_string()
    }

    async fn health(&self) -> Result<()> {
        self.etcd.health().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_half_again() {
        for _ in 0..100 {
            let d = jitter(Duration::from_millis(100));
            assert!(d >= Duration::from_millis(100) && d <= Duration::from_millis(150));
        }
    }
}
