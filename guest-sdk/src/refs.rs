//! Reference counting on the guest side.
//!
//! The host counts, per instance, which objects the instance holds (see the
//! WIT `objects` interface). This module keeps the guest's own count of live
//! [`ObjectRef`](crate::ObjectRef)s per id, so the host hears only the last
//! drop (`objects.release`), not every clone.
//!
//! Encoding a value collects the refs inside it (they travel in the
//! payload's `refs`) and keeps them alive until the host has taken them
//! over: until the host call that sends the value returns, or, for a value
//! returned from an export, until the next export call starts.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::ids::ObjectId;

/// The guest's map of ids: foldhash's fixed-seed hasher rather than the
/// standard library's SipHash-1-3, which took most of a `wait` over a
/// thousand refs (each ref cloned into the answer and the old list
/// dropped: a count up and one down per ref; perf of `single client wait
/// 1k refs`). A fixed seed is enough: the map is this instance's own, and
/// only the host mints ids.
type IdMap<V> = HashMap<ObjectId, V, foldhash::fast::FixedState>;

thread_local! {
    /// Live `ObjectRef`s per id in this instance.
    static COUNTS: RefCell<IdMap<u32>> = RefCell::new(IdMap::default());
    /// Ids collected while encoding a value, when collecting.
    static COLLECTING: RefCell<Option<Vec<ObjectId>>> = const { RefCell::new(None) };
    /// Ids kept alive until the host has taken over the value holding them.
    static DEFERRED: RefCell<Vec<ObjectId>> = const { RefCell::new(Vec::new()) };
}

/// One more live ref to `id`.
pub(crate) fn acquire(id: ObjectId) {
    COUNTS.with(|c| *c.borrow_mut().entry(id).or_insert(0) += 1);
}

/// One live ref to `id` fewer; the last one tells the host.
pub(crate) fn release(id: ObjectId) {
    let last = COUNTS.with(|c| {
        let mut counts = c.borrow_mut();
        match counts.get_mut(&id) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                counts.remove(&id);
                true
            }
            None => false,
        }
    });
    if last {
        host_release(&[id]);
    }
}

#[cfg(target_arch = "wasm32")]
fn host_release(ids: &[ObjectId]) {
    let ids: Vec<crate::bindings::types::ObjectId> = ids.iter().map(|id| (*id).into()).collect();
    crate::bindings::objects::release(&ids);
}

// Natively (unit tests of the SDK) there is no host to tell.
#[cfg(not(target_arch = "wasm32"))]
fn host_release(_ids: &[ObjectId]) {}

/// Notes `id` as serialized inside the value being encoded, if any.
pub(crate) fn note_serialized(id: ObjectId) {
    COLLECTING.with(|c| {
        if let Some(ids) = c.borrow_mut().as_mut() {
            ids.push(id);
        }
    });
}

/// Runs `encode`, returning what it returned and the ids of the refs it
/// serialized. The refs stay alive until [`flush_deferred`].
pub(crate) fn collecting<R>(encode: impl FnOnce() -> R) -> (R, Vec<ObjectId>) {
    let outer = COLLECTING.with(|c| c.borrow_mut().replace(Vec::new()));
    let result = encode();
    let ids = COLLECTING
        .with(|c| std::mem::replace(&mut *c.borrow_mut(), outer))
        .unwrap_or_default();
    defer(&ids);
    (result, ids)
}

/// Keeps one ref to each of `ids` alive until [`flush_deferred`].
pub(crate) fn defer(ids: &[ObjectId]) {
    for id in ids {
        acquire(*id);
    }
    DEFERRED.with(|d| d.borrow_mut().extend_from_slice(ids));
}

/// Drops the refs kept by [`defer`]: the host holds what it needs now.
pub(crate) fn flush_deferred() {
    let ids = DEFERRED.with(|d| std::mem::take(&mut *d.borrow_mut()));
    for id in ids {
        release(id);
    }
}

/// Live refs to `id` (for tests).
#[cfg(test)]
pub(crate) fn count(id: ObjectId) -> u32 {
    COUNTS.with(|c| c.borrow().get(&id).copied().unwrap_or(0))
}
