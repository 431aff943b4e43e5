//! The store's table: each object id's slot (pending with its waiters,
//! or sealed), its holders, and what freeing one frees in turn; the
//! objects freed are dropped by the caller once the store's lock is
//! released ([`Freed`]).

use std::sync::Arc;

use super::{Charge, Object, Waiter, OBJECT_OVERHEAD};
use crate::id_map::IdMap;
use wray_control_plane::ObjectId;

pub(super) enum State {
    Pending(Vec<(u64, Waiter)>),
    Sealed(Arc<Object>),
}

pub(super) struct Slot {
    pub(super) state: State,
    /// Holders: instances, queued tasks, containing objects.
    pub(super) holders: u32,
    /// Whether the free hook hears when it is freed.
    pub(super) watched: bool,
    /// When the store took it in, in nanoseconds since the Unix epoch
    /// (listings show the newest first).
    pub(super) created_ns: u64,
}

impl Slot {
    pub(super) fn pending() -> Self {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Slot {
            state: State::Pending(Vec::new()),
            holders: 0,
            watched: false,
            created_ns: u64::try_from(created.as_nanos()).unwrap_or(u64::MAX),
        }
    }
}

pub(super) struct Slots {
    pub(super) map: IdMap<ObjectId, Slot>,
    /// [`OBJECT_OVERHEAD`] per object in `map`, taken from the inline
    /// budget.
    pub(super) metadata: Charge,
    /// The next subscription token.
    pub(super) next_token: u64,
    /// Bytes held by sealed values now, and the most ever held.
    pub(super) bytes: usize,
    pub(super) peak_bytes: usize,
    /// Releases of an object nobody held (a host bug: counted, logged).
    pub(super) unmatched_releases: u64,
}

/// Objects taken out of the store, dropped once its lock is released (the
/// last drop of a value unmaps and closes a spill file or gives an arena
/// block back). One in the usual case, without allocating.
#[derive(Default)]
#[must_use = "drop it after the store's lock"]
pub(super) struct Freed {
    pub(super) first: Option<Arc<Object>>,
    pub(super) rest: Vec<Arc<Object>>,
    /// Watched ids freed, for the free hook.
    pub(super) watched: Vec<ObjectId>,
}

impl Freed {
    pub(super) fn push(&mut self, object: Arc<Object>) {
        match self.first {
            None => self.first = Some(object),
            Some(_) => self.rest.push(object),
        }
    }
}

impl Slots {
    /// Registers `id` as pending unless it exists, charging its metadata.
    pub(super) fn register(&mut self, id: ObjectId) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.map.entry(id) {
            e.insert(Slot::pending());
            self.metadata.grow_past_limit(OBJECT_OVERHEAD);
        }
    }

    /// Removes `id` and, in turn, whatever only it held, into `freed`.
    pub(super) fn free(&mut self, id: ObjectId, freed: &mut Freed) {
        let mut work = vec![id];
        while let Some(id) = work.pop() {
            let Some(slot) = self.map.remove(&id) else {
                continue;
            };
            self.metadata.shrink(OBJECT_OVERHEAD);
            if slot.watched {
                freed.watched.push(id);
            }
            if let State::Sealed(object) = slot.state {
                self.bytes = self.bytes.saturating_sub(object.size());
                if let Object::Value { refs, .. } = &*object {
                    for inner in refs.iter() {
                        if self.drop_holder(inner) {
                            work.push(*inner);
                        }
                    }
                }
                freed.push(object);
            }
        }
    }

    /// Takes one holder from `id`; true when it is sealed and now unheld.
    pub(super) fn drop_holder(&mut self, id: &ObjectId) -> bool {
        let Some(slot) = self.map.get_mut(id) else {
            return false;
        };
        if slot.holders == 0 {
            self.unmatched_releases += 1;
            tracing::error!("object {id} released more often than it was held (a host bug)");
            return false;
        }
        slot.holders -= 1;
        slot.holders == 0 && matches!(slot.state, State::Sealed(_))
    }
}
