//! The object store: `put`, `get`, `get_all`, `get_timeout` and `wait`.

use core::time::Duration;

use crate::bindings::{mapping, objects, types as wit};
use crate::codec::{from_payload, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::object_ref::ObjectRef;
use crate::runtime::task_error;

/// Stores `bytes` as a new immutable object of codec `raw` (the bytes
/// untouched, readable by a guest in any language, e.g. mapped zero-copy
/// by a C function) and returns a reference to it; read back as a
/// `Vec<u8>`. Large ones go straight into the node's shared memory with
/// one copy. Never blocks.
pub fn put_bytes(bytes: &[u8]) -> ObjectRef<Vec<u8>> {
    let id = mapping::put_bytes(bytes, wit::Codec::Raw, &[]);
    let r = ObjectRef::from_id(id.into());
    crate::refs::flush_deferred();
    r
}

/// Stores `value` as a new immutable object owned by the running task and
/// returns a reference to it. Never blocks.
///
/// # Panics
///
/// When rkyv cannot serialize `value` (a bug in the caller, not a condition
/// of the host).
pub fn put<T: Value>(value: &T) -> ObjectRef<T> {
    // One counting pass sizes the value for every path below.
    let large = value
        .encoded_len()
        .ok()
        .filter(|len| *len >= crate::mapped::INLINE_MAX);
    let streamed = large.and_then(|len| put_streaming(value, len));
    let id = match streamed {
        Some(id) => id,
        None => put_encoded(value, large),
    };
    let r = ObjectRef::from_id(id.into());
    crate::refs::flush_deferred();
    r
}

/// `value`, `len` bytes encoded, streamed into a reserved object of the
/// shared-memory store (one copy: see [`crate::stream`]); `None` when the
/// store has no room for it.
fn put_streaming<T: Value>(value: &T, len: usize) -> Option<wit::ObjectId> {
    let id = mapping::reserve(len as u64).ok()?;
    let (written, refs) = crate::refs::collecting(|| {
        value
            .encode_to_host(crate::stream::HostWriter::new(id))?
            .finish()
    });
    let refs: Vec<wit::ObjectId> = refs.into_iter().map(Into::into).collect();
    // Sealed even when encoding failed, so the object is not left half made.
    let size = *written.as_ref().unwrap_or(&0) as u64;
    let sealed = mapping::seal(id, size, wit::Codec::Rkyv, &refs);
    match (written, sealed) {
        (Ok(_), Ok(())) => Some(id),
        (Err(e), _) => panic!(
            "wray::put: could not encode {}: {e}",
            core::any::type_name::<T>()
        ),
        (_, Err(e)) => panic!("wray::put: the host did not seal the object: {}", e.message),
    }
}

/// `value` encoded into a buffer and handed to the host (which copies it,
/// spilling to disk when the store is full). `large`: its encoded length,
/// when that is at least the inline threshold.
fn put_encoded<T: Value>(value: &T, large: Option<usize>) -> wit::ObjectId {
    // Large values are encoded into a buffer of their exact size (a growing
    // buffer would need up to twice the value's size while it doubles).
    let (encoded, refs) = crate::refs::collecting(|| match large {
        Some(len) => value.encode_sized(len),
        None => value.encode(),
    });
    let encoded = match encoded {
        Ok(bytes) => bytes,
        Err(e) => panic!(
            "wray::put: could not encode {}: {e}",
            core::any::type_name::<T>()
        ),
    };
    let refs: Vec<wit::ObjectId> = refs.into_iter().map(Into::into).collect();
    if encoded.len() >= crate::mapped::INLINE_MAX {
        // Large: the host reads the encoded bytes in place and copies them
        // once, straight into the shared-memory store (or a spill file).
        mapping::put_bytes(&encoded, wit::Codec::Rkyv, &refs)
    } else {
        objects::put(&wit::Payload {
            codec: wit::Codec::Rkyv,
            data: encoded.into_vec(),
            refs,
        })
    }
}

/// Like [`put`], but serializes `value` straight into the object's pages in
/// the shared-memory store (mapped into this instance for the purpose): no
/// intermediate buffer at all, so the value is never held twice in memory.
/// On this kind of machine (4 KiB pages) mapping the pages costs more than
/// `put`'s one extra copy; prefer it for values too large to encode twice.
///
/// # Panics
///
/// When rkyv cannot serialize `value` (a bug in the caller).
pub fn put_in_place<T: Value>(value: &T) -> ObjectRef<T> {
    match crate::mapped::put_in_place(value) {
        Ok(id) => {
            let r = ObjectRef::from_id(id.into());
            crate::refs::flush_deferred();
            r
        }
        // No shared store here (or it is full): the copying path spills.
        Err(_) => put(value),
    }
}

/// Blocks until the object behind `r` exists and returns its value. While it
/// blocks, the task gives its CPU back to the node, so tasks that wait on
/// their own sub-tasks cannot deadlock.
///
/// # Errors
///
/// The error of the task that produced the object (or of the first failed
/// task it depends on), or kind [`InvalidArgument`](ErrorKind::InvalidArgument)
/// when the value is not a `T`.
pub fn get<T: Value>(r: &ObjectRef<T>) -> Result<T> {
    get_many(core::slice::from_ref(r), None).map(|mut values| values.remove(0))
}

/// Like [`get`], but returns an error of kind
/// [`Timeout`](ErrorKind::Timeout) when the object does not exist within
/// `timeout`.
///
/// # Errors
///
/// As [`get`], plus the timeout.
pub fn get_timeout<T: Value>(r: &ObjectRef<T>, timeout: Duration) -> Result<T> {
    get_many(core::slice::from_ref(r), Some(timeout)).map(|mut values| values.remove(0))
}

/// Returns the values of every ref in `refs`, in order, blocking until all of
/// them exist. One call to the host, whatever the number of refs.
///
/// # Errors
///
/// The error of the first ref (in order) whose object holds an error, or
/// kind [`InvalidArgument`](ErrorKind::InvalidArgument) when a value is not a
/// `T`.
pub fn get_all<T: Value>(refs: &[ObjectRef<T>]) -> Result<Vec<T>> {
    get_many(refs, None)
}

/// Waits until `num_returns` of `refs` exist (an object holding an error
/// counts) or `timeout` passes (`None`: no timeout), and splits `refs` into
/// `(ready, pending)`, each in input order. At most `num_returns` refs are
/// ready: the first ready ones in input order. A `num_returns` larger than
/// `refs.len()` is clamped.
pub fn wait<T>(
    refs: &[ObjectRef<T>],
    num_returns: usize,
    timeout: Option<Duration>,
) -> (Vec<ObjectRef<T>>, Vec<ObjectRef<T>>) {
    if refs.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let ids: Vec<wit::ObjectId> = refs.iter().map(|r| r.id().into()).collect();
    let num_returns = u32::try_from(num_returns.min(refs.len())).unwrap_or(u32::MAX);
    let ready = objects::wait(&ids, num_returns, timeout.map(millis));
    let mut done = Vec::new();
    let mut pending = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        if ready.get(i).copied().unwrap_or(false) {
            done.push(r.clone());
        } else {
            pending.push(r.clone());
        }
    }
    (done, pending)
}

/// `timeout` in whole milliseconds, saturating.
fn millis(timeout: Duration) -> u64 {
    u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)
}

/// One `objects.get` for all of `refs`, decoded as `T`.
fn get_many<T: Value>(refs: &[ObjectRef<T>], timeout: Option<Duration>) -> Result<Vec<T>> {
    let ids: Vec<wit::ObjectId> = refs.iter().map(|r| r.id().into()).collect();
    let payloads = objects::get(&ids, timeout.map(millis)).map_err(Error::from)?;
    if payloads.len() != refs.len() {
        return Err(task_error(
            ErrorKind::System,
            "get",
            format!(
                "the host returned {} values for {} objects",
                payloads.len(),
                refs.len()
            ),
        )
        .into());
    }
    refs.iter()
        .zip(payloads)
        .map(|(r, payload)| {
            from_payload(payload).map_err(|e| {
                Error::from(task_error(
                    ErrorKind::InvalidArgument,
                    "get",
                    format!("object {}: {e}", r.id()),
                ))
            })
        })
        .collect()
}
