//! Reusable instances (Ray's reusable variables): a function declared
//! `#[wray::remote(reuse)]` runs on a long-lived instance of its component
//! instead of a fresh one. `init` runs once when an instance is made and
//! `reinit` before each later task on it; an instance that traps, or whose
//! hook fails, is dropped. Idle instances wait in a cache per component, at
//! most one per CPU of the node.
//!
//! What a task leaves in a reused instance (its memory, the objects it
//! holds) stays until the instance is dropped: the isolation between tasks
//! of one reusable function is what `reinit` restores, no more.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::bindings::Guest;
use crate::worker::mapping::TaskStore;

/// An idle instance.
pub(crate) struct Idle {
    pub store: TaskStore,
    pub guest: Guest,
}

/// Idle reusable instances by component hash.
#[derive(Default)]
pub(crate) struct InstanceCache {
    idle: Mutex<HashMap<String, Vec<Idle>>>,
}

impl InstanceCache {
    /// An idle instance of component `hash`, if one is cached.
    pub fn take(&self, hash: &str) -> Option<Idle> {
        self.idle.lock().get_mut(hash)?.pop()
    }

    /// Keeps `instance` for the next task, unless `limit` instances of
    /// component `hash` are idle already: then it is handed back.
    pub fn put(&self, hash: &str, instance: Idle, limit: usize) -> Option<Idle> {
        let mut idle = self.idle.lock();
        let list = idle.entry(hash.to_string()).or_default();
        if list.len() < limit {
            list.push(instance);
            None
        } else {
            Some(instance)
        }
    }

    /// Drops every idle instance (they hold the runtime: see `Node::drop`).
    pub fn clear(&self) -> Vec<Idle> {
        self.idle.lock().drain().flat_map(|(_, v)| v).collect()
    }
}
