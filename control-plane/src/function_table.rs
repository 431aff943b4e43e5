//! The function table: deployed components by name, with their exports.
//!
//! Key layout (shared by every backend; see DESIGN.md):
//! `/wray/functions/<name>` holds a [`ComponentRecord`] and
//! `/wray/blobs/<sha256>` the component's bytes.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// What kind of export a [`FunctionRecord`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FunctionKind {
    /// A remote function.
    Function,
    /// An actor class (its constructor).
    ActorClass,
    /// A method of an actor class.
    ActorMethod,
}

/// What an export declares it needs and may use
/// (`#[wray::remote(num_gpus = 1, max_memory = ..)]`); `None`: the node's
/// default. Quantities are fractional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Declared {
    /// CPUs per call.
    pub num_cpus: Option<f64>,
    /// GPUs per call.
    pub num_gpus: Option<f64>,
    /// Bytes of memory reserved per call.
    pub memory: Option<u64>,
    /// Custom resources per call.
    pub resources: Vec<(String, f64)>,
    /// Memory limit in bytes.
    pub max_memory: Option<u64>,
    /// Time limit in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Fuel limit.
    pub fuel: Option<u64>,
    /// Runs on a long-lived instance reused across tasks.
    #[serde(default)]
    pub reuse: bool,
}

/// One export of a component, as its `describe` reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionRecord {
    /// Remote function, actor class or actor method.
    pub kind: FunctionKind,
    /// Function name, class name (for classes) or method name.
    pub name: String,
    /// The class of a method.
    pub class: Option<String>,
    /// Number of objects each call returns.
    pub num_returns: u32,
    /// The parameters, with their JSON Schemas.
    #[serde(default)]
    pub params: Vec<Param>,
    /// The JSON Schema of each return object (empty for a constructor).
    #[serde(default)]
    pub returns: Vec<String>,
    /// Declared resources and limits (for a class: its actors').
    #[serde(default)]
    pub declared: Declared,
}

impl FunctionRecord {
    /// How many arguments a call passes: one per parameter.
    pub fn num_args(&self) -> usize {
        self.params.len()
    }
}

/// One parameter of a function or method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// Its name in the guest's source.
    pub name: String,
    /// The JSON Schema (draft 2020-12) of its JSON form, as JSON text
    /// (`{}`: anything).
    pub schema: String,
}

/// A deployed component: the function table's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentRecord {
    /// Name the component is deployed under.
    pub name: String,
    /// Hex SHA-256 of the component's bytes (the blob key).
    pub hash: String,
    /// Size of the component in bytes.
    pub size: u64,
    /// Whether the component has a driver entry point (`main`).
    pub has_main: bool,
    /// The SDK that built it (`wray-rust 0.1.0`); empty when unsaid.
    #[serde(default)]
    pub sdk: String,
    /// Its remote functions, actor classes and methods.
    pub functions: Vec<FunctionRecord>,
}

impl ComponentRecord {
    /// The remote function `name`, if the component exports one.
    pub fn function(&self, name: &str) -> Option<&FunctionRecord> {
        self.functions
            .iter()
            .find(|f| f.kind == FunctionKind::Function && f.name == name)
    }

    /// The actor class `class` (its constructor), if exported.
    pub fn actor_class(&self, class: &str) -> Option<&FunctionRecord> {
        self.functions
            .iter()
            .find(|f| f.kind == FunctionKind::ActorClass && f.name == class)
    }

    /// Method `method` of actor class `class`, if exported.
    pub fn actor_method(&self, class: &str, method: &str) -> Option<&FunctionRecord> {
        self.functions.iter().find(|f| {
            f.kind == FunctionKind::ActorMethod
                && f.name == method
                && f.class.as_deref() == Some(class)
        })
    }
}

/// Hex SHA-256 of `bytes`: the content hash that names a component blob.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The function table, as every control-plane backend provides it.
///
/// Calls are async because the cluster backend (etcd) is remote; the embedded
/// backend answers at once. Workers never call it on a task's hot path: a
/// node resolves a component once and caches it by content hash.
#[async_trait]
pub trait FunctionTable: Send + Sync {
    /// Stores `bytes` under their content hash and `record` under its name,
    /// replacing an earlier component of that name.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the backend cannot be reached.
    async fn deploy(&self, record: ComponentRecord, bytes: Arc<[u8]>) -> Result<()>;

    /// The component deployed as `name`.
    ///
    /// # Errors
    /// [`Error::ComponentNotFound`], or [`Error::Unavailable`].
    async fn component(&self, name: &str) -> Result<ComponentRecord>;

    /// The bytes of the component whose content hash is `hash`.
    ///
    /// # Errors
    /// [`Error::BlobNotFound`], or [`Error::Unavailable`].
    async fn blob(&self, hash: &str) -> Result<Arc<[u8]>>;

    /// Every deployed component, ordered by name.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the backend cannot be reached.
    async fn list(&self) -> Result<Vec<ComponentRecord>>;
}

/// The in-process function table of a single node (the default backend).
#[derive(Default)]
pub struct EmbeddedFunctionTable {
    components: RwLock<HashMap<String, ComponentRecord>>,
    blobs: RwLock<HashMap<String, Arc<[u8]>>>,
}

impl EmbeddedFunctionTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl FunctionTable for EmbeddedFunctionTable {
    async fn deploy(&self, record: ComponentRecord, bytes: Arc<[u8]>) -> Result<()> {
        self.blobs.write().insert(record.hash.clone(), bytes);
        self.components.write().insert(record.name.clone(), record);
        Ok(())
    }

    async fn component(&self, name: &str) -> Result<ComponentRecord> {
        self.components
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::ComponentNotFound(name.to_string()))
    }

    async fn blob(&self, hash: &str) -> Result<Arc<[u8]>> {
        self.blobs
            .read()
            .get(hash)
            .cloned()
            .ok_or_else(|| Error::BlobNotFound(hash.to_string()))
    }

    async fn list(&self) -> Result<Vec<ComponentRecord>> {
        let mut all: Vec<_> = self.components.read().values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, bytes: &[u8]) -> ComponentRecord {
        ComponentRecord {
            name: name.into(),
            hash: content_hash(bytes),
            size: bytes.len() as u64,
            has_main: true,
            sdk: "wray-rust 0.1.0".into(),
            functions: vec![
                FunctionRecord {
                    kind: FunctionKind::Function,
                    name: "add".into(),
                    class: None,
                    num_returns: 1,
                    params: vec![
                        Param {
                            name: "a".into(),
                            schema: r#"{"type":"integer"}"#.into(),
                        },
                        Param {
                            name: "b".into(),
                            schema: r#"{"type":"integer"}"#.into(),
                        },
                    ],
                    returns: vec![r#"{"type":"integer"}"#.into()],
                    declared: Declared::default(),
                },
                FunctionRecord {
                    kind: FunctionKind::ActorMethod,
                    name: "incr".into(),
                    class: Some("Counter".into()),
                    num_returns: 1,
                    params: Vec::new(),
                    returns: vec!["{}".into()],
                    declared: Declared {
                        num_gpus: Some(0.5),
                        ..Declared::default()
                    },
                },
            ],
        }
    }

    #[tokio::test]
    async fn deploy_then_lookup_and_redeploy() {
        let table = EmbeddedFunctionTable::new();
        let rec = record("app", b"v1");
        table
            .deploy(rec.clone(), Arc::from(&b"v1"[..]))
            .await
            .unwrap();
        assert_eq!(table.component("app").await.unwrap(), rec);
        assert_eq!(&*table.blob(&rec.hash).await.unwrap(), b"v1");
        assert!(rec.function("add").is_some());
        assert!(rec.function("incr").is_none());
        assert!(rec.actor_method("Counter", "incr").is_some());

        let rec2 = record("app", b"v2");
        table
            .deploy(rec2.clone(), Arc::from(&b"v2"[..]))
            .await
            .unwrap();
        assert_eq!(table.component("app").await.unwrap().hash, rec2.hash);
        assert_eq!(table.list().await.unwrap().len(), 1);

        let err = table.component("nope").await.unwrap_err();
        assert!(matches!(err, Error::ComponentNotFound(_)));
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("nope"));
    }
}
