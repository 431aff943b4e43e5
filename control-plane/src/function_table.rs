//! The function table: deployed components by name and version, with their
//! exports, and their bytes by content hash.
//!
//! A deploy of new bytes under a name makes a new version (1, 2, ... per
//! name), which becomes the *current* one, the one
//! [`FunctionTable::component`] answers and a call by the plain name runs.
//! A deploy of bytes with the content digest of a kept version of the name
//! makes that version current instead, without a new number (one version
//! per content: [`Deployment::new`] says which it was).
//! [`FunctionTable::rollback`] makes an older kept version current again,
//! and a caller may name any kept version (`name@3`, [`split_version`]).
//! The last [`MAX_VERSIONS_KEPT`] versions of a name are kept, older ones
//! are pruned, and a blob no version of any name refers to any more is
//! removed (garbage-collected) by the deploy or undeploy that dropped its
//! last reference. [`FunctionTable::watch`] streams deploys and undeploys.
//!
//! Backends: [`EmbeddedFunctionTable`] (in-process, a single node) and, with
//! the `etcd` feature, [`EtcdFunctionTable`](crate::etcd::EtcdFunctionTable)
//! (the cluster's; its key layout is in `docs/control-plane.md`).

mod embedded;
mod watch;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result};

pub use embedded::EmbeddedFunctionTable;
pub use watch::{FunctionEvent, FunctionWatch};

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

/// One deployed version of a component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentVersion {
    /// Its version: 1 for a name's first deploy, then one more per deploy
    /// (an undeploy forgets the name, so its next deploy is 1 again).
    pub version: u64,
    /// When it was deployed, in milliseconds since the Unix epoch.
    pub deployed_ms: u64,
    /// Its row: digest, size, exports with their schemas and declared
    /// resources.
    pub record: ComponentRecord,
}

/// What a deploy did: the version now current, and whether the deploy
/// made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    /// The version now current: the new one, or the kept version whose
    /// bytes (content digest) were those deployed, with its own number,
    /// deploy time and record.
    pub current: ComponentVersion,
    /// Whether the deploy made a new version. `false`: the bytes were
    /// those of a kept version of the name, which is current now (it may
    /// have been already); nothing was added or pruned.
    pub new: bool,
}

/// Versions of one name a table keeps; a deploy past it prunes the oldest.
pub const MAX_VERSIONS_KEPT: usize = 10;

/// The largest component a table stores, in bytes (1 GiB, as the node's
/// own bound on a component file).
pub const MAX_COMPONENT_BYTES: u64 = 1 << 30;

/// What an [`EmbeddedFunctionTable`] may hold: past its names or bytes a
/// deploy is refused ([`Error::TableFull`]); a name keeps its last
/// `versions` versions. (The etcd table is bounded by etcd's own quota:
/// `docs/control-plane.md`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableLimits {
    /// Most names deployed at once.
    pub names: usize,
    /// Versions kept per name, 1 to [`MAX_VERSIONS_KEPT`].
    pub versions: usize,
    /// Most bytes of component blobs, every name and version together.
    pub bytes: u64,
}

impl Default for TableLimits {
    /// 1,000 names, [`MAX_VERSIONS_KEPT`] versions each, 4 GiB of blobs.
    fn default() -> Self {
        TableLimits {
            names: 1000,
            versions: MAX_VERSIONS_KEPT,
            bytes: 4 << 30,
        }
    }
}

/// The largest encoded [`ComponentVersion`] (JSON), in bytes: a deploy's
/// records must fit, with room to spare, in one etcd request (1.5 MiB by
/// default).
pub const MAX_RECORD_BYTES: usize = 512 * 1024;

/// The longest component name, in bytes.
pub const MAX_NAME_BYTES: usize = 128;

/// How many times a deploy or undeploy tries its write before it gives up
/// with [`Error::Conflict`] (each try after a lost race re-reads the name).
pub const WRITE_ATTEMPTS: u32 = 8;

/// Hex SHA-256 of `bytes`: the content hash that names a component blob.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Whether `hash` has the shape of a [`content_hash`]: 64 lowercase hex
/// digits.
pub fn is_content_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The rule a component name must follow, as [`check_name`] applies it
/// (for messages and docs).
pub const NAME_RULE: &str =
    "1 to 128 bytes of UTF-8, no `/`, `@` or control character, not `.` or `..`";

/// Checks that `name` can name a component: 1 to [`MAX_NAME_BYTES`] bytes,
/// no `/` (names are key segments and path segments), no `@` (it
/// separates a version: `name@version`), no control characters, not `.`
/// or `..` ([`NAME_RULE`]). The one rule of every backend, the node and
/// the HTTP API (which percent-decodes a name before judging it, so any
/// other character travels encoded).
///
/// # Errors
/// [`Error::InvalidName`] saying which rule it breaks.
pub fn check_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.len() > MAX_NAME_BYTES {
        "it is longer than 128 bytes"
    } else if name.contains('/') {
        "it contains `/`"
    } else if name.contains('@') {
        "it contains `@` (which separates a version: name@version)"
    } else if name.chars().any(char::is_control) {
        "it contains a control character"
    } else if name == "." || name == ".." {
        "it is `.` or `..`"
    } else {
        return Ok(());
    };
    Err(Error::InvalidName {
        name: name.chars().take(MAX_NAME_BYTES).collect(),
        reason,
    })
}

/// Splits what a caller names into a component's name and, after `@`, the
/// version asked for: `app` is `("app", None)` (the current version),
/// `app@3` is `("app", Some(3))`. The name itself is not checked here.
///
/// # Errors
/// [`Error::InvalidName`] when what follows `@` is not a version number
/// (1 to 2^64-1).
pub fn split_version(spec: &str) -> Result<(&str, Option<u64>)> {
    let Some((name, version)) = spec.split_once('@') else {
        return Ok((spec, None));
    };
    match version.parse::<u64>() {
        Ok(v) if v > 0 && version.bytes().all(|b| b.is_ascii_digit()) => Ok((name, Some(v))),
        _ => Err(Error::InvalidName {
            name: spec.chars().take(MAX_NAME_BYTES).collect(),
            reason: "what follows `@` is not a version number (1, 2, ..)",
        }),
    }
}

/// Checks a deploy before anything is written: a valid name, a record whose
/// hash and size are those of `bytes`, at most [`MAX_COMPONENT_BYTES`], and
/// an encoded version record of at most [`MAX_RECORD_BYTES`]. Every backend
/// runs it, so they refuse the same deploys.
///
/// # Errors
/// [`Error::InvalidName`] or [`Error::InvalidComponent`].
pub(crate) fn check_deploy(record: &ComponentRecord, bytes: &[u8]) -> Result<()> {
    check_record(record)?;
    let invalid = |reason: String| Error::InvalidComponent {
        name: record.name.clone(),
        reason,
    };
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > MAX_COMPONENT_BYTES {
        return Err(invalid(format!(
            "it has {size} bytes, more than the {MAX_COMPONENT_BYTES} a component may have"
        )));
    }
    if record.size != size {
        return Err(invalid(format!(
            "its record says {} bytes, its bytes are {size}",
            record.size
        )));
    }
    let hash = content_hash(bytes);
    if record.hash != hash {
        return Err(invalid(format!(
            "its record names digest {}, its bytes have digest {hash}",
            record.hash
        )));
    }
    Ok(())
}

/// Checks what of a deploy can be checked from its record alone: a valid
/// name, finite declared quantities, and an encoded version record of at
/// most [`MAX_RECORD_BYTES`] (a bound on its exports and schemas). Part of
/// every backend's check; a node runs it before it compiles the schemas.
///
/// # Errors
/// [`Error::InvalidName`] or [`Error::InvalidComponent`].
pub fn check_record(record: &ComponentRecord) -> Result<()> {
    check_name(&record.name)?;
    let invalid = |reason: String| Error::InvalidComponent {
        name: record.name.clone(),
        reason,
    };
    if let Some(f) = record
        .functions
        .iter()
        .find(|f| !declares_finite(&f.declared))
    {
        return Err(invalid(format!(
            "`{}` declares a quantity that is not a finite number",
            f.name
        )));
    }
    let encoded = encoded_len(record);
    if encoded > MAX_RECORD_BYTES {
        return Err(invalid(format!(
            "its record (exports and schemas) takes {encoded} bytes, more than {MAX_RECORD_BYTES}"
        )));
    }
    Ok(())
}

/// Whether every quantity `declared` names is finite (JSON has no NaN or
/// infinity: they would not read back).
fn declares_finite(declared: &Declared) -> bool {
    let custom = declared.resources.iter().map(|(_, q)| Some(*q));
    [declared.num_cpus, declared.num_gpus]
        .into_iter()
        .chain(custom)
        .flatten()
        .all(f64::is_finite)
}

/// Bytes of the JSON encoding of a version record holding `record`.
fn encoded_len(record: &ComponentRecord) -> usize {
    let version = ComponentVersion {
        version: u64::MAX,
        deployed_ms: u64::MAX,
        record: record.clone(),
    };
    serde_json::to_vec(&version).map_or(usize::MAX, |v| v.len())
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The function table, as every control-plane backend provides it.
///
/// Calls are async because the cluster backend (etcd) is remote; the embedded
/// backend answers at once. Workers never call it on a task's hot path: a
/// node resolves a component once and caches it by content hash.
///
/// Writes of one name are serialized: two deploys (or a deploy and an
/// undeploy) of one name never interleave; each either lands whole, as its
/// own version, or fails with [`Error::Conflict`] having written nothing
/// that a reader can see.
#[async_trait]
pub trait FunctionTable: Send + Sync {
    /// Stores `bytes` under their content hash and `record` as the next
    /// version of `record.name`, which becomes its current version. Prunes
    /// the name's versions past [`MAX_VERSIONS_KEPT`] (oldest first) and
    /// removes blobs no kept version refers to any more.
    ///
    /// When a kept version of the name has `record.hash` (the same bytes),
    /// that version becomes current instead (as a
    /// [`rollback`](FunctionTable::rollback) to it would), keeping its
    /// number and record; nothing is stored, added or pruned, and no
    /// bound of the table is checked: [`Deployment::new`] is `false`.
    ///
    /// # Errors
    /// [`Error::InvalidName`]; [`Error::InvalidComponent`] when `record`'s
    /// hash or size are not those of `bytes`, or either is too large;
    /// [`Error::Conflict`] when concurrent writes of the name won
    /// [`WRITE_ATTEMPTS`] times in a row; [`Error::Unavailable`] when the
    /// backend cannot be reached.
    async fn deploy(&self, record: ComponentRecord, bytes: Arc<[u8]>) -> Result<Deployment>;

    /// The current version of the component deployed as `name`: its
    /// newest, unless a [`rollback`](FunctionTable::rollback) made an
    /// older one current.
    ///
    /// # Errors
    /// [`Error::ComponentNotFound`], [`Error::Corrupt`], or
    /// [`Error::Unavailable`].
    async fn current(&self, name: &str) -> Result<ComponentVersion>;

    /// The current version's row of the component deployed as `name`.
    ///
    /// # Errors
    /// As [`FunctionTable::current`].
    async fn component(&self, name: &str) -> Result<ComponentRecord> {
        Ok(self.current(name).await?.record)
    }

    /// Version `version` of the component deployed as `name`.
    ///
    /// # Errors
    /// [`Error::VersionNotFound`] (also for a name not deployed, and a
    /// version pruned), [`Error::Corrupt`], or [`Error::Unavailable`].
    async fn version(&self, name: &str, version: u64) -> Result<ComponentVersion>;

    /// The kept versions of `name`, oldest first (the last is the newest,
    /// and current unless a rollback made an older one current).
    ///
    /// # Errors
    /// [`Error::ComponentNotFound`], [`Error::Corrupt`], or
    /// [`Error::Unavailable`].
    async fn versions(&self, name: &str) -> Result<Vec<ComponentVersion>>;

    /// Makes kept version `version` of `name` its current version again
    /// (a rollback): calls by the plain name run it from now on, on every
    /// node following the table (watchers see
    /// [`FunctionEvent::Deployed`] of it). Nothing is deployed or pruned:
    /// the next deploy is still the newest number plus one, and becomes
    /// current. Rolling back to the current version changes nothing (and
    /// tells watchers nothing).
    ///
    /// # Errors
    /// [`Error::ComponentNotFound`]; [`Error::VersionNotFound`] for a
    /// version never deployed or pruned; [`Error::Conflict`] when
    /// concurrent writes of the name won [`WRITE_ATTEMPTS`] times in a
    /// row; [`Error::Corrupt`]; [`Error::Unavailable`].
    async fn rollback(&self, name: &str, version: u64) -> Result<ComponentVersion>;

    /// The bytes of the component whose content hash is `hash`, checked
    /// against it.
    ///
    /// # Errors
    /// [`Error::BlobNotFound`]; [`Error::Corrupt`] when what is stored does
    /// not hash to `hash`; or [`Error::Unavailable`].
    async fn blob(&self, hash: &str) -> Result<Arc<[u8]>>;

    /// The current version of every deployed component, ordered by name.
    ///
    /// # Errors
    /// [`Error::Corrupt`], or [`Error::Unavailable`].
    async fn list(&self) -> Result<Vec<ComponentVersion>>;

    /// One page of [`FunctionTable::list`]: at most `limit` current
    /// versions whose names sort after `after` (from the first without
    /// it), ordered by name. The default lists everything and cuts; a
    /// backend that can read a range should.
    ///
    /// # Errors
    /// As [`FunctionTable::list`].
    async fn list_page(&self, after: Option<&str>, limit: usize) -> Result<Vec<ComponentVersion>> {
        let all = self.list().await?;
        Ok(all
            .into_iter()
            .filter(|v| after.is_none_or(|a| v.record.name.as_str() > a))
            .take(limit)
            .collect())
    }

    /// [`FunctionTable::list_page`], and the damaged entries it left out
    /// (the default: none; a backend whose entries others can write, etcd,
    /// names them).
    ///
    /// # Errors
    /// As [`FunctionTable::list`].
    async fn list_page_checked(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<crate::Listed<ComponentVersion>> {
        Ok(crate::Listed::all(self.list_page(after, limit).await?))
    }

    /// [`FunctionTable::versions`], and the damaged version records it left
    /// out (the default: none).
    ///
    /// # Errors
    /// As [`FunctionTable::versions`].
    async fn versions_checked(&self, name: &str) -> Result<crate::Listed<ComponentVersion>> {
        Ok(crate::Listed::all(self.versions(name).await?))
    }

    /// Removes `name` and all its versions; its blobs go too unless another
    /// name's kept version refers to them. A later deploy of `name` starts
    /// again at version 1.
    ///
    /// # Errors
    /// [`Error::ComponentNotFound`], [`Error::Conflict`], or
    /// [`Error::Unavailable`].
    async fn undeploy(&self, name: &str) -> Result<()>;

    /// A stream of the table's changes from now on: every deploy (name and
    /// new version) and undeploy, in the order they happened. A consumer
    /// that starts with an empty view calls `watch` first, then
    /// [`FunctionTable::list`], and applies events after (an event may
    /// repeat what the listing already showed). When the stream may have
    /// missed events (the consumer fell behind; the etcd backend lost its
    /// place), it says [`FunctionEvent::Resync`]: list again.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the backend cannot start a watch (the
    /// etcd backend never fails here: it keeps trying in the background).
    async fn watch(&self) -> Result<FunctionWatch>;

    /// Where the table lives, for status pages: `embedded`, or `etcd`
    /// and its endpoints.
    fn backend(&self) -> String;

    /// Whether the backend answers now (for `/healthz` and `wray status`).
    ///
    /// # Errors
    /// [`Error::Unavailable`] naming the backend and why.
    async fn health(&self) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_key_segments() {
        for good in ["app", "word-count_2.v1", "ünï côdé", "a.b", "x#y", "a&b"] {
            check_name(good).unwrap();
        }
        let long = "x".repeat(MAX_NAME_BYTES + 1);
        for bad in [
            "",
            "a/b",
            "/",
            "tab\t",
            "nul\0",
            ".",
            "..",
            "a@2",
            long.as_str(),
        ] {
            let err = check_name(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidName { .. }), "{bad:?}");
            assert!(!err.is_retryable());
        }
    }

    #[test]
    fn a_version_follows_the_name_after_at() {
        assert_eq!(split_version("app").unwrap(), ("app", None));
        assert_eq!(split_version("app@3").unwrap(), ("app", Some(3)));
        for bad in [
            "app@",
            "app@0",
            "app@x",
            "app@-1",
            "app@+3",
            "app@1@2",
            "app@99999999999999999999",
        ] {
            let err = split_version(bad).unwrap_err();
            assert!(err.to_string().contains("version number"), "{bad}: {err}");
        }
        let err = check_name("a@b").unwrap_err();
        assert!(err.to_string().contains("`@`"), "{err}");
    }

    #[test]
    fn content_hashes_have_one_shape() {
        assert!(is_content_hash(&content_hash(b"x")));
        assert!(!is_content_hash("ABC"));
        assert!(!is_content_hash(&content_hash(b"x").to_uppercase()));
        assert!(!is_content_hash(&"g".repeat(64)));
    }
}
