//! [`EmbeddedNodeRegistry`]: the node registry of one process. A node
//! without etcd registers itself here and its view lists itself.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::{
    check_node_record, NodeRecord, NodeRegistry, NodeView, Registration, RegistrationHealth,
    RegistrationParts, RegistryOptions, ViewShared,
};
use crate::cluster::check_cluster;
use crate::{Error, Result};

/// The in-process node registry: registering inserts into the cluster's
/// view, an update replaces the record (at most once per
/// `publish_interval`), and shutting down or dropping the registration
/// makes the node DEAD at once (nothing here can outlive the process, so
/// no lease is needed).
#[derive(Default)]
pub struct EmbeddedNodeRegistry {
    clusters: Mutex<BTreeMap<String, Arc<ViewShared>>>,
}

impl std::fmt::Debug for EmbeddedNodeRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedNodeRegistry")
            .finish_non_exhaustive()
    }
}

impl EmbeddedNodeRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn cluster(&self, cluster: &str) -> Arc<ViewShared> {
        self.clusters
            .lock()
            .entry(cluster.to_string())
            .or_insert_with(|| {
                let shared = ViewShared::new();
                shared.set_synced();
                shared
            })
            .clone()
    }
}

/// Makes its node DEAD when the registration's task ends, however it ends
/// (shutdown, the handle dropped, the task aborted).
struct Leave {
    shared: Arc<ViewShared>,
    id: String,
}

impl Drop for Leave {
    fn drop(&mut self) {
        self.shared.died(&self.id);
    }
}

#[async_trait]
impl NodeRegistry for EmbeddedNodeRegistry {
    async fn register(&self, record: NodeRecord, options: RegistryOptions) -> Result<Registration> {
        options.check()?;
        check_node_record(&record)?;
        let shared = self.cluster(&record.cluster);
        if shared.is_alive(&record.id) {
            return Err(Error::AlreadyExists {
                what: "node",
                name: record.id,
                holder: String::new(),
            });
        }
        shared.upsert(record.clone());
        let health = RegistrationHealth {
            lease: 0,
            last_heartbeat: Some(Instant::now()),
            registrations: 1,
            writes: 1,
            last_error: None,
        };
        let id = record.id.clone();
        Ok(Registration::start(record, health, move |parts| {
            tokio::spawn(keep(Leave { shared, id }, parts, options))
        }))
    }

    async fn watch_nodes(&self, cluster: &str) -> Result<NodeView> {
        check_cluster(cluster)?;
        Ok(NodeView::new(self.cluster(cluster), None))
    }

    fn backend(&self) -> String {
        "embedded".to_string()
    }
}

/// Applies updates, at most one per `publish_interval`, until stopped;
/// `leave` marks the node DEAD when this ends.
async fn keep(leave: Leave, parts: RegistrationParts, options: RegistryOptions) -> Result<()> {
    let RegistrationParts {
        mut updates,
        mut stop,
        health,
    } = parts;
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => return Ok(()),
            changed = updates.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
        }
        let record = updates.borrow_and_update().clone();
        leave.shared.upsert(record);
        {
            let mut health = health.lock();
            health.writes += 1;
            health.last_heartbeat = Some(Instant::now());
        }
        tokio::select! {
            biased;
            _ = &mut stop => return Ok(()),
            () = tokio::time::sleep(options.publish_interval) => {}
        }
    }
}
