//! [`Holds`]: the objects one holder keeps alive (an instance, a session):
//! each id at most once, however many refs the holder keeps to it, and at
//! most [`MAX_HOLDS_PER_INSTANCE`] of them. The store counts one
//! reference per holder; dropping the holds gives them back.

use wray_control_plane::ObjectId;

use super::ObjectStore;
use crate::bounds::MAX_HOLDS_PER_INSTANCE;
use crate::id_map::IdSet;

/// The holder holds [`MAX_HOLDS_PER_INSTANCE`] ids already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the task holds {MAX_HOLDS_PER_INSTANCE} objects, the most one instance may hold; \
     drop some ObjectRefs first"
)]
pub struct TooManyHolds;

/// The ids one holder holds (see the module docs).
#[derive(Default)]
pub struct Holds {
    ids: IdSet<ObjectId>,
}

impl Holds {
    /// Holds `id` (a no-op if already held, or if no such object exists).
    ///
    /// # Errors
    /// [`TooManyHolds`] when [`MAX_HOLDS_PER_INSTANCE`] ids are held
    /// already.
    pub fn hold(&mut self, store: &ObjectStore, id: ObjectId) -> Result<(), TooManyHolds> {
        if self.ids.len() >= MAX_HOLDS_PER_INSTANCE && !self.ids.contains(&id) {
            return Err(TooManyHolds);
        }
        // One lookup in the common case (a new id that exists).
        if self.ids.insert(id) && !store.acquire(&id) {
            self.ids.remove(&id);
        }
        Ok(())
    }

    /// Whether one more id can be held.
    ///
    /// # Errors
    /// [`TooManyHolds`] when [`MAX_HOLDS_PER_INSTANCE`] ids are held
    /// already.
    pub fn room(&self) -> Result<(), TooManyHolds> {
        if self.ids.len() >= MAX_HOLDS_PER_INSTANCE {
            return Err(TooManyHolds);
        }
        Ok(())
    }

    /// Whether `id` is held.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.ids.contains(id)
    }

    /// Drops the hold on `id`, if any.
    pub fn release(&mut self, store: &ObjectStore, id: &ObjectId) {
        if self.ids.remove(id) {
            store.release(id);
        }
    }

    /// Drops every hold.
    pub fn release_all(&mut self, store: &ObjectStore) {
        for id in self.ids.drain() {
            store.release(&id);
        }
    }

    /// Number of ids held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}
