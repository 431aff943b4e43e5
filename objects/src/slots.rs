//! The store's table: each object id's slot (pending with its waiters,
//! or sealed), its holders, and what freeing one frees in turn; the
//! objects freed are dropped by the caller once the table's locks are
//! released ([`Freed`]).
//!
//! The table is split into [`SHARDS`] shards by a hash of the id, each
//! behind a lock of its own, so that tasks putting and releasing at once on
//! many cores take different locks (with one lock for the whole table,
//! `multi client put calls` ran 3.6x slower on 16 cores than on 2: issue
//! 40). An operation on one id locks its shard only; freeing an object
//! releases the objects its value holds one shard at a time; what must see
//! the whole table at one instant (a job's end, a `wait`'s pass over many
//! ids) locks every shard, in index order ([`Shards::lock_all`]), which no
//! other path does while holding a shard, so no two paths wait on each
//! other.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use wray_control_plane::ObjectId;

use super::{Budget, Charge, Object, Waiter, OBJECT_OVERHEAD};
use crate::id_map::IdMap;

/// Shards of the table: a power of two, several times the cores of the
/// machines measured (16), so that two threads rarely meet on one.
pub(super) const SHARDS: usize = 64;

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

/// One shard of the table.
pub(super) struct Slots {
    pub(super) map: IdMap<ObjectId, Slot>,
    /// [`OBJECT_OVERHEAD`] per object in `map`, taken from the inline
    /// budget.
    metadata: Charge,
}

/// A shard's lock, alone on its cache lines (two shards' locks side by
/// side would bounce one line between the cores taking them).
#[repr(align(128))]
struct Shard(Mutex<Slots>);

/// The whole table: [`SHARDS`] shards, and the counters over all of them.
pub(super) struct Shards {
    shards: Box<[Shard]>,
    /// Picks an id's shard (seeded at random per store, as the maps are).
    hasher: foldhash::fast::RandomState,
    /// Bytes held by sealed values now, and the most ever held.
    bytes: AtomicUsize,
    peak_bytes: AtomicUsize,
    /// Releases of an object nobody held (a host bug: counted, logged).
    unmatched_releases: AtomicU64,
}

impl Shards {
    /// An empty table whose metadata is charged to `budget`.
    pub(super) fn new(budget: &Arc<Budget>) -> Self {
        Shards {
            shards: (0..SHARDS)
                .map(|_| {
                    Shard(Mutex::new(Slots {
                        map: IdMap::default(),
                        metadata: budget.nothing(),
                    }))
                })
                .collect(),
            hasher: foldhash::fast::RandomState::default(),
            bytes: AtomicUsize::new(0),
            peak_bytes: AtomicUsize::new(0),
            unmatched_releases: AtomicU64::new(0),
        }
    }

    fn index(&self, id: &ObjectId) -> usize {
        // The hash's high bits: the best mixed of foldhash's output.
        (self.hasher.hash_one(id) >> (64 - SHARDS.trailing_zeros())) as usize % SHARDS
    }

    /// The shard of `id`, locked.
    pub(super) fn lock(&self, id: &ObjectId) -> MutexGuard<'_, Slots> {
        self.shards[self.index(id)].0.lock()
    }

    /// Every shard, locked in index order (the one order any path takes
    /// more than one shard in).
    pub(super) fn lock_all(&self) -> AllLocked<'_> {
        AllLocked {
            shards: self,
            guards: self.shards.iter().map(|s| s.0.lock()).collect(),
        }
    }

    /// Runs `f` on each shard in turn, each locked while `f` sees it.
    pub(super) fn each(&self, mut f: impl FnMut(&mut Slots)) {
        for shard in self.shards.iter() {
            f(&mut shard.0.lock());
        }
    }

    /// Counts `size` bytes of a newly sealed value.
    pub(super) fn add_bytes(&self, size: usize) {
        let now = self
            .bytes
            .fetch_add(size, Ordering::Relaxed)
            .saturating_add(size);
        self.peak_bytes.fetch_max(now, Ordering::Relaxed);
    }

    /// Bytes of sealed values now, and the most ever held.
    pub(super) fn bytes(&self) -> (usize, usize) {
        (
            self.bytes.load(Ordering::Relaxed),
            self.peak_bytes.load(Ordering::Relaxed),
        )
    }

    /// Releases nobody held, so far.
    pub(super) fn unmatched_releases(&self) -> u64 {
        self.unmatched_releases.load(Ordering::Relaxed)
    }

    /// Takes one holder from `id` in its shard `slots`; when it is sealed
    /// and now unheld, removes it and returns its slot (to free).
    pub(super) fn drop_holder(&self, slots: &mut Slots, id: &ObjectId) -> Option<Slot> {
        let slot = slots.map.get_mut(id)?;
        if slot.holders == 0 {
            self.unmatched_releases.fetch_add(1, Ordering::Relaxed);
            tracing::error!("object {id} released more often than it was held (a host bug)");
            return None;
        }
        slot.holders -= 1;
        if slot.holders == 0 && matches!(slot.state, State::Sealed(_)) {
            return slots.remove(id);
        }
        None
    }

    /// Frees `slot` (already removed from the table as `id`) into `freed`,
    /// and in turn whatever only it held, each found through `table`.
    pub(super) fn free(&self, table: &mut impl Table, id: ObjectId, slot: Slot, freed: &mut Freed) {
        let mut work = vec![(id, slot)];
        while let Some((id, slot)) = work.pop() {
            if slot.watched {
                freed.watched.push(id);
            }
            let State::Sealed(object) = slot.state else {
                continue;
            };
            let size = object.size();
            // Each value's size was added when it was sealed.
            let _ = self
                .bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                    Some(b.saturating_sub(size))
                });
            if let Object::Value { refs, .. } = &*object {
                for inner in refs.iter() {
                    if let Some(unheld) = table.with(inner, |slots| self.drop_holder(slots, inner))
                    {
                        work.push((*inner, unheld));
                    }
                }
            }
            freed.push(object);
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

    /// Removes `id`, giving its metadata's charge back.
    pub(super) fn remove(&mut self, id: &ObjectId) -> Option<Slot> {
        let slot = self.map.remove(id)?;
        self.metadata.shrink(OBJECT_OVERHEAD);
        Some(slot)
    }
}

/// Where a free finds the shard of each object it frees in turn.
pub(super) trait Table {
    /// Runs `f` on the shard of `id`.
    fn with<R>(&mut self, id: &ObjectId, f: impl FnOnce(&mut Slots) -> R) -> R;
}

/// Each shard locked as it is needed, one at a time.
pub(super) struct Locking<'a>(pub(super) &'a Shards);

impl Table for Locking<'_> {
    fn with<R>(&mut self, id: &ObjectId, f: impl FnOnce(&mut Slots) -> R) -> R {
        f(&mut self.0.lock(id))
    }
}

/// Every shard, locked ([`Shards::lock_all`]).
pub(super) struct AllLocked<'a> {
    shards: &'a Shards,
    guards: Vec<MutexGuard<'a, Slots>>,
}

impl AllLocked<'_> {
    /// The shard of `id`.
    pub(super) fn shard(&self, id: &ObjectId) -> &Slots {
        &self.guards[self.shards.index(id)]
    }

    /// Every shard.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Slots> {
        self.guards.iter().map(|g| &**g)
    }
}

impl Table for AllLocked<'_> {
    fn with<R>(&mut self, id: &ObjectId, f: impl FnOnce(&mut Slots) -> R) -> R {
        let i = self.shards.index(id);
        f(&mut self.guards[i])
    }
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
