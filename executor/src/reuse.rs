//! Reusable instances (Ray's reusable variables): a function declared
//! `#[wray::remote(reuse)]` runs on a long-lived instance of its component
//! instead of a fresh one. `init` runs once when an instance is made and
//! `reinit` before each later task on it; an instance that traps, or whose
//! hook fails, is dropped. Idle instances wait in a cache per job and
//! component, at most one per CPU of the node in all (idle instances hold
//! slots of the instance pool, which every job shares).
//!
//! What a task leaves in a reused instance (its memory, the objects it
//! holds) stays until the instance is dropped: the isolation between tasks
//! of one reusable function is what `reinit` restores, no more. A job's
//! instances are its own, and are dropped when it ends.
//!
//! The one exception is tasks submitted with `shared_reuse` (the HTTP
//! API's invocations, each a job of its own, as a serverless platform's
//! warm instances serve every request): their instances wait in a pool
//! per component shared by such tasks of every job. An instance goes back
//! to that pool only when it holds no object and maps none, and is bound
//! to each task's job when it runs one, so what passes from one job to the
//! next is only what the function keeps in its own memory, which is what
//! declaring `reuse` allows; ids it kept name objects the next job cannot
//! reach.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::JobId;

use crate::exports::Guest;
use crate::store::TaskStore;

/// An idle instance.
pub struct Idle {
    /// Its store (the job's WASI, limits and holds).
    pub store: TaskStore,
    /// Its exports, looked up once.
    pub guest: Guest,
}

/// Whose idle instances a task may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Only tasks of this job.
    Job(JobId),
    /// Tasks of any job submitted with `shared_reuse`.
    Shared,
}

/// A scope and a component's content hash: whose instances may be reused
/// by whom.
pub(crate) type ReuseKey = (Scope, Arc<str>);

/// Idle reusable instances by job and component.
#[derive(Default)]
pub struct InstanceCache {
    idle: Mutex<Idles>,
}

#[derive(Default)]
struct Idles {
    by_key: HashMap<ReuseKey, Vec<Idle>>,
    /// Idle instances of every key.
    total: usize,
}

impl InstanceCache {
    /// An idle instance for `key`, if one is cached.
    pub fn take(&self, key: &ReuseKey) -> Option<Idle> {
        let mut idle = self.idle.lock();
        let instance = idle.by_key.get_mut(key)?.pop()?;
        idle.total -= 1;
        Some(instance)
    }

    /// Keeps `instance` for the next task, unless `limit` instances (of any
    /// key) are idle already: then it is handed back.
    pub fn put(&self, key: ReuseKey, instance: Idle, limit: usize) -> Option<Idle> {
        let mut idle = self.idle.lock();
        if idle.total >= limit {
            return Some(instance);
        }
        idle.total += 1;
        idle.by_key.entry(key).or_default().push(instance);
        None
    }

    /// Takes every idle instance of job `job` out (to drop them).
    pub fn take_job(&self, job: JobId) -> Vec<Idle> {
        self.take_where(|(scope, _)| *scope == Scope::Job(job))
    }

    /// Takes every idle instance of the components with content hashes
    /// `hashes` out (to drop them: the node forgot those components).
    pub fn take_components(&self, hashes: &[Arc<str>]) -> Vec<Idle> {
        self.take_where(|(_, hash)| hashes.contains(hash))
    }

    /// Takes out the idle instances whose key `chosen` picks.
    fn take_where(&self, chosen: impl Fn(&ReuseKey) -> bool) -> Vec<Idle> {
        let mut idle = self.idle.lock();
        let keys: Vec<ReuseKey> = idle.by_key.keys().filter(|k| chosen(k)).cloned().collect();
        let taken: Vec<Idle> = keys
            .iter()
            .filter_map(|k| idle.by_key.remove(k))
            .flatten()
            .collect();
        idle.total -= taken.len();
        taken
    }

    /// Takes every idle instance out (they hold the runtime: see
    /// `Node::shutdown`).
    pub fn clear(&self) -> Vec<Idle> {
        let mut idle = self.idle.lock();
        idle.total = 0;
        idle.by_key.drain().flat_map(|(_, v)| v).collect()
    }
}
