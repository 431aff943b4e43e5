//! This node's record in the node registry: built from what it has, and
//! republished as that changes (every `publish_interval` at most, 200 ms
//! by default; the registry coalesces to the latest).

use std::sync::Weak;
use std::time::{Duration, Instant};

use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::{NodeRecord, Registration};

use crate::protocol::SHIPPED_KEEP;
use crate::scheduler::Scheduler;
use crate::serve::Service;
use crate::transfer::Traffic;
use crate::ClusterConfig;

/// The record now of the node of `sched`, started at `started_ms`.
pub(super) fn record(
    sched: &Scheduler,
    started_ms: u64,
    config: &ClusterConfig,
    peer_address: &str,
    traffic: &Traffic,
    draining: bool,
) -> NodeRecord {
    let (sent, received) = traffic.totals();
    let (total, available) = sched.resources();
    let running = sched.tasks().running();
    let store = sched.objects().stats();
    NodeRecord {
        id: sched.node_id().to_owned(),
        cluster: config.name.clone(),
        peer_address: peer_address.to_string(),
        http_address: config.http_address.clone(),
        resources_total: total,
        resources_available: available,
        labels: config.labels.clone(),
        start_time_ms: started_ms,
        version: env!("CARGO_PKG_VERSION").to_string(),
        running_tasks: running,
        object_store_used: store.bytes as u64,
        object_store_spilled: store.spilled as u64,
        object_bytes_sent: sent,
        object_bytes_received: received,
        object_store_capacity: sched
            .objects()
            .arena()
            .map_or(0, |a| u64::try_from(a.capacity()).unwrap_or(u64::MAX)),
        // Checked when the node started (absolute directories, within the
        // record's bounds); resolved by the CLI.
        allowed_dirs: sched
            .config()
            .allow_dirs
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect(),
        draining,
    }
}

/// Republishes the node's record while it changes, until the node is
/// gone; gives back shipments their owners never released, and relayed
/// answers parked here that no node pulls any more.
pub(super) async fn publish(
    sched: Weak<Scheduler>,
    started_ms: u64,
    config: ClusterConfig,
    peer_address: String,
    registration: Arc<Mutex<Option<Registration>>>,
    service: Arc<Service>,
) {
    let mut last: Option<NodeRecord> = None;
    let every = config
        .registry
        .publish_interval
        .max(Duration::from_millis(10));
    let mut swept = Instant::now();
    let mut kept_then = Vec::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            // Draining: published at once.
            () = service.drain.started.notified() => {}
        }
        let Some(sched) = sched.upgrade() else {
            return;
        };
        let draining = service.drain.is_draining();
        let now = record(
            &sched,
            started_ms,
            &config,
            &peer_address,
            &service.traffic,
            draining,
        );
        drop(sched);
        if last.as_ref() != Some(&now) {
            let published = match &*registration.lock() {
                Some(r) => r.update(now.clone()),
                None => return,
            };
            if let Err(e) = published {
                tracing::warn!("publishing the node's record: {e}");
            }
            last = Some(now);
        }
        service.expire_relayed();
        if swept.elapsed() >= SHIPPED_KEEP {
            service.sweep(&kept_then);
            kept_then = service.kept_tasks();
            swept = Instant::now();
        }
    }
}
