//! How values become payloads and back: rkyv archives, checked on decode.
//!
//! Payload bytes arrive in a `list<u8>` with no alignment guarantee, so
//! [`Value::decode`] copies them into an [`AlignedVec`] before validating and
//! deserializing the archive.

use rkyv::api::high::{HighDeserializer, HighSerializer, HighValidator};
use rkyv::bytecheck::CheckBytes;
use rkyv::rancor;
use rkyv::ser::allocator::ArenaHandle;
use rkyv::ser::writer::Buffer;
use rkyv::ser::{Positional, Writer};
use rkyv::util::AlignedVec;
use rkyv::{Archive, Deserialize, Serialize};

use crate::bindings::types::{Codec, Payload};
use crate::stream::HostWriter;

/// A value that can travel between tasks: an argument, a return value or an
/// object in the store.
///
/// Implemented for every type rkyv can serialize, validate and deserialize:
/// primitives, `String`, `Vec`, `Option`, tuples, maps, [`ObjectRef`]s,
/// [`ActorHandle`]s and your own types with
/// `#[derive(Archive, Serialize, Deserialize)]` (see [`macro@crate::value`]).
///
/// [`ObjectRef`]: crate::ObjectRef
/// [`ActorHandle`]: crate::ActorHandle
pub trait Value: Sized {
    /// Serializes `self` into an rkyv archive.
    ///
    /// # Errors
    ///
    /// Whatever rkyv reports (e.g. a length that does not fit the archive
    /// format).
    fn encode(&self) -> Result<AlignedVec, rancor::Error>;

    /// The length in bytes of `self`'s archive, without writing it (a
    /// serialization pass into a counter).
    ///
    /// # Errors
    ///
    /// As [`encode`](Value::encode).
    fn encoded_len(&self) -> Result<usize, rancor::Error>;

    /// Like [`encode`](Value::encode), into a buffer of exactly `len` bytes
    /// (from [`encoded_len`](Value::encoded_len)): no reallocation while
    /// writing, so a large value needs its own size once more, not twice.
    ///
    /// # Errors
    ///
    /// As [`encode`](Value::encode).
    fn encode_sized(&self, len: usize) -> Result<AlignedVec, rancor::Error>;

    /// Serializes `self` into `out` (16-byte aligned, at least
    /// [`encoded_len`](Value::encoded_len) long) and returns the length
    /// written: how a large value is built in place, in shared memory.
    ///
    /// # Errors
    ///
    /// As [`encode`](Value::encode), or `out` is too short.
    fn encode_into(&self, out: &mut [u8]) -> Result<usize, rancor::Error>;

    /// Serializes `self` through `out`, a writer into an object being made
    /// in the shared-memory store, and returns the writer (with its last
    /// bytes still staged: flush it).
    ///
    /// # Errors
    ///
    /// As [`encode`](Value::encode), or the host rejected a write.
    #[doc(hidden)]
    fn encode_to_host(&self, out: HostWriter) -> Result<HostWriter, rancor::Error>;

    /// Validates `bytes` as an archive of `Self` and deserializes it.
    ///
    /// # Errors
    ///
    /// The archive is malformed or holds another type.
    fn decode(bytes: &[u8]) -> Result<Self, rancor::Error>;
}

impl<T> Value for T
where
    T: Archive
        + for<'a> Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>
        + for<'a> Serialize<HighSerializer<Counter, ArenaHandle<'a>, rancor::Error>>
        + for<'a, 'b> Serialize<HighSerializer<Buffer<'b>, ArenaHandle<'a>, rancor::Error>>
        + for<'a> Serialize<HighSerializer<HostWriter, ArenaHandle<'a>, rancor::Error>>,
    T::Archived: for<'a> CheckBytes<HighValidator<'a, rancor::Error>>
        + Deserialize<T, HighDeserializer<rancor::Error>>,
{
    fn encode(&self) -> Result<AlignedVec, rancor::Error> {
        rkyv::to_bytes::<rancor::Error>(self)
    }

    fn encoded_len(&self) -> Result<usize, rancor::Error> {
        Ok(rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, Counter(0))?.0)
    }

    fn encode_sized(&self, len: usize) -> Result<AlignedVec, rancor::Error> {
        rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, AlignedVec::with_capacity(len))
    }

    fn encode_into(&self, out: &mut [u8]) -> Result<usize, rancor::Error> {
        let written = rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, Buffer::from(out))?;
        Ok(written.len())
    }

    fn encode_to_host(&self, out: HostWriter) -> Result<HostWriter, rancor::Error> {
        rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, rancor::Error> {
        let mut aligned = AlignedVec::<16>::with_capacity(bytes.len());
        aligned.extend_from_slice(bytes);
        rkyv::from_bytes::<T, rancor::Error>(&aligned)
    }
}

/// An rkyv writer that only counts the bytes it is given.
#[doc(hidden)]
pub struct Counter(usize);

impl Positional for Counter {
    fn pos(&self) -> usize {
        self.0
    }
}

impl<E> Writer<E> for Counter {
    fn write(&mut self, bytes: &[u8]) -> Result<(), E> {
        self.0 += bytes.len();
        Ok(())
    }
}

/// Encodes `value` as an rkyv payload, with the ids of the refs inside it
/// (kept alive until the host has the payload: see [`crate::refs`]).
pub(crate) fn to_payload<T: Value>(value: &T) -> Result<Payload, rancor::Error> {
    let (data, ids) = crate::refs::collecting(|| value.encode());
    Ok(Payload {
        codec: Codec::Rkyv,
        data: data?.into_vec(),
        refs: ids.into_iter().map(Into::into).collect(),
    })
}

/// Decodes an rkyv payload; the error is a message naming what went wrong.
pub(crate) fn from_payload<T: Value>(payload: &Payload) -> Result<T, String> {
    match payload.codec {
        Codec::Rkyv => T::decode(&payload.data).map_err(|e| {
            format!(
                "could not decode {} bytes as {}: {e}",
                payload.data.len(),
                core::any::type_name::<T>()
            )
        }),
        Codec::Json => Err(format!(
            "expected an rkyv payload for {}, got json",
            core::any::type_name::<T>()
        )),
        Codec::Raw => Err(format!(
            "expected an rkyv payload for {}, got raw bytes",
            core::any::type_name::<T>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn round_trip<T: Value + PartialEq + core::fmt::Debug>(value: T) {
        let payload = to_payload(&value).expect("encode");
        // Decode from a deliberately misaligned copy, as a `list<u8>` may be.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&payload.data);
        let back: T = T::decode(&shifted[1..]).expect("decode");
        assert_eq!(back, value);
        assert_eq!(from_payload::<T>(&payload), Ok(value));
    }

    #[test]
    fn values_round_trip() {
        round_trip(42i64);
        round_trip("hello".to_string());
        round_trip(vec![1.5f64, 2.5]);
        round_trip(Some(7u32));
        round_trip((1u8, "a".to_string()));
        round_trip(BTreeMap::from([
            ("a".to_string(), 1i64),
            ("b".to_string(), 2),
        ]));
        round_trip(Vec::<u8>::new());
        round_trip(vec![("w".to_string(), 3u64)]);
    }

    #[test]
    fn counting_and_in_place_encoding_match_encode() {
        let value = (vec![7u8; 1000], "x".to_string(), vec![1.5f64; 3]);
        let bytes = value.encode().expect("encode");
        assert_eq!(value.encoded_len().expect("len"), bytes.len());
        let sized = value.encode_sized(bytes.len()).expect("sized");
        assert_eq!((&sized[..], sized.capacity()), (&bytes[..], bytes.len()));
        let mut out = AlignedVec::<16>::with_capacity(bytes.len());
        out.resize(bytes.len(), 0);
        assert_eq!(value.encode_into(&mut out).expect("into"), bytes.len());
        assert_eq!(&out[..], &bytes[..]);
        assert!(value.encode_into(&mut out[..10]).is_err());
    }

    #[test]
    fn wrong_codec_is_an_error() {
        let payload = Payload {
            codec: Codec::Json,
            data: b"1".to_vec(),
            refs: Vec::new(),
        };
        assert!(from_payload::<i64>(&payload).is_err());
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(String::decode(&[0xff; 3]).is_err());
    }
}
