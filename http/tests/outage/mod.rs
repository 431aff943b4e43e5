//! Reads of the function table through an outage of the control plane:
//! calls keep working (the node runs what it has), and so do the
//! listings and documents, answered from the node's own view and saying
//! so.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use wray_control_plane::{
    ComponentRecord, ComponentVersion, Deployment, EmbeddedFunctionTable, Error, FunctionTable,
    FunctionWatch, Result,
};
use wray_host::{Node, NodeConfig};
use wray_http::HttpConfig;

use super::{authed, deploy, get_at, post, serve_node};

/// The embedded table, unreachable while `down` is set (every call
/// answers `Unavailable`, as an etcd that does not answer does).
#[derive(Default)]
struct Flaky {
    table: EmbeddedFunctionTable,
    down: AtomicBool,
}

impl Flaky {
    fn up(&self) -> Result<()> {
        if self.down.load(Ordering::SeqCst) {
            Err(Error::Unavailable("the test took the table down".into()))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl FunctionTable for Flaky {
    async fn deploy(&self, record: ComponentRecord, bytes: Arc<[u8]>) -> Result<Deployment> {
        self.up()?;
        self.table.deploy(record, bytes).await
    }
    async fn current(&self, name: &str) -> Result<ComponentVersion> {
        self.up()?;
        self.table.current(name).await
    }
    async fn version(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        self.up()?;
        self.table.version(name, version).await
    }
    async fn versions(&self, name: &str) -> Result<Vec<ComponentVersion>> {
        self.up()?;
        self.table.versions(name).await
    }
    async fn blob(&self, hash: &str) -> Result<Arc<[u8]>> {
        self.up()?;
        self.table.blob(hash).await
    }
    async fn list(&self) -> Result<Vec<ComponentVersion>> {
        self.up()?;
        self.table.list().await
    }
    async fn list_page(&self, after: Option<&str>, limit: usize) -> Result<Vec<ComponentVersion>> {
        self.up()?;
        self.table.list_page(after, limit).await
    }
    async fn rollback(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        self.up()?;
        self.table.rollback(name, version).await
    }
    async fn undeploy(&self, name: &str) -> Result<()> {
        self.up()?;
        self.table.undeploy(name).await
    }
    async fn watch(&self) -> Result<FunctionWatch> {
        self.table.watch().await
    }
    fn backend(&self) -> String {
        "flaky".into()
    }
    async fn health(&self) -> Result<()> {
        self.up()
    }
}

#[test]
fn through_a_control_plane_outage_listings_and_documents_answer_the_nodes_view() {
    let table = Arc::new(Flaky::default());
    let node: Arc<Node> = Node::with_function_table(
        NodeConfig {
            num_cpus: 1,
            ..NodeConfig::default()
        },
        table.clone(),
    )
    .expect("node starts");
    let url = format!("http://{}", serve_node(node, HttpConfig::default()));
    deploy(&url, "microbench", "mb");
    deploy(&url, "api", "api");
    let (s, v) = get_at(&url, "/v1/components");
    assert_eq!((s, &v["view"]), (200, &json!("control_plane")), "{v}");
    assert_eq!(v["components"][0]["version"], 1, "{v}");

    table.down.store(true, Ordering::SeqCst);
    let r = authed("GET", &format!("{url}/v1/components"))
        .call()
        .expect("200");
    assert_eq!(r.header("wray-view"), Some("node"));
    let v: serde_json::Value = r.into_json().expect("JSON");
    assert_eq!(v["view"], "node", "{v}");
    let names: Vec<&str> = v["components"]
        .as_array()
        .expect("components")
        .iter()
        .filter_map(|c| c["record"]["name"].as_str())
        .collect();
    assert_eq!(names, ["api", "mb"], "by name: {v}");
    assert!(v["components"][0]["version"].is_null(), "{v}");
    let (s, v) = get_at(&url, "/v1/components/mb");
    assert_eq!((s, &v["view"]), (200, &json!("node")), "{v}");
    let (s, v) = get_at(&url, "/v1/components/mb/openapi.json");
    assert_eq!(s, 200, "{v}");
    assert!(v["paths"]["/v1/functions/mb/noop"].is_object(), "{v}");
    assert_eq!(get_at(&url, "/v1/openapi.json").0, 200);
    assert_eq!(
        post(
            &format!("{url}/v1/functions/mb/noop"),
            "application/json",
            b"[3]"
        ),
        (200, json!(3))
    );
    // A job of a component this node has loaded runs from its own view.
    let (s, v) = post(
        &format!("{url}/v1/jobs"),
        "application/json",
        br#"{"component": "api", "args": ["ids"]}"#,
    );
    assert_eq!(s, 201, "{v}");
    let job = v["job_id"].as_str().expect("a job id").to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        let (_, v) = get_at(&url, &format!("/v1/jobs/{job}"));
        let status = v["status"].as_str().unwrap_or("").to_string();
        if !matches!(status.as_str(), "PENDING" | "RUNNING") {
            break v;
        }
        assert!(std::time::Instant::now() < deadline, "job still {status}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status["status"], "SUCCEEDED", "{status}");
    // Writes still need the table.
    let (s, v) = super::answer(authed("DELETE", &format!("{url}/v1/components/mb")).call());
    assert_eq!((s, super::code(&v)), (503, "busy"), "{v}");

    table.down.store(false, Ordering::SeqCst);
    let (s, v) = get_at(&url, "/v1/components");
    assert_eq!((s, &v["view"]), (200, &json!("control_plane")), "{v}");
}
