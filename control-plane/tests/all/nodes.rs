//! The node registry on a real etcd: nodes see each other, updates are
//! coalesced, deaths show within the lease, an etcd outage kills nobody,
//! a lapsed lease is taken again, and damaged records are skipped.

use std::time::{Duration, Instant};

use etcd_client::GetOptions;
use tokio::sync::broadcast::error::TryRecvError;
use wray_control_plane::{
    EtcdNodeRegistry, NodeEvent, NodeId, NodeRecord, NodeRegistry, NodeState, NodeView,
    RegistryOptions,
};

use crate::etcd_server::EtcdServer;

const CLUSTER: &str = "c1";

fn record(id: &str) -> NodeRecord {
    NodeRecord {
        id: id.to_string(),
        cluster: CLUSTER.to_string(),
        peer_address: "127.0.0.1:7000".to_string(),
        http_address: None,
        resources_total: [("CPU".to_string(), 8.0), ("memory".to_string(), 1e10)].into(),
        resources_available: [("CPU".to_string(), 8.0)].into(),
        labels: Default::default(),
        start_time_ms: 1,
        version: "test".to_string(),
        running_tasks: 0,
        object_store_used: 0,
        object_store_capacity: 1 << 30,
        object_store_spilled: 0,
        object_bytes_sent: 0,
        object_bytes_received: 0,
        allowed_dirs: Vec::new(),
        draining: false,
    }
}

fn new_id() -> String {
    NodeId::random().to_string()
}

/// Waits until `check` holds, at most `within`; panics naming `what`.
async fn until(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn state(view: &NodeView, id: &str) -> Option<NodeState> {
    view.state(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_see_each_other_and_updates_are_coalesced() {
    let etcd = EtcdServer::start();
    let registry = EtcdNodeRegistry::new(etcd.etcd_client().await);
    let other_registry = EtcdNodeRegistry::new(etcd.etcd_client().await);
    let options = RegistryOptions::default();
    let (a, b) = (new_id(), new_id());
    let reg_a = registry.register(record(&a), options).await.unwrap();
    let _reg_b = other_registry.register(record(&b), options).await.unwrap();
    let view_a = registry.watch_nodes(CLUSTER).await.unwrap();
    let view_b = other_registry.watch_nodes(CLUSTER).await.unwrap();
    assert!(view_a.is_synced() && view_b.is_synced());
    for view in [&view_a, &view_b] {
        assert_eq!(state(view, &a), Some(NodeState::Alive));
        assert_eq!(state(view, &b), Some(NodeState::Alive));
    }
    // Another cluster's view is empty.
    assert!(registry.watch_nodes("c2").await.unwrap().alive().is_empty());

    // A burst of updates: the last one wins, written a few times at most.
    let mut events = view_b.subscribe();
    let started = Instant::now();
    for n in 1..=50u64 {
        let mut r = record(&a);
        r.running_tasks = n;
        r.resources_available
            .insert("CPU".into(), 8.0 - (n % 8) as f64);
        reg_a.update(r).unwrap();
    }
    let burst = started.elapsed();
    until(
        "the last update reaches the other node",
        Duration::from_secs(10),
        || view_b.get(&a).is_some_and(|n| n.record.running_tasks == 50),
    )
    .await;
    assert!(matches!(events.try_recv(), Ok(NodeEvent::Updated(id)) if id == a));
    let mut raw = etcd.client().await;
    let key = format!("/wray/{CLUSTER}/nodes/{a}");
    let written = raw.get(key.as_str(), None).await.unwrap().kvs()[0].version();
    // The registration's write, then one per 200 ms interval the burst spanned.
    let most = 2 + (burst.as_millis() / 200) as i64;
    assert!(
        written <= most,
        "{written} writes for a {burst:?} burst, at most {most} allowed"
    );
    assert!(reg_a.health().writes as i64 <= most);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_dies_within_its_lease_and_a_shut_down_one_at_once() {
    let etcd = EtcdServer::start();
    let registry = EtcdNodeRegistry::new(etcd.etcd_client().await);
    let options = RegistryOptions::default();
    let (a, b) = (new_id(), new_id());
    let reg_a = registry.register(record(&a), options).await.unwrap();
    let reg_b = registry.register(record(&b), options).await.unwrap();
    let view = registry.watch_nodes(CLUSTER).await.unwrap();
    let mut events = view.subscribe();
    assert_eq!(view.alive().len(), 2);

    // Killed: its heartbeats stop, its lease (4 s) lapses.
    let killed = Instant::now();
    drop(reg_a);
    until("the killed node is dead", Duration::from_secs(15), || {
        state(&view, &a) == Some(NodeState::Dead)
    })
    .await;
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(6), "dead after {took:?}");
    assert_eq!(state(&view, &b), Some(NodeState::Alive));
    assert_eq!(events.recv().await.unwrap(), NodeEvent::Died(a.clone()));
    assert!(view.get(&a).unwrap().died_at_ms.is_some());

    // Shut down: its lease is revoked, dead at once.
    let left = Instant::now();
    reg_b.shutdown().await.unwrap();
    until("the shut-down node is dead", Duration::from_secs(5), || {
        state(&view, &b) == Some(NodeState::Dead)
    })
    .await;
    let took = left.elapsed();
    assert!(took < Duration::from_secs(2), "dead after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_outage_declares_no_node_dead() {
    let mut etcd = EtcdServer::start();
    let registry = EtcdNodeRegistry::new(etcd.etcd_client().await);
    let options = RegistryOptions::default();
    let (a, b) = (new_id(), new_id());
    let reg_a = registry.register(record(&a), options).await.unwrap();
    let reg_b = registry.register(record(&b), options).await.unwrap();
    let view = registry.watch_nodes(CLUSTER).await.unwrap();
    let mut events = view.subscribe();
    let both_alive = |view: &NodeView| {
        state(view, &a) == Some(NodeState::Alive) && state(view, &b) == Some(NodeState::Alive)
    };
    assert!(both_alive(&view));

    // Down for 5 s (longer than the 4 s lease): checked all along.
    tokio::task::block_in_place(|| etcd.stop());
    let down = Instant::now();
    while down.elapsed() < Duration::from_secs(5) {
        assert!(
            both_alive(&view),
            "a node was declared dead during the outage"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::task::block_in_place(|| etcd.restart());
    let up = std::time::Instant::now();

    // Both heartbeat again, and the view follows etcd again (an update
    // made after the outage arrives), without anyone having died.
    until(
        "fresh heartbeats after the outage",
        Duration::from_secs(20),
        || {
            [&reg_a, &reg_b]
                .iter()
                .all(|r| r.health().last_heartbeat.is_some_and(|t| t > up))
        },
    )
    .await;
    let mut busy = record(&a);
    busy.running_tasks = 7;
    reg_a.update(busy).unwrap();
    until(
        "an update after the outage",
        Duration::from_secs(20),
        || view.get(&a).is_some_and(|n| n.record.running_tasks == 7),
    )
    .await;
    assert!(both_alive(&view));
    for reg in [&reg_a, &reg_b] {
        assert_eq!(reg.health().registrations, 1, "the lease survived");
    }
    loop {
        match events.try_recv() {
            Ok(NodeEvent::Died(id)) => panic!("node {id} was declared dead"),
            Ok(_) => {}
            Err(TryRecvError::Empty) => break,
            Err(e) => panic!("events: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_lease_lapsed_registers_again() {
    let etcd = EtcdServer::start();
    let registry = EtcdNodeRegistry::new(etcd.etcd_client().await);
    let a = new_id();
    let reg = registry
        .register(record(&a), RegistryOptions::default())
        .await
        .unwrap();
    let view = registry.watch_nodes(CLUSTER).await.unwrap();
    let lease = reg.health().lease;
    assert_ne!(lease, 0);

    // etcd drops the lease, as when the node was cut off for longer than
    // the TTL (an etcd restart itself renews every lease): the record goes,
    // the view says so, and the node's next heartbeat registers it again.
    let mut raw = etcd.client().await;
    raw.lease_revoke(lease).await.unwrap();
    until(
        "the view sees the record go",
        Duration::from_secs(5),
        || state(&view, &a) == Some(NodeState::Dead),
    )
    .await;
    until("the node registers again", Duration::from_secs(10), || {
        state(&view, &a) == Some(NodeState::Alive)
    })
    .await;
    let health = reg.health();
    assert_eq!(health.registrations, 2);
    assert_ne!(health.lease, lease);
    reg.shutdown().await.unwrap();
    until("dead after shutdown", Duration::from_secs(5), || {
        state(&view, &a) == Some(NodeState::Dead)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_records_are_skipped_and_counted() {
    let etcd = EtcdServer::start();
    let registry = EtcdNodeRegistry::new(etcd.etcd_client().await);
    let mut raw = etcd.client().await;
    let nodes = format!("/wray/{CLUSTER}/nodes/");
    let id = new_id();
    let mut negative = serde_json::to_value(record(&id)).unwrap();
    negative["resources_total"]["CPU"] = (-1.0).into();
    let mut foreign = record(&id);
    foreign.id = new_id();
    let huge = format!(r#"{{"id":"{id}","version":"{}"}}"#, "x".repeat(70 * 1024));
    let lies: Vec<(String, Vec<u8>)> = vec![
        (format!("{nodes}{id}"), b"\x00not json".to_vec()),
        (
            format!("{nodes}bogus"),
            serde_json::to_vec(&record(&id)).unwrap(),
        ),
        (
            format!("{nodes}{}", new_id()),
            serde_json::to_vec(&foreign).unwrap(),
        ),
        (
            format!("{nodes}{}", new_id()),
            serde_json::to_vec(&negative).unwrap(),
        ),
        (format!("{nodes}{}", new_id()), huge.into_bytes()),
    ];
    for (key, value) in &lies {
        raw.put(key.as_str(), value.clone(), None).await.unwrap();
    }
    let good = new_id();
    let _reg = registry
        .register(record(&good), RegistryOptions::default())
        .await
        .unwrap();
    let view = registry.watch_nodes(CLUSTER).await.unwrap();
    assert_eq!(
        view.alive()
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        [good.as_str()]
    );
    assert_eq!(view.malformed(), lies.len() as u64);

    // One more while the view watches: skipped too, and the watch goes on.
    raw.put(format!("{nodes}{}", new_id()), "[]", None)
        .await
        .unwrap();
    until("the watched lie is counted", Duration::from_secs(5), || {
        view.malformed() == lies.len() as u64 + 1
    })
    .await;
    let late = new_id();
    let _late = registry
        .register(record(&late), RegistryOptions::default())
        .await
        .unwrap();
    until("a later node joins", Duration::from_secs(5), || {
        state(&view, &late) == Some(NodeState::Alive)
    })
    .await;
    let all = raw
        .get(nodes.as_str(), Some(GetOptions::new().with_prefix()))
        .await
        .unwrap();
    assert_eq!(all.kvs().len(), lies.len() + 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_without_a_lease_is_not_a_live_node() {
    let etcd = EtcdServer::start();
    let registry = EtcdNodeRegistry::new(etcd.etcd_client().await);
    let mut raw = etcd.client().await;
    let nodes = format!("/wray/{CLUSTER}/nodes/");
    // A valid record written by anyone who can write etcd, without a
    // lease: it would never die.
    let fake = new_id();
    raw.put(
        format!("{nodes}{fake}"),
        serde_json::to_vec(&record(&fake)).unwrap(),
        None,
    )
    .await
    .unwrap();
    let good = new_id();
    let _reg = registry
        .register(record(&good), RegistryOptions::default())
        .await
        .unwrap();
    let view = registry.watch_nodes(CLUSTER).await.unwrap();
    assert_eq!(state(&view, &fake), None);
    assert_eq!(state(&view, &good), Some(NodeState::Alive));
    assert_eq!(view.malformed(), 1);
    // A live node's record rewritten without its lease: dead in the view.
    raw.put(
        format!("{nodes}{good}"),
        serde_json::to_vec(&record(&good)).unwrap(),
        None,
    )
    .await
    .unwrap();
    until("the leaseless record dies", Duration::from_secs(5), || {
        state(&view, &good) == Some(NodeState::Dead)
    })
    .await;
}
