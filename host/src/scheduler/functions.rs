//! [`Functions`]: the components this node can run, as the scheduler sees
//! them: each one's function-table record by content hash (what a task
//! spec names) and by the name it was deployed under (what a qualified
//! `component/function` call names).

use std::collections::HashMap;
use std::sync::Arc;

use wray_control_plane::ComponentRecord;

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

/// The deployed components (see the module docs). A redeploy under a
/// name replaces the name's row and keeps the old hash's row: tasks of
/// the old version may still be queued.
#[derive(Default)]
pub(crate) struct Functions {
    by_hash: HashMap<String, Arc<ComponentRecord>>,
    by_name: HashMap<String, Arc<ComponentRecord>>,
}

impl Functions {
    /// Records `record` as deployed (its name now means its hash).
    pub(crate) fn insert(&mut self, record: Arc<ComponentRecord>) {
        self.by_name.insert(record.name.clone(), record.clone());
        self.by_hash.insert(record.hash.clone(), record);
    }

    /// Records `record` by its hash only: a version a call names
    /// (`name@3`) runs, and the name keeps meaning what it meant. A hash
    /// already known keeps its row.
    pub(crate) fn insert_version(&mut self, record: Arc<ComponentRecord>) {
        self.by_hash.entry(record.hash.clone()).or_insert(record);
    }

    /// Forgets the name `name` (an undeploy): calls by that name fail
    /// with not-found from now on; its hash's row stays, so that tasks
    /// already submitted run on the version they named. The component
    /// removed, if any.
    pub(crate) fn remove_named(&mut self, name: &str) -> Option<Arc<ComponentRecord>> {
        self.by_name.remove(name)
    }

    /// Forgets `record`'s name, as [`Functions::remove_named`] does, only
    /// if the name's row is `record` itself (`Arc::ptr_eq`): a name
    /// inserted again since `record` was read is kept. Whether it forgot.
    pub(crate) fn remove_if(&mut self, record: &Arc<ComponentRecord>) -> bool {
        let same = self
            .by_name
            .get(&record.name)
            .is_some_and(|r| Arc::ptr_eq(r, record));
        if same {
            self.by_name.remove(&record.name);
        }
        same
    }

    /// The row of every name (in no order).
    pub(crate) fn named(&self) -> impl Iterator<Item = &Arc<ComponentRecord>> {
        self.by_name.values()
    }

    /// The component with content hash `hash`.
    pub(crate) fn by_hash(&self, hash: &str) -> Option<&Arc<ComponentRecord>> {
        self.by_hash.get(hash)
    }

    /// The component `callee` names, with its content hash (the caller's
    /// own `Arc` for [`Callee::Hash`]); `None` when none is deployed so.
    pub(crate) fn resolve(&self, callee: Callee<'_>) -> Option<(Arc<ComponentRecord>, Arc<str>)> {
        match callee {
            Callee::Hash(hash) => self.by_hash(hash).map(|r| (r.clone(), hash.clone())),
            Callee::Named(name) => self
                .by_name
                .get(name)
                .map(|r| (r.clone(), Arc::from(r.hash.as_str()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, hash: &str) -> Arc<ComponentRecord> {
        Arc::new(ComponentRecord {
            name: name.into(),
            hash: hash.into(),
            size: 0,
            has_main: false,
            sdk: String::new(),
            functions: Vec::new(),
        })
    }

    #[test]
    fn a_name_resolves_to_its_latest_deploy_and_old_hashes_stay() {
        let mut f = Functions::default();
        f.insert(record("math", "h1"));
        f.insert(record("math", "h2"));
        let (r, hash) = f.resolve(Callee::Named("math")).unwrap();
        assert_eq!((&*r.hash, &*hash), ("h2", "h2"));
        assert!(f.by_hash("h1").is_some(), "queued tasks of h1 still run");
        assert!(
            f.resolve(Callee::Named("h2")).is_none(),
            "a hash is not a name"
        );
        assert!(f.resolve(Callee::Named("other")).is_none());
        let own: Arc<str> = Arc::from("h1");
        assert_eq!(f.resolve(Callee::Hash(&own)).unwrap().0.name, "math");
    }

    #[test]
    fn a_version_named_by_a_call_is_known_by_hash_only() {
        let mut f = Functions::default();
        f.insert(record("math", "h2"));
        f.insert_version(record("math", "h1"));
        assert_eq!(f.resolve(Callee::Named("math")).unwrap().1.as_ref(), "h2");
        let old: Arc<str> = Arc::from("h1");
        assert_eq!(f.resolve(Callee::Hash(&old)).unwrap().0.name, "math");
    }

    #[test]
    fn a_name_is_removed_only_while_it_means_the_row_read() {
        let mut f = Functions::default();
        let seen = record("math", "h1");
        f.insert(seen.clone());
        // Deployed again (same bytes, a row of its own) after `seen` was read.
        f.insert(record("math", "h1"));
        assert!(!f.remove_if(&seen));
        assert!(f.resolve(Callee::Named("math")).is_some());
        let now = f.named().next().unwrap().clone();
        assert!(f.remove_if(&now));
        assert!(f.resolve(Callee::Named("math")).is_none());
        assert!(f.by_hash("h1").is_some(), "queued tasks of h1 still run");
        assert!(!f.remove_if(&now), "already gone");
    }
}
