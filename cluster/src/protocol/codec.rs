//! How a peer message becomes bytes and back: [`Message`] pairs a host
//! type with its protobuf form (`wire`), [`encode`] and [`decode`] write
//! and read it, and [`BadMessage`] says what was wrong with one from a
//! peer (never a panic: every id, count and number is checked).

use bytes::Bytes;
use wray_control_plane::{ObjectId, TaskId};

/// A message of the peer protocol, written as its [`Message::Wire`] form.
pub(crate) trait Message: Sized + Send + 'static {
    /// Its protobuf form.
    type Wire: prost::Message + Default;

    /// Its protobuf form (moves the bytes it holds, copies none).
    fn into_wire(self) -> Self::Wire;

    /// The message `wire` (from a peer) holds.
    ///
    /// # Errors
    /// [`BadMessage`] naming the field that is missing or out of bounds.
    fn from_wire(wire: Self::Wire) -> Result<Self, BadMessage>;
}

/// A message is its own wire form (a type deriving `prost::Message` whose
/// every value is valid).
macro_rules! own_wire {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::protocol::codec::Message for $t {
            type Wire = $t;
            fn into_wire(self) -> $t {
                self
            }
            fn from_wire(wire: $t) -> Result<$t, $crate::protocol::codec::BadMessage> {
                Ok(wire)
            }
        }
    )*};
}
pub(crate) use own_wire;

/// Encodes `message`.
pub(crate) fn encode<T: Message>(message: T) -> Bytes {
    Bytes::from(prost::Message::encode_to_vec(&message.into_wire()))
}

/// Decodes a `T` from a peer's `body` (at most the channel's bound on a
/// body: 16 MiB).
///
/// # Errors
/// [`BadMessage`]: not protobuf, or a field missing or out of bounds.
pub(crate) fn decode<T: Message>(body: &[u8]) -> Result<T, BadMessage> {
    T::from_wire(<T::Wire as prost::Message>::decode(body)?)
}

/// What is wrong with a message from a peer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadMessage {
    /// The bytes are not the message's protobuf encoding.
    #[error("not a well-formed message: {0}")]
    Decode(#[from] prost::DecodeError),
    /// A field the message needs is not there.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A field holding ids is not a whole number of them.
    #[error("{field} is {len} bytes, not {size} bytes per id")]
    IdLength {
        /// The field.
        field: &'static str,
        /// Its length, in bytes.
        len: usize,
        /// The size of one id, in bytes.
        size: usize,
    },
    /// A field's value is out of its bounds.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why, with the value.
        reason: String,
    },
    /// A task message of a version this node does not read.
    #[error("a task message of version {got}; this node reads versions 1 to {max}")]
    Version {
        /// The version the sender wrote (0: none).
        got: u32,
        /// The newest version this node reads.
        max: u32,
    },
}

impl BadMessage {
    /// An [`Invalid`](BadMessage::Invalid) of `field`.
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        BadMessage::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

/// Bytes of a task's (or an actor's) id.
pub(crate) const TASK_ID_BYTES: usize = 16;
/// Bytes of an object's id: its task's 16, then its index (big-endian).
pub(crate) const OBJECT_ID_BYTES: usize = 20;

/// A task id from the bytes of `field`.
///
/// # Errors
/// [`BadMessage::IdLength`] unless they are 16 bytes.
pub(crate) fn task_id(field: &'static str, bytes: &[u8]) -> Result<TaskId, BadMessage> {
    <[u8; TASK_ID_BYTES]>::try_from(bytes)
        .map(TaskId)
        .map_err(|_| BadMessage::IdLength {
            field,
            len: bytes.len(),
            size: TASK_ID_BYTES,
        })
}

/// The 20 bytes of object `id`.
pub(crate) fn object_id_bytes(id: &ObjectId) -> [u8; OBJECT_ID_BYTES] {
    let mut out = [0u8; OBJECT_ID_BYTES];
    out[..TASK_ID_BYTES].copy_from_slice(&id.task.0);
    out[TASK_ID_BYTES..].copy_from_slice(&id.index.to_be_bytes());
    out
}

/// An object id from the bytes of `field`.
///
/// # Errors
/// [`BadMessage::IdLength`] unless they are 20 bytes.
pub(crate) fn object_id(field: &'static str, bytes: &[u8]) -> Result<ObjectId, BadMessage> {
    let bad = || BadMessage::IdLength {
        field,
        len: bytes.len(),
        size: OBJECT_ID_BYTES,
    };
    if bytes.len() != OBJECT_ID_BYTES {
        return Err(bad());
    }
    let (task, index) = bytes.split_at(TASK_ID_BYTES);
    let index = <[u8; 4]>::try_from(index).map_err(|_| bad())?;
    Ok(ObjectId {
        task: task_id(field, task)?,
        index: u32::from_be_bytes(index),
    })
}

/// Object ids packed, 20 bytes each.
pub(crate) fn pack_objects(ids: &[ObjectId]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ids.len().saturating_mul(OBJECT_ID_BYTES));
    for id in ids {
        out.extend_from_slice(&object_id_bytes(id));
    }
    out
}

/// The object ids packed in `field`.
///
/// # Errors
/// [`BadMessage::IdLength`] unless it is a whole number of ids.
pub(crate) fn unpack_objects(
    field: &'static str,
    bytes: &[u8],
) -> Result<Vec<ObjectId>, BadMessage> {
    if bytes.len() % OBJECT_ID_BYTES != 0 {
        return Err(BadMessage::IdLength {
            field,
            len: bytes.len(),
            size: OBJECT_ID_BYTES,
        });
    }
    bytes
        .chunks_exact(OBJECT_ID_BYTES)
        .map(|id| object_id(field, id))
        .collect()
}

/// Task ids packed, 16 bytes each.
pub(crate) fn pack_tasks(ids: &[TaskId]) -> Vec<u8> {
    ids.iter().flat_map(|id| id.0).collect()
}

/// The task ids packed in `field`.
///
/// # Errors
/// [`BadMessage::IdLength`] unless it is a whole number of ids.
pub(crate) fn unpack_tasks(field: &'static str, bytes: &[u8]) -> Result<Vec<TaskId>, BadMessage> {
    if bytes.len() % TASK_ID_BYTES != 0 {
        return Err(BadMessage::IdLength {
            field,
            len: bytes.len(),
            size: TASK_ID_BYTES,
        });
    }
    bytes
        .chunks_exact(TASK_ID_BYTES)
        .map(|id| task_id(field, id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fixed_bytes_and_checked() {
        let id = ObjectId {
            task: TaskId([7; 16]),
            index: 0x8000_0002,
        };
        let bytes = object_id_bytes(&id);
        assert_eq!(&bytes[16..], &[0x80, 0, 0, 2]);
        assert_eq!(object_id("id", &bytes).unwrap(), id);
        let packed = pack_objects(&[id, id]);
        assert_eq!(packed.len(), 40);
        assert_eq!(unpack_objects("refs", &packed).unwrap(), vec![id, id]);
        assert!(unpack_objects("refs", &packed[..39]).is_err());
        assert!(object_id("id", &bytes[..19]).is_err());
        let tasks = pack_tasks(&[TaskId([1; 16]), TaskId([2; 16])]);
        assert_eq!(
            unpack_tasks("tasks", &tasks).unwrap(),
            vec![TaskId([1; 16]), TaskId([2; 16])]
        );
        let err = unpack_tasks("tasks", &tasks[..31]).unwrap_err();
        assert_eq!(err.to_string(), "tasks is 31 bytes, not 16 bytes per id");
        assert!(unpack_tasks("tasks", &[]).unwrap().is_empty());
    }
}
