//! The function table's behaviour, written once over `&dyn FunctionTable`
//! and run against each backend by [`for_each_backend!`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use wray_control_plane::{
    content_hash, ComponentRecord, Declared, Error, FunctionEvent, FunctionKind, FunctionRecord,
    FunctionTable, FunctionWatch, Param, MAX_VERSIONS_KEPT,
};

/// Runs each behaviour against the embedded table and (feature `etcd`) a
/// fresh etcd of its own.
macro_rules! for_each_backend {
    ($($test:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test]
                async fn $test() {
                    let table = wray_control_plane::EmbeddedFunctionTable::new();
                    super::$test(&table).await;
                }
            )*
        }

        #[cfg(feature = "etcd")]
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    let etcd = crate::etcd_server::EtcdServer::start();
                    let table = etcd.table().await;
                    super::$test(&table).await;
                }
            )*
        }
    };
}

for_each_backend!(
    a_large_component_round_trips,
    versions_count_up_and_old_ones_are_pruned,
    rollback_makes_a_kept_version_current_for_readers_and_watchers,
    the_bytes_of_a_kept_version_make_it_current_without_a_new_number,
    concurrent_deploys_of_one_name_never_interleave,
    undeploy_removes_the_name_and_unshared_blobs,
    invalid_deploys_are_refused,
    watch_sees_deploys_and_undeploys,
    the_backend_is_healthy,
);

/// `len` bytes that differ with `seed` (xorshift; no two seeds alike).
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A row for `bytes` deployed as `name`, exporting a function `export`
/// with schemas and declared resources, and an actor class.
pub fn record(name: &str, export: &str, bytes: &[u8]) -> ComponentRecord {
    ComponentRecord {
        name: name.into(),
        hash: content_hash(bytes),
        size: bytes.len() as u64,
        has_main: true,
        sdk: "wray-rust 0.1.0".into(),
        functions: vec![
            FunctionRecord {
                kind: FunctionKind::Function,
                name: export.into(),
                class: None,
                num_returns: 1,
                params: vec![Param {
                    name: "n".into(),
                    schema: r#"{"type":"integer","minimum":0}"#.into(),
                }],
                returns: vec![r#"{"type":"string"}"#.into()],
                declared: Declared {
                    num_cpus: Some(0.5),
                    resources: vec![("accelerator".into(), 2.0)],
                    timeout_ms: Some(1500),
                    ..Declared::default()
                },
            },
            FunctionRecord {
                kind: FunctionKind::ActorClass,
                name: "Counter".into(),
                class: None,
                num_returns: 1,
                params: Vec::new(),
                returns: Vec::new(),
                declared: Declared {
                    num_gpus: Some(1.0),
                    reuse: true,
                    ..Declared::default()
                },
            },
        ],
    }
}

/// Deploys `bytes` as `name` (exporting `export`) and returns the version
/// now current.
async fn deploy(table: &dyn FunctionTable, name: &str, export: &str, bytes: &[u8]) -> u64 {
    table
        .deploy(record(name, export, bytes), Arc::from(bytes))
        .await
        .unwrap_or_else(|e| panic!("deploy {name}: {e}"))
        .current
        .version
}

/// The next change, within 10 s.
async fn next(watch: &mut FunctionWatch) -> FunctionEvent {
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("a change within 10 s")
        .expect("the watch is open")
}

/// `Deployed` of `name`, `version`, with digest of `bytes`.
/// The numbers of the versions of `name` the table keeps, oldest first.
async fn version_numbers(table: &dyn FunctionTable, name: &str) -> Vec<u64> {
    table
        .versions(name)
        .await
        .unwrap()
        .iter()
        .map(|v| v.version)
        .collect()
}

fn deployed(name: &str, version: u64, bytes: &[u8]) -> FunctionEvent {
    FunctionEvent::Deployed {
        name: name.into(),
        version,
        hash: content_hash(bytes),
    }
}

async fn a_large_component_round_trips(table: &dyn FunctionTable) {
    // Over 3 MiB: four chunks in etcd, the last a short one.
    let big = bytes(3 * 1024 * 1024 + 12_345, 1);
    let rec = record("big", "run", &big);
    let deployed = table
        .deploy(rec.clone(), Arc::from(&big[..]))
        .await
        .unwrap();
    assert!(deployed.new);
    let v = deployed.current;
    assert_eq!(v.version, 1);
    assert_eq!(v.record, rec);
    assert!(v.deployed_ms > 0);
    // Exports, schemas and declared resources come back as they went in.
    assert_eq!(table.component("big").await.unwrap(), rec);
    assert_eq!(table.current("big").await.unwrap(), v);
    assert_eq!(&*table.blob(&rec.hash).await.unwrap(), &big[..]);
    let listed = table.list().await.unwrap();
    assert_eq!(listed, vec![v]);

    let err = table.component("nope").await.unwrap_err();
    assert!(
        matches!(&err, Error::ComponentNotFound(n) if n == "nope"),
        "{err}"
    );
    assert!(!err.is_retryable());
    let missing = content_hash(b"never deployed");
    assert!(matches!(
        table.blob(&missing).await,
        Err(Error::BlobNotFound(_))
    ));
    assert!(matches!(
        table.blob("../x").await,
        Err(Error::BlobNotFound(_))
    ));
    assert!(matches!(
        table.component("a/b").await,
        Err(Error::ComponentNotFound(_))
    ));
}

async fn versions_count_up_and_old_ones_are_pruned(table: &dyn FunctionTable) {
    let (a, b, c) = (bytes(100, 2), bytes(200, 3), bytes(150, 4));
    assert_eq!(deploy(table, "app", "f", &a).await, 1);
    assert_eq!(deploy(table, "app", "g", &b).await, 2);
    assert_eq!(deploy(table, "app", "f", &c).await, 3);
    let current = table.current("app").await.unwrap();
    assert_eq!(current.version, 3);
    assert_eq!(current.record, record("app", "f", &c));
    let versions = table.versions("app").await.unwrap();
    let numbers: Vec<u64> = versions.iter().map(|v| v.version).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(
        table.version("app", 2).await.unwrap().record,
        record("app", "g", &b)
    );
    assert!(matches!(
        table.version("app", 9).await,
        Err(Error::VersionNotFound { version: 9, .. })
    ));

    // Past MAX_VERSIONS_KEPT the oldest go, and blobs only they used.
    let kept = u64::try_from(MAX_VERSIONS_KEPT).unwrap();
    for seed in 0..kept {
        deploy(table, "app", "f", &bytes(50, 100 + seed)).await;
    }
    let versions = table.versions("app").await.unwrap();
    assert_eq!(versions.len(), MAX_VERSIONS_KEPT);
    assert_eq!(versions[0].version, 4);
    assert_eq!(versions.last().unwrap().version, 3 + kept);
    assert!(matches!(
        table.version("app", 1).await,
        Err(Error::VersionNotFound { version: 1, .. })
    ));
    for gone in [&a, &b] {
        let err = table.blob(&content_hash(gone)).await.unwrap_err();
        assert!(matches!(err, Error::BlobNotFound(_)), "{err}");
    }

    // The listing is by name.
    deploy(table, "aardvark", "f", &a).await;
    let names: Vec<String> = table
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.record.name)
        .collect();
    assert_eq!(names, ["aardvark", "app"]);
}

async fn rollback_makes_a_kept_version_current_for_readers_and_watchers(table: &dyn FunctionTable) {
    let (a, b) = (bytes(100, 70), bytes(200, 71));
    assert_eq!(deploy(table, "app", "f", &a).await, 1);
    assert_eq!(deploy(table, "app", "g", &b).await, 2);
    let mut watch = table.watch().await.unwrap();
    let back = table.rollback("app", 1).await.unwrap();
    assert_eq!((back.version, &back.record), (1, &record("app", "f", &a)));
    assert_eq!(next(&mut watch).await, deployed("app", 1, &a));
    // Every reader sees version 1 as current; nothing was pruned or added.
    assert_eq!(table.current("app").await.unwrap(), back);
    assert_eq!(
        table.component("app").await.unwrap(),
        record("app", "f", &a)
    );
    assert_eq!(table.list().await.unwrap(), vec![back.clone()]);
    let numbers = version_numbers(table, "app").await;
    assert_eq!(numbers, [1, 2]);
    // Rolling back to the current version is a no-op.
    assert_eq!(table.rollback("app", 1).await.unwrap(), back);
    // Forward again, to a rolled-back-from version.
    assert_eq!(table.rollback("app", 2).await.unwrap().version, 2);
    assert_eq!(next(&mut watch).await, deployed("app", 2, &b));
    table.rollback("app", 1).await.unwrap();
    assert_eq!(next(&mut watch).await, deployed("app", 1, &a));
    // The next deploy gets the next number and is current.
    assert_eq!(deploy(table, "app", "h", &bytes(50, 72)).await, 3);
    assert_eq!(table.current("app").await.unwrap().version, 3);

    for (name, version) in [("app", 9), ("app", 0)] {
        let err = table.rollback(name, version).await.unwrap_err();
        assert!(
            matches!(err, Error::VersionNotFound { version: v, .. } if v == version),
            "{err}"
        );
    }
    let err = table.rollback("nope", 1).await.unwrap_err();
    assert!(matches!(err, Error::ComponentNotFound(_)), "{err}");
    let err = table.rollback("a/b", 1).await.unwrap_err();
    assert!(matches!(err, Error::ComponentNotFound(_)), "{err}");
    // A pruned version cannot come back.
    let kept = u64::try_from(MAX_VERSIONS_KEPT).unwrap();
    for seed in 0..kept {
        deploy(table, "app", "f", &bytes(60, 80 + seed)).await;
    }
    let err = table.rollback("app", 1).await.unwrap_err();
    assert!(
        matches!(err, Error::VersionNotFound { version: 1, .. }),
        "{err}"
    );
}

async fn the_bytes_of_a_kept_version_make_it_current_without_a_new_number(
    table: &dyn FunctionTable,
) {
    let (a, b) = (bytes(100, 90), bytes(200, 91));
    let deploy_a = || table.deploy(record("app", "f", &a), Arc::from(&a[..]));
    let first = deploy_a().await.unwrap();
    assert!(first.new);
    let mut watch = table.watch().await.unwrap();
    // The same bytes again: the same version, current already; nothing
    // is told.
    let again = deploy_a().await.unwrap();
    assert_eq!(
        (again.current.clone(), again.new),
        (first.current.clone(), false)
    );
    assert_eq!(
        table.versions("app").await.unwrap(),
        vec![first.current.clone()]
    );
    // New bytes: a new version; then the first bytes again make version
    // 1 current (its record and deploy time as they were), as a rollback.
    assert_eq!(deploy(table, "app", "g", &b).await, 2);
    assert_eq!(next(&mut watch).await, deployed("app", 2, &b));
    let back = deploy_a().await.unwrap();
    assert_eq!(
        (back.current.clone(), back.new),
        (first.current.clone(), false)
    );
    assert_eq!(next(&mut watch).await, deployed("app", 1, &a));
    assert_eq!(table.current("app").await.unwrap(), first.current);
    let numbers = version_numbers(table, "app").await;
    assert_eq!(numbers, [1, 2]);
    // Redeploying kept bytes never counts against the versions kept:
    // after many, both are still there, and new bytes get the next
    // number.
    let kept = u64::try_from(MAX_VERSIONS_KEPT).unwrap();
    for _ in 0..=kept {
        assert!(!deploy_a().await.unwrap().new);
        let redeployed = table
            .deploy(record("app", "g", &b), Arc::from(&b[..]))
            .await
            .unwrap();
        assert_eq!((redeployed.current.version, redeployed.new), (2, false));
    }
    assert_eq!(table.versions("app").await.unwrap().len(), 2);
    assert_eq!(deploy(table, "app", "h", &bytes(50, 92)).await, 3);
    // The same bytes under another name are that name's own version.
    let other = table
        .deploy(record("other", "f", &a), Arc::from(&a[..]))
        .await
        .unwrap();
    assert_eq!((other.current.version, other.new), (1, true));
    // Once pruned, the bytes are new again.
    for seed in 0..kept {
        deploy(table, "app", "f", &bytes(60, 200 + seed)).await;
    }
    assert!(matches!(
        table.version("app", 1).await,
        Err(Error::VersionNotFound { .. })
    ));
    let fresh = deploy_a().await.unwrap();
    assert!(fresh.new);
    assert_eq!(fresh.current.version, 4 + kept);
}

async fn concurrent_deploys_of_one_name_never_interleave(table: &dyn FunctionTable) {
    let mut expected = 0;
    let mut sent = HashMap::new();
    for round in 0..4 {
        // Over 1 MiB each, so that etcd stores them in several chunks.
        let (a, b) = (bytes(1_500_000, 10 + round), bytes(1_200_000, 20 + round));
        let (rec_a, rec_b) = (record("race", "from_a", &a), record("race", "from_b", &b));
        sent.insert(rec_a.hash.clone(), rec_a.clone());
        sent.insert(rec_b.hash.clone(), rec_b.clone());
        let (got_a, got_b) = tokio::join!(
            table.deploy(rec_a.clone(), Arc::from(&a[..])),
            table.deploy(rec_b.clone(), Arc::from(&b[..])),
        );
        let mut landed = Vec::new();
        for got in [got_a, got_b] {
            match got {
                Ok(v) => landed.push(v.current.version),
                Err(e @ Error::Conflict { .. }) => assert!(e.is_retryable()),
                Err(e) => panic!("a concurrent deploy failed otherwise: {e}"),
            }
        }
        assert!(!landed.is_empty(), "both deploys of round {round} lost");
        landed.sort_unstable();
        let wanted: Vec<u64> = (expected + 1..=expected + landed.len() as u64).collect();
        assert_eq!(
            landed, wanted,
            "each deploy that landed got its own version"
        );
        expected += landed.len() as u64;

        // Every kept version is one deploy whole: its record, its bytes.
        for v in table.versions("race").await.unwrap() {
            assert_eq!(
                Some(&v.record),
                sent.get(&v.record.hash),
                "version {}",
                v.version
            );
            let blob = table.blob(&v.record.hash).await.unwrap();
            assert_eq!(content_hash(&blob), v.record.hash);
            assert_eq!(blob.len() as u64, v.record.size);
        }
        let current = table.current("race").await.unwrap();
        assert_eq!(current.version, expected);
        assert!(current.record == rec_a || current.record == rec_b);
    }

    // Six small deploys at once race for the head more closely.
    let codes: Vec<Vec<u8>> = (0..6).map(|i| bytes(64, 40 + i)).collect();
    let records: Vec<ComponentRecord> = (0..6)
        .map(|i| record("crowd", &format!("f{i}"), &codes[i]))
        .collect();
    let deploy_one = |i: usize| table.deploy(records[i].clone(), Arc::from(&codes[i][..]));
    let (r0, r1, r2, r3, r4, r5) = tokio::join!(
        deploy_one(0),
        deploy_one(1),
        deploy_one(2),
        deploy_one(3),
        deploy_one(4),
        deploy_one(5)
    );
    let mut landed = Vec::new();
    for got in [r0, r1, r2, r3, r4, r5] {
        match got {
            Ok(v) => landed.push(v.current.version),
            Err(e @ Error::Conflict { .. }) => assert!(e.is_retryable()),
            Err(e) => panic!("a concurrent deploy failed otherwise: {e}"),
        }
    }
    landed.sort_unstable();
    let wanted: Vec<u64> = (1..=landed.len() as u64).collect();
    assert_eq!(landed, wanted);
    for v in table.versions("crowd").await.unwrap() {
        let sent = records.iter().find(|r| r.hash == v.record.hash);
        assert_eq!(Some(&v.record), sent, "version {}", v.version);
    }
}

async fn undeploy_removes_the_name_and_unshared_blobs(table: &dyn FunctionTable) {
    let (shared, own, later) = (bytes(300, 4), bytes(400, 5), bytes(500, 6));
    deploy(table, "one", "f", &shared).await;
    deploy(table, "two", "f", &shared).await;
    deploy(table, "one", "f", &own).await;

    table.undeploy("one").await.unwrap();
    assert!(matches!(
        table.component("one").await,
        Err(Error::ComponentNotFound(_))
    ));
    assert!(matches!(
        table.versions("one").await,
        Err(Error::ComponentNotFound(_))
    ));
    assert!(matches!(
        table.version("one", 1).await,
        Err(Error::VersionNotFound { .. })
    ));
    // Its own blob is collected; the one "two" uses stays.
    assert!(matches!(
        table.blob(&content_hash(&own)).await,
        Err(Error::BlobNotFound(_))
    ));
    assert_eq!(
        &*table.blob(&content_hash(&shared)).await.unwrap(),
        &shared[..]
    );
    let names: Vec<String> = table
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.record.name)
        .collect();
    assert_eq!(names, ["two"]);
    assert!(matches!(
        table.undeploy("one").await,
        Err(Error::ComponentNotFound(_))
    ));

    // Deployed again, a name starts over at version 1.
    assert_eq!(deploy(table, "one", "f", &later).await, 1);
    table.undeploy("two").await.unwrap();
    assert!(matches!(
        table.blob(&content_hash(&shared)).await,
        Err(Error::BlobNotFound(_))
    ));
    assert_eq!(
        &*table.blob(&content_hash(&later)).await.unwrap(),
        &later[..]
    );
}

async fn invalid_deploys_are_refused(table: &dyn FunctionTable) {
    let good = bytes(64, 7);
    for name in ["", "a/b", "tab\there", ".."] {
        let err = table
            .deploy(record(name, "f", &good), Arc::from(&good[..]))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidName { .. }), "{name:?}: {err}");
    }
    let long = "x".repeat(200);
    assert!(matches!(
        table
            .deploy(record(&long, "f", &good), Arc::from(&good[..]))
            .await,
        Err(Error::InvalidName { .. })
    ));

    let mut wrong_hash = record("app", "f", &good);
    wrong_hash.hash = content_hash(b"other bytes");
    let err = table
        .deploy(wrong_hash, Arc::from(&good[..]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidComponent { .. }), "{err}");
    assert!(err.to_string().contains("digest"), "{err}");

    let mut wrong_size = record("app", "f", &good);
    wrong_size.size += 1;
    let err = table
        .deploy(wrong_size, Arc::from(&good[..]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidComponent { .. }), "{err}");

    let mut huge = record("app", "f", &good);
    huge.functions[0].params[0].schema = format!("{{\"description\":\"{}\"}}", "y".repeat(600_000));
    let err = table.deploy(huge, Arc::from(&good[..])).await.unwrap_err();
    assert!(matches!(err, Error::InvalidComponent { .. }), "{err}");

    assert!(table.list().await.unwrap().is_empty());
    assert!(matches!(
        table.blob(&content_hash(&good)).await,
        Err(Error::BlobNotFound(_))
    ));
}

async fn watch_sees_deploys_and_undeploys(table: &dyn FunctionTable) {
    let mut watch = table.watch().await.unwrap();
    let (a, b) = (bytes(10, 8), bytes(20, 9));
    deploy(table, "app", "f", &a).await;
    deploy(table, "app", "f", &b).await;
    table.undeploy("app").await.unwrap();
    assert_eq!(next(&mut watch).await, deployed("app", 1, &a));
    assert_eq!(next(&mut watch).await, deployed("app", 2, &b));
    assert_eq!(
        next(&mut watch).await,
        FunctionEvent::Undeployed { name: "app".into() }
    );

    // A watch started later sees only what happens after it.
    let mut later = table.watch().await.unwrap();
    deploy(table, "other", "f", &a).await;
    assert_eq!(next(&mut later).await, deployed("other", 1, &a));
    assert_eq!(next(&mut watch).await, deployed("other", 1, &a));

    // Refused or failed writes are no changes.
    assert!(table.undeploy("missing").await.is_err());
    deploy(table, "last", "f", &b).await;
    assert_eq!(next(&mut watch).await, deployed("last", 1, &b));
}

async fn the_backend_is_healthy(table: &dyn FunctionTable) {
    table.health().await.unwrap();
    assert!(!table.backend().is_empty());
}
