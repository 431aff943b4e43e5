//! How values become payloads and back: rkyv archives, checked on decode.
//!
//! Payload bytes arrive in a `list<u8>` with no alignment guarantee, so
//! [`Value::decode`] copies them into an [`AlignedVec`] before validating and
//! deserializing the archive.

use rkyv::api::high::{HighDeserializer, HighSerializer, HighValidator};
use rkyv::bytecheck::CheckBytes;
use rkyv::rancor;
use rkyv::ser::allocator::ArenaHandle;
use rkyv::util::AlignedVec;
use rkyv::{Archive, Deserialize, Serialize};

use crate::bindings::types::{Codec, Payload};

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

    /// Validates `bytes` as an archive of `Self` and deserializes it.
    ///
    /// # Errors
    ///
    /// The archive is malformed or holds another type.
    fn decode(bytes: &[u8]) -> Result<Self, rancor::Error>;
}

impl<T> Value for T
where
    T: Archive + for<'a> Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>,
    T::Archived: for<'a> CheckBytes<HighValidator<'a, rancor::Error>>
        + Deserialize<T, HighDeserializer<rancor::Error>>,
{
    fn encode(&self) -> Result<AlignedVec, rancor::Error> {
        rkyv::to_bytes::<rancor::Error>(self)
    }

    fn decode(bytes: &[u8]) -> Result<Self, rancor::Error> {
        let mut aligned = AlignedVec::<16>::with_capacity(bytes.len());
        aligned.extend_from_slice(bytes);
        rkyv::from_bytes::<T, rancor::Error>(&aligned)
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
