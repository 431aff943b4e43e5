//! How values become payloads and back: rkyv archives behind a 16-byte
//! header, checked on decode, between Rust guests; JSON (serde) with any
//! other language, over HTTP, or when the caller asks for it.
//!
//! Every payload carries its codec and a reader decodes what it gets: a
//! Rust guest reads both rkyv and JSON whatever it writes, so a call made
//! in JSON by a Python driver reaches the same function as one made in
//! rkyv by a Rust one. The results go back in the codec the caller asked
//! for (`task-options.result-codec`), rkyv when it said nothing.
//!
//! An rkyv payload (codec `rkyv`) is laid out as
//!
//! | bytes | what |
//! | --- | --- |
//! | 0..4 | `wry\x01`: the format and its version |
//! | 4..12 | the value's type fingerprint, little-endian ([`fingerprint`]) |
//! | 12..16 | zero |
//! | 16.. | the rkyv archive |
//!
//! Nothing another task wrote is trusted: a reader checks the header (a
//! value written as another type is an `invalid-argument` error naming the
//! type asked for), then validates the archive with rkyv's `bytecheck`
//! before it deserializes or hands out a reference into it. The header is
//! 16 bytes so the archive stays 16-byte aligned wherever the payload is.
//!
//! Payload bytes arrive in a `list<u8>` with no alignment guarantee, so
//! [`Value::decode`] copies them into an [`AlignedVec`] before validating and
//! deserializing the archive, unless they are 16-byte aligned already.

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

/// Bytes of the header before the archive.
pub const HEADER: usize = 16;

/// The header's first four bytes: the format and its version.
const MAGIC: [u8; 4] = *b"wry\x01";

/// The type fingerprint of `T`: FNV-1a (64 bit) over `T`'s type name as the
/// compiler spells it (`alloc::vec::Vec<f64>`, `my_crate::Point`). Two
/// components built from the same types with the same toolchain agree; a
/// value read as another type does not.
pub fn fingerprint<T: ?Sized>() -> u64 {
    // FNV-1a, 64 bit: http://www.isthe.com/chongo/tech/comp/fnv/
    core::any::type_name::<T>()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// The header of a `T`'s payload.
fn header<T>() -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(&MAGIC);
    h[4..12].copy_from_slice(&fingerprint::<T>().to_le_bytes());
    h
}

/// Why a payload is not a `T`'s: a message for an `invalid-argument`
/// error, naming the type asked for (rkyv's own error type keeps no message
/// in release builds, so the SDK's decode errors are this instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch(pub String);

impl core::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Mismatch {}

/// The archive inside `bytes`, a payload claimed to hold a `T`, once its
/// header says it does.
///
/// # Errors
/// [`Mismatch`] when `bytes` is too short, not in this format, or written
/// as another type.
pub fn archive_of<T>(bytes: &[u8]) -> Result<&[u8], Mismatch> {
    let name = core::any::type_name::<T>();
    let (head, archive) = match bytes.split_at_checked(HEADER) {
        Some(parts) => parts,
        None => {
            return Err(Mismatch(format!(
            "{} bytes are too short to hold a `{name}` (a wray value has a {HEADER}-byte header)",
            bytes.len()
        )))
        }
    };
    if head[..4] != MAGIC {
        return Err(Mismatch(format!(
            "the bytes are not a wray value (no `wry` header), so not a `{name}`"
        )));
    }
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&head[4..12]);
    let stored = u64::from_le_bytes(stored);
    if stored != fingerprint::<T>() {
        return Err(Mismatch(format!(
            "the value was written as another type, not as `{name}` (type fingerprint {stored:016x}, `{name}` is {:016x})",
            fingerprint::<T>()
        )));
    }
    Ok(archive)
}

/// A value that can travel between tasks: an argument, a return value or an
/// object in the store.
///
/// Implemented for every type that rkyv can serialize, validate and
/// deserialize, that serde can serialize and deserialize (its JSON form,
/// for guests in other languages) and that schemars can describe (its JSON
/// Schema, reported by `describe`): primitives, `String`, `Vec`, `Option`,
/// tuples, maps, [`ObjectRef`]s, [`ActorHandle`]s, and your own types with
/// [`#[wray::value]`](macro@crate::value), which derives all three.
///
/// [`ObjectRef`]: crate::ObjectRef
/// [`ActorHandle`]: crate::ActorHandle
pub trait Value:
    Sized + serde::Serialize + serde::de::DeserializeOwned + schemars::JsonSchema + 'static
{
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

    /// Checks that `bytes` (a payload: header and archive) hold a `Self`,
    /// validates the archive and deserializes it.
    ///
    /// # Errors
    ///
    /// The header names another type, or the archive is malformed: a
    /// message saying which.
    fn decode(bytes: &[u8]) -> Result<Self, Mismatch>;
}

impl<T> Value for T
where
    T: serde::Serialize + serde::de::DeserializeOwned + schemars::JsonSchema + 'static,
    T: Archive
        + for<'a> Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>
        + for<'a> Serialize<HighSerializer<Counter, ArenaHandle<'a>, rancor::Error>>
        + for<'a, 'b> Serialize<HighSerializer<Buffer<'b>, ArenaHandle<'a>, rancor::Error>>
        + for<'a> Serialize<HighSerializer<HostWriter, ArenaHandle<'a>, rancor::Error>>,
    T::Archived: for<'a> CheckBytes<HighValidator<'a, rancor::BoxedError>>
        + Deserialize<T, HighDeserializer<rancor::BoxedError>>,
{
    fn encode(&self) -> Result<AlignedVec, rancor::Error> {
        let mut out = AlignedVec::new();
        out.extend_from_slice(&header::<T>());
        rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, out)
    }

    fn encoded_len(&self) -> Result<usize, rancor::Error> {
        Ok(rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, Counter(HEADER))?.0)
    }

    fn encode_sized(&self, len: usize) -> Result<AlignedVec, rancor::Error> {
        let mut out = AlignedVec::with_capacity(len);
        out.extend_from_slice(&header::<T>());
        rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, out)
    }

    fn encode_into(&self, out: &mut [u8]) -> Result<usize, rancor::Error> {
        let Some((head, body)) = out.split_at_mut_checked(HEADER) else {
            return Err(<rancor::Error as rancor::Source>::new(Mismatch(format!(
                "{} bytes cannot hold a {HEADER}-byte header",
                out.len()
            ))));
        };
        // (rancor::Error keeps no message in release builds: encoding fails
        // only on a caller's bug, and says so in debug builds.)
        head.copy_from_slice(&header::<T>());
        let written = rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, Buffer::from(body))?;
        Ok(HEADER + written.len())
    }

    fn encode_to_host(&self, out: HostWriter) -> Result<HostWriter, rancor::Error> {
        let mut out = out;
        Writer::<rancor::Error>::write(&mut out, &header::<T>())?;
        rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, Mismatch> {
        let archive = archive_of::<T>(bytes)?;
        let invalid = |e: rancor::BoxedError| {
            Mismatch(format!(
                "not a valid `{}`: {e}",
                core::any::type_name::<T>()
            ))
        };
        // Read in place when the bytes happen to be 16-byte aligned (the
        // header keeps the archive aligned whenever the payload is);
        // otherwise copied to an aligned buffer first.
        if archive.as_ptr().align_offset(16) == 0 {
            return rkyv::from_bytes::<T, rancor::BoxedError>(archive).map_err(invalid);
        }
        let mut aligned = AlignedVec::<16>::with_capacity(archive.len());
        aligned.extend_from_slice(archive);
        rkyv::from_bytes::<T, rancor::BoxedError>(&aligned).map_err(invalid)
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

/// The encodings a typed value travels in (the WIT `codec`, less `raw`,
/// which only `Vec<u8>` is written in, on request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// rkyv: the fast path between Rust guests, readable in place.
    #[default]
    Rkyv,
    /// JSON: what guests in other languages and HTTP clients read.
    Json,
}

impl From<Format> for Codec {
    fn from(f: Format) -> Self {
        match f {
            Format::Rkyv => Codec::Rkyv,
            Format::Json => Codec::Json,
        }
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

/// Encodes `value` in `codec`: rkyv or JSON for any value, `raw` for a
/// `Vec<u8>` alone (its bytes, untouched).
///
/// # Errors
/// A message naming the type: the encoder failed, or `raw` was asked of
/// a type that is not `Vec<u8>`.
pub(crate) fn encode_as<T: Value>(value: &T, codec: Codec) -> Result<Payload, String> {
    let name = core::any::type_name::<T>();
    match codec {
        Codec::Rkyv => {
            to_payload(value).map_err(|e| format!("rkyv could not encode `{name}`: {e}"))
        }
        Codec::Json => {
            let (data, ids) = crate::refs::collecting(|| serde_json::to_vec(value));
            Ok(Payload {
                codec: Codec::Json,
                data: data.map_err(|e| format!("could not encode `{name}` as json: {e}"))?,
                refs: ids.into_iter().map(Into::into).collect(),
            })
        }
        Codec::Raw => match (value as &dyn core::any::Any).downcast_ref::<Vec<u8>>() {
            Some(bytes) => Ok(Payload {
                codec: Codec::Raw,
                data: bytes.clone(),
                refs: Vec::new(),
            }),
            None => Err(format!(
                "raw results were asked for, but `{name}` is a typed value, not `Vec<u8>` \
                 (ask for json or rkyv)"
            )),
        },
    }
}

/// Decodes a payload in whatever codec it came: rkyv, JSON, or (into a
/// `Vec<u8>` only) raw bytes; the error is a message naming what went
/// wrong, with both codecs when the payload's cannot hold a `T`. Takes the
/// payload by value: raw bytes become the `Vec<u8>` with no copy.
pub(crate) fn from_payload<T: Value>(payload: Payload) -> Result<T, String> {
    match payload.codec {
        Codec::Rkyv => decode_rkyv(&payload.data),
        Codec::Json => serde_json::from_slice::<T>(&payload.data).map_err(|e| {
            format!(
                "could not decode {} bytes of json as `{}`: {e}",
                payload.data.len(),
                core::any::type_name::<T>()
            )
        }),
        Codec::Raw => {
            let bytes: Box<dyn core::any::Any> = Box::new(payload.data);
            bytes.downcast::<T>().map(|b| *b).map_err(|_| {
                format!(
                    "codec mismatch: `{}` is read from rkyv or json, the value is raw bytes \
                     (only a Vec<u8> reads raw)",
                    core::any::type_name::<T>()
                )
            })
        }
    }
}

/// Decodes `bytes`, an rkyv payload (header, then archive), as a `T`.
///
/// # Errors
///
/// A message naming the length and the type when the bytes are not a `T`.
pub(crate) fn decode_rkyv<T: Value>(bytes: &[u8]) -> Result<T, String> {
    T::decode(bytes).map_err(|e| {
        format!(
            "could not decode {} bytes as `{}`: {e}",
            bytes.len(),
            core::any::type_name::<T>()
        )
    })
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
        assert_eq!(from_payload::<T>(payload), Ok(value));
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
    fn json_is_read_and_written_and_raw_only_as_bytes() {
        let json = |text: &str| Payload {
            codec: Codec::Json,
            data: text.as_bytes().to_vec(),
            refs: Vec::new(),
        };
        assert_eq!(from_payload::<i64>(json("1")), Ok(1));
        assert_eq!(
            from_payload::<Vec<String>>(json(r#"["a","b"]"#)),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
        let err = from_payload::<i64>(json(r#""one""#)).unwrap_err();
        assert!(err.contains("json") && err.contains("i64"), "{err}");
        let encoded = encode_as(&(1u8, "x".to_string()), Codec::Json).expect("json");
        assert_eq!(encoded.data, br#"[1,"x"]"#);
        let raw = Payload {
            codec: Codec::Raw,
            data: vec![1, 2],
            refs: Vec::new(),
        };
        assert_eq!(from_payload::<Vec<u8>>(raw.clone()), Ok(vec![1, 2]));
        let err = from_payload::<i64>(raw).unwrap_err();
        assert!(
            err.contains("codec mismatch") && err.contains("raw"),
            "{err}"
        );
        assert_eq!(
            encode_as(&vec![7u8], Codec::Raw).expect("raw").data,
            vec![7]
        );
        assert!(encode_as(&7i64, Codec::Raw).is_err());
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(String::decode(&[0xff; 3]).is_err());
        // A valid header over garbage: bytecheck refuses the archive.
        let mut forged = header::<Vec<u64>>().to_vec();
        forged.extend_from_slice(&[0xff; 64]);
        assert!(Vec::<u64>::decode(&forged).is_err());
    }

    #[test]
    fn a_value_read_as_another_type_is_refused_naming_it() {
        let bytes = vec![1u8, 2, 3].encode().expect("encode");
        let err = Vec::<f64>::decode(&bytes).unwrap_err().to_string();
        assert!(err.contains("alloc::vec::Vec<f64>"), "{err}");
        assert!(err.contains("written as another type"), "{err}");
        assert_eq!(Vec::<u8>::decode(&bytes).expect("same type"), vec![1, 2, 3]);
        assert_ne!(fingerprint::<u64>(), fingerprint::<i64>());
    }
}
