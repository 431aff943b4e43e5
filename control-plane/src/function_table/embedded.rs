//! [`EmbeddedFunctionTable`]: the function table of a single node, in its
//! own memory.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::broadcast;

use super::{
    check_deploy, check_name, now_ms, ComponentRecord, ComponentVersion, Deployment, FunctionEvent,
    FunctionTable, FunctionWatch, TableLimits, MAX_VERSIONS_KEPT,
};
use crate::{Error, Result};

/// Changes a watcher may fall behind by before it is told to resync.
const WATCH_BUFFER: usize = 1024;

/// The in-process function table of a single node (the default backend).
/// Same behaviour as the etcd backend: versions, pruning, blob collection,
/// watch.
pub struct EmbeddedFunctionTable {
    state: Mutex<State>,
    events: broadcast::Sender<FunctionEvent>,
    limits: TableLimits,
}

#[derive(Default)]
struct State {
    /// Each name's kept versions and which is current.
    names: BTreeMap<String, Versions>,
    /// Blobs by content hash.
    blobs: HashMap<String, Arc<[u8]>>,
    /// Bytes of `blobs`.
    blob_bytes: u64,
}

/// One name's kept versions.
#[derive(Default)]
struct Versions {
    /// Oldest first (never empty once the name is in the table).
    kept: VecDeque<ComponentVersion>,
    /// The current one's number: the newest, or the one a rollback chose.
    current: u64,
}

impl Versions {
    fn current(&self) -> Option<&ComponentVersion> {
        self.kept.iter().find(|v| v.version == self.current)
    }

    /// The newest kept version whose bytes have content hash `hash`.
    fn with_hash(&self, hash: &str) -> Option<&ComponentVersion> {
        self.kept.iter().rev().find(|v| v.record.hash == hash)
    }
}

impl State {
    /// Removes the blobs among `hashes` that no kept version refers to.
    fn collect(&mut self, hashes: impl IntoIterator<Item = String>) {
        for hash in hashes {
            let referenced = self
                .names
                .values()
                .flat_map(|v| &v.kept)
                .any(|v| v.record.hash == hash);
            if !referenced {
                if let Some(blob) = self.blobs.remove(&hash) {
                    self.blob_bytes = self.blob_bytes.saturating_sub(blob.len() as u64);
                }
            }
        }
    }

    /// Bytes of blobs after a deploy of `record` as a new version of its
    /// name, which keeps `versions` of them: its blob added unless stored,
    /// the blobs only the pruned versions refer to taken away.
    fn bytes_after(&self, record: &ComponentRecord, versions: usize) -> u64 {
        let kept = self.names.get(&record.name);
        let pruned: Vec<&str> = kept
            .map(|v| {
                let n = (v.kept.len() + 1).saturating_sub(versions);
                v.kept
                    .iter()
                    .take(n)
                    .map(|v| v.record.hash.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let mut freed = 0u64;
        let mut counted: Vec<&str> = Vec::new();
        for hash in pruned {
            if hash == record.hash || counted.contains(&hash) {
                continue;
            }
            counted.push(hash);
            // Referred to by a version that stays (of this name or another)?
            let stays = self.names.iter().any(|(name, vs)| {
                let skip = if *name == record.name {
                    (vs.kept.len() + 1).saturating_sub(versions)
                } else {
                    0
                };
                vs.kept.iter().skip(skip).any(|v| v.record.hash == hash)
            });
            if !stays {
                freed = freed.saturating_add(self.blobs.get(hash).map_or(0, |b| b.len() as u64));
            }
        }
        let added = match self.blobs.contains_key(&record.hash) {
            true => 0,
            false => record.size,
        };
        self.blob_bytes.saturating_sub(freed).saturating_add(added)
    }
}

impl Default for EmbeddedFunctionTable {
    fn default() -> Self {
        Self::with_limits(TableLimits::default())
    }
}

impl EmbeddedFunctionTable {
    /// An empty table, within the default [`TableLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty table within `limits` (its `versions` taken as 1 to
    /// [`MAX_VERSIONS_KEPT`]).
    pub fn with_limits(limits: TableLimits) -> Self {
        Self {
            state: Mutex::default(),
            events: broadcast::channel(WATCH_BUFFER).0,
            limits: TableLimits {
                versions: limits.versions.clamp(1, MAX_VERSIONS_KEPT),
                ..limits
            },
        }
    }

    /// Tells watchers (none listening is fine). Called with the state
    /// locked, so watchers see changes in the order they happened.
    fn tell(&self, event: FunctionEvent) {
        let _ = self.events.send(event);
    }
}

#[async_trait]
impl FunctionTable for EmbeddedFunctionTable {
    async fn deploy(&self, record: ComponentRecord, bytes: Arc<[u8]>) -> Result<Deployment> {
        check_deploy(&record, &bytes)?;
        let mut state = self.state.lock();
        // The bytes of a kept version: that version, current (no bound
        // is met by what adds nothing).
        if let Some(versions) = state.names.get_mut(&record.name) {
            if let Some(kept) = versions.with_hash(&record.hash).cloned() {
                if versions.current != kept.version {
                    versions.current = kept.version;
                    self.tell(FunctionEvent::Deployed {
                        name: record.name.clone(),
                        version: kept.version,
                        hash: kept.record.hash.clone(),
                    });
                }
                return Ok(Deployment {
                    current: kept,
                    new: false,
                });
            }
        }
        let full = |what, held: u64, limit: u64| Error::TableFull {
            name: record.name.clone(),
            what,
            held,
            limit,
        };
        let names = state.names.len();
        if !state.names.contains_key(&record.name) && names >= self.limits.names {
            let (held, limit) = (names as u64, self.limits.names as u64);
            return Err(full("names", held, limit));
        }
        if state.bytes_after(&record, self.limits.versions) > self.limits.bytes {
            let held = state.blob_bytes;
            return Err(full("bytes of components", held, self.limits.bytes));
        }
        let versions = state.names.entry(record.name.clone()).or_default();
        let version = match versions.kept.back() {
            None => 1,
            Some(last) => last.version.checked_add(1).ok_or_else(|| Error::Corrupt {
                key: record.name.clone(),
                reason: "its last version is the largest number".to_string(),
            })?,
        };
        let deployed = ComponentVersion {
            version,
            deployed_ms: now_ms(),
            record,
        };
        versions.kept.push_back(deployed.clone());
        versions.current = version;
        let mut pruned = Vec::new();
        while versions.kept.len() > self.limits.versions {
            if let Some(old) = versions.kept.pop_front() {
                pruned.push(old.record.hash);
            }
        }
        let hash = deployed.record.hash.clone();
        let size = bytes.len() as u64;
        if state.blobs.insert(hash.clone(), bytes).is_none() {
            state.blob_bytes = state.blob_bytes.saturating_add(size);
        }
        state.collect(pruned);
        self.tell(FunctionEvent::Deployed {
            name: deployed.record.name.clone(),
            version,
            hash,
        });
        Ok(Deployment {
            current: deployed,
            new: true,
        })
    }

    async fn current(&self, name: &str) -> Result<ComponentVersion> {
        self.state
            .lock()
            .names
            .get(name)
            .and_then(Versions::current)
            .cloned()
            .ok_or_else(|| Error::ComponentNotFound(name.to_string()))
    }

    async fn version(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        self.state
            .lock()
            .names
            .get(name)
            .and_then(|versions| versions.kept.iter().find(|v| v.version == version))
            .cloned()
            .ok_or_else(|| Error::VersionNotFound {
                name: name.to_string(),
                version,
            })
    }

    async fn versions(&self, name: &str) -> Result<Vec<ComponentVersion>> {
        self.state
            .lock()
            .names
            .get(name)
            .map(|v| v.kept.iter().cloned().collect())
            .ok_or_else(|| Error::ComponentNotFound(name.to_string()))
    }

    async fn blob(&self, hash: &str) -> Result<Arc<[u8]>> {
        self.state
            .lock()
            .blobs
            .get(hash)
            .cloned()
            .ok_or_else(|| Error::BlobNotFound(hash.to_string()))
    }

    async fn list(&self) -> Result<Vec<ComponentVersion>> {
        // A BTreeMap: already ordered by name.
        Ok(self
            .state
            .lock()
            .names
            .values()
            .filter_map(|v| v.current().cloned())
            .collect())
    }

    async fn list_page(&self, after: Option<&str>, limit: usize) -> Result<Vec<ComponentVersion>> {
        use std::ops::Bound;
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(self
            .state
            .lock()
            .names
            .range::<str, _>((start, Bound::Unbounded))
            .filter_map(|(_, v)| v.current().cloned())
            .take(limit)
            .collect())
    }

    async fn rollback(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        let mut state = self.state.lock();
        let versions = state
            .names
            .get_mut(name)
            .ok_or_else(|| Error::ComponentNotFound(name.to_string()))?;
        let chosen = versions
            .kept
            .iter()
            .find(|v| v.version == version)
            .cloned()
            .ok_or_else(|| Error::VersionNotFound {
                name: name.to_string(),
                version,
            })?;
        if versions.current != version {
            versions.current = version;
            self.tell(FunctionEvent::Deployed {
                name: name.to_string(),
                version,
                hash: chosen.record.hash.clone(),
            });
        }
        Ok(chosen)
    }

    async fn undeploy(&self, name: &str) -> Result<()> {
        if check_name(name).is_err() {
            return Err(Error::ComponentNotFound(name.to_string()));
        }
        let mut state = self.state.lock();
        let versions = state
            .names
            .remove(name)
            .ok_or_else(|| Error::ComponentNotFound(name.to_string()))?;
        state.collect(versions.kept.into_iter().map(|v| v.record.hash));
        self.tell(FunctionEvent::Undeployed {
            name: name.to_string(),
        });
        Ok(())
    }

    async fn watch(&self) -> Result<FunctionWatch> {
        Ok(FunctionWatch::broadcast(self.events.subscribe()))
    }

    fn backend(&self) -> String {
        "embedded".to_string()
    }

    async fn health(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{content_hash, Declared, FunctionKind, FunctionRecord, Param};

    fn record(name: &str, bytes: &[u8]) -> ComponentRecord {
        ComponentRecord {
            name: name.into(),
            hash: content_hash(bytes),
            size: bytes.len() as u64,
            has_main: true,
            sdk: "wray-rust 0.1.0".into(),
            functions: vec![
                FunctionRecord {
                    kind: FunctionKind::Function,
                    name: "add".into(),
                    class: None,
                    num_returns: 1,
                    params: vec![
                        Param {
                            name: "a".into(),
                            schema: r#"{"type":"integer"}"#.into(),
                        },
                        Param {
                            name: "b".into(),
                            schema: r#"{"type":"integer"}"#.into(),
                        },
                    ],
                    returns: vec![r#"{"type":"integer"}"#.into()],
                    declared: Declared::default(),
                },
                FunctionRecord {
                    kind: FunctionKind::ActorMethod,
                    name: "incr".into(),
                    class: Some("Counter".into()),
                    num_returns: 1,
                    params: Vec::new(),
                    returns: vec!["{}".into()],
                    declared: Declared {
                        num_gpus: Some(0.5),
                        ..Declared::default()
                    },
                },
            ],
        }
    }

    #[tokio::test]
    async fn deploy_then_lookup_and_redeploy() {
        let table = EmbeddedFunctionTable::new();
        let rec = record("app", b"v1");
        table
            .deploy(rec.clone(), Arc::from(&b"v1"[..]))
            .await
            .unwrap();
        assert_eq!(table.component("app").await.unwrap(), rec);
        assert_eq!(&*table.blob(&rec.hash).await.unwrap(), b"v1");
        assert!(rec.function("add").is_some());
        assert!(rec.function("incr").is_none());
        assert!(rec.actor_method("Counter", "incr").is_some());

        let rec2 = record("app", b"v2");
        table
            .deploy(rec2.clone(), Arc::from(&b"v2"[..]))
            .await
            .unwrap();
        assert_eq!(table.component("app").await.unwrap().hash, rec2.hash);
        assert_eq!(table.current("app").await.unwrap().version, 2);
        assert_eq!(table.list().await.unwrap().len(), 1);

        let err = table.component("nope").await.unwrap_err();
        assert!(matches!(err, Error::ComponentNotFound(_)));
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("nope"));
    }

    #[tokio::test]
    async fn names_and_bytes_past_the_limits_are_refused_and_pruning_frees_room() {
        let table = EmbeddedFunctionTable::with_limits(TableLimits {
            names: 2,
            versions: 2,
            bytes: 10,
        });
        let deploy = |name: &str, bytes: &[u8]| {
            let bytes: Arc<[u8]> = Arc::from(bytes);
            table.deploy(record(name, &bytes), bytes)
        };
        deploy("a", b"aaaa").await.unwrap();
        deploy("b", b"bbbb").await.unwrap();
        let err = deploy("c", b"c").await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::TableFull {
                    what: "names",
                    limit: 2,
                    ..
                }
            ),
            "{err}"
        );
        assert!(!err.is_retryable());
        assert!(
            err.to_string().contains("holds 2 names, and may hold 2"),
            "{err}"
        );
        let err = deploy("a", b"aaa2").await.unwrap_err();
        assert!(
            err.to_string().contains("holds 8 bytes of components"),
            "{err}"
        );
        // Past two versions of `b`, its first blob is pruned: room again.
        deploy("b", b"b2").await.unwrap();
        deploy("b", b"b3").await.unwrap();
        assert_eq!(table.versions("b").await.unwrap().len(), 2);
        deploy("a", b"a2").await.unwrap();
        table.undeploy("a").await.unwrap();
        deploy("c", b"cccccc").await.unwrap();
    }

    #[tokio::test]
    async fn a_watcher_that_falls_behind_is_told_to_resync() {
        let table = EmbeddedFunctionTable::new();
        let mut watch = table.watch().await.unwrap();
        for i in 0..=WATCH_BUFFER {
            let bytes = i.to_le_bytes();
            table
                .deploy(record("app", &bytes), Arc::from(&bytes[..]))
                .await
                .unwrap();
        }
        assert_eq!(watch.next().await, Some(FunctionEvent::Resync));
        // Then it goes on with what the channel still holds, in order.
        let Some(FunctionEvent::Deployed { version, .. }) = watch.next().await else {
            panic!("a deploy after the resync");
        };
        assert!(version > 1);
        drop(table);
        while let Some(event) = watch.next().await {
            assert!(matches!(event, FunctionEvent::Deployed { .. }));
        }
    }
}
