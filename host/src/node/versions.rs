//! Versioned calls and rollback: a caller may name any version the
//! function table keeps (`app@3`, as [`split_version`] reads it), and
//! [`Node::rollback`] makes a kept version the one the plain name means
//! again, for every node following the table.
//!
//! A version named so is loaded here like any other (compiled once per
//! content hash) and known to the scheduler by its hash only: tasks may
//! name it while the name keeps meaning its current version.

use std::sync::Arc;

use wray_control_plane::{split_version, ComponentRecord, ComponentVersion, Listed};

use crate::error::{Error, Result};
use crate::executor::component::{self, LoadedComponent};
use crate::node::Node;
use crate::scheduler::functions::{InUse, Version};

impl Node {
    /// The record of version `version` of the component deployed as
    /// `name`, loaded here so that a call may name it (`name@version`).
    /// Reads the function table.
    ///
    /// # Errors
    /// [`Error::NotDeployed`]; [`Error::VersionNotFound`] naming the
    /// versions kept; [`Error::Component`] when it cannot be loaded;
    /// [`Error::ControlPlane`].
    pub async fn component_at(&self, name: &str, version: u64) -> Result<Arc<ComponentRecord>> {
        let (_loaded, record, _used) = self.load_version(name, version).await?;
        Ok(record)
    }

    /// The versions of `name` the function table keeps, oldest first (the
    /// last is the newest; the current one is the newest unless a rollback
    /// made an older one current).
    ///
    /// # Errors
    /// [`Error::NotDeployed`]; [`Error::ControlPlane`].
    pub async fn versions(&self, name: &str) -> Result<Vec<ComponentVersion>> {
        Ok(self.versions_checked(name).await?.entries)
    }

    /// [`Node::versions`], and the damaged version records of `name` left
    /// out.
    ///
    /// # Errors
    /// As [`Node::versions`].
    pub async fn versions_checked(&self, name: &str) -> Result<Listed<ComponentVersion>> {
        use wray_control_plane::Error as Table;
        self.table
            .versions_checked(name)
            .await
            .map_err(|e| match e {
                Table::ComponentNotFound(n) => Error::NotDeployed(n),
                other => other.into(),
            })
    }

    /// Makes kept version `version` of `name` its current version again,
    /// in the function table (every node following it sees it) and here
    /// at once: calls by the plain name run it from now on; calls already
    /// made finish on the version they named. The version now current.
    ///
    /// # Errors
    /// As [`Node::component_at`]; [`Error::DeployLimit`] when loading it
    /// here would pass one of the node's bounds.
    pub async fn rollback(&self, name: &str, version: u64) -> Result<ComponentVersion> {
        let _commit = self.commits.lock().await;
        let chosen = match self.table.rollback(name, version).await {
            Ok(chosen) => chosen,
            Err(e) => return Err(self.version_error(name, version, e).await),
        };
        let loaded = self.loaded_by_hash(name, &chosen.record.hash).await?;
        let row = Arc::new(chosen.record.clone());
        let fresh = Version::new(row.clone(), loaded.clone(), loaded.compiled);
        self.sched.insert_component(row, fresh)?;
        Ok(chosen)
    }

    /// The component `spec` names, loaded here: `name` (its current
    /// version) or `name@version`.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] for a malformed version; as
    /// [`Node::component_at`].
    pub(crate) fn loaded_spec_blocking(&self, spec: &str) -> Result<Arc<LoadedComponent>> {
        self.wait("Node::loaded_spec_blocking", self.loaded_spec_async(spec))?
    }

    /// [`Node::loaded_spec_blocking`], as a future.
    ///
    /// # Errors
    /// As [`Node::loaded_spec_blocking`].
    pub(crate) async fn loaded_spec_async(&self, spec: &str) -> Result<Arc<LoadedComponent>> {
        match split_version(spec)? {
            (name, None) => self.loaded_async(name).await,
            (name, Some(version)) => Ok(self.load_version(name, version).await?.0),
        }
    }

    /// Version `version` of `name`, loaded here and known to the scheduler
    /// by its hash (not by its name), with a use of it: it stays loaded
    /// while the caller holds the use (then while tasks, actors or a
    /// driver use it).
    async fn load_version(
        &self,
        name: &str,
        version: u64,
    ) -> Result<(Arc<LoadedComponent>, Arc<ComponentRecord>, InUse)> {
        let found = match self.table.version(name, version).await {
            Ok(found) => found,
            Err(e) => return Err(self.version_error(name, version, e).await),
        };
        let record = Arc::new(found.record);
        let loaded = self.loaded_by_hash(name, &record.hash).await?;
        let fresh = Version::new(record.clone(), loaded.clone(), loaded.compiled);
        let used = self.sched.add_version(fresh)?;
        Ok((loaded, record, used))
    }

    /// The component with content hash `hash` (deployed as `name`), from
    /// the executor, or fetched from the function table and compiled on
    /// the node's compile pool (not yet recorded in the scheduler).
    async fn loaded_by_hash(&self, name: &str, hash: &str) -> Result<Arc<LoadedComponent>> {
        if let Some(loaded) = self.exec.component(hash) {
            return Ok(loaded);
        }
        let bytes = self.table.blob(hash).await?;
        component::load(&self.exec, name, bytes, hash.to_string()).await
    }

    /// `e`, from asking the table for version `version` of `name`, as this
    /// crate says it: a missing version names the versions kept.
    async fn version_error(&self, name: &str, version: u64, e: wray_control_plane::Error) -> Error {
        use wray_control_plane::Error as Table;
        match e {
            Table::VersionNotFound { .. } => match self.table.versions(name).await {
                Ok(kept) => Error::VersionNotFound {
                    name: name.to_string(),
                    version,
                    kept: kept.iter().map(|v| v.version).collect(),
                },
                Err(Table::ComponentNotFound(n)) => Error::NotDeployed(n),
                Err(other) => other.into(),
            },
            Table::ComponentNotFound(n) => Error::NotDeployed(n),
            other => other.into(),
        }
    }
}
