//! The components a node holds: deploy (checked, compiled on the compile
//! pool, admitted within the node's bounds, then written to the function
//! table), undeploy, the listings (the table's, or the node's own view
//! while it is unreachable), and loading a deployed name on first use.
//! Versions named `name@N` and rollback are `versions`'.

use std::path::Path;
use std::sync::Arc;

use wray_control_plane::{ComponentRecord, ComponentVersion, Deployment, Listed};

use crate::error::{DeployBound, DeployLimit, Error, Result};
use crate::executor::compile::CompileStats;
use crate::executor::component::{self, LoadedComponent};
use crate::node::{Node, MAX_COMPONENT_BYTES};
use crate::scheduler::functions::Version;
use crate::scheduler::Scheduler;

impl Node {
    /// Compiles `bytes` (once per content hash), reads its exports, and
    /// deploys it into the function table as `name`. Blocks the calling
    /// thread (see [`Node::deploy_async`]).
    ///
    /// # Errors
    /// As [`Node::deploy_async`]; [`Error::BlockingInRuntime`] inside a
    /// tokio runtime.
    pub fn deploy_blocking(&self, name: &str, bytes: &[u8]) -> Result<ComponentRecord> {
        Ok(self.deploy_version_blocking(name, bytes)?.record)
    }

    /// [`Node::deploy_blocking`], answering the version now current (1, 2, .. per
    /// name: a new one, or the kept version with the same bytes) and when
    /// it was deployed.
    ///
    /// # Errors
    /// As [`Node::deploy_blocking`].
    pub fn deploy_version_blocking(&self, name: &str, bytes: &[u8]) -> Result<ComponentVersion> {
        Ok(self
            .wait(
                "Node::deploy_blocking",
                self.deploy_async(name, Arc::from(bytes)),
            )??
            .current)
    }

    /// Deploys `bytes` as `name`, as the newest version of the name: checks
    /// the name and the node's bounds, checks the component cheaply (what
    /// it exports and imports, how much code), compiles it on the node's
    /// compile pool (never on the caller's thread: this future waits for
    /// it) within `compile_timeout`, describes it, records it here and
    /// writes it to the function table. The name's oldest versions past
    /// `max_versions` that no task or actor uses are dropped.
    ///
    /// Bytes with the content digest of a version the table keeps for
    /// the name make that version current, here and in the table, with
    /// its number: no new version, and no bound on versions is met
    /// ([`Deployment::new`] is `false`). The version now current.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] for a bad name or when the function table
    /// refuses; [`Error::Component`] when the bytes are not a wray
    /// component (saying what they lack), have too much code or take too
    /// long to compile; [`Error::DeployLimit`] past a bound on what the
    /// node holds (names, versions, bytes, compiled code) or when every
    /// compile slot stayed busy.
    ///
    /// # Cancel safety
    /// Dropped before the compile ends, nothing is deployed (the compile
    /// runs to its end in its slot); once it is being recorded, it is
    /// recorded whole.
    pub async fn deploy_async(&self, name: &str, bytes: Arc<[u8]>) -> Result<Deployment> {
        wray_control_plane::check_name(name)?;
        let hash = wray_control_plane::content_hash(&bytes);
        // The node's bounds, before anything is compiled (the compiled
        // code's size is checked once known).
        let probe = ComponentRecord {
            name: name.to_string(),
            hash: hash.clone(),
            size: bytes.len() as u64,
            has_main: false,
            sdk: String::new(),
            functions: Vec::new(),
        };
        self.sched.check_component(&probe, 0)?;
        let loaded = component::load(&self.exec, name, bytes.clone(), hash).await?;
        let _commit = self.commits.lock().await;
        let record = admit(&self.sched, &loaded)?;
        match self.table.deploy(loaded.record.clone(), bytes).await {
            Ok(deployed) => Ok(deployed),
            Err(e) => {
                self.sched.take_back_component(&record);
                Err(table_error(name, e))
            }
        }
    }

    /// What the node holds of deployed components (names, versions,
    /// bytes of component files and rows, compiled code) and its bounds.
    pub fn component_usage(&self) -> crate::scheduler::ComponentUsage {
        self.sched.component_usage()
    }

    /// Bytes of linear memory the node's instances hold now, and the
    /// node's budget of them (`--guest-memory`).
    pub fn guest_memory(&self) -> (u64, u64) {
        let budget = &self.exec.guest_memory;
        (budget.used() as u64, budget.limit() as u64)
    }

    /// Live actors whose instance is on this node, and stubs of actors
    /// living on other nodes of its cluster that it sends calls to.
    pub fn actor_counts(&self) -> (usize, usize) {
        (self.sched.actors().live(), self.sched.actors().stubs())
    }

    /// Counters of the node's compiles: its slots, compiles started,
    /// running and at most at once, given up on past the time limit, and
    /// components refused before compiling.
    pub fn compile_stats(&self) -> CompileStats {
        self.exec.compiles.stats()
    }

    /// The component deployed on this node as `name` (its functions,
    /// schemas and declared resources), without a control-plane round trip.
    pub fn deployed(&self, name: &str) -> Option<Arc<ComponentRecord>> {
        self.sched.deployed(name)
    }

    /// [`Node::undeploy_async`], blocking the calling thread (outside an
    /// async runtime).
    ///
    /// # Errors
    /// As [`Node::undeploy_async`]; [`Error::BlockingInRuntime`] inside a
    /// tokio runtime.
    pub fn undeploy_blocking(&self, name: &str) -> Result<bool> {
        self.wait("Node::undeploy_blocking", self.undeploy_async(name))?
    }

    /// Undeploys `name`: calls by that name fail with not-found from now
    /// on; tasks already submitted finish on the version they named.
    /// `false` when nothing is deployed so.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the function table cannot be written.
    pub async fn undeploy_async(&self, name: &str) -> Result<bool> {
        let _commit = self.commits.lock().await;
        let in_table = match self.table.undeploy(name).await {
            Ok(()) => true,
            Err(wray_control_plane::Error::ComponentNotFound(_)) => false,
            Err(e) => return Err(e.into()),
        };
        let here = self.sched.undeploy(name).is_some();
        Ok(in_table || here)
    }

    /// [`Node::component_async`], blocking the calling thread.
    ///
    /// # Errors
    /// As [`Node::component_async`]; [`Error::BlockingInRuntime`] inside
    /// a tokio runtime.
    pub fn component_blocking(&self, name: &str) -> Result<ComponentVersion> {
        self.wait("Node::component_blocking", self.component_async(name))?
    }

    /// The current version of the component deployed as `name`, from the
    /// function table.
    ///
    /// # Errors
    /// [`Error::NotDeployed`], or [`Error::ControlPlane`].
    pub async fn component_async(&self, name: &str) -> Result<ComponentVersion> {
        self.table.current(name).await.map_err(|e| match e {
            wray_control_plane::Error::ComponentNotFound(n) => Error::NotDeployed(n),
            other => other.into(),
        })
    }

    /// The node's own view of the function table: the row of every name
    /// deployed on this node (by it, or followed from the table), ordered
    /// by name. No control-plane round trip: it answers while the control
    /// plane is unreachable (it may lag deploys made elsewhere).
    pub fn local_components(&self) -> Vec<Arc<ComponentRecord>> {
        let mut all = self.sched.named_components();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Every component in the function table, ordered by name. Blocks the
    /// calling thread on the control plane: call it outside an async
    /// runtime.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the function table cannot be read;
    /// [`Error::BlockingInRuntime`] inside a tokio runtime.
    pub fn components_blocking(&self) -> Result<Vec<ComponentVersion>> {
        Ok(self.wait("Node::components_blocking", self.table.list())??)
    }

    /// One page of [`Node::components_blocking`]: at most `limit` components whose
    /// names sort after `after`, ordered by name, and the damaged entries
    /// of the function table (whose names sort after `after`) left out.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the function table cannot be read.
    pub async fn components_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Listed<ComponentVersion>> {
        Ok(self.table.list_page_checked(after, limit).await?)
    }

    /// Deploys the component file at `path` under its file stem
    /// (`wordcount.wasm` -> `wordcount`).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; then as [`Node::deploy_blocking`].
    pub fn deploy_file_blocking(&self, path: impl AsRef<Path>) -> Result<ComponentRecord> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        let size = std::fs::metadata(path).map_err(io)?.len();
        if size > MAX_COMPONENT_BYTES {
            return Err(Error::Component {
                name: path.display().to_string(),
                reason: format!(
                    "the file has {size} bytes, more than the {MAX_COMPONENT_BYTES} a component may have"
                ),
            });
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let name = path
            .file_stem()
            .map_or_else(|| "app".into(), |s| s.to_string_lossy().into_owned());
        self.deploy_blocking(&name, &bytes)
    }

    /// Deployed component `name`, loaded here (compiled from the function
    /// table's blob the first time), within the node's bounds. While the
    /// control plane is unreachable, the version this node already runs
    /// under that name (its own view, as the listings answer then).
    ///
    /// # Errors
    /// [`Error::NotDeployed`]; a control-plane error (the table
    /// unreachable and the name not loaded here, or a refusal); as
    /// [`Node::deploy_async`] when it must be loaded and cannot.
    pub(crate) async fn loaded_async(&self, name: &str) -> Result<Arc<LoadedComponent>> {
        let record = match self.table.component(name).await {
            Ok(record) => record,
            Err(wray_control_plane::Error::ComponentNotFound(n)) => {
                return Err(Error::NotDeployed(n))
            }
            Err(e) if e.is_retryable() => {
                let own = self.sched.deployed(name);
                if let Some(loaded) = own.and_then(|r| self.exec.component(&r.hash)) {
                    tracing::warn!(
                        component = name,
                        "the control plane is unreachable ({e}): running the version this node has"
                    );
                    return Ok(loaded);
                }
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(known) = self.sched.deployed(name).filter(|r| r.hash == record.hash) {
            if let Some(loaded) = self.exec.component(&known.hash) {
                return Ok(loaded);
            }
        }
        if let Some(loaded) = self.exec.component(&record.hash) {
            // Known by its hash (under another name, or forgotten by name
            // after a redeploy elsewhere): known by this name from now on.
            let row = Arc::new(record);
            let fresh = Version::new(row.clone(), loaded.clone(), loaded.compiled);
            self.sched.insert_component(row, fresh)?;
            return Ok(loaded);
        }
        let bytes = self.table.blob(&record.hash).await?;
        let loaded = component::load(&self.exec, name, bytes, record.hash.clone()).await?;
        admit(&self.sched, &loaded)?;
        Ok(loaded)
    }
}

/// Makes `loaded` runnable on the node of `sched` as the newest version
/// of its name, within the node's bounds; its row (a new one each time,
/// which `Scheduler::take_back_component` finds by identity).
///
/// # Errors
/// [`Error::DeployLimit`] past a bound; nothing changed then.
fn admit(sched: &Scheduler, loaded: &Arc<LoadedComponent>) -> Result<Arc<ComponentRecord>> {
    let record = Arc::new(loaded.record.clone());
    let fresh = Version::new(record.clone(), loaded.clone(), loaded.compiled);
    sched.insert_component(record.clone(), fresh)?;
    Ok(record)
}

/// The error of a function-table write refusing a deploy of `name`: past
/// one of the table's own bounds, the node's [`DeployLimit`].
fn table_error(name: &str, e: wray_control_plane::Error) -> Error {
    match e {
        wray_control_plane::Error::TableFull {
            what, held, limit, ..
        } => {
            let bound = if what == "names" {
                DeployBound::Names
            } else {
                DeployBound::ComponentBytes
            };
            Error::DeployLimit(DeployLimit {
                name: name.to_string(),
                bound,
                limit,
                reason: format!(
                    "the function table holds {held} {what}, the most it may ({} {}); \
                     undeploy some first",
                    bound.flag(),
                    if bound.is_bytes() { limit >> 20 } else { limit }
                ),
            })
        }
        other => other.into(),
    }
}
