//! Identities of tasks, actors and objects, mirroring the WIT records.

use core::fmt;

use rkyv::{Archive, Deserialize, Serialize};

use crate::bindings::types as wit;

/// A task's identity: 128 bits, derived by the host from the parent task's id
/// and the index of the submission within the parent.
///
/// Displays as 32 lowercase hex digits (`hi` then `lo`, big-endian), the same
/// text the host prints.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Archive,
    Serialize,
    Deserialize,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub struct TaskId {
    /// The high 64 bits.
    pub hi: u64,
    /// The low 64 bits.
    pub lo: u64,
}

/// An actor's identity: the id of the task that created it.
pub type ActorId = TaskId;

/// An object's identity: the producing task and an index.
///
/// Return values have indices `1..=num_returns`; objects made by
/// [`put`](crate::put) have the high bit set. Displays as the task's 32 hex
/// digits followed by 8 hex digits of the index.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Archive,
    Serialize,
    Deserialize,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub struct ObjectId {
    /// The task that produced (or `put`) the object.
    pub task: TaskId,
    /// The object's index within its task.
    pub index: u32,
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}{:016x}", self.hi, self.lo)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:08x}", self.task, self.index)
    }
}

impl TaskId {
    /// Parses the 32 hex digits [`Display`](fmt::Display) writes; `None`
    /// for anything else.
    pub fn from_hex(text: &str) -> Option<Self> {
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let (hi, lo) = text.split_at(16);
        Some(TaskId {
            hi: u64::from_str_radix(hi, 16).ok()?,
            lo: u64::from_str_radix(lo, 16).ok()?,
        })
    }
}

impl ObjectId {
    /// Parses the 40 hex digits [`Display`](fmt::Display) writes (the
    /// task's 32, then the index's 8); `None` for anything else.
    pub fn from_hex(text: &str) -> Option<Self> {
        if text.len() != 40 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let (task, index) = text.split_at(32);
        Some(ObjectId {
            task: TaskId::from_hex(task)?,
            index: u32::from_str_radix(index, 16).ok()?,
        })
    }
}

impl From<wit::TaskId> for TaskId {
    fn from(id: wit::TaskId) -> Self {
        TaskId {
            hi: id.hi,
            lo: id.lo,
        }
    }
}

impl From<TaskId> for wit::TaskId {
    fn from(id: TaskId) -> Self {
        wit::TaskId {
            hi: id.hi,
            lo: id.lo,
        }
    }
}

impl From<wit::ObjectId> for ObjectId {
    fn from(id: wit::ObjectId) -> Self {
        ObjectId {
            task: id.task.into(),
            index: id.index,
        }
    }
}

impl From<ObjectId> for wit::ObjectId {
    fn from(id: ObjectId) -> Self {
        wit::ObjectId {
            task: id.task.into(),
            index: id.index,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_id_displays_as_32_hex_digits() {
        let id = TaskId {
            hi: 0x0123_4567_89ab_cdef,
            lo: 0x1,
        };
        assert_eq!(id.to_string(), "0123456789abcdef0000000000000001");
    }

    #[test]
    fn ids_parse_back_from_their_hex_and_refuse_anything_else() {
        let id = ObjectId {
            task: TaskId {
                hi: 1,
                lo: u64::MAX,
            },
            index: 0x8000_0002,
        };
        assert_eq!(ObjectId::from_hex(&id.to_string()), Some(id));
        assert_eq!(TaskId::from_hex(&id.task.to_string()), Some(id.task));
        for bad in [
            "",
            "xyz",
            &"0".repeat(39),
            &"g".repeat(40),
            &"+1".repeat(20),
            "é",
        ] {
            assert_eq!(ObjectId::from_hex(bad), None, "{bad}");
        }
    }

    #[test]
    fn object_id_displays_task_then_index() {
        let id = ObjectId {
            task: TaskId { hi: 0, lo: 0xff },
            index: 0x8000_0001,
        };
        assert_eq!(id.to_string(), "000000000000000000000000000000ff80000001");
    }
}
