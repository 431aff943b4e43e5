//! [`ObjectStore`]: the node's objects by id, their holders, their
//! readiness (subscribe, seal) and what a job's end frees; the rows and
//! statistics it reports. Its table of slots is `slots` (in shards, each
//! locked on its own); where a value's bytes live is [`data`](crate::data).

use std::path::PathBuf;
use std::sync::Arc;

use wray_control_plane::{JobId, ObjectId};

use crate::bounds::OBJECT_OVERHEAD;
use crate::data::{self, Budget, Data, Refs};
use crate::error::TaskError;
use crate::proto::Codec;
use crate::slots::{Freed, Locking, Shards, Slot, State, Table};
use crate::{arena, sizing, INLINE_MAX};

/// A sealed object: a value or the error of the task that should have made
/// it.
#[derive(Debug, PartialEq, Eq)]
pub enum Object {
    /// An encoded value.
    Value {
        /// Encoding of `data`.
        codec: Codec,
        /// The bytes.
        data: Data,
        /// Object refs serialized inside `data`; held while this object
        /// lives.
        refs: Refs,
    },
    /// The producing task failed.
    Error(TaskError),
}

impl Object {
    /// The empty raw value, made by the host (an actor's handle object).
    pub fn empty() -> Self {
        Object::Value {
            codec: Codec::Raw,
            data: Data::inline(&[]),
            refs: Refs::default(),
        }
    }

    /// Size of the value in bytes (0 for errors).
    pub fn size(&self) -> usize {
        match self {
            Object::Value { data, .. } => data.bytes().len(),
            Object::Error(_) => 0,
        }
    }
}

/// The table room (in objects) past which a job's end gives the memory of
/// freed objects back to the system ([`ObjectStore::give_back_memory`]):
/// 100,000 objects are 32 MB of metadata (at [`OBJECT_OVERHEAD`]).
/// Measured (`a_million_small_puts_give_their_memory_back_when_the_job_ends`
/// in `host/tests/hostile/budgets.rs`): a job of 1,000,000 small puts,
/// all freed, left the node 284 MB larger with neither step, 168 MB with
/// the table shrunk only, 154 MB with glibc's `malloc_trim` only (the
/// objects' chunks, freed, stay in the arenas of the threads that made
/// them), and 37 MB with both.
pub const GIVE_BACK_AFTER: usize = 100_000;

/// Returns the allocator's free pages to the system (glibc's
/// `malloc_trim`; other allocators return theirs themselves).
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only returns free pages.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What the store can hold besides its arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Bytes of values kept on the host's heap (small values, and large
    /// ones that fit nowhere else).
    pub inline_bytes: usize,
    /// Values spilled to files at once (each holds an open file and a
    /// mapping).
    pub spilled_objects: usize,
}

impl Default for StoreLimits {
    /// 30% of RAM on the heap, as Ray's default store; 10,000 spill files or
    /// a quarter of the open-file limit, whichever is less.
    fn default() -> Self {
        StoreLimits {
            inline_bytes: usize::try_from(sizing::default_object_store_memory())
                .unwrap_or(usize::MAX),
            spilled_objects: default_spill_limit(),
        }
    }
}

/// 10,000 spill files, or a quarter of the open-file limit when that is
/// less (each spilled object keeps its file open).
pub fn default_spill_limit() -> usize {
    let quarter = crate::bounds::open_files_limit() / 4;
    usize::try_from(quarter).unwrap_or(usize::MAX).min(10_000)
}

/// A value that fits nowhere: the inline budget, the arena and the spill
/// files are all full.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "object store full: no room for {size} bytes: {inline_used} of {inline_limit} bytes of \
     inline objects in use; shared memory: {shared}; spilling: {spill}"
)]
pub struct StoreFull {
    /// Bytes of the value.
    pub size: usize,
    /// Inline bytes in use.
    pub inline_used: usize,
    /// The inline budget.
    pub inline_limit: usize,
    /// Why the arena had no room.
    pub shared: String,
    /// Why the value could not be spilled.
    pub spill: String,
}

/// Called once when a subscribed object is sealed.
pub type Waiter = Box<dyn FnOnce() + Send>;

/// Called, outside the store's lock, with each watched object freed (see
/// [`ObjectStore::watch_free`]).
pub type FreeHook = Box<dyn Fn(ObjectId) + Send + Sync>;

/// One object, as [`ObjectStore::list`] shows it (the node lists it as
/// a `wray_api::ObjectInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRow {
    /// Its id.
    pub id: ObjectId,
    /// Size of its value in bytes (0 while pending, and for errors).
    pub size: usize,
    /// `pending`, `error`, `heap`, `shared-memory` or `spilled`.
    pub location: &'static str,
    /// How many holders keep it alive.
    pub holders: u32,
    /// When the store took it in, in nanoseconds since the Unix epoch.
    pub created_ns: u64,
}

/// Counters of an [`ObjectStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// Objects pending or sealed.
    pub objects: usize,
    /// Bytes of sealed values held now.
    pub bytes: usize,
    /// The most bytes ever held at once.
    pub peak_bytes: usize,
    /// Bytes of values on the host's heap now (the inline budget's use).
    pub inline_bytes: usize,
    /// Values spilled to files now.
    pub spilled: usize,
    /// Bytes of the shared-memory arena's file holding pages now (0
    /// without an arena; see [`arena::Arena::resident_bytes`]).
    pub arena_resident_bytes: usize,
    /// Bytes of freed arena pages given back to the kernel since the node
    /// started ([`arena::Arena::punched_bytes`]).
    pub arena_punched_bytes: u64,
    /// Releases of objects nobody held: always 0 unless the host has a bug.
    pub unmatched_releases: u64,
}

/// What [`ObjectStore::subscribe`] found.
pub enum Subscription {
    /// The object is sealed; the waiter was dropped without being called.
    Ready,
    /// The object is pending; the waiter will be called when it is sealed,
    /// unless [`ObjectStore::unsubscribe`] is given this token first.
    Pending(u64),
    /// No such object exists or is expected.
    Unknown,
}

/// The object store of one node.
pub struct ObjectStore {
    slots: Shards,
    arena: Option<Arc<arena::Arena>>,
    spill_dir: Option<PathBuf>,
    /// Bytes of values on the heap.
    inline: Arc<Budget>,
    /// Values spilled to files.
    spilled: Arc<Budget>,
    /// Told when a watched object is freed (set once).
    free_hook: std::sync::OnceLock<FreeHook>,
    /// The next subscription token.
    next_token: std::sync::atomic::AtomicU64,
}

impl Default for ObjectStore {
    fn default() -> Self {
        Self::new()
    }
}

impl ObjectStore {
    /// An empty store keeping every value on the heap, within the default
    /// [`StoreLimits`].
    pub fn new() -> Self {
        Self::with_limits(None, None, StoreLimits::default())
    }

    /// An empty store whose large values live in `arena` (if any), spilling
    /// to nameless files in `spill_dir` (if any) when it is full, and
    /// keeping within `limits`.
    pub fn with_limits(
        arena: Option<Arc<arena::Arena>>,
        spill_dir: Option<PathBuf>,
        limits: StoreLimits,
    ) -> Self {
        let inline = Budget::new(limits.inline_bytes);
        Self {
            slots: Shards::new(&inline),
            next_token: std::sync::atomic::AtomicU64::new(0),
            arena,
            spill_dir,
            inline,
            spilled: Budget::new(limits.spilled_objects),
            free_hook: std::sync::OnceLock::new(),
        }
    }

    /// Sets the hook told of each watched object freed (the scheduler's:
    /// an actor's handle object freed releases the actor). Only the first
    /// call sets it.
    pub fn set_free_hook(&self, hook: FreeHook) {
        let _ = self.free_hook.set(hook);
    }

    /// Watches `id` (pending or sealed): the free hook is told when it is
    /// freed, whyever (its last holder gone, its job ended). False when it
    /// does not exist.
    pub fn watch_free(&self, id: &ObjectId) -> bool {
        match self.slots.lock(id).map.get_mut(id) {
            Some(slot) => {
                slot.watched = true;
                true
            }
            None => false,
        }
    }

    /// Drops `freed` (after the lock), then tells the hook of the watched
    /// ids in it.
    fn dispose(&self, mut freed: Freed) {
        let watched = std::mem::take(&mut freed.watched);
        drop(freed);
        if let Some(hook) = self.free_hook.get() {
            for id in watched {
                hook(id);
            }
        }
    }

    /// The shared-memory arena, if the store has one.
    pub fn arena(&self) -> Option<&Arc<arena::Arena>> {
        self.arena.as_ref()
    }

    /// A value holding a copy of `bytes`. Small values (under
    /// [`INLINE_MAX`]) go on the heap, else to the arena, else to a spill
    /// file; large ones to the arena, else a spill file, else the heap.
    ///
    /// # Errors
    /// [`StoreFull`] naming every place's state when none has room.
    pub fn value(&self, codec: Codec, bytes: &[u8], refs: Refs) -> Result<Object, StoreFull> {
        let data = if bytes.len() < INLINE_MAX {
            self.inline(bytes)
                .or_else(|| self.shared(bytes).ok())
                .map_or_else(|| self.spill_or_heap(bytes, false), Ok)
        } else {
            match self.shared(bytes) {
                Ok(data) => Ok(data),
                Err(why) => self.spill_or_heap(bytes, true).map_err(|full| StoreFull {
                    shared: why,
                    ..full
                }),
            }
        }?;
        Ok(Object::Value { codec, data, refs })
    }

    /// The refs a guest hands over with a value, each once (a value holds
    /// an object once however often it names it), charged to the inline
    /// budget.
    ///
    /// # Errors
    /// [`StoreFull`] when the inline budget has no room for them.
    pub fn refs(&self, mut ids: Vec<ObjectId>) -> Result<Refs, StoreFull> {
        if ids.is_empty() {
            return Ok(Refs::default());
        }
        ids.sort_unstable();
        ids.dedup();
        let size = ids.len().saturating_mul(std::mem::size_of::<ObjectId>());
        match self.inline.take(size) {
            Some(charge) => Ok(Refs::charged(ids, charge)),
            None => Err(StoreFull {
                size,
                inline_used: self.inline.used(),
                inline_limit: self.inline.limit(),
                shared: "not tried (refs stay on the heap)".to_string(),
                spill: "not tried".to_string(),
            }),
        }
    }

    fn inline(&self, bytes: &[u8]) -> Option<Data> {
        let charge = self.inline.take(bytes.len())?;
        Some(Data::heap(bytes, Some(charge)))
    }

    /// `bytes` copied into a new arena block.
    fn shared(&self, bytes: &[u8]) -> Result<Data, String> {
        let Some(arena) = &self.arena else {
            return Err("this node has none".to_string());
        };
        let mut block = arena.alloc(bytes.len() as u64).map_err(|e| e.to_string())?;
        block.bytes_mut().copy_from_slice(bytes);
        Ok(Data::Shared(block))
    }

    /// A spill file, else (when `heap_last`) the heap.
    fn spill_or_heap(&self, bytes: &[u8], heap_last: bool) -> Result<Data, StoreFull> {
        let spill = match (&self.spill_dir, self.spilled.take(1)) {
            (None, _) => "this node spills nowhere".to_string(),
            (Some(_), None) => format!("{} objects spilled already", self.spilled.limit()),
            (Some(dir), Some(charge)) => match data::spill(dir, bytes, charge) {
                Ok(data) => {
                    tracing::debug!("spilled {} bytes to {}", bytes.len(), dir.display());
                    return Ok(data);
                }
                Err(e) => format!("cannot write to {}: {e}", dir.display()),
            },
        };
        if heap_last {
            if let Some(data) = self.inline(bytes) {
                return Ok(data);
            }
        }
        Err(StoreFull {
            size: bytes.len(),
            inline_used: self.inline.used(),
            inline_limit: self.inline.limit(),
            shared: "not tried".to_string(),
            spill,
        })
    }

    /// Every object: (id, size in bytes, location, holders), ordered by id
    /// (Ray's `ray.util.state.list_objects`, one node); the node lists a
    /// page at a time.
    #[cfg(test)]
    pub fn list(&self) -> Vec<ObjectRow> {
        let mut all: Vec<ObjectRow> = Vec::new();
        self.slots.each(|slots| {
            all.extend(slots.map.iter().map(|(id, slot)| object_info(*id, slot)));
        });
        all.sort_by_key(|o| o.id);
        all
    }

    /// At most `limit` objects for which `keep(created_ns, id)` holds, the
    /// newest first (`newest`) or the oldest first, by the time the store
    /// took them in, then by id. Its memory is bounded by `limit` (a heap
    /// of the `limit` first in that order); its time is one pass over the
    /// store's objects.
    pub fn list_by_time(
        &self,
        newest: bool,
        keep: &dyn Fn(u64, &ObjectId) -> bool,
        limit: usize,
    ) -> Vec<ObjectRow> {
        use std::cmp::Reverse;
        let kept = |t: u64, id: &ObjectId| keep(t, id);
        if newest {
            // The smallest keys are the newest (then the largest ids).
            self.smallest(limit, |t, id| {
                kept(t, id).then_some((Reverse(t), Reverse(*id)))
            })
        } else {
            self.smallest(limit, |t, id| kept(t, id).then_some((t, *id)))
        }
    }

    /// At most `limit` objects whose ids follow `after` (all, without
    /// it), by id: one page of [`ObjectStore::list`]. Its memory is
    /// bounded by `limit`, not by the store's objects (a heap of the
    /// `limit` smallest ids); its time is one pass over them.
    pub fn list_page(&self, after: Option<ObjectId>, limit: usize) -> Vec<ObjectRow> {
        self.smallest(limit, |_, id| after.is_none_or(|a| *id > a).then_some(*id))
    }

    /// The rows of the at most `limit` objects with the smallest keys,
    /// smallest first; `key(created_ns, id)` is `None` for an object left
    /// out. One pass over the shards, each locked in turn; memory bounded
    /// by `limit` (a heap whose top is the worst kept so far).
    fn smallest<K: Ord>(
        &self,
        limit: usize,
        key: impl Fn(u64, &ObjectId) -> Option<K>,
    ) -> Vec<ObjectRow> {
        use std::collections::BinaryHeap;
        if limit == 0 {
            return Vec::new();
        }
        let mut kept: BinaryHeap<Keyed<K>> = BinaryHeap::new();
        self.slots.each(|slots| {
            for (id, slot) in slots.map.iter() {
                let Some(k) = key(slot.created_ns, id) else {
                    continue;
                };
                if kept.len() < limit {
                    kept.push(Keyed(k, object_info(*id, slot)));
                } else if kept.peek().is_some_and(|top| k < top.0) {
                    kept.pop();
                    kept.push(Keyed(k, object_info(*id, slot)));
                }
            }
        });
        kept.into_sorted_vec().into_iter().map(|k| k.1).collect()
    }

    /// Declares that `id` will be sealed later (by a submitted task, or by
    /// the task making it), charging its [`OBJECT_OVERHEAD`] to the inline
    /// budget (whatever its room: check [`ObjectStore::admit`] first
    /// where a guest or client asks for the object).
    pub fn register_pending(&self, id: ObjectId) {
        self.slots.lock(&id).register(id);
    }

    /// Whether `n` more objects may be made: `Ok(None)` when their
    /// [`OBJECT_OVERHEAD`] fits the inline budget; `Ok(Some(full))` when it
    /// fits only the reserve past it, kept for the error objects of a full
    /// store (an eighth of the budget, at most 64 MiB): such a put still
    /// gets an id, whose value is `full` ("object store full", as for too
    /// many bytes); `Err` when not even the reserve has room (the caller
    /// fails: a trap for a guest).
    ///
    /// # Errors
    /// [`StoreFull`] naming the budget, past the reserve.
    pub fn admit(&self, n: usize) -> Result<Option<StoreFull>, StoreFull> {
        let size = n.saturating_mul(OBJECT_OVERHEAD);
        let full = || StoreFull {
            size,
            inline_used: self.inline.used(),
            inline_limit: self.inline.limit(),
            shared: format!(
                "not tried: no room for the metadata of {n} more objects ({OBJECT_OVERHEAD} \
                 bytes each on the heap, charged to the inline bytes); drop ObjectRefs first"
            ),
            spill: "not tried".to_string(),
        };
        if self.inline.room(size, 0) {
            return Ok(None);
        }
        let reserve = (self.inline.limit() / 8).min(64 << 20);
        if self.inline.room(size, reserve) {
            return Ok(Some(full()));
        }
        Err(full())
    }

    /// Adds a holder to `id`; false (and nothing held) when it does not
    /// exist.
    pub fn acquire(&self, id: &ObjectId) -> bool {
        match self.slots.lock(id).map.get_mut(id) {
            Some(slot) => {
                slot.holders = slot.holders.saturating_add(1);
                true
            }
            None => false,
        }
    }

    /// Removes a holder from `id`; the last one frees a sealed object (a
    /// pending one is freed when sealed). An id that no longer exists (its
    /// job ended) is ignored.
    pub fn release(&self, id: &ObjectId) {
        let mut freed = Freed::default();
        let unheld = self.slots.drop_holder(&mut self.slots.lock(id), id);
        if let Some(slot) = unheld {
            self.slots
                .free(&mut Locking(&self.slots), *id, slot, &mut freed);
        }
        self.dispose(freed);
    }

    /// Seals `id` with `object`, waking its waiters. Returns false, and
    /// drops `object`, when `id` is not expected (never registered, or
    /// freed with its job) or already sealed (objects are immutable).
    pub fn seal(&self, id: ObjectId, object: Object) -> bool {
        let mut freed = Freed::default();
        // The objects its value holds are held before it is sealed (each
        // in its own shard), so that no release of it, once it is seen
        // sealed, can drop holders they were not given yet. An object
        // never holds itself (it could never be freed).
        let inner: Vec<ObjectId> = match &object {
            Object::Value { refs, .. } => refs
                .iter()
                .filter(|r| **r != id && self.acquire(r))
                .copied()
                .collect(),
            Object::Error(_) => Vec::new(),
        };
        let size = object.size();
        let sealed = {
            let mut shard = self.slots.lock(&id);
            match shard.map.get_mut(&id) {
                Some(slot) => match &mut slot.state {
                    State::Pending(waiters) => {
                        let waiters = std::mem::take(waiters);
                        let unheld = slot.holders == 0;
                        slot.state = State::Sealed(Arc::new(object));
                        self.slots.add_bytes(size);
                        // Nothing can read it (a dependent or a blocked get
                        // would hold it): free it at once.
                        let unheld = if unheld { shard.remove(&id) } else { None };
                        Some((waiters, unheld))
                    }
                    State::Sealed(_) => None,
                },
                None => None,
            }
            // The shard's lock ends here: a free and the releases below
            // lock the shards they need one at a time.
        };
        let waiters = sealed.map(|(waiters, unheld)| {
            if let Some(slot) = unheld {
                self.slots
                    .free(&mut Locking(&self.slots), id, slot, &mut freed);
            }
            waiters
        });
        let Some(waiters) = waiters else {
            // Not expected, or sealed already: `object` is dropped, and
            // what it held is given back.
            for r in &inner {
                self.release(r);
            }
            return false;
        };
        self.dispose(freed);
        for (_, waiter) in waiters {
            waiter();
        }
        true
    }

    /// The sealed object `id`, if it is sealed.
    pub fn get(&self, id: &ObjectId) -> Option<Arc<Object>> {
        match self.slots.lock(id).map.get(id) {
            Some(Slot {
                state: State::Sealed(object),
                ..
            }) => Some(object.clone()),
            _ => None,
        }
    }

    /// Whether `id` is sealed or expected.
    pub fn exists(&self, id: &ObjectId) -> bool {
        self.slots.lock(id).map.contains_key(id)
    }

    /// Whether `id` exists and is still pending.
    pub fn is_pending(&self, id: &ObjectId) -> bool {
        matches!(
            self.slots.lock(id).map.get(id).map(|s| &s.state),
            Some(State::Pending(_))
        )
    }

    /// Runs `f` with a lookup of whether an id is pending (registered and
    /// not sealed), for a pass over `count` ids (a `wait` over a thousand
    /// refs): past 64 ids (the table's shards), under one lock of
    /// every shard, taken once (cheaper than a lock per id); below it, a
    /// lock of one shard per lookup (cheaper than every shard's). An id's
    /// pending state only ever ends, so either way a lookup says what held
    /// at some instant of the pass. `f` must not call back into the store.
    pub fn with_pending<R>(
        &self,
        count: usize,
        f: impl FnOnce(&dyn Fn(&ObjectId) -> bool) -> R,
    ) -> R {
        let pending =
            |slot: Option<&Slot>| matches!(slot.map(|s| &s.state), Some(State::Pending(_)));
        if count > crate::slots::SHARDS {
            let all = self.slots.lock_all();
            f(&|id| pending(all.shard(id).map.get(id)))
        } else {
            f(&|id| pending(self.slots.lock(id).map.get(id)))
        }
    }

    /// Registers `waiter` to run when `id` is sealed, unless it already is.
    pub fn subscribe(&self, id: &ObjectId, waiter: Waiter) -> Subscription {
        match self.slots.lock(id).map.get_mut(id).map(|s| &mut s.state) {
            Some(State::Sealed(_)) => Subscription::Ready,
            Some(State::Pending(waiters)) => {
                let token = self
                    .next_token
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                waiters.push((token, waiter));
                Subscription::Pending(token)
            }
            None => Subscription::Unknown,
        }
    }

    /// Drops the waiter registered on `id` under `token`, if it has not run
    /// (a wait that ended without the object: a timeout, a cancel).
    pub fn unsubscribe(&self, id: &ObjectId, token: u64) {
        if let Some(State::Pending(waiters)) =
            self.slots.lock(id).map.get_mut(id).map(|s| &mut s.state)
        {
            if let Some(i) = waiters.iter().position(|(t, _)| *t == token) {
                drop(waiters.swap_remove(i));
            }
        }
    }

    /// Ends job `job` in the store: every object of the job is freed,
    /// whoever holds it, and whatever waits on one still pending is woken
    /// (it finds the object gone: not-found). One critical section (every
    /// shard locked), so an object the job's last tasks register meanwhile
    /// cannot slip between the wake-ups and the freeing. Returns how many
    /// were freed.
    pub fn end_job(&self, job: JobId) -> usize {
        let mut freed = Freed::default();
        let mut waiters = Vec::new();
        let mut all = self.slots.lock_all();
        let ids: Vec<ObjectId> = all
            .iter()
            .flat_map(|shard| shard.map.keys().filter(|id| id.job() == job).copied())
            .collect();
        for id in &ids {
            let Some(mut slot) = all.with(id, |shard| shard.remove(id)) else {
                // Freed already, as an object another of them held.
                continue;
            };
            if let State::Pending(w) = &mut slot.state {
                waiters.append(w);
            }
            self.slots.free(&mut all, *id, slot, &mut freed);
        }
        drop(all);
        self.dispose(freed);
        for (_, waiter) in waiters {
            waiter();
        }
        self.give_back_memory();
        ids.len()
    }

    /// Gives the memory of many freed objects back to the system, once
    /// the table has room for [`GIVE_BACK_AFTER`] objects and holds less
    /// than a quarter of that: the table shrunk to twice what it holds, and
    /// the allocator's free pages returned. Called when a job ends (by
    /// then its objects are freed, most of them as its instances ended).
    pub fn give_back_memory(&self) {
        let (mut len, mut capacity) = (0usize, 0usize);
        self.slots.each(|shard| {
            len = len.saturating_add(shard.map.len());
            capacity = capacity.saturating_add(shard.map.capacity());
        });
        if capacity < GIVE_BACK_AFTER || capacity <= len.saturating_mul(4) {
            return;
        }
        self.slots.each(|shard| {
            let twice = shard.map.len().saturating_mul(2);
            shard.map.shrink_to(twice);
        });
        trim_heap();
    }

    /// Objects and bytes held now, and the peak.
    pub fn stats(&self) -> StoreStats {
        let mut objects = 0usize;
        self.slots
            .each(|shard| objects = objects.saturating_add(shard.map.len()));
        let (bytes, peak_bytes) = self.slots.bytes();
        let arena = self.arena.as_ref();
        let (resident, punched) = arena.map_or((0, 0), |a| (a.resident_bytes(), a.punched_bytes()));
        StoreStats {
            objects,
            bytes,
            peak_bytes,
            inline_bytes: self.inline.used(),
            spilled: self.spilled.used(),
            arena_resident_bytes: resident,
            arena_punched_bytes: punched,
            unmatched_releases: self.slots.unmatched_releases(),
        }
    }
}

/// A row kept by its key alone (the listings' heaps).
struct Keyed<K>(K, ObjectRow);

impl<K: Ord> PartialEq for Keyed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<K: Ord> Eq for Keyed<K> {}

impl<K: Ord> PartialOrd for Keyed<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> Ord for Keyed<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// What a listing shows of object `id`, in `slot`.
fn object_info(id: ObjectId, slot: &Slot) -> ObjectRow {
    let (size, location) = match &slot.state {
        State::Pending(_) => (0, "pending"),
        State::Sealed(o) => match &**o {
            Object::Value { data, .. } => (data.bytes().len(), data.location()),
            Object::Error(_) => (0, "error"),
        },
    };
    ObjectRow {
        id,
        size,
        location,
        holders: slot.holders,
        created_ns: slot.created_ns,
    }
}

#[cfg(test)]
mod tests;
