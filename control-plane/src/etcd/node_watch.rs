//! The task behind an etcd [`NodeView`](crate::NodeView): list the
//! cluster's node records, then watch them from the listing's revision;
//! when the watch breaks (etcd down, connection lost, history compacted),
//! list again after a pause and go on from there.
//!
//! Only what etcd says makes a node DEAD: a delete event, or a listing
//! that lacks a node the view had.
//!
//! A record is trusted only under a lease: a node registers its record
//! attached to its lease, so etcd deletes it when the node stops
//! heartbeating. A record written without one (by anyone who can write
//! etcd) would stay ALIVE forever: it is skipped as malformed, and a
//! node's record that loses its lease this way dies in the view. etcd
//! refuses a put naming a lease it does not have (`requested lease not
//! found`) and deletes a lease's keys with it, so a key carrying a
//! nonzero lease id has a live lease. While etcd cannot be reached nothing is
//! listed and nothing changes: the view keeps the last known set ALIVE.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Event, WatchOptions};

use super::cluster_keys::ClusterKeys;
use super::{jitter, EtcdClient};
use crate::nodes::{decode_node_record, NodeRecord, ViewShared, MAX_DEAD_KEPT, MAX_NODES};
use crate::Error;

/// Pause before the first relist after a failure; doubles up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// Longest pause between relists.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Node records read per request when listing (each at most 64 KiB, so a
/// page stays under the 16 MiB response limit).
const LIST_PAGE: i64 = 128;

/// The most keys a listing reads: the live nodes a view holds, and room
/// for malformed records beside them.
const MAX_LISTED: usize = MAX_NODES + MAX_DEAD_KEPT;

/// The largest watch response accepted (a batch of events with records).
const MAX_WATCH_RESPONSE_BYTES: usize = 16 << 20;

/// What the task needs.
pub(super) struct NodeWatcher {
    pub etcd: EtcdClient,
    pub keys: ClusterKeys,
    pub shared: Arc<ViewShared>,
}

impl NodeWatcher {
    /// Lists and watches until aborted (when the last view is dropped).
    pub(super) async fn run(self) {
        let mut pause = FIRST_BACKOFF;
        loop {
            match self.relist().await {
                Ok(revision) => {
                    self.shared.set_synced();
                    if self.follow(revision.saturating_add(1)).await {
                        pause = FIRST_BACKOFF;
                    }
                }
                Err(e) => tracing::debug!(cluster = self.keys.cluster(), "listing nodes: {e}"),
            }
            tokio::time::sleep(jitter(pause)).await;
            pause = (pause * 2).min(MAX_BACKOFF);
        }
    }

    /// Reads every node record and applies the listing; the revision read.
    async fn relist(&self) -> crate::Result<i64> {
        let prefix = self.keys.nodes();
        let (kvs, revision) = self
            .etcd
            .range_at(&prefix, None, LIST_PAGE, MAX_LISTED)
            .await?;
        let records = kvs
            .iter()
            .filter_map(|kv| self.record(kv.key(), kv.value(), kv.lease()))
            .collect();
        self.shared.relist(records);
        Ok(revision)
    }

    /// The record under `key`, attached to lease `lease`, if it is a
    /// valid one under a lease (else counted).
    fn record(&self, key: &[u8], value: &[u8], lease: i64) -> Option<NodeRecord> {
        let text = String::from_utf8_lossy(key);
        let Some(id) = self.keys.node_of(key) else {
            let reason = Error::Corrupt {
                key: text.to_string(),
                reason: "its last segment is not a node id".to_string(),
            };
            self.shared.malformed(&text, &reason);
            return None;
        };
        match decode_node_record(&text, id, self.keys.cluster(), value) {
            Ok(_) if lease == 0 => {
                let reason = Error::Corrupt {
                    key: text.to_string(),
                    reason: "it has no lease (a node's record lives under its lease): not a \
                             live node"
                        .to_string(),
                };
                self.shared.malformed(&text, &reason);
                None
            }
            Ok(record) => Some(record),
            Err(e) => {
                self.shared.malformed(&text, &e);
                None
            }
        }
    }

    /// Applies watch events from revision `start` until the watch breaks;
    /// whether any response arrived.
    async fn follow(&self, start: i64) -> bool {
        let options = WatchOptions::new().with_prefix().with_start_revision(start);
        let mut client = self
            .etcd
            .raw()
            .watch_client()
            .max_decoding_message_size(MAX_WATCH_RESPONSE_BYTES);
        let open = client.watch(self.keys.nodes(), Some(options));
        let timeout = self.etcd.config().request_timeout;
        let Ok(Ok(mut stream)) = tokio::time::timeout(timeout, open).await else {
            return false;
        };
        let mut progressed = false;
        loop {
            let Ok(Some(response)) = stream.message().await else {
                return progressed;
            };
            progressed = true;
            if response.compact_revision() > 0 || response.canceled() {
                // History we need is gone (or etcd ended the watch): relist.
                return progressed;
            }
            for event in response.events() {
                self.apply(event);
            }
        }
    }

    /// One change of a node key. A deleted key has version 0 (read so
    /// rather than through the event's type, whose accessor panics on a
    /// type it does not know).
    fn apply(&self, event: &Event) {
        let Some(kv) = event.kv() else { return };
        if kv.version() == 0 {
            if let Some(id) = self.keys.node_of(kv.key()) {
                self.shared.died(id);
            }
            return;
        }
        match self.record(kv.key(), kv.value(), kv.lease()) {
            Some(record) => self.shared.upsert(record),
            // A live node's key rewritten without its lease: no longer
            // trusted alive.
            None if kv.lease() == 0 => {
                if let Some(id) = self.keys.node_of(kv.key()) {
                    self.shared.died(id);
                }
            }
            None => {}
        }
    }
}
