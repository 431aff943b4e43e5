//! The node's object store: immutable objects by [`ObjectId`], with
//! readiness notification.
//!
//! This is the in-memory store of a single node. An object is created
//! *pending* when the task that will produce it is submitted, and *sealed*
//! once (with a value or an error); sealing wakes everything subscribed to it
//! (tasks waiting for their arguments, guests blocked in `get`/`wait`).
//! Objects are never changed after sealing.
//!
//! Reference counting (Ray's ownership model on one node): every slot counts
//! its holders: tasks' instances ([`Holds`]), queued tasks (their arguments)
//! and sealed objects whose value contains its id. When the count drops to
//! zero the object is freed, and the refs inside its value are released in
//! turn. The shared-memory store replaces the value storage later; the
//! counting stays.

pub mod arena;

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

/// Values smaller than this (bytes) stay on the host's heap and travel
/// inline with tasks; larger ones go to the shared-memory arena, from where
/// guests can map them without a copy. Ray's threshold for inlining small
/// objects is 100 KiB as well (`max_direct_call_object_size`).
pub const INLINE_MAX: usize = 100 << 10;

/// Where a value's bytes live.
#[derive(Debug)]
pub enum Data {
    /// On the host's heap.
    Inline(Arc<[u8]>),
    /// In a block of the shared-memory arena (freed with the object).
    Shared(arena::Block),
    /// Spilled to a file on disk because the arena was full; read through a
    /// read-only mapping of the file (the page cache restores it on use).
    /// The file is deleted with the object.
    Spilled {
        /// The file (deleted on drop).
        file: tempfile::NamedTempFile,
        /// Its mapping.
        map: memmap2::Mmap,
    },
}

impl Data {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Data::Inline(b) => b,
            Data::Shared(block) => block.bytes(),
            Data::Spilled { map, .. } => map,
        }
    }

    /// The file, page-aligned offset and page size to map the bytes from,
    /// for values that live in a file (arena or spill file).
    pub fn file_range(&self) -> Option<(i32, usize, usize)> {
        use std::os::fd::AsRawFd;
        match self {
            Data::Inline(_) => None,
            Data::Shared(block) => Some((
                block.arena().fd(),
                block.offset(),
                block.arena().page_size(),
            )),
            Data::Spilled { file, .. } => Some((file.as_file().as_raw_fd(), 0, arena::PAGE)),
        }
    }

    /// Where the value lives, for listings: `heap`, `shared-memory` or
    /// `spilled`.
    pub fn location(&self) -> &'static str {
        match self {
            Data::Inline(_) => "heap",
            Data::Shared(_) => "shared-memory",
            Data::Spilled { .. } => "spilled",
        }
    }
}

/// Writes `bytes` to a new file in `dir` and maps it read-only.
fn spill(dir: &std::path::Path, bytes: &[u8]) -> std::io::Result<Data> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::Builder::new()
        .prefix("object-")
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.flush()?;
    // SAFETY: the file is private to this store (a fresh temporary file that
    // nothing else writes) and never truncated while mapped.
    let map = unsafe { memmap2::Mmap::map(file.as_file())? };
    Ok(Data::Spilled { file, map })
}

impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Data {}

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
        refs: Arc<[ObjectId]>,
    },
    /// The producing task failed.
    Error(TaskError),
}

impl Object {
    /// Size of the value in bytes (0 for errors).
    pub fn size(&self) -> usize {
        match self {
            Object::Value { data, .. } => data.bytes().len(),
            Object::Error(_) => 0,
        }
    }
}

/// Called once when a subscribed object is sealed.
pub type Waiter = Box<dyn FnOnce() + Send>;

enum State {
    Pending(Vec<Waiter>),
    Sealed(Arc<Object>),
}

struct Slot {
    state: State,
    /// Holders: instances, queued tasks, containing objects.
    holders: u32,
}

impl Slot {
    fn pending() -> Self {
        Slot {
            state: State::Pending(Vec::new()),
            holders: 0,
        }
    }
}

#[derive(Default)]
struct Slots {
    map: HashMap<ObjectId, Slot>,
    /// Bytes held by sealed values now, and the most ever held.
    bytes: usize,
    peak_bytes: usize,
}

impl Slots {
    /// Removes `id` and, in turn, whatever only it held.
    fn free(&mut self, id: ObjectId) {
        let mut work = vec![id];
        while let Some(id) = work.pop() {
            let Some(slot) = self.map.remove(&id) else {
                continue;
            };
            if let State::Sealed(object) = slot.state {
                self.bytes -= object.size();
                if let Object::Value { refs, .. } = &*object {
                    for inner in refs.iter() {
                        if let Some(s) = self.map.get_mut(inner) {
                            s.holders = s.holders.saturating_sub(1);
                            if s.holders == 0 && matches!(s.state, State::Sealed(_)) {
                                work.push(*inner);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One object, as [`ObjectStore::list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Its id.
    pub id: ObjectId,
    /// Size of its value in bytes (0 while pending, and for errors).
    pub size: usize,
    /// `pending`, `error`, `heap`, `shared-memory` or `spilled`.
    pub location: &'static str,
    /// How many holders keep it alive.
    pub holders: u32,
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

/// The object store of one node.
#[derive(Default)]
pub struct ObjectStore {
    slots: Mutex<Slots>,
    arena: Option<Arc<arena::Arena>>,
    spill_dir: Option<std::path::PathBuf>,
}

impl ObjectStore {
    /// An empty store keeping every value on the heap.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose large values live in `arena`, spilling to files
    /// in `spill_dir` when it is full.
    pub fn with_arena(arena: Arc<arena::Arena>, spill_dir: std::path::PathBuf) -> Self {
        Self {
            slots: Mutex::default(),
            arena: Some(arena),
            spill_dir: Some(spill_dir),
        }
    }

    /// The shared-memory arena, if the store has one.
    pub fn arena(&self) -> Option<&Arc<arena::Arena>> {
        self.arena.as_ref()
    }

    /// A value holding `bytes`: in the arena when it is at least
    /// [`INLINE_MAX`] bytes; when the arena is full, spilled to a file (and,
    /// should even that fail, kept on the heap: a value is never lost).
    pub fn value(&self, codec: Codec, bytes: &[u8], refs: Arc<[ObjectId]>) -> Object {
        let data = match &self.arena {
            Some(arena) if bytes.len() >= INLINE_MAX => match arena.alloc(bytes.len()) {
                Ok(mut block) => {
                    block.bytes_mut().copy_from_slice(bytes);
                    Data::Shared(block)
                }
                Err(full) => self.spill_or_keep(bytes, &full),
            },
            _ => Data::Inline(Arc::from(bytes)),
        };
        Object::Value { codec, data, refs }
    }

    fn spill_or_keep(&self, bytes: &[u8], full: &arena::ArenaError) -> Data {
        let Some(dir) = &self.spill_dir else {
            return Data::Inline(Arc::from(bytes));
        };
        match spill(dir, bytes) {
            Ok(data) => {
                tracing::debug!("{full}; spilled {} bytes to {}", bytes.len(), dir.display());
                data
            }
            Err(e) => {
                tracing::warn!(
                    "{full}; cannot spill to {}: {e}; keeping the object on the heap",
                    dir.display()
                );
                Data::Inline(Arc::from(bytes))
            }
        }
    }

    /// Every object: (id, size in bytes, location, holders), ordered by id
    /// (Ray's `ray.util.state.list_objects`, one node).
    pub fn list(&self) -> Vec<ObjectInfo> {
        let slots = self.slots.lock();
        let mut all: Vec<ObjectInfo> = slots
            .map
            .iter()
            .map(|(id, slot)| {
                let (size, location) = match &slot.state {
                    State::Pending(_) => (0, "pending"),
                    State::Sealed(o) => match &**o {
                        Object::Value { data, .. } => (data.bytes().len(), data.location()),
                        Object::Error(_) => (0, "error"),
                    },
                };
                ObjectInfo {
                    id: *id,
                    size,
                    location,
                    holders: slot.holders,
                }
            })
            .collect();
        all.sort_by_key(|o| o.id);
        all
    }

    /// Declares that `id` will be sealed later (by a submitted task).
    pub fn register_pending(&self, id: ObjectId) {
        self.slots
            .lock()
            .map
            .entry(id)
            .or_insert_with(Slot::pending);
    }

    /// Adds a holder to `id` (ignored when it does not exist).
    pub fn acquire(&self, id: &ObjectId) {
        if let Some(slot) = self.slots.lock().map.get_mut(id) {
            slot.holders += 1;
        }
    }

    /// Removes a holder from `id`; the last one frees a sealed object (a
    /// pending one is freed when sealed).
    pub fn release(&self, id: &ObjectId) {
        let mut slots = self.slots.lock();
        let Some(slot) = slots.map.get_mut(id) else {
            return;
        };
        slot.holders = slot.holders.saturating_sub(1);
        if slot.holders == 0 && matches!(slot.state, State::Sealed(_)) {
            slots.free(*id);
        }
    }

    /// Seals `id` with `object`, waking its waiters. Sealing an already
    /// sealed object keeps the first value (objects are immutable) and
    /// returns false.
    pub fn seal(&self, id: ObjectId, object: Object) -> bool {
        let waiters = {
            let mut guard = self.slots.lock();
            let slots = &mut *guard;
            let slot = slots.map.entry(id).or_insert_with(Slot::pending);
            let waiters = match &mut slot.state {
                State::Sealed(_) => return false,
                State::Pending(waiters) => std::mem::take(waiters),
            };
            let unheld = slot.holders == 0;
            let size = object.size();
            if let Object::Value { refs, .. } = &object {
                for inner in refs.iter() {
                    if let Some(s) = slots.map.get_mut(inner) {
                        s.holders += 1;
                    }
                }
            }
            if let Some(slot) = slots.map.get_mut(&id) {
                slot.state = State::Sealed(Arc::new(object));
            }
            slots.bytes += size;
            slots.peak_bytes = slots.peak_bytes.max(slots.bytes);
            if unheld {
                // Nothing can read it (a dependent or a blocked get would
                // hold it): free it at once.
                slots.free(id);
            }
            waiters
        };
        for waiter in waiters {
            waiter();
        }
        true
    }

    /// The sealed object `id`, if it is sealed.
    pub fn get(&self, id: &ObjectId) -> Option<Arc<Object>> {
        match self.slots.lock().map.get(id) {
            Some(Slot {
                state: State::Sealed(object),
                ..
            }) => Some(object.clone()),
            _ => None,
        }
    }

    /// Whether `id` is sealed or expected.
    pub fn exists(&self, id: &ObjectId) -> bool {
        self.slots.lock().map.contains_key(id)
    }

    /// Registers `waiter` to run when `id` is sealed, unless it already is.
    pub fn subscribe(&self, id: &ObjectId, waiter: Waiter) -> Subscription {
        match self.slots.lock().map.get_mut(id).map(|s| &mut s.state) {
            Some(State::Sealed(object)) => Subscription::Ready(object.clone()),
            Some(State::Pending(waiters)) => {
                waiters.push(waiter);
                Subscription::Pending
            }
            None => Subscription::Unknown,
        }
    }

    /// Objects and bytes held now, and the peak.
    pub fn stats(&self) -> StoreStats {
        let slots = self.slots.lock();
        StoreStats {
            objects: slots.map.len(),
            bytes: slots.bytes,
            peak_bytes: slots.peak_bytes,
        }
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
            data: Data::Inline(Arc::from(b)),
            refs: Arc::from([]),
        }
    }

    fn id(i: u32) -> ObjectId {
        TaskId::driver(0).return_object(i)
    }

    #[test]
    fn unheld_objects_are_freed_with_what_they_contain() {
        let store = ObjectStore::new();
        let (inner, outer) = (id(1), id(2));
        store.register_pending(inner);
        store.acquire(&inner);
        store.seal(inner, value(b"inner"));
        store.register_pending(outer);
        store.acquire(&outer);
        let holds_inner = Object::Value {
            codec: Codec::Raw,
            data: Data::Inline(Arc::from(&b"o"[..])),
            refs: Arc::from([inner]),
        };
        store.seal(outer, holds_inner);
        // The driver drops its ref to `inner`: `outer` still holds it.
        store.release(&inner);
        assert!(store.get(&inner).is_some());
        assert_eq!(store.stats().objects, 2);
        // Dropping `outer` frees both.
        store.release(&outer);
        assert_eq!(
            store.stats(),
            StoreStats {
                objects: 0,
                bytes: 0,
                peak_bytes: 6
            }
        );
    }

    #[test]
    fn large_values_go_to_the_arena_or_spill_and_free_their_space() {
        let dir = tempfile::tempdir().unwrap();
        let arena = arena::Arena::create(dir.path(), 1 << 20, false).unwrap();
        let store = ObjectStore::with_arena(arena.clone(), dir.path().join("spill"));
        let small = store.value(Codec::Raw, &[1; 16], Arc::from([]));
        assert!(matches!(
            &small,
            Object::Value {
                data: Data::Inline(_),
                ..
            }
        ));
        let big = vec![7u8; INLINE_MAX];
        store.register_pending(id(1));
        store.acquire(&id(1));
        store.seal(id(1), store.value(Codec::Raw, &big, Arc::from([])));
        let sealed = store.get(&id(1)).unwrap();
        let Object::Value {
            data: Data::Shared(block),
            ..
        } = &*sealed
        else {
            panic!("not shared")
        };
        assert_eq!(block.bytes(), &big[..]);
        let used = arena.capacity() - arena.free_bytes();
        assert_eq!(used, INLINE_MAX.div_ceil(arena::PAGE) * arena::PAGE);
        drop(sealed);
        store.release(&id(1));
        assert_eq!(arena.free_bytes(), arena.capacity());
        // Too large for the arena: spilled to a file, not lost.
        let huge_bytes = vec![1u8; 2 << 20];
        store.register_pending(id(2));
        store.acquire(&id(2));
        store.seal(id(2), store.value(Codec::Raw, &huge_bytes, Arc::from([])));
        let listed = store.list();
        assert_eq!(listed.len(), 1);
        let first = &listed[0];
        assert_eq!(
            (first.size, first.location, first.holders),
            (2 << 20, "spilled", 1)
        );
        let huge = store.get(&id(2)).unwrap();
        let Object::Value { data, .. } = &*huge else {
            panic!("not a value")
        };
        assert_eq!(data.bytes(), &huge_bytes[..]);
        assert!(data.file_range().is_some());
        drop(huge);
        store.release(&id(2));
        let spilled = std::fs::read_dir(dir.path().join("spill")).unwrap().count();
        assert_eq!(spilled, 0, "the spill file is deleted with its object");
    }

    #[test]
    fn a_result_nobody_holds_is_freed_when_sealed() {
        let store = ObjectStore::new();
        store.register_pending(id(1));
        store.acquire(&id(1));
        store.release(&id(1)); // pending: kept until sealed
        assert!(store.exists(&id(1)));
        store.seal(id(1), value(b"x"));
        assert!(!store.exists(&id(1)));
        // Releasing what does not exist is harmless.
        store.release(&id(1));
        store.acquire(&id(1));
    }

    #[test]
    fn seal_wakes_waiters_once_and_is_immutable() {
        let store = ObjectStore::new();
        let id = id(0);
        assert!(matches!(
            store.subscribe(&id, Box::new(|| {})),
            Subscription::Unknown
        ));
        store.register_pending(id);
        store.acquire(&id);
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
        assert_eq!(value(b"one"), value(b"one"));
        assert!(matches!(
            store.subscribe(&id, Box::new(|| {})),
            Subscription::Ready(_)
        ));
        assert_eq!(
            store.stats(),
            StoreStats {
                objects: 1,
                bytes: 3,
                peak_bytes: 3
            }
        );
    }
}
