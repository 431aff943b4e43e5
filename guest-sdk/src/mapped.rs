//! Zero-copy objects: windows of this instance's linear memory that the host
//! maps object pages over (see the WIT `mapping` interface).
//!
//! A window is reserved with `memory.grow`, outside the allocator, so the
//! allocator never hands its pages out; windows are reused (smallest fit)
//! once unmapped. [`ObjectRef::map`] maps an object read-only in effect
//! (copy-on-write: a write changes only this instance's copy) and hands out
//! its archived value in place; [`put`](crate::put) of a large value builds
//! it in a window mapped over a new object's pages.

use core::marker::PhantomData;
use core::ops::Deref;
use std::cell::RefCell;

use rkyv::api::high::HighValidator;
use rkyv::bytecheck::CheckBytes;
use rkyv::rancor;
use rkyv::Archive;

use crate::bindings::{mapping, types as wit};
use crate::codec::{archive_of, Value, HEADER};
use crate::error::{Error, ErrorKind, Result};
use crate::object_ref::ObjectRef;
use crate::runtime::task_error;

/// Size of a wasm page: windows are whole wasm pages, which also aligns them
/// to the host's pages.
const WASM_PAGE: usize = 65536;

/// Values at least this large (bytes) are put through a window straight into
/// the shared-memory store; smaller ones travel inline. The host's
/// threshold, defined once in `wray-abi`.
pub(crate) use wray_abi::INLINE_MAX;

thread_local! {
    /// Unmapped windows: (address, length).
    static FREE: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
    /// The host's window alignment (`mapping.page-size`), once asked.
    static ALIGN: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// What windows are aligned to: a wasm page, or the host's page when that
/// is larger (2 MiB for a store on huge pages).
fn align() -> usize {
    ALIGN.with(|a| {
        if a.get() == 0 {
            let page = usize::try_from(mapping::page_size()).unwrap_or(WASM_PAGE);
            a.set(page.max(WASM_PAGE).next_power_of_two());
        }
        a.get()
    })
}

/// A reserved window of linear memory, given back to the pool on drop.
pub(crate) struct Window {
    addr: usize,
    len: usize,
}

impl Window {
    /// A window of at least `len` bytes.
    pub(crate) fn take(len: usize) -> Result<Self> {
        let align = align();
        let need = len.max(1).div_ceil(align) * align;
        let reused = FREE.with(|f| {
            let mut free = f.borrow_mut();
            let best = free
                .iter()
                .enumerate()
                .filter(|(_, (_, l))| *l >= need)
                .min_by_key(|(_, (_, l))| *l)
                .map(|(i, _)| i);
            best.map(|i| free.swap_remove(i))
        });
        if let Some((addr, len)) = reused {
            return Ok(Window { addr, len });
        }
        // Grown by `align - WASM_PAGE` more than needed, so an aligned
        // start lies inside.
        let pages = (need + align - WASM_PAGE) / WASM_PAGE;
        let start = grow(pages).ok_or_else(|| {
            Error::from(task_error(
                ErrorKind::OutOfMemory,
                "map",
                format!("cannot reserve a window of {need} bytes of linear memory"),
            ))
        })?;
        let addr = start.div_ceil(align) * align;
        Ok(Window { addr, len: need })
    }

    /// The window as the `list<u8>` the host calls take.
    pub(crate) fn as_list(&self) -> &[u8] {
        // SAFETY: the window is memory this instance reserved with
        // memory.grow and nothing else uses; the host only replaces its pages
        // while this call is in progress.
        unsafe { core::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }

    /// The first `len` bytes of the window.
    pub(crate) fn bytes(&self, len: usize) -> &[u8] {
        // SAFETY: as in `as_list`; `len` never exceeds the window.
        unsafe { core::slice::from_raw_parts(self.addr as *const u8, len.min(self.len)) }
    }

    /// The first `len` bytes of the window, writable.
    pub(crate) fn bytes_mut(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: as in `as_list`, and `&mut self` is the only handle.
        unsafe { core::slice::from_raw_parts_mut(self.addr as *mut u8, len.min(self.len)) }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        FREE.with(|f| f.borrow_mut().push((self.addr, self.len)));
    }
}

#[cfg(target_arch = "wasm32")]
fn grow(pages: usize) -> Option<usize> {
    match core::arch::wasm32::memory_grow(0, pages) {
        usize::MAX => None,
        old => Some(old * WASM_PAGE),
    }
}

// Natively (unit tests) there is no linear memory to grow.
#[cfg(not(target_arch = "wasm32"))]
fn grow(_pages: usize) -> Option<usize> {
    None
}

/// An object mapped into this instance's memory: derefs to the archived
/// value, read in place with no copy. Unmapped when dropped.
pub struct Mapped<T: Archive> {
    window: Window,
    len: usize,
    _object: ObjectRef<T>,
    _type: PhantomData<T>,
}

impl<T: Archive> Mapped<T> {
    /// The object's rkyv archive (its bytes after the header).
    pub fn bytes(&self) -> &[u8] {
        self.window
            .bytes(self.len)
            .get(HEADER..)
            .unwrap_or_default()
    }
}

impl<T: Archive> Deref for Mapped<T> {
    type Target = T::Archived;

    fn deref(&self) -> &T::Archived {
        // SAFETY: `map` checked the header (a `T` was written) and validated
        // the archive with bytecheck before building this `Mapped`; the
        // mapping is private to this instance and the object immutable;
        // the archive is aligned (page-aligned window, 16-byte header).
        unsafe { rkyv::access_unchecked::<T::Archived>(self.bytes()) }
    }
}

/// A primitive number whose rkyv archive (little-endian, aligned: the
/// SDK's settings) has its own layout on a little-endian target, as wasm
/// is: a mapped `Vec` of one reads as a plain slice
/// ([`Mapped::as_slice`]).
pub trait Primitive: Archive + Copy + sealed::Sealed {}

mod sealed {
    /// Only the primitives listed in `mapped.rs`.
    pub trait Sealed {}
}

macro_rules! primitives {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Primitive for $t {}
    )*};
}
primitives!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

#[cfg(target_endian = "little")]
impl<P: Primitive> Mapped<Vec<P>> {
    /// The mapped vector as a plain `&[P]` (`&[f64]` for a `Vec<f64>`),
    /// read in place: no copy and no per-element `to_native()`.
    pub fn as_slice(&self) -> &[P] {
        const {
            assert!(core::mem::size_of::<P>() == core::mem::size_of::<P::Archived>());
            assert!(core::mem::align_of::<P>() == core::mem::align_of::<P::Archived>());
        }
        let archived: &rkyv::vec::ArchivedVec<P::Archived> = self;
        // SAFETY: on a little-endian target rkyv archives a `P` as `P`'s own
        // little-endian bytes, with `P`'s size and alignment (checked above
        // at compile time), and every bit pattern of those bytes is a valid
        // `P`; the slice lives in the mapping, which lives as long as
        // `self`.
        unsafe { core::slice::from_raw_parts(archived.as_ptr().cast::<P>(), archived.len()) }
    }
}

impl<T: Archive> Drop for Mapped<T> {
    fn drop(&mut self) {
        mapping::unmap(self.window.as_list());
    }
}

impl<T> ObjectRef<T>
where
    T: Archive,
    T::Archived: for<'a> CheckBytes<HighValidator<'a, rancor::BoxedError>>,
{
    /// Maps the object into this instance's memory and returns its archived
    /// value, read in place: no copy and no deserialization, whatever its
    /// size (Plasma's `get`). Blocks until the object exists, as `get` does.
    /// The value is checked first: its header must say it is a `T`, and
    /// rkyv's `bytecheck` must find the archive well formed (for a vector
    /// of numbers this costs the same at any length).
    ///
    /// # Errors
    ///
    /// The object's own error (as [`get`](crate::get)); kind
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) when it is not an
    /// rkyv value, was written as another type, or is malformed;
    /// [`OutOfMemory`](ErrorKind::OutOfMemory) when no window can be
    /// reserved.
    pub fn map(&self) -> Result<Mapped<T>> {
        let id: wit::ObjectId = self.id().into();
        let (codec, len) = mapping::stat(id).map_err(Error::from)?;
        if codec != wit::Codec::Rkyv {
            return Err(task_error(
                ErrorKind::InvalidArgument,
                "map",
                format!("object {} is not an rkyv value", self.id()),
            )
            .into());
        }
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let window = Window::take(len)?;
        let mapped = mapping::map(id, window.as_list()).map_err(Error::from)?;
        let mapped = Mapped {
            window,
            len: usize::try_from(mapped).unwrap_or(len).min(len),
            _object: self.clone(),
            _type: PhantomData,
        };
        let invalid = |message: String| {
            Error::from(task_error(
                ErrorKind::InvalidArgument,
                "map",
                format!("object {}: {message}", self.id()),
            ))
        };
        let archive = archive_of::<T>(mapped.window.bytes(mapped.len)).map_err(|m| invalid(m.0))?;
        rkyv::access::<T::Archived, rancor::BoxedError>(archive).map_err(|e| {
            invalid(format!(
                "not a valid `{}`: {e}",
                core::any::type_name::<T>()
            ))
        })?;
        Ok(mapped)
    }
}

/// Decodes object `id` as a `T` read in place: mapped into a window (no
/// copy), decoded from there (the one copy), unmapped. `Ok(None)` when the
/// object is not an rkyv value of at least [`INLINE_MAX`] bytes (then
/// `get`, which copies a small value in, is as cheap); `Ok(Some(Err(m)))`
/// when its bytes are not a `T` (`m` says why).
///
/// # Errors
///
/// The object's own error, or the host's refusal to map it (as
/// [`ObjectRef::map`]).
pub(crate) fn decode_in_place<T: Value>(
    id: wit::ObjectId,
) -> core::result::Result<Option<core::result::Result<T, String>>, wit::TaskError> {
    let (codec, len) = mapping::stat(id)?;
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    if codec != wit::Codec::Rkyv || len < INLINE_MAX {
        return Ok(None);
    }
    let window = Window::take(len).map_err(wit::TaskError::from)?;
    let mapped = mapping::map(id, window.as_list());
    let decoded = mapped.map(|n| {
        let n = usize::try_from(n).unwrap_or(len).min(len);
        crate::codec::decode_rkyv::<T>(window.bytes(n))
    });
    mapping::unmap(window.as_list());
    decoded.map(Some)
}

/// Puts `value` as a new object serialized in place, in a window mapped over
/// the object's shared-memory pages: the value is written once, and never
/// copied afterwards.
pub(crate) fn put_in_place<T: Value>(value: &T) -> Result<wit::ObjectId> {
    let encode_error = |e: rkyv::rancor::Error| {
        Error::from(task_error(
            ErrorKind::InvalidArgument,
            "put",
            format!("cannot encode {}: {e}", core::any::type_name::<T>()),
        ))
    };
    let len = value.encoded_len().map_err(encode_error)?;
    let mut window = Window::take(len)?;
    let id = mapping::create(len as u64, window.as_list()).map_err(Error::from)?;
    let (written, refs) = crate::refs::collecting(|| value.encode_into(window.bytes_mut(len)));
    let refs: Vec<wit::ObjectId> = refs.into_iter().map(Into::into).collect();
    // Sealed even when encoding failed, so the object is not left half made.
    let written = written.map_err(encode_error);
    let size = *written.as_ref().unwrap_or(&0) as u64;
    mapping::seal(id, size, wit::Codec::Rkyv, &refs).map_err(Error::from)?;
    written.map(|_| id)
}
