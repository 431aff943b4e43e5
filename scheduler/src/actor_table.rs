//! The node's actor table: live actors by id, and the most recently dead
//! ones (so that a call to a dead actor says `actor-died` and why), bounded.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::{ActorId, JobId};

use crate::id_map::IdMap;
use crate::task::Actor;

/// Dead actors remembered (the oldest are forgotten first; a call to a
/// forgotten one reads as a call to an unknown actor).
pub const MAX_DEAD_ACTORS: usize = 10_000;

/// Live stubs of actors living on other nodes (see `actor::Home`) a node
/// keeps at once; past it, a new one is refused (a creation fails with an
/// error, a handle arriving from another node is not followed).
pub const MAX_STUBS: usize = 65_536;

#[derive(Default)]
struct Inner {
    actors: IdMap<ActorId, Arc<Actor>>,
    /// Live actors whose instance is here.
    live: usize,
    /// Live stubs.
    stubs: usize,
    dead: VecDeque<ActorId>,
}

/// Live and recently dead actors of a node.
#[derive(Default)]
pub struct ActorTable {
    inner: Mutex<Inner>,
}

impl ActorTable {
    /// Adds a new (live) actor.
    pub fn insert(&self, actor: Arc<Actor>) {
        let mut inner = self.inner.lock();
        let stub = actor.home.is_some();
        if inner.actors.insert(actor.id, actor).is_none() {
            if stub {
                inner.stubs += 1;
            } else {
                inner.live += 1;
            }
        }
    }

    /// The live actors whose instance is here (not stubs).
    pub fn instances(&self) -> Vec<Arc<Actor>> {
        let all: Vec<Arc<Actor>> = self.inner.lock().actors.values().cloned().collect();
        // Each actor's own lock is taken outside the table's.
        all.into_iter()
            .filter(|a| a.home.is_none() && a.dead().is_none())
            .collect()
    }

    /// Actor `id`, live or recently dead.
    pub fn get(&self, id: &ActorId) -> Option<Arc<Actor>> {
        self.inner.lock().actors.get(id).cloned()
    }

    /// Records that actor `id` died (once per actor: `Actor::die` calls it
    /// the first time only).
    pub fn died(&self, id: ActorId) {
        let mut inner = self.inner.lock();
        let Some(stub) = inner.actors.get(&id).map(|a| a.home.is_some()) else {
            return;
        };
        if stub {
            inner.stubs = inner.stubs.saturating_sub(1);
        } else {
            inner.live = inner.live.saturating_sub(1);
        }
        inner.dead.push_back(id);
        while inner.dead.len() > MAX_DEAD_ACTORS {
            if let Some(old) = inner.dead.pop_front() {
                inner.actors.remove(&old);
            }
        }
    }

    /// Forgets actor `id` if it is a dead stub (its handles here went,
    /// not the actor): a handle arriving again is followed afresh. Whether
    /// it was one.
    pub fn forget_dead_stub(&self, id: &ActorId) -> bool {
        let mut inner = self.inner.lock();
        let dead_stub = inner
            .actors
            .get(id)
            .is_some_and(|a| a.home.is_some() && a.dead().is_some());
        if dead_stub {
            inner.actors.remove(id);
            inner.dead.retain(|d| d != id);
        }
        dead_stub
    }

    /// Actors alive now whose instance is here.
    pub fn live(&self) -> usize {
        self.inner.lock().live
    }

    /// Live stubs of actors living on other nodes.
    pub fn stubs(&self) -> usize {
        self.inner.lock().stubs
    }

    /// The actors of job `job`, live or dead.
    pub fn of_job(&self, job: JobId) -> Vec<Arc<Actor>> {
        let inner = self.inner.lock();
        inner
            .actors
            .values()
            .filter(|a| a.id.job() == job)
            .cloned()
            .collect()
    }

    /// Up to `limit` actors, live or recently dead, by id after `after`,
    /// of job `job` only when given. Costs a sort of the table's ids
    /// (bounded: the live actors and stubs, and [`MAX_DEAD_ACTORS`]).
    pub fn page(
        &self,
        after: Option<ActorId>,
        limit: usize,
        job: Option<JobId>,
    ) -> Vec<Arc<Actor>> {
        let mut ids: Vec<ActorId> = {
            let inner = self.inner.lock();
            inner
                .actors
                .keys()
                .filter(|id| job.is_none_or(|j| id.job() == j) && after.is_none_or(|a| **id > a))
                .copied()
                .collect()
        };
        ids.sort_unstable();
        ids.truncate(limit);
        let inner = self.inner.lock();
        ids.iter()
            .filter_map(|id| inner.actors.get(id).cloned())
            .collect()
    }

    /// Every actor, the table emptied (the node is shutting down).
    pub fn drain(&self) -> Vec<Arc<Actor>> {
        let mut inner = self.inner.lock();
        inner.live = 0;
        inner.stubs = 0;
        inner.dead.clear();
        inner.actors.drain().map(|(_, a)| a).collect()
    }
}
