//! [`Functions`]: the components this node holds, as the scheduler sees
//! them, within the node's bounds: each loaded version by content hash
//! (what a task spec names), each name's versions (what a qualified
//! `component/function` call names: the newest), and what they cost.
//!
//! A name has one row per content: a deploy (or a rollback, or a followed
//! deploy) of a version the name has a row of already moves that row to
//! the end, as the current one, adding nothing and meeting no bound (as
//! the function table makes a kept version current again for the same
//! bytes).
//!
//! A version stays loaded while a name's rows name it, or while something
//! uses it ([`InUse`]: a queued or running task, a live actor, a running
//! driver). A version no row names any more (its name undeployed, or its
//! rows dropped past [`ComponentLimits::versions`]) is *retired*: it is
//! forgotten (its compiled code given back) once nothing uses it, by the
//! next [`Functions::sweep`] (at a deploy, an undeploy, a job's end, an
//! actor's death).
//!
//! What the node may hold ([`ComponentLimits`], from `NodeConfig`): names,
//! versions per name, bytes (component files, and each row: names and
//! schemas), compiled code. A deploy past one is refused with a
//! [`DeployLimit`] naming it; nothing changes then.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use wray_control_plane::ComponentRecord;

use crate::error::{DeployBound, DeployLimit};

/// Which component a submission names.
#[derive(Debug, Clone, Copy)]
pub enum Callee<'a> {
    /// By content hash: the caller's own component (a guest's plain
    /// `submit`), or one a session resolved already.
    Hash(&'a Arc<str>),
    /// By the name it was deployed under (`submit-to`, `create-actor-of`):
    /// resolved when the call is made, so a redeploy takes effect on the
    /// next call and tasks already submitted keep the version they named.
    Named(&'a str),
}

/// What a node may hold of deployed components (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComponentLimits {
    /// Names at once.
    pub names: usize,
    /// Versions (rows) kept per name.
    pub versions: usize,
    /// Bytes of component files and rows.
    pub bytes: u64,
    /// Bytes of compiled code.
    pub compiled: u64,
}

impl ComponentLimits {
    /// The limits `config` sets.
    pub fn of(config: &crate::config::NodeConfig) -> Self {
        ComponentLimits {
            names: config.max_components,
            versions: config.max_versions,
            bytes: config.max_component_bytes,
            compiled: config.max_compiled_bytes,
        }
    }
}

/// What the node holds of deployed components now, and its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ComponentUsage {
    /// Names deployed.
    pub names: usize,
    /// Versions (content hashes) loaded, retired ones included.
    pub versions: usize,
    /// Versions loaded that no name names any more, kept while in use.
    pub retired: usize,
    /// Bytes of component files and function-table rows held.
    pub bytes: u64,
    /// Bytes of compiled code held.
    pub compiled_bytes: u64,
    /// The most names (`--max-components`).
    pub max_names: usize,
    /// The most versions kept per name (`--max-versions`).
    pub max_versions: usize,
    /// The most bytes of component files and rows (`--max-component-mib`).
    pub max_bytes: u64,
    /// The most bytes of compiled code (`--max-compiled-mib`).
    pub max_compiled_bytes: u64,
}

/// One loaded version of a component (one content hash).
pub struct Version {
    /// Its function-table row (under the name it was first loaded as).
    pub record: Arc<ComponentRecord>,
    /// Its content hash, shared.
    pub hash: Arc<str>,
    /// The executor's loaded form (`LoadedComponent`): kept here, used
    /// there.
    pub loaded: Arc<dyn Any + Send + Sync>,
    /// Bytes of its component file.
    pub size: u64,
    /// Bytes of its compiled code.
    pub compiled: u64,
    /// Live [`InUse`]s of it.
    users: AtomicUsize,
}

impl Version {
    /// A version of `record`, loaded as `loaded`, whose compiled code
    /// takes `compiled` bytes.
    pub fn new(
        record: Arc<ComponentRecord>,
        loaded: Arc<dyn Any + Send + Sync>,
        compiled: u64,
    ) -> Self {
        Version {
            hash: Arc::from(record.hash.as_str()),
            size: record.size,
            record,
            loaded,
            compiled,
            users: AtomicUsize::new(0),
        }
    }

    fn in_use(&self) -> bool {
        self.users.load(Ordering::Acquire) > 0
    }
}

/// A use of a [`Version`]: while one lives, the version stays loaded.
/// Made only under the [`Functions`] lock (so a sweep never forgets a
/// version being taken), cloned freely.
pub struct InUse(Arc<Version>);

impl InUse {
    fn new(version: &Arc<Version>) -> Self {
        version.users.fetch_add(1, Ordering::AcqRel);
        InUse(version.clone())
    }

    /// The name the version was first loaded under.
    pub fn name(&self) -> Arc<str> {
        Arc::from(self.0.record.name.as_str())
    }
}

impl Clone for InUse {
    fn clone(&self) -> Self {
        InUse::new(&self.0)
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.users.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for InUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InUse({})", self.0.hash)
    }
}

/// What a submission names, resolved.
pub struct Resolved {
    /// The component's row.
    pub record: Arc<ComponentRecord>,
    /// Its content hash (the caller's own `Arc` for [`Callee::Hash`]).
    pub hash: Arc<str>,
    /// Keeps it loaded while the task lives.
    pub pin: InUse,
}

/// One name's row of one version, with what it costs.
struct Row {
    record: Arc<ComponentRecord>,
    bytes: u64,
    /// The row of the same version this one replaced, and where it was
    /// (a deploy of the bytes of a version the name had): put back if
    /// the function table refuses the deploy. Cleared by the name's next
    /// insert.
    replaced: Option<(usize, Box<Row>)>,
}

/// A loaded version and how many rows name it.
struct Held {
    version: Arc<Version>,
    rows: usize,
}

/// Bytes a row costs the node: its strings (names, schemas, SDK) and the
/// fixed parts of its records.
pub(crate) fn row_bytes(record: &ComponentRecord) -> u64 {
    let fixed = std::mem::size_of::<ComponentRecord>() + 64;
    let strings = record.name.len() + record.hash.len() + record.sdk.len();
    let functions: usize = record
        .functions
        .iter()
        .map(|f| {
            std::mem::size_of_val(f)
                + f.name.len()
                + f.class.as_ref().map_or(0, String::len)
                + f.params
                    .iter()
                    .map(|p| std::mem::size_of_val(p) + p.name.len() + p.schema.len())
                    .sum::<usize>()
                + f.returns
                    .iter()
                    .map(|r| std::mem::size_of::<String>() + r.len())
                    .sum::<usize>()
                + f.declared
                    .resources
                    .iter()
                    .map(|(n, _)| 32 + n.len())
                    .sum::<usize>()
        })
        .sum();
    u64::try_from(fixed + strings + functions).unwrap_or(u64::MAX)
}

/// The deployed components (see the module docs).
pub struct Functions {
    limits: ComponentLimits,
    by_hash: HashMap<Arc<str>, Held>,
    /// Each name's rows, oldest first, never empty.
    by_name: HashMap<String, VecDeque<Row>>,
    /// Hashes no row names, kept while in use.
    retired: Vec<Arc<str>>,
    /// Bytes of the versions' files and of the rows.
    bytes: u64,
    /// Bytes of the versions' compiled code.
    compiled: u64,
}

impl Functions {
    /// Nothing deployed, within `limits`.
    pub fn new(limits: ComponentLimits) -> Self {
        Functions {
            limits,
            by_hash: HashMap::new(),
            by_name: HashMap::new(),
            retired: Vec::new(),
            bytes: 0,
            compiled: 0,
        }
    }

    /// What is held now, and the bounds.
    pub fn usage(&self) -> ComponentUsage {
        ComponentUsage {
            names: self.by_name.len(),
            versions: self.by_hash.len(),
            retired: self.retired.len(),
            bytes: self.bytes,
            compiled_bytes: self.compiled,
            max_names: self.limits.names,
            max_versions: self.limits.versions,
            max_bytes: self.limits.bytes,
            max_compiled_bytes: self.limits.compiled,
        }
    }

    /// Checks that `record` (a new row of its name), of a version taking
    /// `size` bytes of file and `compiled` bytes of code when it is not
    /// loaded yet, fits the bounds, as [`Functions::insert`] would; changes
    /// nothing.
    ///
    /// # Errors
    /// The [`DeployLimit`] it would meet.
    pub fn check(
        &self,
        record: &ComponentRecord,
        size: u64,
        compiled: u64,
    ) -> Result<(), DeployLimit> {
        self.plan(record, size, compiled).map(|_| ())
    }

    /// Records `record` as the newest row of its name (its name now means
    /// its version), loading `fresh` as that version unless its hash is
    /// loaded already; drops the name's oldest rows past the bound whose
    /// versions nothing uses. When the name has a row of that version
    /// already, that row is replaced by this one at the end instead
    /// (nothing added, no bound met). The versions forgotten, to drop
    /// outside the lock. Call [`Functions::sweep`] first, so that retired
    /// versions nothing uses do not count.
    ///
    /// # Errors
    /// The [`DeployLimit`] it met; nothing changed then.
    pub fn insert(
        &mut self,
        record: Arc<ComponentRecord>,
        fresh: Version,
    ) -> Result<Vec<Arc<Version>>, DeployLimit> {
        if let Some(rows) = self.by_name.get_mut(&record.name) {
            for row in rows.iter_mut() {
                row.replaced = None;
            }
            if let Some(at) = rows.iter().position(|r| r.record.hash == record.hash) {
                if let Some(old) = rows.remove(at) {
                    let bytes = row_bytes(&record);
                    self.bytes = self.bytes.saturating_sub(old.bytes).saturating_add(bytes);
                    rows.push_back(Row {
                        record,
                        bytes,
                        replaced: Some((at, Box::new(old))),
                    });
                }
                return Ok(self.sweep());
            }
        }
        let plan = self.plan(&record, fresh.size, fresh.compiled)?;
        let hash = fresh.hash.clone();
        match self.by_hash.get_mut(&hash) {
            Some(held) => {
                if held.rows == 0 {
                    // Named again: no longer retired.
                    self.retired.retain(|h| *h != hash);
                }
                held.rows += 1;
            }
            None => {
                self.bytes = self.bytes.saturating_add(fresh.size);
                self.compiled = self.compiled.saturating_add(fresh.compiled);
                let version = Arc::new(fresh);
                self.by_hash.insert(hash, Held { version, rows: 1 });
            }
        }
        let bytes = row_bytes(&record);
        self.bytes = self.bytes.saturating_add(bytes);
        let rows = self.by_name.entry(record.name.clone()).or_default();
        rows.push_back(Row {
            record,
            bytes,
            replaced: None,
        });
        let mut dropped = Vec::new();
        for at in plan.evict.iter().rev() {
            if let Some(row) = rows.remove(*at) {
                dropped.push(row);
            }
        }
        for row in dropped {
            self.unname(row);
        }
        Ok(self.sweep())
    }

    /// Loads `fresh` by its hash only, for a call that names a kept
    /// version (`name@3`): the name keeps meaning its current row, and
    /// the version, named by no row, is retired from the start (forgotten
    /// by a sweep once nothing uses it). A use of it, for the caller to
    /// hold until its task or driver holds its own; a hash loaded already
    /// is used as it is.
    ///
    /// # Errors
    /// The [`DeployLimit`] of bytes or compiled code it would pass;
    /// nothing changed then.
    pub(crate) fn insert_version(&mut self, fresh: Version) -> Result<InUse, DeployLimit> {
        if let Some(held) = self.by_hash.get(&fresh.hash) {
            return Ok(InUse::new(&held.version));
        }
        let name = &fresh.record.name;
        let refuse = |bound: DeployBound, limit: u64, held: u64, more: u64| DeployLimit {
            name: name.clone(),
            bound,
            limit,
            reason: format!(
                "loading version {} takes {more} more bytes, and {held} of the {limit} the \
                 node allows ({} {} MiB) are held; undeploy some first",
                fresh.hash,
                bound.flag(),
                limit >> 20
            ),
        };
        if self.bytes.saturating_add(fresh.size) > self.limits.bytes {
            let bound = DeployBound::ComponentBytes;
            return Err(refuse(bound, self.limits.bytes, self.bytes, fresh.size));
        }
        if self.compiled.saturating_add(fresh.compiled) > self.limits.compiled {
            let bound = DeployBound::CompiledBytes;
            return Err(refuse(
                bound,
                self.limits.compiled,
                self.compiled,
                fresh.compiled,
            ));
        }
        self.bytes = self.bytes.saturating_add(fresh.size);
        self.compiled = self.compiled.saturating_add(fresh.compiled);
        let hash = fresh.hash.clone();
        let version = Arc::new(fresh);
        let used = InUse::new(&version);
        self.by_hash.insert(hash.clone(), Held { version, rows: 0 });
        self.retired.push(hash);
        Ok(used)
    }

    /// Forgets the name `name` (an undeploy) with all its rows: calls by
    /// that name fail with not-found from now on; its versions stay while
    /// tasks or actors use them. The name's current row, if any, and the
    /// versions forgotten.
    pub fn remove_named(
        &mut self,
        name: &str,
    ) -> (Option<Arc<ComponentRecord>>, Vec<Arc<Version>>) {
        let Some(rows) = self.by_name.remove(name) else {
            return (None, Vec::new());
        };
        let current = rows.back().map(|r| r.record.clone());
        for row in rows {
            self.unname(row);
        }
        (current, self.sweep())
    }

    /// Takes back row `record` (a deploy the function table then refused):
    /// its name means its previous row again, or nothing; a row it
    /// replaced (of the same version) is put back where it was. The
    /// versions forgotten.
    pub(crate) fn take_back(&mut self, record: &Arc<ComponentRecord>) -> Vec<Arc<Version>> {
        let Some(rows) = self.by_name.get_mut(&record.name) else {
            return Vec::new();
        };
        let Some(at) = rows.iter().position(|r| Arc::ptr_eq(&r.record, record)) else {
            return Vec::new();
        };
        let row = rows.remove(at);
        if let Some(Row {
            bytes,
            replaced: Some((was_at, old)),
            ..
        }) = row
        {
            self.bytes = self.bytes.saturating_sub(bytes).saturating_add(old.bytes);
            rows.insert(was_at.min(rows.len()), *old);
            return self.sweep();
        }
        if rows.is_empty() {
            self.by_name.remove(&record.name);
        }
        if let Some(row) = row {
            self.unname(row);
        }
        self.sweep()
    }

    /// Forgets the retired versions nothing uses any more; they are
    /// returned, to drop outside the lock.
    pub fn sweep(&mut self) -> Vec<Arc<Version>> {
        if self.retired.is_empty() {
            return Vec::new();
        }
        let mut forgotten = Vec::new();
        let by_hash = &mut self.by_hash;
        self.retired.retain(|hash| {
            let idle = by_hash
                .get(hash)
                .is_none_or(|h| h.rows == 0 && !h.version.in_use());
            if idle {
                if let Some(held) = by_hash.remove(hash) {
                    forgotten.push(held.version);
                }
            }
            !idle
        });
        for v in &forgotten {
            self.bytes = self.bytes.saturating_sub(v.size);
            self.compiled = self.compiled.saturating_sub(v.compiled);
        }
        forgotten
    }

    /// Whether some retired version waits to be forgotten.
    pub(crate) fn has_retired(&self) -> bool {
        !self.retired.is_empty()
    }

    /// The current row of every name (in no order).
    pub fn named(&self) -> impl Iterator<Item = &Arc<ComponentRecord>> {
        self.by_name
            .values()
            .filter_map(|rows| rows.back().map(|r| &r.record))
    }

    /// The current row of `name`.
    pub fn current(&self, name: &str) -> Option<&Arc<ComponentRecord>> {
        self.by_name
            .get(name)
            .and_then(VecDeque::back)
            .map(|r| &r.record)
    }

    /// The version with content hash `hash`.
    pub(crate) fn by_hash(&self, hash: &str) -> Option<&Arc<Version>> {
        self.by_hash.get(hash).map(|h| &h.version)
    }

    /// A use of the version with content hash `hash`, if loaded.
    pub fn pin(&self, hash: &str) -> Option<InUse> {
        self.by_hash(hash).map(InUse::new)
    }

    /// The component `callee` names, with its content hash and a use of
    /// it; `None` when none is deployed so.
    pub fn resolve(&self, callee: Callee<'_>) -> Option<Resolved> {
        match callee {
            Callee::Hash(hash) => self.by_hash(hash).map(|v| Resolved {
                record: v.record.clone(),
                hash: hash.clone(),
                pin: InUse::new(v),
            }),
            Callee::Named(name) => {
                let record = self.current(name)?.clone();
                let version = self.by_hash(&record.hash)?;
                Some(Resolved {
                    hash: version.hash.clone(),
                    pin: InUse::new(version),
                    record,
                })
            }
        }
    }

    /// Takes `row` out of its version's count; a version no row names is
    /// retired.
    fn unname(&mut self, row: Row) {
        self.bytes = self.bytes.saturating_sub(row.bytes);
        if let Some(held) = self.by_hash.get_mut(row.record.hash.as_str()) {
            held.rows = held.rows.saturating_sub(1);
            if held.rows == 0 {
                self.retired.push(held.version.hash.clone());
            }
        }
    }

    /// What [`Functions::insert`] of `record` would drop (the positions of
    /// the name's rows, oldest first), or the bound it meets.
    fn plan(
        &self,
        record: &ComponentRecord,
        size: u64,
        compiled: u64,
    ) -> Result<Plan, DeployLimit> {
        let refuse = |bound: DeployBound, limit: u64, reason: String| DeployLimit {
            name: record.name.clone(),
            bound,
            limit,
            reason,
        };
        let limits = self.limits;
        let rows = self.by_name.get(&record.name);
        // A version the name has a row of: that row moves, nothing is added.
        if rows.is_some_and(|rows| rows.iter().any(|r| r.record.hash == record.hash)) {
            return Ok(Plan { evict: Vec::new() });
        }
        if rows.is_none() && self.by_name.len() >= limits.names {
            return Err(refuse(
                DeployBound::Names,
                limits.names as u64,
                format!(
                    "the node holds {} component names, the most it allows \
                     ({} {}); undeploy one first",
                    self.by_name.len(),
                    DeployBound::Names.flag(),
                    limits.names
                ),
            ));
        }
        // The rows to drop: the oldest whose versions nothing uses, until
        // the new row fits.
        let mut evict = Vec::new();
        let count = rows.map_or(0, VecDeque::len) + 1;
        if let Some(rows) = rows {
            for (at, row) in rows.iter().enumerate() {
                if count - evict.len() <= limits.versions {
                    break;
                }
                let used = self.by_hash(&row.record.hash).is_some_and(|v| v.in_use());
                if !used {
                    evict.push(at);
                }
            }
        }
        if count - evict.len() > limits.versions {
            return Err(refuse(
                DeployBound::Versions,
                limits.versions as u64,
                format!(
                    "`{}` has {} versions loaded and tasks or actors use every one, \
                     the most a name keeps ({} {}); wait for them to end, or undeploy it",
                    record.name,
                    count - 1,
                    DeployBound::Versions.flag(),
                    limits.versions
                ),
            ));
        }
        // What the drops give back: their rows, and the versions no other
        // row names (and nothing uses: they were chosen so).
        let mut freed = 0u64;
        let mut freed_compiled = 0u64;
        let mut gone: HashMap<&str, usize> = HashMap::new();
        if let Some(rows) = rows {
            for at in &evict {
                if let Some(row) = rows.get(*at) {
                    freed = freed.saturating_add(row.bytes);
                    *gone.entry(row.record.hash.as_str()).or_default() += 1;
                }
            }
        }
        for (hash, n) in gone {
            if let Some(held) = self.by_hash.get(hash) {
                if held.rows <= n && hash != record.hash {
                    freed = freed.saturating_add(held.version.size);
                    freed_compiled = freed_compiled.saturating_add(held.version.compiled);
                }
            }
        }
        let (size, compiled) = match self.by_hash.contains_key(record.hash.as_str()) {
            true => (0, 0),
            false => (size, compiled),
        };
        let bytes = self
            .bytes
            .saturating_sub(freed)
            .saturating_add(size)
            .saturating_add(row_bytes(record));
        if bytes > limits.bytes {
            return Err(refuse(
                DeployBound::ComponentBytes,
                limits.bytes,
                format!(
                    "the node's components take {} of the {} bytes it allows ({} {} MiB), \
                     and this one needs {} more; undeploy some first",
                    self.bytes,
                    limits.bytes,
                    DeployBound::ComponentBytes.flag(),
                    limits.bytes >> 20,
                    bytes.saturating_sub(self.bytes.saturating_sub(freed))
                ),
            ));
        }
        let compiled_after = self
            .compiled
            .saturating_sub(freed_compiled)
            .saturating_add(compiled);
        if compiled_after > limits.compiled {
            return Err(refuse(
                DeployBound::CompiledBytes,
                limits.compiled,
                format!(
                    "the node's compiled code takes {} of the {} bytes it allows ({} {} MiB), \
                     and this component's takes {compiled}; undeploy some first",
                    self.compiled,
                    limits.compiled,
                    DeployBound::CompiledBytes.flag(),
                    limits.compiled >> 20
                ),
            ));
        }
        Ok(Plan { evict })
    }
}

/// What an insert drops.
struct Plan {
    /// Positions of the name's rows to drop, ascending.
    evict: Vec<usize>,
}

#[cfg(test)]
mod tests;
