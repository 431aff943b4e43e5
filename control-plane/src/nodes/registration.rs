//! [`Registration`]: the handle a node keeps while it is registered. Its
//! backend's background task heartbeats and writes the record; the handle
//! feeds it updates through a `watch` channel (never blocking) and stops it.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::{check_node_record, NodeRecord};
use crate::{Error, Result};

/// How a registration fares, for status pages and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrationHealth {
    /// The lease the record lives under now (0: the embedded registry,
    /// which has none).
    pub lease: i64,
    /// When the backend last confirmed the lease (a heartbeat answered,
    /// or a registration).
    pub last_heartbeat: Option<Instant>,
    /// How many times the node was registered: 1, plus one per
    /// re-registration after its lease lapsed.
    pub registrations: u64,
    /// How many times the record was written, the first included.
    pub writes: u64,
    /// The last failure talking to the backend, if the last try failed.
    pub last_error: Option<String>,
}

/// What a backend's task gets from [`Registration::start`].
pub(crate) struct RegistrationParts {
    /// The latest record given to [`Registration::update`].
    pub updates: watch::Receiver<NodeRecord>,
    /// Fires `Ok(())` on [`Registration::shutdown`]; closes (`Err`) when
    /// the handle is dropped.
    pub stop: oneshot::Receiver<()>,
    /// Where the task reports how it fares.
    pub health: Arc<Mutex<RegistrationHealth>>,
}

/// A registered node. Keep it for the node's life.
///
/// - [`update`](Self::update) republishes the record (availability),
///   coalesced: at most one write per `publish_interval`, the latest wins.
/// - [`shutdown`](Self::shutdown) takes the node out at once (etcd: the
///   lease is revoked) and stops the task.
/// - Dropping it stops the task without taking the node out: the cluster
///   sees it DEAD when its lease lapses, as for a killed node (embedded:
///   at once).
pub struct Registration {
    id: String,
    cluster: String,
    updates: watch::Sender<NodeRecord>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<()>>>,
    health: Arc<Mutex<RegistrationHealth>>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .field("cluster", &self.cluster)
            .field("health", &*self.health.lock())
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// Starts the backend's task for `record`: `spawn` gets the task's
    /// inputs and returns its handle.
    pub(crate) fn start(
        record: NodeRecord,
        health: RegistrationHealth,
        spawn: impl FnOnce(RegistrationParts) -> JoinHandle<Result<()>>,
    ) -> Self {
        let id = record.id.clone();
        let cluster = record.cluster.clone();
        let (updates, receiver) = watch::channel(record);
        let (stop, stop_receiver) = oneshot::channel();
        let health = Arc::new(Mutex::new(health));
        let task = spawn(RegistrationParts {
            updates: receiver,
            stop: stop_receiver,
            health: health.clone(),
        });
        Self {
            id,
            cluster,
            updates,
            stop: Some(stop),
            task: Some(task),
            health,
        }
    }

    /// The node's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The node's cluster.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// Publishes `record` (new availability, running tasks, object store
    /// use): returns at once; the background task writes it, at most once
    /// per `publish_interval`, and a later update replaces one not yet
    /// written.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a record that fails
    /// [`check_node_record`](super::check_node_record) or names another
    /// node or cluster (nothing is published).
    pub fn update(&self, record: NodeRecord) -> Result<()> {
        if record.id != self.id || record.cluster != self.cluster {
            return Err(Error::Invalid {
                what: format!("update of node {} of cluster {}", self.id, self.cluster),
                reason: format!(
                    "the record names node {} of cluster {}",
                    record.id, record.cluster
                ),
            });
        }
        check_node_record(&record)?;
        self.updates.send_replace(record);
        Ok(())
    }

    /// How the registration fares now.
    pub fn health(&self) -> RegistrationHealth {
        self.health.lock().clone()
    }

    /// Takes the node out of the cluster now (others see it DEAD at once)
    /// and stops the background task.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the backend could not be told (etcd
    /// down): the node then drops out when its lease lapses.
    ///
    /// # Cancel safety
    /// Dropping the future before it completes drops the registration:
    /// the node may stay until its lease lapses.
    pub async fn shutdown(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            // The task may have ended already; then it has nothing to stop.
            let _ = stop.send(());
        }
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match task.await {
            Ok(result) => result,
            Err(e) => Err(Error::Unavailable(format!(
                "the registration task of node {} ended abnormally: {e}",
                self.id
            ))),
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
