//! Where a value's bytes live ([`Data`]), and what each place may hold.
//!
//! Three places, tried in an order that depends on the value's size (see
//! [`ObjectStore::value`](super::ObjectStore::value)):
//! - the host's heap ([`Data::Inline`]), for values under
//!   [`INLINE_MAX`](super::INLINE_MAX) (and, last, larger ones that fit
//!   nowhere else), counted against the store's inline budget with the refs
//!   of every value a guest hands over ([`Refs`]): a guest cannot grow the
//!   heap past it with small objects;
//! - a block of the shared-memory arena ([`Data::Shared`]);
//! - a spill file ([`Data::Spilled`]): a nameless file (`O_TMPFILE`) in the
//!   spill directory, mapped read-only; at most a bounded number at once,
//!   since each costs an open file and a kernel mapping.
//!
//! Every place gives its room back when the value is dropped (the last
//! `Arc<Object>` to it), by RAII: the budgets cannot drift.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use wray_control_plane::ObjectId;

use super::arena;

/// A budget of bytes or items shared by every value in one place:
/// [`Budget::take`] reserves, the returned [`Charge`] gives back on drop.
#[derive(Debug)]
pub struct Budget {
    used: AtomicUsize,
    limit: usize,
}

impl Budget {
    /// A budget of `limit` units, none used.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicUsize::new(0),
            limit,
        })
    }

    /// Reserves `n` units, or `None` when that would pass the limit.
    pub fn take(self: &Arc<Self>, n: usize) -> Option<Charge> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used.checked_add(n).filter(|next| *next <= self.limit)?;
            match self
                .used
                .compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Some(Charge {
                        budget: self.clone(),
                        n,
                    })
                }
                Err(now) => used = now,
            }
        }
    }

    /// A charge of nothing, to [`Charge::grow`].
    pub fn nothing(self: &Arc<Self>) -> Charge {
        Charge {
            budget: self.clone(),
            n: 0,
        }
    }

    /// Whether `n` more units fit under the limit plus `extra`.
    pub fn room(&self, n: usize, extra: usize) -> bool {
        self.used()
            .checked_add(n)
            .is_some_and(|next| next <= self.limit.saturating_add(extra))
    }

    /// Units in use now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// Units taken from a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    n: usize,
}

impl Charge {
    /// Takes `n` more units into this charge; false (and nothing taken)
    /// when that would pass the budget's limit.
    pub fn grow(&mut self, n: usize) -> bool {
        match self.budget.take(n) {
            Some(more) => {
                self.n += more.n;
                std::mem::forget(more);
                true
            }
            None => false,
        }
    }

    /// Takes `n` more units into this charge whatever the limit (the
    /// store's per-object metadata, charged as objects are registered:
    /// the callers that create objects check [`Budget::room`] first).
    pub fn grow_past_limit(&mut self, n: usize) {
        self.n = self.n.saturating_add(n);
        self.budget.used.fetch_add(n, Ordering::AcqRel);
    }

    /// Gives `n` of its units back now (at most what it holds).
    pub fn shrink(&mut self, n: usize) {
        let n = n.min(self.n);
        self.n -= n;
        self.budget.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// Units it holds.
    #[cfg(test)]
    pub fn units(&self) -> usize {
        self.n
    }

    /// The budget it is taken from.
    pub fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.n, Ordering::AcqRel);
    }
}

/// The ids a value refers to, held while it lives: on the host's heap, so
/// those a guest hands over are charged to the inline budget
/// ([`ObjectStore::refs`](super::ObjectStore::refs)).
#[derive(Debug, Clone, Default)]
pub struct Refs {
    ids: Arc<[ObjectId]>,
    _charge: Option<Arc<Charge>>,
}

impl Refs {
    /// `ids` with their share of a budget.
    pub(super) fn charged(ids: Vec<ObjectId>, charge: Charge) -> Self {
        Refs {
            ids: ids.into(),
            _charge: Some(Arc::new(charge)),
        }
    }
}

impl std::ops::Deref for Refs {
    type Target = [ObjectId];

    fn deref(&self) -> &[ObjectId] {
        &self.ids
    }
}

impl PartialEq for Refs {
    fn eq(&self, other: &Self) -> bool {
        self.ids == other.ids
    }
}

impl Eq for Refs {}

/// Refs outside any budget (the host's own values, tests').
impl From<Vec<ObjectId>> for Refs {
    fn from(ids: Vec<ObjectId>) -> Self {
        Refs {
            ids: ids.into(),
            _charge: None,
        }
    }
}

/// The most bytes of a value kept inside its object, with no allocation
/// of their own ([`Data::Small`]): an `i64` or `f64` as the Rust SDK
/// writes it (a 16-byte header, then 8 bytes). A small put costs one chunk
/// of the heap fewer (48 bytes of an `i64`'s 338, measured: see
/// [`OBJECT_OVERHEAD`](super::OBJECT_OVERHEAD)).
pub const SMALL_MAX: usize = 24;

/// Where a value's bytes live.
#[derive(Debug)]
pub enum Data {
    /// At most [`SMALL_MAX`] bytes, inside the object itself, charged to
    /// the inline budget.
    Small {
        /// How many of `bytes` are the value's.
        len: u8,
        /// The bytes, then zeros.
        bytes: [u8; SMALL_MAX],
        /// Its share of the inline budget (none for the host's own values),
        /// given back when dropped.
        _charge: Option<Charge>,
    },
    /// On the host's heap, charged to the inline budget.
    Inline {
        /// The bytes.
        bytes: Arc<[u8]>,
        /// Its share of the inline budget (none for values made by the host
        /// itself, such as tests'), given back when dropped.
        _charge: Option<Charge>,
    },
    /// In a block of the shared-memory arena (freed with the object).
    Shared(arena::Block),
    /// Spilled to a nameless file on disk because the arena was full; read
    /// through a read-only mapping of the file (the page cache restores it
    /// on use). The file goes away with its last descriptor and mapping.
    Spilled {
        /// The file (its descriptor maps it into guests).
        file: std::fs::File,
        /// Its mapping.
        map: memmap2::Mmap,
        /// Its place among the spilled objects, given back when dropped.
        _charge: Charge,
    },
}

impl Data {
    /// Bytes kept on the heap, outside any budget (the host's own values).
    pub fn inline(bytes: &[u8]) -> Self {
        Self::heap(bytes, None)
    }

    /// `bytes` on the heap with `charge`, their share of the inline budget:
    /// inside the object when they are at most [`SMALL_MAX`].
    pub fn heap(bytes: &[u8], charge: Option<Charge>) -> Self {
        match u8::try_from(bytes.len()) {
            Ok(len) if bytes.len() <= SMALL_MAX => {
                let mut small = [0; SMALL_MAX];
                if let Some(to) = small.get_mut(..bytes.len()) {
                    to.copy_from_slice(bytes);
                }
                Data::Small {
                    len,
                    bytes: small,
                    _charge: charge,
                }
            }
            _ => Data::Inline {
                bytes: Arc::from(bytes),
                _charge: charge,
            },
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Data::Small { len, bytes, .. } => bytes.get(..usize::from(*len)).unwrap_or(&[]),
            Data::Inline { bytes, .. } => bytes,
            Data::Shared(block) => block.bytes(),
            Data::Spilled { map, .. } => map,
        }
    }

    /// The file, page-aligned offset and page size to map the bytes from,
    /// for values that live in a file (arena or spill file).
    pub fn file_range(&self) -> Option<(i32, usize, usize)> {
        use std::os::fd::AsRawFd;
        match self {
            Data::Small { .. } | Data::Inline { .. } => None,
            Data::Shared(block) => Some((
                block.arena().fd(),
                block.offset(),
                block.arena().page_size(),
            )),
            Data::Spilled { file, .. } => Some((file.as_raw_fd(), 0, arena::PAGE)),
        }
    }

    /// Where the value lives, for listings: `heap`, `shared-memory` or
    /// `spilled`.
    pub fn location(&self) -> &'static str {
        match self {
            Data::Small { .. } | Data::Inline { .. } => "heap",
            Data::Shared(_) => "shared-memory",
            Data::Spilled { .. } => "spilled",
        }
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Data {}

/// Writes `bytes` to a new nameless file in `dir` and maps it read-only;
/// `charge` is its place among the spilled objects.
///
/// # Errors
/// The directory cannot be made, or the file written or mapped (a full disk
/// included: an error, never a signal, since the file is written through
/// its descriptor before it is mapped).
pub fn spill(dir: &std::path::Path, bytes: &[u8], charge: Charge) -> std::io::Result<Data> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.flush()?;
    // An empty value maps nothing: memmap2 refuses zero-length maps.
    if bytes.is_empty() {
        return Ok(Data::inline(bytes));
    }
    // SAFETY: the file is private to this store (a fresh nameless file that
    // nothing else can open) and never truncated while mapped.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(Data::Spilled {
        file,
        map,
        _charge: charge,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_refuse_past_their_limit_and_refill_on_drop() {
        let budget = Budget::new(10);
        let a = budget.take(6).unwrap();
        assert!(budget.take(5).is_none());
        let b = budget.take(4).unwrap();
        assert_eq!(budget.used(), 10);
        drop(a);
        assert_eq!(budget.used(), 4);
        assert!(budget.take(usize::MAX).is_none());
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_charge_grows_within_its_budget_and_gives_everything_back() {
        let budget = Budget::new(10);
        let mut charge = budget.nothing();
        assert!(charge.grow(4));
        let other = budget.take(5).unwrap();
        assert!(!charge.grow(2), "4 + 5 + 2 is past 10");
        assert_eq!((charge.units(), budget.used()), (4, 9));
        charge.shrink(100);
        assert_eq!((charge.units(), budget.used()), (0, 5));
        assert!(charge.grow(5));
        drop(charge);
        drop(other);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn small_values_live_inside_their_object_and_larger_ones_apart() {
        let budget = Budget::new(100);
        let small = Data::heap(&[1; SMALL_MAX], budget.take(SMALL_MAX));
        assert!(matches!(small, Data::Small { len: 24, .. }));
        assert_eq!(small.bytes(), &[1; SMALL_MAX]);
        assert_eq!(Data::inline(&[]).bytes(), &[] as &[u8]);
        let larger = Data::heap(&[2; SMALL_MAX + 1], budget.take(SMALL_MAX + 1));
        assert!(matches!(larger, Data::Inline { .. }));
        assert_eq!(larger.bytes(), &[2; SMALL_MAX + 1]);
        assert_eq!((small.location(), larger.location()), ("heap", "heap"));
        drop((small, larger));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn spill_files_have_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let budget = Budget::new(1);
        let data = spill(dir.path(), b"abc", budget.take(1).unwrap()).unwrap();
        assert_eq!(data.bytes(), b"abc");
        assert_eq!(data.location(), "spilled");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        drop(data);
        assert_eq!(budget.used(), 0);
    }
}
