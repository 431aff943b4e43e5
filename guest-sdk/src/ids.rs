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
    fn object_id_displays_task_then_index() {
        let id = ObjectId {
            task: TaskId { hi: 0, lo: 0xff },
            index: 0x8000_0001,
        };
        assert_eq!(id.to_string(), "000000000000000000000000000000ff80000001");
    }
}
