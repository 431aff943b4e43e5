//! The etcd backend's own cases: an unreachable etcd, data damaged behind
//! the table's back, and a watch that outlives an etcd restart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::GetOptions;
use wray_control_plane::{
    content_hash, Error, EtcdConfig, EtcdFunctionTable, FunctionEvent, FunctionTable, FunctionWatch,
};

use crate::etcd_server::{EtcdServer, HeldPort};
use crate::function_table::{bytes, record};

#[tokio::test]
async fn an_unreachable_etcd_is_unavailable_quickly_naming_endpoint_and_cause() {
    // Held to the end: no parallel test's etcd can listen there meanwhile.
    let held = HeldPort::closed();
    let port = held.port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut config = EtcdConfig::new([endpoint.clone()]);
    config.connect_timeout = Duration::from_secs(1);
    config.request_timeout = Duration::from_secs(2);
    let started = Instant::now();
    let table = EtcdFunctionTable::connect(config).await.unwrap();
    assert_eq!(table.backend(), format!("etcd at {endpoint}"));

    let code = bytes(1000, 1);
    let deploy = table.deploy(record("app", "f", &code), Arc::from(&code[..]));
    let lookup = table.component("app");
    let health = table.health();
    for err in [
        deploy.await.unwrap_err(),
        lookup.await.unwrap_err(),
        health.await.unwrap_err(),
    ] {
        let message = err.to_string();
        assert!(matches!(err, Error::Unavailable(_)), "{message}");
        assert!(err.is_retryable());
        assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
        assert!(message.to_lowercase().contains("refused"), "{message}");
    }
    // Three calls, each bounded by the 2 s request deadline (and a 1 s probe).
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");

    // A watch does not fail: it keeps trying in the background.
    let mut watch = table.watch().await.unwrap();
    let quiet = tokio::time::timeout(Duration::from_millis(300), watch.next()).await;
    assert!(quiet.is_err(), "no change while etcd is down");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_data_gives_clear_errors_not_panics() {
    let etcd = EtcdServer::start();
    let table = etcd.table().await;
    let mut raw = etcd.client().await;
    let code = bytes(3 * 1024 * 1024 + 7, 2);
    let hash = content_hash(&code);
    table
        .deploy(record("big", "f", &code), Arc::from(&code[..]))
        .await
        .unwrap();
    let chunks = raw
        .get(
            format!("/wray/blobs/{hash}/"),
            Some(GetOptions::new().with_prefix()),
        )
        .await
        .unwrap();
    assert_eq!(chunks.kvs().len(), 4, "3 MiB and 7 bytes: four chunks");
    let chunk_key = chunks.kvs()[1].key().to_vec();
    let chunk = chunks.kvs()[1].value().to_vec();
    let manifest_key = format!("/wray/blobs/{hash}");
    let manifest = raw.get(manifest_key.as_str(), None).await.unwrap().kvs()[0]
        .value()
        .to_vec();

    let expect_corrupt = |err: Error, says: &str| {
        let message = err.to_string();
        assert!(matches!(err, Error::Corrupt { .. }), "{message}");
        assert!(!err.is_retryable());
        assert!(message.contains(says), "{message} should say {says}");
    };

    // A flipped byte: the digest check finds it.
    let mut flipped = chunk.clone();
    flipped[100] ^= 0xff;
    raw.put(chunk_key.clone(), flipped, None).await.unwrap();
    expect_corrupt(table.blob(&hash).await.unwrap_err(), "digest");

    // A short chunk, then a missing one.
    raw.put(chunk_key.clone(), chunk[..10].to_vec(), None)
        .await
        .unwrap();
    expect_corrupt(table.blob(&hash).await.unwrap_err(), "has 10 bytes");
    raw.delete(chunk_key.clone(), None).await.unwrap();
    expect_corrupt(table.blob(&hash).await.unwrap_err(), "missing");
    raw.put(chunk_key.clone(), chunk, None).await.unwrap();
    assert_eq!(&*table.blob(&hash).await.unwrap(), &code[..]);

    // Manifests with impossible numbers, or not JSON at all.
    let lies = [
        format!(
            r#"{{"sha256":"{hash}","size":18446744073709551615,"chunk_size":1048576,"chunks":4,"upload":"00"}}"#
        ),
        format!(
            r#"{{"sha256":"{hash}","size":3145735,"chunk_size":0,"chunks":18446744073709551615,"upload":"00"}}"#
        ),
        format!(
            r#"{{"sha256":"{hash}","size":3145735,"chunk_size":1048576,"chunks":-1,"upload":"00"}}"#
        ),
        "\u{0}\u{1}garbage".to_string(),
    ];
    for lie in lies {
        raw.put(manifest_key.as_str(), lie.clone(), None)
            .await
            .unwrap();
        expect_corrupt(table.blob(&hash).await.unwrap_err(), &manifest_key);
    }
    raw.put(manifest_key.as_str(), manifest, None)
        .await
        .unwrap();
    assert_eq!(&*table.blob(&hash).await.unwrap(), &code[..]);

    // A head whose last version is the largest number: the next deploy
    // refuses rather than wraps.
    let head_key = "/wray/functions/big";
    let head = raw.get(head_key, None).await.unwrap().kvs()[0]
        .value()
        .to_vec();
    let mut json: serde_json::Value = serde_json::from_slice(&head).unwrap();
    json["current"]["version"] = u64::MAX.into();
    json["kept"][0]["version"] = u64::MAX.into();
    raw.put(head_key, serde_json::to_vec(&json).unwrap(), None)
        .await
        .unwrap();
    assert_eq!(table.current("big").await.unwrap().version, u64::MAX);
    let next = bytes(10, 3);
    expect_corrupt(
        table
            .deploy(record("big", "f", &next), Arc::from(&next[..]))
            .await
            .unwrap_err(),
        "largest number",
    );

    // A head that is not a head: lookups say so, the listing leaves it out
    // (the other names are still listed); undeploy still removes it.
    let other = bytes(11, 4);
    table
        .deploy(record("other", "f", &other), Arc::from(&other[..]))
        .await
        .unwrap();
    raw.put(head_key, "not json", None).await.unwrap();
    expect_corrupt(table.component("big").await.unwrap_err(), head_key);
    let listed: Vec<String> = table
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.record.name)
        .collect();
    assert_eq!(listed, ["other"]);
    // ... and names it among the listing's errors, on the page of its name.
    let page = table.list_page_checked(None, 10).await.unwrap();
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.skipped.len(), 1, "{:?}", page.skipped);
    let skipped = &page.skipped[0];
    assert_eq!(
        (skipped.name.as_str(), skipped.key.as_str()),
        ("big", head_key)
    );
    assert!(skipped.error.contains("corrupt"), "{}", skipped.error);
    let later = table.list_page_checked(Some("big"), 10).await.unwrap();
    assert!(later.skipped.is_empty(), "named on its own page only");

    // A damaged version record: the versions leave it out and name it.
    let version_key = "/wray/versions/other/00000000000000000001";
    let good = raw.get(version_key, None).await.unwrap().kvs()[0]
        .value()
        .to_vec();
    table
        .deploy(
            record("other", "g", &bytes(12, 5)),
            Arc::from(&bytes(12, 5)[..]),
        )
        .await
        .unwrap();
    raw.put(version_key, "{\"current\": 5}", None)
        .await
        .unwrap();
    let versions = table.versions_checked("other").await.unwrap();
    assert_eq!(
        versions
            .entries
            .iter()
            .map(|v| v.version)
            .collect::<Vec<_>>(),
        [2]
    );
    assert_eq!(versions.skipped.len(), 1, "{:?}", versions.skipped);
    assert_eq!(versions.skipped[0].key, version_key);
    raw.put(version_key, good, None).await.unwrap();
    table.undeploy("other").await.unwrap();
    table.undeploy("big").await.unwrap();
    assert!(matches!(
        table.component("big").await,
        Err(Error::ComponentNotFound(_))
    ));
    assert!(table.list().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumes_after_etcd_restarts() {
    let mut etcd = EtcdServer::start();
    let table = etcd.table().await;
    let mut watch = table.watch().await.unwrap();
    let first = bytes(100, 4);
    table
        .deploy(record("first", "f", &first), Arc::from(&first[..]))
        .await
        .unwrap();
    assert!(matches!(
        next(&mut watch).await,
        FunctionEvent::Deployed { name, version: 1, .. } if name == "first"
    ));

    // Down: writes fail as unavailable, the watch waits.
    tokio::task::block_in_place(|| etcd.stop());
    let second = bytes(100, 5);
    let err = table
        .deploy(record("second", "f", &second), Arc::from(&second[..]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err}");

    // Up again: the same client works, and the watch picks up where it was.
    tokio::task::block_in_place(|| etcd.restart());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match table
            .deploy(record("second", "f", &second), Arc::from(&second[..]))
            .await
        {
            Ok(v) => {
                assert_eq!(v.current.version, 1);
                break;
            }
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("deploy after the restart: {e}"),
        }
    }
    assert!(matches!(
        next(&mut watch).await,
        FunctionEvent::Deployed { name, version: 1, .. } if name == "second"
    ));
    assert_eq!(
        &*table.blob(&content_hash(&first)).await.unwrap(),
        &first[..]
    );
}

/// The next change, within 30 s (etcd restarting, the watch backing off).
async fn next(watch: &mut FunctionWatch) -> FunctionEvent {
    tokio::time::timeout(Duration::from_secs(30), watch.next())
        .await
        .expect("a change within 30 s")
        .expect("the watch is open")
}
