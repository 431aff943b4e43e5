//! [`EtcdNodeRegistry`]: node records in etcd under leases, and the task
//! that keeps one alive ([`Keeper`]).
//!
//! A node's record is `<prefix><cluster>/nodes/<id>`, attached to a lease
//! of `lease_ttl`. The keeper renews the lease every `heartbeat`; while etcd
//! cannot be reached it retries (100 ms doubling to `heartbeat`, with
//! jitter); when etcd answers that the lease is gone (lapsed: the node was
//! cut off longer than `lease_ttl`), it registers the same id again under
//! a new lease. Updates are written under the current lease, at most one
//! per `publish_interval`. Shutdown revokes the lease, deleting the record
//! at once.

use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use tokio::time::Instant;

use super::cluster_keys::ClusterKeys;
use super::node_watch::NodeWatcher;
use super::{jitter, EtcdClient};
use crate::codec::encode_json;
use crate::nodes::{
    check_node_record, NodeRecord, NodeRegistry, NodeView, Registration, RegistrationHealth,
    RegistrationParts, RegistryOptions, ViewShared, ViewTask,
};
use crate::{Error, Result};

/// gRPC's `NOT_FOUND` status code, which etcd answers for a lease it does
/// not have.
const GRPC_NOT_FOUND: i32 = 5;

/// Pause before the first retry of a failed heartbeat or write; doubles up
/// to the heartbeat.
const FIRST_RETRY: Duration = Duration::from_millis(100);

/// The node registry on etcd. Cheap to share.
#[derive(Debug, Clone)]
pub struct EtcdNodeRegistry {
    etcd: EtcdClient,
}

impl EtcdNodeRegistry {
    /// A registry on the connection `etcd`, under its configured prefix.
    pub fn new(etcd: EtcdClient) -> Self {
        Self { etcd }
    }

    fn keys(&self, cluster: &str) -> Result<ClusterKeys> {
        ClusterKeys::new(&self.etcd.config().prefix, cluster)
    }
}

#[async_trait]
impl NodeRegistry for EtcdNodeRegistry {
    async fn register(&self, record: NodeRecord, options: RegistryOptions) -> Result<Registration> {
        options.check()?;
        check_node_record(&record)?;
        let key = self.keys(&record.cluster)?.node(&record.id);
        let keeper = Keeper {
            etcd: self.etcd.clone(),
            key,
            id: record.id.clone(),
            options,
            lease: 0,
        };
        let lease = keeper.grant().await?;
        let txn = Txn::new()
            .when([Compare::create_revision(
                keeper.key.as_str(),
                CompareOp::Equal,
                0,
            )])
            .and_then([TxnOp::put(
                keeper.key.as_str(),
                encode_json(&record),
                Some(PutOptions::new().with_lease(lease)),
            )]);
        let written = self
            .etcd
            .txn(format!("register node {}", record.id), txn)
            .await;
        let taken = match written {
            Ok(resp) => !resp.succeeded(),
            Err(e) => {
                let _ = keeper.revoke(lease).await;
                return Err(e);
            }
        };
        if taken {
            let _ = keeper.revoke(lease).await;
            return Err(Error::AlreadyExists {
                what: "node",
                name: record.id,
                holder: format!(" in cluster {}", record.cluster),
            });
        }
        let health = RegistrationHealth {
            lease,
            last_heartbeat: Some(std::time::Instant::now()),
            registrations: 1,
            writes: 1,
            last_error: None,
        };
        let keeper = Keeper { lease, ..keeper };
        Ok(Registration::start(record, health, move |parts| {
            tokio::spawn(keeper.run(parts))
        }))
    }

    async fn watch_nodes(&self, cluster: &str) -> Result<NodeView> {
        let keys = self.keys(cluster)?;
        let shared = ViewShared::new();
        let mut synced = shared.synced_receiver();
        let watcher = NodeWatcher {
            etcd: self.etcd.clone(),
            keys,
            shared: shared.clone(),
        };
        let view = NodeView::new(shared, Some(ViewTask(tokio::spawn(watcher.run()))));
        // Wait for the first listing, within the request deadline; past it
        // the view starts empty and fills when etcd answers.
        let deadline = self.etcd.config().request_timeout;
        let _ = tokio::time::timeout(deadline, synced.wait_for(|s| *s)).await;
        Ok(view)
    }

    fn backend(&self) -> String {
        self.etcd.label().to_string()
    }
}

/// What keeps one node's record alive.
struct Keeper {
    etcd: EtcdClient,
    key: String,
    id: String,
    options: RegistryOptions,
    /// The lease the record lives under now.
    lease: i64,
}

/// What one heartbeat learned.
enum Beat {
    /// etcd renewed the lease.
    Renewed,
    /// etcd no longer has the lease (it lapsed): the record is gone.
    Lapsed,
}

impl Keeper {
    /// How long one heartbeat or write may wait: twice the heartbeat (under
    /// the TTL), at most the request deadline.
    fn deadline(&self) -> Duration {
        (self.options.heartbeat * 2).min(self.etcd.config().request_timeout)
    }

    /// A fresh lease of `lease_ttl`.
    async fn grant(&self) -> Result<i64> {
        let mut leases = self.etcd.raw().lease_client();
        let ttl = self.options.ttl_seconds();
        let granted = self
            .etcd
            .call(
                format!("grant a {ttl} s lease for node {}", self.id),
                leases.grant(ttl, None),
            )
            .await?;
        Ok(granted.id())
    }

    /// Revokes `lease` (deleting the record); a lease already gone is fine.
    async fn revoke(&self, lease: i64) -> Result<()> {
        let mut leases = self.etcd.raw().lease_client();
        let revoke = async move {
            match leases.revoke(lease).await {
                Err(etcd_client::Error::GRpcStatus(s)) if i32::from(s.code()) == GRPC_NOT_FOUND => {
                    Ok(())
                }
                other => other.map(drop),
            }
        };
        self.etcd
            .call(
                format!("revoke lease {lease:x} of node {}", self.id),
                revoke,
            )
            .await
    }

    /// One heartbeat: a keep-alive of the lease on a stream of its own.
    /// The client sends one request and reads its answer when it opens the
    /// stream, and says "lease not found" for an answer of TTL 0.
    async fn beat(&self) -> Result<Beat> {
        let mut leases = self.etcd.raw().lease_client();
        let lease = self.lease;
        let renew = async move {
            match leases.keep_alive(lease).await {
                Ok(_) => Ok(Beat::Renewed),
                Err(etcd_client::Error::LeaseKeepAliveError(e)) if e.contains("not found") => {
                    Ok(Beat::Lapsed)
                }
                Err(e) => Err(e),
            }
        };
        let what = format!("renew lease {lease:x} of node {}", self.id);
        self.etcd.call_within(self.deadline(), &what, renew).await
    }

    /// Writes `record` under the current lease.
    async fn publish(&self, record: &NodeRecord) -> Result<()> {
        let options = PutOptions::new().with_lease(self.lease);
        let mut kv = self.etcd.kv();
        let put = kv.put(self.key.as_str(), encode_json(record), Some(options));
        self.etcd
            .call_within(self.deadline(), format!("put {}", self.key), put)
            .await
            .map(drop)
    }

    /// The lease lapsed: a new lease, and `record` written under it.
    async fn register_again(&mut self, record: &NodeRecord) -> Result<()> {
        let lease = self.grant().await?;
        let old = std::mem::replace(&mut self.lease, lease);
        if let Err(e) = self.publish(record).await {
            self.lease = old;
            let _ = self.revoke(lease).await;
            return Err(e);
        }
        tracing::warn!(
            node = %self.id,
            "lease {old:x} lapsed while etcd could not be reached; registered again under lease {lease:x}"
        );
        Ok(())
    }

    /// Heartbeats and writes updates until stopped: revokes the lease on
    /// shutdown, and just ends when the handle is dropped.
    async fn run(mut self, parts: RegistrationParts) -> Result<()> {
        let RegistrationParts {
            mut updates,
            mut stop,
            health,
        } = parts;
        let heartbeat = self.options.heartbeat;
        let interval = self.options.publish_interval;
        let mut next_beat = Instant::now() + heartbeat;
        let mut next_write = Instant::now() + interval;
        let mut pending = false;
        let mut beat_failures = 0u32;
        let mut write_failures = 0u32;
        loop {
            let wake = if pending {
                next_beat.min(next_write)
            } else {
                next_beat
            };
            tokio::select! {
                biased;
                stopped = &mut stop => {
                    return match stopped {
                        Ok(()) => self.revoke(self.lease).await,
                        Err(_) => Ok(()),
                    };
                }
                changed = updates.changed(), if !pending => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    pending = true;
                    continue;
                }
                () = tokio::time::sleep_until(wake) => {}
            }
            if Instant::now() >= next_beat {
                let outcome = match self.beat().await {
                    Ok(Beat::Renewed) => Ok(false),
                    Ok(Beat::Lapsed) => {
                        let record = updates.borrow_and_update().clone();
                        self.register_again(&record).await.map(|()| true)
                    }
                    Err(e) => Err(e),
                };
                let mut health = health.lock();
                match outcome {
                    Ok(registered) => {
                        beat_failures = 0;
                        next_beat = Instant::now() + heartbeat;
                        health.last_heartbeat = Some(std::time::Instant::now());
                        health.last_error = None;
                        if registered {
                            pending = false;
                            next_write = Instant::now() + interval;
                            health.lease = self.lease;
                            health.registrations += 1;
                            health.writes += 1;
                        }
                    }
                    Err(e) => {
                        beat_failures = beat_failures.saturating_add(1);
                        next_beat = Instant::now() + retry_pause(beat_failures, heartbeat);
                        tracing::debug!(node = %self.id, "heartbeat failed: {e}");
                        health.last_error = Some(e.to_string());
                    }
                }
            }
            if pending && Instant::now() >= next_write {
                let record = updates.borrow_and_update().clone();
                let written = self.publish(&record).await;
                let mut health = health.lock();
                match written {
                    Ok(()) => {
                        pending = false;
                        write_failures = 0;
                        next_write = Instant::now() + interval;
                        health.writes += 1;
                    }
                    Err(e) => {
                        // Stays pending: the latest record is written on the
                        // next try (or by a re-registration).
                        write_failures = write_failures.saturating_add(1);
                        next_write = Instant::now() + retry_pause(write_failures, heartbeat);
                        health.last_error = Some(e.to_string());
                    }
                }
            }
        }
    }
}

/// The pause after `failures` failed tries in a row: 100 ms doubling, at
/// most `cap`, plus up to half again at random.
fn retry_pause(failures: u32, cap: Duration) -> Duration {
    let doubled = FIRST_RETRY.saturating_mul(1 << failures.clamp(1, 16).saturating_sub(1));
    jitter(doubled.min(cap))
}
