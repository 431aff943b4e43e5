//! Identifiers: [`JobId`], [`TaskId`], [`ObjectId`], [`ActorId`].
//!
//! Every task, object and actor belongs to a *job* (one driver run; later an
//! HTTP invocation or a submitted job). A [`TaskId`] is 128 bits: the first
//! 64 are its job's random id, the last 64 are derived, as in Ray, from the
//! parent task's id and the index of the submission within the parent (the
//! first 8 bytes of SHA-256 over both). So within a job a re-run of the same
//! program gives the same ids (the base of lineage), while ids of another
//! job cannot be guessed: they carry 64 random bits the guest never sees.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A job's identity: 64 random bits (from the operating system's random
/// source), shown as 16 hex digits. It is the first half of every id the
/// job makes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobId(pub u64);

impl JobId {
    /// A fresh job id from the operating system's random source (a
    /// clock-derived value where the OS has none).
    pub fn random() -> Self {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            // No OS randomness (never on Linux): fall back to the clock,
            // which still differs between jobs of one node.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = (nanos as u64).to_le_bytes();
        }
        JobId(u64::from_le_bytes(bytes))
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JobId({self})")
    }
}

/// A task's identity: 16 bytes (its job's 8, then 8 derived from its
/// parent), shown as 32 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskId(pub [u8; 16]);

/// An actor's identity: the id of the task that created it.
pub type ActorId = TaskId;

/// Index bit that marks an object made by `put` rather than returned.
pub const PUT_INDEX_BIT: u32 = 0x8000_0000;

/// The most objects one task may return (`num-returns`): return indices are
/// `1..=MAX_RETURNS`. 16,384: past Ray's envelope of 3,000+ objects
/// returned by one task (Ray's `release/benchmarks/README.md`); each is one
/// pending object when the task is submitted, charged to the store's
/// budget like any other, so the bound is on one submission's size.
pub const MAX_RETURNS: u32 = 16_384;

/// The most objects one task may make with `put`, `create` and `reserve`:
/// put indices are `0..MAX_PUTS`, below [`PUT_INDEX_BIT`].
pub const MAX_PUTS: u32 = PUT_INDEX_BIT - 1;

impl TaskId {
    /// The root task of `job` (its driver: the `main` of one `wray run`).
    pub fn driver(job: JobId) -> Self {
        Self::derive(job, b"wray-driver", &[])
    }

    /// The `index`-th task submitted by `self` (0-based), in `self`'s job.
    pub fn child(&self, index: u64) -> Self {
        Self::derive(self.job(), &self.0, &index.to_le_bytes())
    }

    /// The job this task belongs to (its first 8 bytes).
    pub fn job(&self) -> JobId {
        let mut hi = [0u8; 8];
        hi.copy_from_slice(&self.0[..8]);
        JobId(u64::from_be_bytes(hi))
    }

    fn derive(job: JobId, a: &[u8], b: &[u8]) -> Self {
        let digest = Sha256::new().chain_update(a).chain_update(b).finalize();
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&job.0.to_be_bytes());
        id[8..].copy_from_slice(&digest[..8]);
        Self(id)
    }

    /// The id as two big-endian halves `(hi, lo)`, the WIT `task-id` shape
    /// (`hi` is the job).
    pub fn to_parts(&self) -> (u64, u64) {
        let (mut hi, mut lo) = ([0u8; 8], [0u8; 8]);
        hi.copy_from_slice(&self.0[..8]);
        lo.copy_from_slice(&self.0[8..]);
        (u64::from_be_bytes(hi), u64::from_be_bytes(lo))
    }

    /// The inverse of [`TaskId::to_parts`].
    pub fn from_parts(hi: u64, lo: u64) -> Self {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&hi.to_be_bytes());
        id[8..].copy_from_slice(&lo.to_be_bytes());
        Self(id)
    }

    /// The object returned at position `index` (0-based) of this task, or
    /// `None` past [`MAX_RETURNS`].
    pub fn return_object(&self, index: u32) -> Option<ObjectId> {
        (index < MAX_RETURNS).then(|| ObjectId {
            task: *self,
            index: index + 1,
        })
    }

    /// The `index`-th object this task made with `put` (0-based), or `None`
    /// past [`MAX_PUTS`].
    pub fn put_object(&self, index: u32) -> Option<ObjectId> {
        (index < MAX_PUTS).then_some(ObjectId {
            task: *self,
            index: PUT_INDEX_BIT | index,
        })
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

    /// The job the object belongs to (its task's).
    pub fn job(&self) -> JobId {
        self.task.job()
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

/// Text that is not an id: what was expected, and what was given (cut).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not {expected}")]
pub struct BadId {
    /// What an id of this kind looks like.
    pub expected: &'static str,
    /// The text given (at most 80 bytes of it).
    pub given: String,
}

fn bad(expected: &'static str, s: &str) -> BadId {
    let mut end = s.len().min(80);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    BadId {
        expected,
        given: s[..end].to_string(),
    }
}

impl std::str::FromStr for TaskId {
    type Err = BadId;

    /// Parses the 32 hex digits [`TaskId`]'s `Display` writes.
    fn from_str(s: &str) -> Result<Self, BadId> {
        const EXPECTED: &str = "a task or actor id (32 hex digits)";
        let mut bytes = [0u8; 16];
        if s.len() != 32 {
            return Err(bad(EXPECTED, s));
        }
        hex::decode_to_slice(s, &mut bytes).map_err(|_| bad(EXPECTED, s))?;
        Ok(TaskId(bytes))
    }
}

impl std::str::FromStr for JobId {
    type Err = BadId;

    /// Parses the 16 hex digits [`JobId`]'s `Display` writes.
    fn from_str(s: &str) -> Result<Self, BadId> {
        const EXPECTED: &str = "a job id (16 hex digits)";
        if s.len() != 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(EXPECTED, s));
        }
        u64::from_str_radix(s, 16)
            .map(JobId)
            .map_err(|_| bad(EXPECTED, s))
    }
}

impl std::str::FromStr for ObjectId {
    type Err = BadId;

    /// Parses the 40 hex digits [`ObjectId`]'s `Display` writes.
    fn from_str(s: &str) -> Result<Self, BadId> {
        const EXPECTED: &str = "an object id (40 hex digits)";
        if s.len() != 40 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(EXPECTED, s));
        }
        let task = s[..32].parse().map_err(|_| bad(EXPECTED, s))?;
        let index = u32::from_str_radix(&s[32..], 16).map_err(|_| bad(EXPECTED, s))?;
        Ok(ObjectId { task, index })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_what_display_writes_and_refuse_anything_else() {
        let task = TaskId::from_parts(0x0123_4567_89ab_cdef, 42);
        let object = ObjectId {
            task,
            index: 0x8000_0001,
        };
        assert_eq!(task.to_string().parse::<TaskId>(), Ok(task));
        assert_eq!(object.to_string().parse::<ObjectId>(), Ok(object));
        let signed = format!("{task}+0000001");
        for bad in [
            "",
            "xyz",
            &"0".repeat(39),
            &"g".repeat(40),
            &"é".repeat(20),
            &signed,
        ] {
            assert!(bad.parse::<ObjectId>().is_err(), "{bad}");
        }
        assert!("+1".repeat(16).parse::<TaskId>().is_err());
        let job = JobId(0xfedc_ba98_0000_0001);
        assert_eq!(job.to_string().parse::<JobId>(), Ok(job));
        for bad in ["", "+123456789abcdef", &"0".repeat(17), &task.to_string()] {
            assert!(bad.parse::<JobId>().is_err(), "{bad}");
        }
    }
    use proptest::prelude::*;

    #[test]
    fn ids_are_deterministic_within_a_job_and_carry_it() {
        let job = JobId(7);
        let root = TaskId::driver(job);
        assert_eq!(root, TaskId::driver(job));
        assert_ne!(root, TaskId::driver(JobId(8)));
        assert_eq!(root.child(0), root.child(0));
        assert_ne!(root.child(0), root.child(1));
        assert_eq!(root.child(3).child(1).job(), job);
        assert_eq!(root.to_parts().0, 7);
        let (r, p) = (root.return_object(0).unwrap(), root.put_object(0).unwrap());
        assert_ne!(r, p);
        assert!(root.put_object(3).unwrap().is_put());
        assert!(!root.return_object(3).unwrap().is_put());
        assert_eq!(r.index, 1);
        assert_eq!(r.job(), job);
    }

    #[test]
    fn indices_past_their_bounds_are_refused() {
        let root = TaskId::driver(JobId(1));
        assert!(root.return_object(MAX_RETURNS - 1).is_some());
        assert!(root.return_object(MAX_RETURNS).is_none());
        assert!(root.return_object(u32::MAX).is_none());
        assert!(root.put_object(MAX_PUTS - 1).is_some());
        assert!(root.put_object(MAX_PUTS).is_none());
        assert!(root.put_object(u32::MAX).is_none());
    }

    #[test]
    fn random_jobs_differ() {
        assert_ne!(JobId::random(), JobId::random());
    }

    proptest! {
        #[test]
        fn parts_round_trip(hi: u64, lo: u64) {
            let id = TaskId::from_parts(hi, lo);
            prop_assert_eq!(id.to_parts(), (hi, lo));
            prop_assert_eq!(id.job(), JobId(hi));
        }
    }
}
