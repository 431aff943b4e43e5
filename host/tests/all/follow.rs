//! A node following a function table it shares with another node: after a
//! resync it knows what the table lists, no more (names undeployed while
//! its watch was away are forgotten) and no less (a name deployed after
//! the listing was taken is kept).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use wray_control_plane::{
    ComponentRecord, ComponentVersion, Deployment, EmbeddedFunctionTable, FunctionEvent,
    FunctionTable, FunctionWatch, Result,
};
use wray_host::TaskOptions;
use wray_host::{Node, NodeConfig, Stdio};

use crate::support::component;

/// A shared table seen through a watch that reports only what the test
/// sends (as if disconnected meanwhile), and through listings that leave
/// out the names in `unlisted` (as if taken before those were deployed).
struct Unreported {
    inner: Arc<EmbeddedFunctionTable>,
    events: Mutex<Option<mpsc::Receiver<FunctionEvent>>>,
    unlisted: Mutex<HashSet<String>>,
}

#[async_trait]
impl FunctionTable for Unreported {
    async fn deploy(&self, record: ComponentRecord, bytes: Arc<[u8]>) -> Result<Deployment> {
        self.inner.deploy(record, bytes).await
    }
    async fn current(&self, name: &str) -> Result<ComponentVersion> {
        self.inner.current(name).await
    }
    async fn version(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        self.inner.version(name, version).await
    }
    async fn versions(&self, name: &str) -> Result<Vec<ComponentVersion>> {
        self.inner.versions(name).await
    }
    async fn rollback(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        self.inner.rollback(name, version).await
    }
    async fn blob(&self, hash: &str) -> Result<Arc<[u8]>> {
        self.inner.blob(hash).await
    }
    async fn list(&self) -> Result<Vec<ComponentVersion>> {
        let unlisted = self.unlisted.lock().clone();
        let all = self.inner.list().await?;
        Ok(all
            .into_iter()
            .filter(|v| !unlisted.contains(&v.record.name))
            .collect())
    }
    async fn undeploy(&self, name: &str) -> Result<()> {
        self.inner.undeploy(name).await
    }
    async fn watch(&self) -> Result<FunctionWatch> {
        let events = self.events.lock().take().expect("one watch");
        Ok(FunctionWatch::from_channel(events))
    }
    fn backend(&self) -> String {
        "unreported".to_string()
    }
    async fn health(&self) -> Result<()> {
        Ok(())
    }
}

fn config() -> NodeConfig {
    NodeConfig {
        num_cpus: 1,
        stdio: Stdio::memory(),
        max_instances: 32,
        ..NodeConfig::default()
    }
}

/// Waits (up to 30 s) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_resync_forgets_names_undeployed_while_away_and_keeps_newer_ones() {
    let table = Arc::new(EmbeddedFunctionTable::new());
    let a = Node::with_function_table(config(), table.clone()).expect("node a starts");
    let (tx, rx) = mpsc::channel(8);
    let seen_by_b = Arc::new(Unreported {
        inner: table.clone(),
        events: Mutex::new(Some(rx)),
        unlisted: Mutex::new(HashSet::new()),
    });
    let b = Node::with_function_table(config(), seen_by_b.clone()).expect("node b starts");
    let bytes = std::fs::read(component("microbench")).expect("microbench.wasm");

    // Deployed through a; b learns both names from a resync's listing.
    a.deploy_blocking("keep", &bytes).expect("deploys");
    a.deploy_blocking("gone", &bytes).expect("deploys");
    tx.blocking_send(FunctionEvent::Resync).expect("b watches");
    wait_until("b knows keep and gone", || {
        b.deployed("keep").is_some() && b.deployed("gone").is_some()
    });

    // While b's watch hears nothing: `gone` is undeployed through a, and
    // `late` deployed through b, missing from b's next listing (as one
    // taken just before that deploy would be).
    a.undeploy_blocking("gone").expect("undeploys");
    b.deploy_blocking("late", &bytes).expect("deploys");
    seen_by_b.unlisted.lock().insert("late".to_string());
    assert!(b.deployed("gone").is_some(), "b was not told");

    // The watch comes back with a resync; the marker's event comes after
    // it, so once b knows the marker the resync is done.
    tx.blocking_send(FunctionEvent::Resync).expect("b watches");
    let marker = a.deploy_blocking("marker", &bytes).expect("deploys");
    tx.blocking_send(FunctionEvent::Deployed {
        name: "marker".into(),
        version: 1,
        hash: marker.hash,
    })
    .expect("b watches");
    wait_until("b knows the marker", || b.deployed("marker").is_some());

    assert!(b.deployed("gone").is_none(), "undeployed while b was away");
    assert!(b.deployed("keep").is_some(), "still listed");
    assert!(
        b.deployed("late").is_some(),
        "deployed after the listing was taken: still in the table"
    );
    let session = b.session().expect("a session");
    let err = session
        .submit_blocking("gone", "noop", Vec::new(), TaskOptions::new())
        .expect_err("gone is not deployed");
    assert!(err.to_string().contains("gone"), "{err}");
    for name in ["keep", "late"] {
        session
            .submit_blocking(name, "noop", Vec::new(), TaskOptions::new())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
