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

use crate::cluster::protocol::{
    Shipment, Shipped, WireError, INLINE_MESSAGE_MAX, INLINE_SHIP_MAX, MAX_OBJECTS,
};
use crate::id_map::IdSet;
use crate::objects::data::Data;
use crate::objects::{Object, ObjectStore};
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

/// Shipments of `roots` and of every object their values name in turn,
/// breadth first, each once: sealed values inline up to
/// [`INLINE_SHIP_MAX`] (and [`INLINE_MESSAGE_MAX`] in all), larger ones to
/// be pulled. An id this store does not hold sealed is left out (a ref to
/// an object still being made, or freed).
///
/// # Errors
/// A message when more than [`MAX_OBJECTS`] objects would travel.
pub(crate) fn ship(objects: &ObjectStore, roots: &[ObjectId]) -> Result<Vec<Shipped>, String> {
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
            return Err(format!(
                "more than {MAX_OBJECTS} objects would travel with one task"
            ));
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
            let blocker = Blocker {
                entry: None,
                allocation: None,
            };
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
    crate::cluster::protocol::object_id_bytes(id).to_vec()
}

/// The object a pull key names, if it is one.
pub(crate) fn id_of_key(key: &[u8]) -> Option<ObjectId> {
    crate::cluster::protocol::object_id("key", key).ok()
}

/// Seals `shipped` (from node `from`, at peer address `addr`) in
/// `objects`, each held once by the caller (returned, to be released once
/// what holds them in turn is sealed): objects sealed here already are
/// held as they are; ids in `expected` are sealed without a hold of
/// their own (the caller expects them: a task's return objects).
///
/// # Errors
/// A message naming the object and the cause when a value cannot be
/// fetched, fails its checksum, or finds no room; the holds taken so far
/// are given back first.
pub(crate) async fn receive(
    objects: &ObjectStore,
    client: &PeerClient,
    traffic: &Traffic,
    addr: &str,
    shipped: Vec<Shipped>,
    expected: &[ObjectId],
) -> Result<(Vec<ObjectId>, Vec<(ObjectId, Object)>), String> {
    if shipped.len() > MAX_OBJECTS {
        return Err(format!(
            "{} objects shipped, more than the {MAX_OBJECTS} a message may carry",
            shipped.len()
        ));
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
) -> Result<Object, String> {
    let refs_of = |refs: Vec<ObjectId>| {
        if refs.len() > MAX_OBJECTS {
            return Err(format!("object {id} names {} refs", refs.len()));
        }
        objects.refs(refs).map_err(|e| e.to_string())
    };
    match value {
        Shipment::Error(e) => e
            .into_error()
            .map(Object::Error)
            .ok_or_else(|| format!("object {id} is an error without a message")),
        Shipment::Inline { codec, data, refs } => objects
            .value(codec, &data, refs_of(refs)?)
            .map_err(|e| e.to_string()),
        Shipment::Pull {
            codec,
            size,
            crc,
            refs,
        } => {
            let refs = refs_of(refs)?;
            let len = usize::try_from(size).map_err(|_| format!("object {id}: {size} bytes"))?;
            let fetched = |e: wray_peer::PeerError| format!("pulling object {id} from {addr}: {e}");
            let check = |bytes: &[u8]| {
                let got = crc32fast::hash(bytes);
                if got == crc {
                    Ok(())
                } else {
                    Err(format!(
                        "object {id} pulled from {addr} fails its checksum (crc {got:08x}, \
                         expected {crc:08x}): refused"
                    ))
                }
            };
            // Straight into the arena when it has room: a guest here maps
            // it as any local object.
            if let Some(Ok(mut block)) = objects.arena().map(|a| a.alloc(size)) {
                // A block has at least the bytes asked for (pages, rounded up).
                let short = || format!("object {id}: the store gave fewer than {size} bytes");
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
                return Err(format!(
                    "object {id} has {size} bytes, and this node's shared-memory store has no \
                     room for it (at most {HEAP_PULL_MAX} bytes are pulled into the heap)"
                ));
            }
            let mut bytes = vec![0u8; len];
            client
                .pull(addr, &key(&id), size, &mut bytes, PULL_CHUNK)
                .await
                .map_err(fetched)?;
            check(&bytes)?;
            objects
                .value(codec, &bytes, refs)
                .map_err(|e| e.to_string())
        }
    }
}
