//! The node registry: which nodes make up a cluster, what each offers, and
//! which of them died (Ray's GCS node table).
//!
//! - A node [registers](NodeRegistry::register) its [`NodeRecord`] and
//!   keeps the returned [`Registration`] for its life: it heartbeats in the
//!   background, republishes availability ([`Registration::update`],
//!   coalesced and rate-limited), and [`Registration::shutdown`] takes the
//!   node out at once.
//! - Any node [watches](NodeRegistry::watch_nodes) the cluster: the
//!   [`NodeView`] holds every node ALIVE and the last dead ones, and sends
//!   a [`NodeEvent`] for each join, update and death.
//!
//! Backends: [`EmbeddedNodeRegistry`] (one process: a node lists itself)
//! and, with the `etcd` feature, `EtcdNodeRegistry` (a record per node
//! under a lease; `docs/control-plane.md` says what an outage does).
//!
//! Everything read back from a backend is untrusted: [`decode_node_record`]
//! bounds its size and every count in it, and a record that fails is
//! skipped and counted ([`NodeView::malformed`]), never a panic.

mod embedded;
mod registration;
mod view;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::cluster::check_cluster;
use crate::{Error, Result};

pub use embedded::EmbeddedNodeRegistry;
pub(crate) use registration::RegistrationParts;
pub use registration::{Registration, RegistrationHealth};
pub use view::NodeView;
pub(crate) use view::{ViewShared, ViewTask};

/// The largest encoded [`NodeRecord`], in bytes.
pub const MAX_NODE_RECORD_BYTES: usize = 64 * 1024;

/// The most resources (`CPU`, `GPU`, `memory`, custom) a record may list,
/// in each of its two maps.
pub const MAX_RESOURCES: usize = 64;

/// The most labels a record may carry.
pub const MAX_LABELS: usize = 64;

/// The longest resource name or label key, in bytes.
pub const MAX_KEY_BYTES: usize = 128;

/// The longest label value, address or version string, in bytes.
pub const MAX_VALUE_BYTES: usize = 256;

/// The most directories a record may list as allowed to jobs
/// ([`NodeRecord::allowed_dirs`]).
pub const MAX_ALLOWED_DIRS: usize = 32;

/// The longest allowed directory a record may list, in bytes.
pub const MAX_DIR_BYTES: usize = 1024;

/// The most live nodes a view holds; a node past it is skipped and counted
/// as malformed.
pub const MAX_NODES: usize = 10_000;

/// The most dead nodes a view remembers (the oldest death is forgotten
/// first).
pub const MAX_DEAD_KEPT: usize = 1_000;

/// etcd's smallest lease TTL with its default timing: a lease granted for
/// less lives this long. etcd computes it as `ceil(1.5 x election ticks x
/// heartbeat interval)` = `ceil(1.5 x 10 x 100 ms)` = 2 s
/// (`server/etcdserver/server.go`, `minTTL`).
pub const MIN_LEASE_TTL: Duration = Duration::from_secs(2);

/// The longest lease TTL accepted (a node dead for longer than this would go
/// unnoticed).
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(3600);

/// The shortest gap between two writes of a record's availability.
pub const MIN_PUBLISH_INTERVAL: Duration = Duration::from_millis(10);

/// A node's identity: `node-` and 16 lowercase hex digits (64 random bits).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NodeId(String);

impl NodeId {
    /// A fresh id from the operating system's random source (the clock
    /// where there is none, as [`JobId::random`](crate::JobId::random)).
    pub fn random() -> Self {
        Self(format!("node-{:016x}", crate::JobId::random().0))
    }

    /// `id` if it is a node id.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the string.
    pub fn parse(id: &str) -> Result<Self> {
        let hex = id.strip_prefix("node-").unwrap_or("");
        if hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Ok(Self(id.to_string()));
        }
        Err(Error::Invalid {
            what: format!("node id {:?}", truncate(id)),
            reason: "a node id is `node-` and 16 lowercase hex digits".to_string(),
        })
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for NodeId {
    type Error = Error;
    fn try_from(id: String) -> Result<Self> {
        Self::parse(&id)
    }
}

impl From<NodeId> for String {
    fn from(id: NodeId) -> String {
        id.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({})", self.0)
    }
}

/// What a node publishes about itself. Plain data: the registry bounds and
/// checks it ([`check_node_record`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// Its id ([`NodeId`]'s form: `node-<16 hex>`).
    pub id: String,
    /// The cluster it belongs to ([`check_cluster`]).
    pub cluster: String,
    /// `host:port` of its node-to-node channel.
    pub peer_address: String,
    /// URL of its HTTP API, if it serves one.
    #[serde(default)]
    pub http_address: Option<String>,
    /// What it has: `CPU` and `GPU` (counts), `memory` (bytes), custom
    /// names; each finite and non-negative.
    pub resources_total: BTreeMap<String, f64>,
    /// What of it is free now (the same names).
    pub resources_available: BTreeMap<String, f64>,
    /// Labels for placement (`zone=a`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// When it started, in milliseconds since the Unix epoch.
    pub start_time_ms: u64,
    /// Its wray version.
    pub version: String,
    /// Tasks running on it now.
    #[serde(default)]
    pub running_tasks: u64,
    /// Bytes its object store holds now.
    #[serde(default)]
    pub object_store_used: u64,
    /// Bytes its object store may hold.
    #[serde(default)]
    pub object_store_capacity: u64,
    /// Objects its store holds spilled to files now.
    #[serde(default)]
    pub object_store_spilled: u64,
    /// Bytes of object values it sent to other nodes so far.
    #[serde(default)]
    pub object_bytes_sent: u64,
    /// Bytes of object values it received from other nodes so far.
    #[serde(default)]
    pub object_bytes_received: u64,
    /// The host directories it lets jobs read (`wray start --allow-dir`),
    /// absolute and with every link resolved, that exist on it: a job's
    /// `--dir` is readable on this node when it lies under one of them
    /// (at most [`MAX_ALLOWED_DIRS`], each at most [`MAX_DIR_BYTES`]).
    #[serde(default)]
    pub allowed_dirs: Vec<String>,
    /// Whether it is draining (`wray stop`, SIGTERM): it takes no new
    /// work, finishes what runs within its `--grace`, then leaves (Ray's
    /// draining nodes). Placement passes it over while it is still alive.
    #[serde(default)]
    pub draining: bool,
}

impl NodeRecord {
    /// Whether the node lets jobs read host directory `dir` (an absolute
    /// path): it lies under one of [`NodeRecord::allowed_dirs`], compared
    /// component by component (`/data2` is not under `/data`).
    pub fn allows_dir(&self, dir: &str) -> bool {
        let dir = std::path::Path::new(dir);
        dir.is_absolute()
            && !dir
                .components()
                .any(|c| c == std::path::Component::ParentDir)
            && self
                .allowed_dirs
                .iter()
                .any(|a| dir.starts_with(std::path::Path::new(a)))
    }

    /// Whether the node lets jobs read every one of `dirs`
    /// ([`NodeRecord::allows_dir`]): where a task of a job with `--dir`s
    /// may run.
    pub fn allows_dirs(&self, dirs: &[String]) -> bool {
        dirs.iter().all(|d| self.allows_dir(d))
    }
}

/// Whether a node is in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeState {
    /// Its record is present: it heartbeats.
    #[serde(rename = "ALIVE")]
    Alive,
    /// Its record disappeared (lease lapsed or revoked).
    #[serde(rename = "DEAD")]
    Dead,
}

/// A member of the cluster as a [`NodeView`] knows it (its stored record
/// and what the view saw of it; the HTTP API lists it as its own
/// `NodeInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterMember {
    /// Its last record seen.
    pub record: NodeRecord,
    /// ALIVE or DEAD.
    pub state: NodeState,
    /// When the view saw it die, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub died_at_ms: Option<u64>,
}

/// A change of membership, by node id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeEvent {
    /// A node appeared (or came back after it was seen dead).
    Joined(String),
    /// A live node published a new record.
    Updated(String),
    /// A node's record disappeared: it is DEAD.
    Died(String),
}

/// How a [`Registration`] keeps its record alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryOptions {
    /// How long the record outlives the last heartbeat (etcd's lease TTL):
    /// whole seconds, at least [`MIN_LEASE_TTL`]. Default 4 s.
    pub lease_ttl: Duration,
    /// How often the lease is renewed: under half of `lease_ttl`. Default
    /// 1 s.
    pub heartbeat: Duration,
    /// The shortest gap between two writes of the record by
    /// [`Registration::update`] (later updates coalesce: the latest
    /// wins). Default 200 ms.
    pub publish_interval: Duration,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self {
            lease_ttl: Duration::from_secs(4),
            heartbeat: Duration::from_secs(1),
            publish_interval: Duration::from_millis(200),
        }
    }
}

impl RegistryOptions {
    /// Checks the options: `lease_ttl` whole seconds in [`MIN_LEASE_TTL`]
    /// ..= [`MAX_LEASE_TTL`], `heartbeat` above 0 and under half of
    /// `lease_ttl` (one lost heartbeat must not lose the lease),
    /// `publish_interval` at least [`MIN_PUBLISH_INTERVAL`].
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the option and its value.
    pub fn check(&self) -> Result<()> {
        let bad = |option: &str, value: Duration, reason: String| Error::Invalid {
            what: format!("registry option {option} = {value:?}"),
            reason,
        };
        let ttl = self.lease_ttl;
        if ttl < MIN_LEASE_TTL || ttl > MAX_LEASE_TTL {
            return Err(bad(
                "lease_ttl",
                ttl,
                format!(
                    "it must be {MIN_LEASE_TTL:?} (etcd's smallest lease) to {MAX_LEASE_TTL:?}"
                ),
            ));
        }
        if ttl.subsec_nanos() != 0 {
            return Err(bad(
                "lease_ttl",
                ttl,
                "etcd leases count whole seconds".to_string(),
            ));
        }
        if self.heartbeat.is_zero() || self.heartbeat >= ttl / 2 {
            return Err(bad(
                "heartbeat",
                self.heartbeat,
                format!("it must be above 0 and under half of lease_ttl ({ttl:?})"),
            ));
        }
        if self.publish_interval < MIN_PUBLISH_INTERVAL {
            return Err(bad(
                "publish_interval",
                self.publish_interval,
                format!("it must be at least {MIN_PUBLISH_INTERVAL:?}"),
            ));
        }
        Ok(())
    }

    /// `lease_ttl` in etcd's unit (seconds).
    pub(crate) fn ttl_seconds(&self) -> i64 {
        i64::try_from(self.lease_ttl.as_secs()).unwrap_or(i64::MAX)
    }
}

/// Checks a record against the bounds above: a valid id and cluster,
/// addresses and strings within [`MAX_VALUE_BYTES`] without control
/// characters, at most [`MAX_RESOURCES`] resources (each finite and
/// non-negative) and [`MAX_LABELS`] labels.
///
/// # Errors
/// [`Error::Invalid`] naming the node and the field.
pub fn check_node_record(record: &NodeRecord) -> Result<()> {
    NodeId::parse(&record.id)?;
    check_cluster(&record.cluster)?;
    let bad = |reason: String| Error::Invalid {
        what: format!("record of node {}", record.id),
        reason,
    };
    let text = |field: &str, value: &str, max: usize, empty_ok: bool| {
        if (value.is_empty() && !empty_ok)
            || value.len() > max
            || value.chars().any(char::is_control)
        {
            Err(bad(format!(
                "its {field} {:?} is empty, over {max} bytes or has a control character",
                truncate(value)
            )))
        } else {
            Ok(())
        }
    };
    text("peer_address", &record.peer_address, MAX_VALUE_BYTES, false)?;
    if let Some(http) = &record.http_address {
        text("http_address", http, MAX_VALUE_BYTES, false)?;
    }
    text("version", &record.version, MAX_VALUE_BYTES, true)?;
    for (field, map) in [
        ("resources_total", &record.resources_total),
        ("resources_available", &record.resources_available),
    ] {
        if map.len() > MAX_RESOURCES {
            return Err(bad(format!(
                "its {field} lists {} resources, more than {MAX_RESOURCES}",
                map.len()
            )));
        }
        for (name, quantity) in map {
            text(field, name, MAX_KEY_BYTES, false)?;
            if !quantity.is_finite() || *quantity < 0.0 {
                return Err(bad(format!(
                    "its {field}[{name}] = {quantity} is not a finite, non-negative quantity"
                )));
            }
        }
    }
    if record.labels.len() > MAX_LABELS {
        return Err(bad(format!(
            "it has {} labels, more than {MAX_LABELS}",
            record.labels.len()
        )));
    }
    for (key, value) in &record.labels {
        text("label key", key, MAX_KEY_BYTES, false)?;
        text("label value", value, MAX_VALUE_BYTES, true)?;
    }
    if record.allowed_dirs.len() > MAX_ALLOWED_DIRS {
        return Err(bad(format!(
            "it lists {} allowed directories, more than {MAX_ALLOWED_DIRS}",
            record.allowed_dirs.len()
        )));
    }
    for dir in &record.allowed_dirs {
        text("allowed directory", dir, MAX_DIR_BYTES, false)?;
        if !dir.starts_with('/') {
            return Err(bad(format!(
                "its allowed directory {:?} is not an absolute path",
                truncate(dir)
            )));
        }
    }
    Ok(())
}

/// Decodes a record read back from a backend under `key`, for node `id`
/// of `cluster`: at most [`MAX_NODE_RECORD_BYTES`], valid
/// ([`check_node_record`]), and naming that node and cluster.
///
/// # Errors
/// [`Error::Corrupt`] naming the key and the check that failed.
pub fn decode_node_record(key: &str, id: &str, cluster: &str, value: &[u8]) -> Result<NodeRecord> {
    let record: NodeRecord = crate::codec::decode_json(key, value, MAX_NODE_RECORD_BYTES)?;
    let corrupt = |reason: String| Error::Corrupt {
        key: key.to_string(),
        reason,
    };
    check_node_record(&record).map_err(|e| corrupt(e.to_string()))?;
    if record.id != id || record.cluster != cluster {
        return Err(corrupt(format!(
            "it names node {} of cluster {}",
            truncate(&record.id),
            truncate(&record.cluster)
        )));
    }
    Ok(record)
}

/// At most the first 64 characters of `text`, for messages.
fn truncate(text: &str) -> &str {
    text.char_indices()
        .nth(64)
        .map_or(text, |(end, _)| &text[..end])
}

/// The node registry, as every control-plane backend provides it.
#[async_trait]
pub trait NodeRegistry: Send + Sync {
    /// Registers `record` (its cluster is `record.cluster`) and keeps it
    /// alive until the returned [`Registration`] is shut down or dropped.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad record or options;
    /// [`Error::AlreadyExists`] when a live node has this id;
    /// [`Error::Unavailable`] when the backend cannot be reached.
    async fn register(&self, record: NodeRecord, options: RegistryOptions) -> Result<Registration>;

    /// The view of `cluster`'s nodes, kept current in the background until
    /// every clone of it is dropped. It has read the cluster once when this
    /// returns, unless the backend cannot be reached within its request
    /// deadline: then it starts empty ([`NodeView::is_synced`] says so)
    /// and fills when the backend answers.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad cluster name.
    async fn watch_nodes(&self, cluster: &str) -> Result<NodeView>;

    /// What backs it: `embedded`, `etcd at http://...`.
    fn backend(&self) -> String;
}

#[cfg(test)]
mod tests;
