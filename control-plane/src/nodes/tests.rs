//! Unit tests of the node records, the options and the embedded registry.

use std::time::{Duration, Instant};

use super::*;

fn record(id: &str) -> NodeRecord {
    NodeRecord {
        id: id.to_string(),
        cluster: "default".to_string(),
        peer_address: "127.0.0.1:7000".to_string(),
        http_address: Some("http://127.0.0.1:8000".to_string()),
        resources_total: [("CPU".to_string(), 4.0), ("memory".to_string(), 1e9)].into(),
        resources_available: [("CPU".to_string(), 4.0)].into(),
        labels: [("zone".to_string(), "a".to_string())].into(),
        start_time_ms: 1,
        version: "0.1.0".to_string(),
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

#[test]
fn node_ids_are_minted_and_checked() {
    let id = NodeId::random();
    assert_eq!(NodeId::parse(id.as_str()).unwrap(), id);
    assert_ne!(NodeId::random(), id);
    for bad in [
        "",
        "node-",
        "node-0123456789ABCDEF",
        "node-0123456789abcde",
        "x-0123456789abcdef",
    ] {
        let err = NodeId::parse(bad).unwrap_err().to_string();
        assert!(err.contains("node id"), "{err}");
    }
    let json = serde_json::to_string(&id).unwrap();
    assert_eq!(serde_json::from_str::<NodeId>(&json).unwrap(), id);
    assert!(serde_json::from_str::<NodeId>("\"node-zz\"").is_err());
}

#[test]
fn states_are_spelled_as_ray_does() {
    assert_eq!(
        serde_json::to_string(&NodeState::Alive).unwrap(),
        "\"ALIVE\""
    );
    assert_eq!(serde_json::to_string(&NodeState::Dead).unwrap(), "\"DEAD\"");
}

#[test]
fn records_are_bounded_and_quantities_finite() {
    let id = NodeId::random().to_string();
    check_node_record(&record(&id)).unwrap();
    let mut cases: Vec<(NodeRecord, &str)> = Vec::new();
    let mut r = record(&id);
    r.resources_available.insert("GPU".into(), f64::NAN);
    cases.push((r, "GPU"));
    let mut r = record(&id);
    r.resources_total.insert("CPU".into(), -1.0);
    cases.push((r, "CPU"));
    let mut r = record(&id);
    r.resources_total = (0..=MAX_RESOURCES)
        .map(|i| (format!("r{i}"), 1.0))
        .collect();
    cases.push((r, "resources"));
    let mut r = record(&id);
    r.labels = (0..=MAX_LABELS)
        .map(|i| (format!("l{i}"), String::new()))
        .collect();
    cases.push((r, "labels"));
    let mut r = record(&id);
    r.peer_address = "a".repeat(MAX_VALUE_BYTES + 1);
    cases.push((r, "peer_address"));
    let mut r = record(&id);
    r.cluster = "a/b".into();
    cases.push((r, "cluster"));
    let mut r = record(&id);
    r.id = "node-1".into();
    cases.push((r, "node id"));
    let mut r = record(&id);
    r.allowed_dirs = (0..=MAX_ALLOWED_DIRS).map(|i| format!("/d{i}")).collect();
    cases.push((r, "allowed directories"));
    let mut r = record(&id);
    r.allowed_dirs = vec!["relative".into()];
    cases.push((r, "not an absolute path"));
    let mut r = record(&id);
    r.allowed_dirs = vec![format!("/{}", "a".repeat(MAX_DIR_BYTES))];
    cases.push((r, "allowed directory"));
    for (r, says) in cases {
        let err = check_node_record(&r).unwrap_err().to_string();
        assert!(err.contains(says), "{err} should say {says}");
    }
}

#[test]
fn a_record_allows_the_directories_under_its_allowed_ones_only() {
    let mut r = record(&NodeId::random().to_string());
    r.allowed_dirs = vec!["/data".into(), "/srv/corpus".into()];
    for (dir, allowed) in [
        ("/data", true),
        ("/data/a/b", true),
        ("/srv/corpus/x", true),
        ("/data2", false),
        ("/srv", false),
        ("/data/../etc", false),
        ("data", false),
    ] {
        assert_eq!(r.allows_dir(dir), allowed, "{dir}");
    }
    assert!(r.allows_dirs(&["/data/a".into(), "/srv/corpus".into()]));
    assert!(!r.allows_dirs(&["/data/a".into(), "/srv".into()]));
    r.allowed_dirs.clear();
    assert!(!r.allows_dir("/data"));
    assert!(r.allows_dirs(&[]));
}

#[test]
fn records_read_back_are_checked() {
    let id = NodeId::random().to_string();
    let good = crate::codec::encode_json(&record(&id));
    assert_eq!(
        decode_node_record("k", &id, "default", &good).unwrap(),
        record(&id)
    );
    let other = NodeId::random().to_string();
    let big = vec![b' '; MAX_NODE_RECORD_BYTES + 1];
    let nan = String::from_utf8(good.clone())
        .unwrap()
        .replace("4.0", "-4.0");
    for (value, node, cluster) in [
        (&good[..], other.as_str(), "default"),
        (&good[..], id.as_str(), "other"),
        (&big[..], id.as_str(), "default"),
        (b"{not json".as_slice(), id.as_str(), "default"),
        (nan.as_bytes(), id.as_str(), "default"),
    ] {
        let err = decode_node_record("k", node, cluster, value).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    }
}

#[test]
fn options_are_checked_naming_the_option() {
    RegistryOptions::default().check().unwrap();
    let base = RegistryOptions::default();
    let cases = [
        (
            RegistryOptions {
                lease_ttl: Duration::from_secs(1),
                ..base
            },
            "lease_ttl",
        ),
        (
            RegistryOptions {
                lease_ttl: Duration::from_millis(2500),
                ..base
            },
            "lease_ttl",
        ),
        (
            RegistryOptions {
                lease_ttl: Duration::from_secs(7200),
                ..base
            },
            "lease_ttl",
        ),
        (
            RegistryOptions {
                heartbeat: Duration::from_secs(2),
                ..base
            },
            "heartbeat",
        ),
        (
            RegistryOptions {
                heartbeat: Duration::ZERO,
                ..base
            },
            "heartbeat",
        ),
        (
            RegistryOptions {
                publish_interval: Duration::ZERO,
                ..base
            },
            "publish_interval",
        ),
    ];
    for (options, says) in cases {
        let err = options.check().unwrap_err().to_string();
        assert!(err.contains(says), "{err} should say {says}");
    }
    RegistryOptions {
        lease_ttl: MIN_LEASE_TTL,
        heartbeat: Duration::from_millis(900),
        ..base
    }
    .check()
    .unwrap();
}

/// Waits (at most 5 s) until `check` holds.
async fn until(mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "condition not met within 5 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_embedded_registry_lists_its_node_and_sees_it_leave() {
    let registry = EmbeddedNodeRegistry::new();
    let view = registry.watch_nodes("default").await.unwrap();
    assert!(view.is_synced());
    let mut events = view.subscribe();
    let id = NodeId::random().to_string();
    let options = RegistryOptions::default();
    let registration = registry.register(record(&id), options).await.unwrap();
    assert_eq!(view.state(&id), Some(NodeState::Alive));
    assert_eq!(events.recv().await.unwrap(), NodeEvent::Joined(id.clone()));
    let again = registry.register(record(&id), options).await.unwrap_err();
    assert!(matches!(again, Error::AlreadyExists { .. }), "{again}");

    let mut busy = record(&id);
    busy.running_tasks = 3;
    registration.update(busy).unwrap();
    assert_eq!(events.recv().await.unwrap(), NodeEvent::Updated(id.clone()));
    assert_eq!(view.get(&id).unwrap().record.running_tasks, 3);
    let mut foreign = record(&NodeId::random().to_string());
    foreign.running_tasks = 1;
    assert!(registration.update(foreign).is_err());

    registration.shutdown().await.unwrap();
    assert_eq!(view.state(&id), Some(NodeState::Dead));
    assert!(view.get(&id).unwrap().died_at_ms.is_some());

    // Dropped without shutdown: dead too (nothing outlives the process).
    let other = NodeId::random().to_string();
    drop(registry.register(record(&other), options).await.unwrap());
    until(|| view.state(&other) == Some(NodeState::Dead)).await;
    assert_eq!(view.alive().len(), 0);
    assert_eq!(view.snapshot().len(), 2);
}

#[test]
fn a_view_keeps_the_last_dead_and_relists_by_difference() {
    let shared = ViewShared::new();
    let view = NodeView::new(shared.clone(), None);
    let ids: Vec<String> = (0..MAX_DEAD_KEPT + 5)
        .map(|_| NodeId::random().to_string())
        .collect();
    for id in &ids {
        shared.upsert(record(id));
    }
    shared.relist(vec![record(&ids[0])]);
    assert_eq!(view.alive().len(), 1);
    let snapshot = view.snapshot();
    assert_eq!(snapshot.len(), 1 + MAX_DEAD_KEPT);
    // The oldest deaths were forgotten first; a node back is alive again.
    shared.upsert(record(&ids[ids.len() - 1]));
    assert_eq!(view.state(&ids[ids.len() - 1]), Some(NodeState::Alive));
    assert_eq!(view.alive().len(), 2);
}

#[test]
fn a_dead_node_is_forgotten_once_its_keep_time_has_passed() {
    let shared = ViewShared::new();
    let view = NodeView::new(shared.clone(), None);
    let (old, young, live) = (
        NodeId::random().to_string(),
        NodeId::random().to_string(),
        NodeId::random().to_string(),
    );
    for id in [&old, &young, &live] {
        shared.upsert(record(id));
    }
    shared.died(&old);
    // Kept until a keep time is set, and while it has not passed.
    view.forget_dead_after(Duration::from_secs(3600));
    assert_eq!(view.state(&old), Some(NodeState::Dead));
    {
        // Died two hours ago, as the view saw it.
        let mut known = shared.known.lock();
        let info = known.dead.get_mut(&old).unwrap();
        info.died_at_ms = info.died_at_ms.map(|t| t - 2 * 3600 * 1000);
    }
    shared.died(&young);
    let states: Vec<(String, NodeState)> = view
        .snapshot()
        .into_iter()
        .map(|n| (n.record.id, n.state))
        .collect();
    assert!(!states.iter().any(|(id, _)| *id == old), "{states:?}");
    assert!(states.contains(&(young.clone(), NodeState::Dead)));
    assert!(states.contains(&(live.clone(), NodeState::Alive)));
    assert_eq!(view.state(&old), None);
    // A keep time of 0 forgets every dead node at once.
    view.forget_dead_after(Duration::ZERO);
    assert_eq!(view.snapshot().len(), 1);
}
