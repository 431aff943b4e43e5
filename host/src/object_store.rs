//! The node's object store: immutable objects by [`ObjectId`], with
//! readiness notification.
//!
//! This is the in-memory store of a single node. An object is created
//! *pending* when the task that will produce it is submitted, and *sealed*
//! once (with a value or an error); sealing wakes everything subscribed to it
//! (tasks waiting for their arguments, guests blocked in `get`/`wait`).
//! Objects are never changed after sealing. Nothing is freed yet: reference
//! counting and the shared-memory store replace this module later.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::ObjectId;

use crate::error::TaskError;

/// How an object's bytes are encoded (the WIT `codec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// rkyv archive.
    Rkyv,
    /// JSON text.
    Json,
    /// Uninterpreted bytes.
    Raw,
}

/// A sealed object: a value or the error of the task that should have made
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// An encoded value.
    Value {
        /// Encoding of `data`.
        codec: Codec,
        /// The bytes.
        data: Arc<[u8]>,
    },
    /// The producing task failed.
    Error(TaskError),
}

impl Object {
    /// Size of the value in bytes (0 for errors).
    pub fn size(&self) -> usize {
        match self {
            Object::Value { data, .. } => data.len(),
            Object::Error(_) => 0,
        }
    }
}

/// Called once when a subscribed object is sealed.
pub type Waiter = Box<dyn FnOnce() + Send>;

enum Slot {
    Pending(Vec<Waiter>),
    Sealed(Arc<Object>),
}

/// What [`ObjectStore::subscribe`] found.
pub enum Subscription {
    /// The object is sealed; the waiter was dropped without being called.
    Ready(Arc<Object>),
    /// The object is pending; the waiter will be called when it is sealed.
    Pending,
    /// No such object exists or is expected.
    Unknown,
}

/// The in-memory object store of one node.
#[derive(Default)]
pub struct ObjectStore {
    slots: Mutex<HashMap<ObjectId, Slot>>,
}

impl ObjectStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares that `id` will be sealed later (by a submitted task).
    pub fn expect(&self, id: ObjectId) {
        self.slots
            .lock()
            .entry(id)
            .or_insert_with(|| Slot::Pending(Vec::new()));
    }

    /// Seals `id` with `object`, waking its waiters. Sealing an already
    /// sealed object keeps the first value (objects are immutable) and
    /// returns false.
    pub fn seal(&self, id: ObjectId, object: Object) -> bool {
        let waiters = {
            let mut slots = self.slots.lock();
            let slot = slots.entry(id).or_insert_with(|| Slot::Pending(Vec::new()));
            match slot {
                Slot::Sealed(_) => return false,
                Slot::Pending(waiters) => {
                    let waiters = std::mem::take(waiters);
                    *slot = Slot::Sealed(Arc::new(object));
                    waiters
                }
            }
        };
        for waiter in waiters {
            waiter();
        }
        true
    }

    /// The sealed object `id`, if it is sealed.
    pub fn get(&self, id: &ObjectId) -> Option<Arc<Object>> {
        match self.slots.lock().get(id) {
            Some(Slot::Sealed(object)) => Some(object.clone()),
            _ => None,
        }
    }

    /// Whether `id` is sealed or expected.
    pub fn exists(&self, id: &ObjectId) -> bool {
        self.slots.lock().contains_key(id)
    }

    /// Registers `waiter` to run when `id` is sealed, unless it already is.
    pub fn subscribe(&self, id: &ObjectId, waiter: Waiter) -> Subscription {
        match self.slots.lock().get_mut(id) {
            Some(Slot::Sealed(object)) => Subscription::Ready(object.clone()),
            Some(Slot::Pending(waiters)) => {
                waiters.push(waiter);
                Subscription::Pending
            }
            None => Subscription::Unknown,
        }
    }

    /// Number of objects (pending and sealed) and bytes held by sealed ones.
    pub fn stats(&self) -> (usize, usize) {
        let slots = self.slots.lock();
        let bytes = slots
            .values()
            .map(|s| match s {
                Slot::Sealed(o) => o.size(),
                Slot::Pending(_) => 0,
            })
            .sum();
        (slots.len(), bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use wray_control_plane::TaskId;

    fn value(b: &[u8]) -> Object {
        Object::Value {
            codec: Codec::Raw,
            data: Arc::from(b),
        }
    }

    #[test]
    fn seal_wakes_waiters_once_and_is_immutable() {
        let store = ObjectStore::new();
        let id = TaskId::driver(0).return_object(0);
        assert!(matches!(
            store.subscribe(&id, Box::new(|| {})),
            Subscription::Unknown
        ));
        store.expect(id);
        let fired = Arc::new(AtomicUsize::new(0));
        for _ in 0..3 {
            let f = fired.clone();
            let sub = store.subscribe(
                &id,
                Box::new(move || {
                    f.fetch_add(1, Ordering::SeqCst);
                }),
            );
            assert!(matches!(sub, Subscription::Pending));
        }
        assert!(store.get(&id).is_none());
        assert!(store.seal(id, value(b"one")));
        assert_eq!(fired.load(Ordering::SeqCst), 3);
        assert!(!store.seal(id, value(b"two")));
        assert_eq!(*store.get(&id).unwrap(), value(b"one"));
        assert!(matches!(
            store.subscribe(&id, Box::new(|| {})),
            Subscription::Ready(_)
        ));
        assert_eq!(store.stats(), (1, 3));
    }
}
