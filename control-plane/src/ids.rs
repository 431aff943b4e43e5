//! Deterministic identifiers: [`TaskId`], [`ObjectId`], [`ActorId`].
//!
//! As in Ray, a task's id is derived from its parent task's id and the index
//! of the submission within the parent, so a re-run of the same program gives
//! the same ids (the base of lineage). Ids are 128 bits: the first 16 bytes of
//! SHA-256 over (parent id, index).

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A task's identity: 16 bytes, shown as 32 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskId(pub [u8; 16]);

/// An actor's identity: the id of the task that created it.
pub type ActorId = TaskId;

/// Index bit that marks an object made by `put` rather than returned.
pub const PUT_INDEX_BIT: u32 = 0x8000_0000;

impl TaskId {
    /// The root task of driver `job` (the `main` of one `wray run`).
    pub fn driver(job: u64) -> Self {
        Self::hash(b"wray-driver", &job.to_le_bytes())
    }

    /// The `index`-th task submitted by `self` (0-based).
    pub fn child(&self, index: u64) -> Self {
        Self::hash(&self.0, &index.to_le_bytes())
    }

    fn hash(a: &[u8], b: &[u8]) -> Self {
        let digest = Sha256::new().chain_update(a).chain_update(b).finalize();
        let mut id = [0u8; 16];
        id.copy_from_slice(&digest[..16]);
        Self(id)
    }

    /// The id as two big-endian halves `(hi, lo)`, the WIT `task-id` shape.
    pub fn to_parts(&self) -> (u64, u64) {
        let (hi, lo) = self.0.split_at(8);
        (
            u64::from_be_bytes(hi.try_into().unwrap_or_default()),
            u64::from_be_bytes(lo.try_into().unwrap_or_default()),
        )
    }

    /// The inverse of [`TaskId::to_parts`].
    pub fn from_parts(hi: u64, lo: u64) -> Self {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&hi.to_be_bytes());
        id[8..].copy_from_slice(&lo.to_be_bytes());
        Self(id)
    }

    /// The object returned at position `index` (0-based) of this task.
    pub fn return_object(&self, index: u32) -> ObjectId {
        ObjectId {
            task: *self,
            index: index + 1,
        }
    }

    /// The `index`-th object this task made with `put` (0-based).
    pub fn put_object(&self, index: u32) -> ObjectId {
        ObjectId {
            task: *self,
            index: PUT_INDEX_BIT | index,
        }
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({self})")
    }
}

/// An object's identity: the task that produced it and an index (returns
/// 1..=n, puts with [`PUT_INDEX_BIT`] set). Shown as 40 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectId {
    /// The task that returned or put the object.
    pub task: TaskId,
    /// Return index (1-based) or put index with [`PUT_INDEX_BIT`].
    pub index: u32,
}

impl ObjectId {
    /// Whether the object was made by `put` (rather than returned by a task).
    pub fn is_put(&self) -> bool {
        self.index & PUT_INDEX_BIT != 0
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:08x}", self.task, self.index)
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_are_deterministic_and_distinct() {
        let root = TaskId::driver(1);
        assert_eq!(root, TaskId::driver(1));
        assert_ne!(root, TaskId::driver(2));
        assert_eq!(root.child(0), root.child(0));
        assert_ne!(root.child(0), root.child(1));
        assert_ne!(root.return_object(0), root.put_object(0));
        assert!(root.put_object(3).is_put());
        assert!(!root.return_object(3).is_put());
        assert_eq!(root.return_object(0).index, 1);
    }

    proptest! {
        #[test]
        fn parts_round_trip(hi: u64, lo: u64) {
            let id = TaskId::from_parts(hi, lo);
            prop_assert_eq!(id.to_parts(), (hi, lo));
        }
    }
}
