//! Objects between nodes: what a message ships of the local store (small
//! values inline, large ones by reference, to be pulled in chunks), and
//! what a received message's objects become in the local store (pulled
//! straight into its shared-memory arena, checked by their CRC-32 before
//! they are sealed).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use wray_control_plane::ObjectId;
use wray_peer::PeerClient;

use crate::id_map::IdSet;
use crate::objects::data::Data;
use crate::objects::{Object, ObjectStore, StoreFull};
use crate::protocol::{
    Shipment, Shipped, WireError, INLINE_MESSAGE_MAX, INLINE_SHIP_MAX, MAX_OBJECTS,
};
use crate::scheduler::blocking::Blocker;
use crate::scheduler::Scheduler;

/// The most bytes of one object pulled into the heap when the arena has
/// no room (then the store places it as any value): 1 GiB.
const HEAP_PULL_MAX: usize = 1 << 30;

/// The chunk size of a pull: 4 MiB (Ray's object manager uses 5 MiB).
pub(crate) const PULL_CHUNK: u32 = 4 << 20;

/// Object bytes a node sent to and received from the other nodes, inline
/// in messages and pulled in chunks (`/metrics`' and the node registry's
/// transfer counters; the dashboard's Cluster page draws their rates).
#[derive(Debug, Default)]
pub(crate) struct Traffic {
    sent: AtomicU64,
    received: AtomicU64,
}

impl Traffic {
    /// Counts what `shipped` carries inline, as sent.
    pub(crate) fn shipped(&self, shipped: &[Shipped]) {
        let inline = shipped.iter().fold(0u64, |sum, s| match &s.value {
            Shipment::Inline { data, .. } => sum.saturating_add(data.len() as u64),
            Shipment::Pull { .. } | Shipment::Error(_) => sum,
        });
        self.sent.fetch_add(inline, Ordering::Relaxed);
    }

    /// Counts `bytes` served to a node pulling them, as sent.
    pub(crate) fn served(&self, bytes: usize) {
        self.sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Bytes of the values of `shipped`, inline or to be pulled.
    pub(crate) fn size_of(shipped: &[Shipped]) -> u64 {
        shipped.iter().fold(0u64, |sum, s| {
            sum.saturating_add(match &s.value {
                Shipment::Inline { data, .. } => data.len() as u64,
                Shipment::Pull { size, .. } => *size,
                Shipment::Error(_) => 0,
            })
        })
    }

    /// Counts `bytes` received (a message's values, all materialized).
    fn received(&self, bytes: u64) {
        self.received.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes sent and received so far.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }
}

/// Objects that cannot travel with a message, or be sealed from one.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransferError {
    /// More than [`MAX_OBJECTS`] objects would go with one task.
    #[error("more than {MAX_OBJECTS} objects would travel with one task")]
    TooManyToShip,
    /// A message carries more than [`MAX_OBJECTS`] objects (how many).
    #[error("{0} objects shipped, more than the {MAX_OBJECTS} a message may carry")]
    TooManyShipped(usize),
    /// A value names more than [`MAX_OBJECTS`] refs.
    #[error("object {id} names {count} refs")]
    TooManyRefs {
        /// The object.
        id: ObjectId,
        /// The refs it names.
        count: usize,
    },
    /// A shipped error object without its error.
    #[error("object {0} is an error without a message")]
    NoMessage(ObjectId),
    /// A size that is no `usize` here.
    #[error("object {id}: {size} bytes")]
    Size {
        /// The object.
        id: ObjectId,
        /// Its size in bytes.
        size: u64,
    },
    /// Pulling its bytes from the node that has them failed.
    #[error("pulling object {id} from {addr}: {source}")]
    Pull {
        /// The object.
        id: ObjectId,
        /// The node's peer address.
        addr: String,
        /// What the channel said.
        source: wray_peer::PeerError,
    },
    /// Its bytes fail their CRC-32.
    #[error(
        "object {id} pulled from {addr} fails its checksum (crc {got:08x}, expected \
         {expected:08x}): refused"
    )]
    Checksum {
        /// The object.
        id: ObjectId,
        /// The node's peer address.
        addr: String,
        /// The CRC-32 of the bytes pulled.
        got: u32,
        /// The CRC-32 the message gave.
        expected: u32,
    },
    /// The store's block is shorter than asked for (a store bug).
    #[error("object {id}: the store gave fewer than {size} bytes")]
    Short {
        /// The object.
        id: ObjectId,
        /// Its size in bytes.
        size: u64,
    },
    /// No room in shared memory, and too large for the heap.
    #[error(
        "object {id} has {size} bytes, and this node's shared-memory store has no room for it \
         (at most {HEAP_PULL_MAX} bytes are pulled into the heap)"
    )]
    NoRoom {
        /// The object.
        id: ObjectId,
        /// Its size in bytes.
        size: u64,
    },
    /// The object store is full.
    #[error(transparent)]
    StoreFull(#[from] StoreFull),
}

/// Shipments of `roots` and of every object their values name in turn,
/// breadth first, each once: sealed values inline up to
/// [`INLINE_SHIP_MAX`] (and [`INLINE_MESSAGE_MAX`] in all), larger ones to
/// be pulled. An id this store does not hold sealed is left out (a ref to
/// an object still being made, or freed).
///
/// # Errors
/// [`TransferError::TooManyToShip`] when more than [`MAX_OBJECTS`]
/// objects would travel.
pub(crate) fn ship(
    objects: &ObjectStore,
    roots: &[ObjectId],
) -> Result<Vec<Shipped>, TransferError> {
    let mut out = Vec::new();
    let mut seen = IdSet::default();
    let mut work: VecDeque<ObjectId> = roots.iter().copied().collect();
    let mut inline_bytes = 0usize;
    while let Some(id) = work.pop_front() {
        if !seen.insert(id) {
            continue;
        }
        let Some(object) = objects.get(&id) else {
            continue;
        };
        if out.len() >= MAX_OBJECTS {
            return Err(TransferError::TooManyToShip);
        }
        let value = match &*object {
            Object::Error(e) => Shipment::Error(WireError::from(e)),
            Object::Value { codec, data, refs } => {
                let bytes = data.bytes();
                work.extend(refs.iter().copied());
                let refs = refs.to_vec();
                if bytes.len() <= INLINE_SHIP_MAX
                    && inline_bytes.saturating_add(bytes.len()) <= INLINE_MESSAGE_MAX
                {
                    inline_bytes += bytes.len();
                    Shipment::Inline {
                        codec: *codec,
                        data: bytes.to_vec(),
                        refs,
                    }
                } else {
                    Shipment::Pull {
                        codec: *codec,
                        size: bytes.len() as u64,
                        crc: crc32fast::hash(bytes),
                        refs,
                    }
                }
            }
        };
        out.push(Shipped { id, value });
    }
    Ok(out)
}

/// Waits until every object `roots` name, at any depth (the refs inside
/// their values, and inside those), is sealed or gone: another node gets
/// only what is sealed here when [`ship`] runs. One level at a time, each
/// through the scheduler's wait (its waiters taken back if this is
/// dropped); at most [`MAX_OBJECTS`] objects are looked at (past them,
/// [`ship`] refuses the message).
pub(crate) async fn all_sealed(sched: &Arc<Scheduler>, roots: &[ObjectId]) {
    let mut seen = IdSet::default();
    let mut level: Vec<ObjectId> = roots.to_vec();
    while !level.is_empty() && seen.len() <= MAX_OBJECTS {
        level.retain(|id| seen.insert(*id));
        let pending: Vec<ObjectId> = level
            .iter()
            .copied()
            .filter(|id| sched.objects().is_pending(id))
            .collect();
        if !pending.is_empty() {
            // On the node's I/O runtime (a peer's handler).
            let blocker = Blocker::on_runtime();
            sched
                .wait_sealed(&pending, pending.len(), None, blocker)
                .await;
        }
        let mut next = Vec::new();
        for id in &level {
            if let Some(object) = sched.objects().get(id) {
                if let Object::Value { refs, .. } = &*object {
                    next.extend(refs.iter().copied());
                }
            }
        }
        level = next;
    }
}

/// The key a shipped object is pulled by: its id's 20 bytes, as a
/// message carries it (task, then index big-endian).
pub(crate) fn key(id: &ObjectId) -> Vec<u8> {
    crate::protocol::object_id_bytes(id).to_vec()
}

/// The object a pull key names, if it is one.
pub(crate) fn id_of_key(key: &[u8]) -> Option<ObjectId> {
    crate::protocol::object_id("key", key).ok()
}

/// Seals `shipped` (from node `from`, at peer address `addr`) in
/// `objects`, each held once by the caller (returned, to be released once
/// what holds them in turn is sealed): objects sealed here already are
/// held as they are; ids in `expected` are sealed without a hold of
/// their own (the caller expects them: a task's return objects).
///
/// # Errors
/// [`TransferError`], naming the object and the cause when a value cannot be
/// fetched, fails its checksum, or finds no room; the holds taken so far
/// are given back first.
pub(crate) async fn receive(
    objects: &ObjectStore,
    client: &PeerClient,
    traffic: &Traffic,
    addr: &str,
    shipped: Vec<Shipped>,
    expected: &[ObjectId],
) -> Result<(Vec<ObjectId>, Vec<(ObjectId, Object)>), TransferError> {
    if shipped.len() > MAX_OBJECTS {
        return Err(TransferError::TooManyShipped(shipped.len()));
    }
    let bytes = Traffic::size_of(&shipped);
    let mut held = Vec::new();
    let mut sealed_later = Vec::new();
    // Leaves first: a value's refs are sealed before it holds them.
    for Shipped { id, value } in shipped.into_iter().rev() {
        let built = match materialize(objects, client, addr, id, value).await {
            Ok(built) => built,
            Err(e) => {
                for id in &held {
                    objects.release(id);
                }
                return Err(e);
            }
        };
        if expected.contains(&id) {
            sealed_later.push((id, built));
            continue;
        }
        objects.register_pending(id);
        if objects.acquire(&id) {
            held.push(id);
        }
        objects.seal(id, built);
    }
    sealed_later.reverse();
    traffic.received(bytes);
    Ok((held, sealed_later))
}

/// One shipped value as an object of this store.
async fn materialize(
    objects: &ObjectStore,
    client: &PeerClient,
    addr: &str,
    id: ObjectId,
    value: Shipment,
) -> Result<Object, TransferError> {
    let refs_of = |refs: Vec<ObjectId>| {
        if refs.len() > MAX_OBJECTS {
            return Err(TransferError::TooManyRefs {
                id,
                count: refs.len(),
            });
        }
        Ok(objects.refs(refs)?)
    };
    match value {
        Shipment::Error(e) => e
            .into_error()
            .map(Object::Error)
            .ok_or(TransferError::NoMessage(id)),
        Shipment::Inline { codec, data, refs } => {
            Ok(objects.value(codec, &data, refs_of(refs)?)?)
        }
        Shipment::Pull {
            codec,
            size,
            crc,
            refs,
        } => {
            let refs = refs_of(refs)?;
            let len = usize::try_from(size).map_err(|_| TransferError::Size { id, size })?;
            let fetched = |source| TransferError::Pull {
                id,
                addr: addr.to_string(),
                source,
            };
            let check = |bytes: &[u8]| {
                let got = crc32fast::hash(bytes);
                if got == crc {
                    Ok(())
                } else {
                    Err(TransferError::Checksum {
                        id,
                        addr: addr.to_string(),
                        got,
                        expected: crc,
                    })
                }
            };
            // Straight into the arena when it has room: a guest here maps
            // it as any local object.
            if let Some(Ok(mut block)) = objects.arena().map(|a| a.alloc(size)) {
                // A block has at least the bytes asked for (pages, rounded up).
                let short = || TransferError::Short { id, size };
                let dest = block.bytes_mut().get_mut(..len).ok_or_else(short)?;
                client
                    .pull(addr, &key(&id), size, dest, PULL_CHUNK)
                    .await
                    .map_err(fetched)?;
                check(block.bytes().get(..len).ok_or_else(short)?)?;
                return Ok(Object::Value {
                    codec,
                    data: Data::Shared(block),
                    refs,
                });
            }
            if len > HEAP_PULL_MAX {
                return Err(TransferError::NoRoom { id, size });
            }
            let mut bytes = vec![0u8; len];
            client
                .pull(addr, &key(&id), size, &mut bytes, PULL_CHUNK)
                .await
                .map_err(fetched)?;
            check(&bytes)?;
            Ok(objects.value(codec, &bytes, refs)?)
        }
    }
}
