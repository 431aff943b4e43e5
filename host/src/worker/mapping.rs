//! The host side of `wray:runtime/mapping`: objects mapped straight into a
//! guest's linear memory (zero-copy), and objects built in place.
//!
//! These imports are defined with `func_wrap` taking the window as a
//! `WasmList<u8>`: its slice is the window inside exactly the calling
//! instance's memory, bounds-checked by wasmtime, and nothing is copied.
//! The host then `mmap`s arena pages over the window with `MAP_FIXED`:
//! `MAP_PRIVATE` for reading (a guest write stays private: it can never
//! change a sealed object, and host code writing into the window cannot
//! fault) and `MAP_SHARED` for an object being created. Every window is
//! given zero pages back before the instance's memory is released
//! ([`TaskStore`]), so a reused pooling slot never shows an earlier object.
//! Needs `Config::memory_may_move(false)` (set in `engine.rs`) so that
//! windows stay where they were mapped.

use std::collections::HashMap;
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use wasmtime::component::{Linker, WasmList};
use wasmtime::{AsContext, AsContextMut, Store, StoreContext, StoreContextMut};
use wray_control_plane::ObjectId;

use crate::bindings::types;
use crate::error::{ErrorKind, TaskError};
use crate::object_store::arena::{Block, PAGE};
use crate::object_store::{Data, Object};
use crate::scheduler::blocking::WaitEnd;
use crate::worker::state::TaskState;

/// A window with something of the host's mapped over it.
struct Window {
    addr: usize,
    len: usize,
}

/// What one instance has mapped.
#[derive(Default)]
pub struct Windows {
    /// Objects mapped for reading, pinned (their blocks cannot be reused
    /// while mapped).
    reading: Vec<(Window, Arc<Object>)>,
    /// Objects being created: id -> (block, window for `create`, none for
    /// `reserve`).
    creating: HashMap<ObjectId, (Block, Option<Window>)>,
}

/// `mmap`s `len` bytes of `fd` at `offset` over `addr`.
///
/// # Safety
/// `addr..addr + len` must be page-aligned memory of the calling instance
/// that nothing in the host is borrowing.
unsafe fn map_file(
    addr: usize,
    len: usize,
    fd: i32,
    offset: usize,
    shared: bool,
) -> io::Result<()> {
    let flags = libc::MAP_FIXED
        | if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
    let offset =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: the caller guarantees the range.
    unsafe { mmap_fixed(addr, len, flags, fd, offset) }?;
    if shared {
        // A window for a new object is written in full right away: make its
        // pages present and writable in one call (a write fault per page
        // costs more than the copy). Best effort: older kernels lack it.
        // A read mapping stays lazy, so mapping costs the same at any size.
        // SAFETY: the range was just mapped.
        unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) };
    }
    Ok(())
}

/// Puts fresh zero pages over `addr..addr + len` (as linear memory had).
///
/// # Safety
/// As [`map_file`].
unsafe fn map_zero(addr: usize, len: usize) -> io::Result<()> {
    let flags = libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    // SAFETY: as above.
    unsafe { mmap_fixed(addr, len, flags, -1, 0) }
}

/// `mmap(addr, len, READ | WRITE, flags, fd, offset)`, with `MAP_FIXED` in
/// `flags`: replaces exactly `addr..addr + len`.
///
/// # Safety
/// As [`map_file`].
unsafe fn mmap_fixed(
    addr: usize,
    len: usize,
    flags: i32,
    fd: i32,
    offset: libc::off_t,
) -> io::Result<()> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: the caller guarantees the range.
    let p = unsafe { libc::mmap(addr as *mut libc::c_void, len, prot, flags, fd, offset) };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl Windows {
    /// Gives every window zero pages back; objects being created and never
    /// sealed are dropped (their blocks freed) and returned.
    pub fn unmap_all(&mut self) -> Vec<ObjectId> {
        for (w, _) in self.reading.drain(..) {
            zero(&w);
        }
        self.creating
            .drain()
            .map(|(id, (_, w))| {
                if let Some(w) = w {
                    zero(&w);
                }
                id
            })
            .collect()
    }
}

fn zero(w: &Window) {
    // SAFETY: the window was validated when it was mapped and the instance's
    // memory is still alive (this runs before the store is dropped).
    if let Err(e) = unsafe { map_zero(w.addr, w.len) } {
        // The process's mapping table is broken; nothing safe is left to do.
        tracing::error!("cannot unmap a guest window at {:#x}: {e}", w.addr);
        std::process::abort();
    }
}

/// A store whose windows are unmapped before it is dropped: use it for every
/// store that runs guest code.
pub struct TaskStore(pub Store<TaskState>);

impl Deref for TaskStore {
    type Target = Store<TaskState>;
    fn deref(&self) -> &Store<TaskState> {
        &self.0
    }
}

impl DerefMut for TaskStore {
    fn deref_mut(&mut self) -> &mut Store<TaskState> {
        &mut self.0
    }
}

impl AsContext for TaskStore {
    type Data = TaskState;
    fn as_context(&self) -> StoreContext<'_, TaskState> {
        self.0.as_context()
    }
}

impl AsContextMut for TaskStore {
    fn as_context_mut(&mut self) -> StoreContextMut<'_, TaskState> {
        self.0.as_context_mut()
    }
}

impl Drop for TaskStore {
    fn drop(&mut self) {
        let state = self.0.data_mut();
        let abandoned = state.windows.unmap_all();
        for id in abandoned {
            let err = TaskError::new(
                ErrorKind::System,
                state.current.label.clone(),
                state.current.id,
                format!("object {id} was created but never sealed"),
            );
            state.rt.objects.seal(id, Object::Error(err));
        }
    }
}

fn error(state: &TaskState, kind: ErrorKind, message: String) -> types::TaskError {
    TaskError::new(kind, state.current.label.clone(), state.current.id, message).into()
}

/// The window's address and length (`need` rounded up to pages of `page`
/// bytes), checked for alignment to `page`.
fn window(
    caller: &StoreContextMut<'_, TaskState>,
    list: &WasmList<u8>,
    need: usize,
    page: usize,
) -> Result<Window, String> {
    let slice = list.as_le_slice(caller);
    let (addr, len) = (slice.as_ptr() as usize, slice.len());
    if addr % page != 0 || len % page.min(PAGE) != 0 {
        return Err(format!(
            "window {addr:#x}+{len} is not aligned to {page}-byte pages"
        ));
    }
    let span = need.div_ceil(page).max(1) * page;
    if len < span {
        return Err(format!(
            "window of {len} bytes is too small for {need} bytes on {page}-byte pages"
        ));
    }
    Ok(Window { addr, len: span })
}

/// The page size windows must be aligned to: the arena's (2 MiB on huge
/// pages), else the host's.
fn page_size(state: &TaskState) -> usize {
    state.rt.objects.arena().map_or(PAGE, |a| a.page_size())
}

/// Waits for `id` to be sealed; the object, or the error to return.
fn sealed(
    state: &mut TaskState,
    id: ObjectId,
) -> wasmtime::Result<Result<Arc<Object>, types::TaskError>> {
    if !state.rt.objects.exists(&id) {
        let msg = format!("object {id} does not exist on node {}", state.rt.node_id);
        return Ok(Err(error(state, ErrorKind::NotFound, msg)));
    }
    if state.block(&[id], 1, None)? == WaitEnd::TimedOut {
        return Ok(Err(error(
            state,
            ErrorKind::Timeout,
            format!("waiting for object {id} timed out"),
        )));
    }
    match state.rt.objects.get(&id) {
        Some(object) => match &*object {
            Object::Error(e) => Ok(Err(e.clone().into())),
            Object::Value { .. } => Ok(Ok(object)),
        },
        None => Ok(Err(error(
            state,
            ErrorKind::NotFound,
            format!("object {id} was freed"),
        ))),
    }
}

/// Adds the `mapping` imports to `linker`.
///
/// # Errors
/// When wasmtime rejects a definition (a bug).
pub fn add_to_linker(linker: &mut Linker<TaskState>) -> wasmtime::Result<()> {
    let mut inst = linker.instance("wray:runtime/mapping@0.1.0")?;
    inst.func_wrap(
        "page-size",
        |caller: StoreContextMut<'_, TaskState>, (): ()| Ok((page_size(caller.data()) as u64,)),
    )?;
    inst.func_wrap(
        "stat",
        |mut caller: StoreContextMut<'_, TaskState>, (id,): (types::ObjectId,)| {
            let state = caller.data_mut();
            Ok((sealed(state, id.into())?.map(|object| match &*object {
                Object::Value { codec, data, .. } => ((*codec).into(), data.bytes().len() as u64),
                Object::Error(_) => (types::Codec::Raw, 0),
            }),))
        },
    )?;
    inst.func_wrap(
        "map",
        |mut caller: StoreContextMut<'_, TaskState>,
         (id, list): (types::ObjectId, WasmList<u8>)| {
            let object = match sealed(caller.data_mut(), id.into())? {
                Ok(o) => o,
                Err(e) => return Ok((Err(e),)),
            };
            let Object::Value { data, .. } = &*object else {
                return Ok((Ok(0),));
            };
            let len = data.bytes().len();
            let in_file = data.file_range();
            let page = in_file.map_or(PAGE, |(_, _, page)| page);
            let w = match window(&caller, &list, len, page) {
                Ok(w) => w,
                Err(msg) => {
                    return Ok((Err(error(caller.data(), ErrorKind::InvalidArgument, msg)),))
                }
            };
            // SAFETY (both): `w` lies in this instance's memory (WasmList),
            // page-aligned; the guest is blocked in this call, and nothing
            // else borrows the window.
            let mapped = match in_file {
                Some((fd, offset, _)) => {
                    match unsafe { map_file(w.addr, w.len, fd, offset, false) } {
                        Ok(()) => true,
                        Err(e) => {
                            // A private mapping of huge pages reserves as many
                            // for copy-on-write; with too few free, copy instead.
                            tracing::debug!(
                                "cannot map object {} ({e}); copying it",
                                ObjectId::from(id)
                            );
                            unsafe { map_zero(w.addr, w.len) }?;
                            false
                        }
                    }
                }
                None => false,
            };
            if !mapped {
                // SAFETY: as above; the window holds at least `len` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.bytes().as_ptr(), w.addr as *mut u8, len)
                };
            }
            let state = caller.data_mut();
            if mapped {
                // Pinned: its block or file cannot be reused while mapped.
                state.windows.reading.push((w, object.clone()));
            }
            Ok((Ok(len as u64),))
        },
    )?;
    inst.func_wrap(
        "create",
        |mut caller: StoreContextMut<'_, TaskState>,
         (size, list): (u64, WasmList<u8>)|
         -> wasmtime::Result<(Result<types::ObjectId, types::TaskError>,)> {
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            let page = page_size(caller.data());
            let w = match window(&caller, &list, size, page) {
                Ok(w) => w,
                Err(msg) => {
                    return Ok((Err(error(caller.data(), ErrorKind::InvalidArgument, msg)),))
                }
            };
            let state = caller.data_mut();
            let Some(arena) = state.rt.objects.arena().cloned() else {
                let msg = "this node has no shared-memory object store".to_string();
                return Ok((Err(error(state, ErrorKind::System, msg)),));
            };
            let block = match arena.alloc(size) {
                Ok(b) => b,
                Err(e) => return Ok((Err(error(state, ErrorKind::System, e.to_string())),)),
            };
            // SAFETY: as in `map`.
            unsafe { map_file(w.addr, w.len, arena.fd(), block.offset(), true) }?;
            let id = state.new_put();
            state.windows.creating.insert(id, (block, Some(w)));
            Ok((Ok(id.into()),))
        },
    )?;
    inst.func_wrap(
        "reserve",
        |mut caller: StoreContextMut<'_, TaskState>,
         (size,): (u64,)|
         -> wasmtime::Result<(Result<types::ObjectId, types::TaskError>,)> {
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            let state = caller.data_mut();
            let block = match state.rt.objects.arena().map(|a| a.alloc(size)) {
                Some(Ok(b)) => b,
                Some(Err(e)) => return Ok((Err(error(state, ErrorKind::System, e.to_string())),)),
                None => {
                    let msg = "this node has no shared-memory object store".to_string();
                    return Ok((Err(error(state, ErrorKind::System, msg)),));
                }
            };
            let id = state.new_put();
            state.windows.creating.insert(id, (block, None));
            Ok((Ok(id.into()),))
        },
    )?;
    inst.func_wrap(
        "write",
        |mut caller: StoreContextMut<'_, TaskState>,
         (id, offset, list): (types::ObjectId, u64, WasmList<u8>)| {
            let id: ObjectId = id.into();
            // Out of the table while the guest's bytes are borrowed.
            let Some((mut block, w)) = caller.data_mut().windows.creating.remove(&id) else {
                let msg = format!("object {id} is not being created by this task");
                return Ok((Err(error(caller.data(), ErrorKind::InvalidArgument, msg)),));
            };
            let bytes = list.as_le_slice(&caller);
            let target = usize::try_from(offset)
                .ok()
                .and_then(|o| block.bytes_mut().get_mut(o..)?.get_mut(..bytes.len()));
            let result = match target {
                Some(target) => {
                    target.copy_from_slice(bytes);
                    Ok(())
                }
                None => Err(format!(
                    "writing {} bytes at offset {offset} passes the {} bytes reserved for object {id}",
                    bytes.len(),
                    block.len()
                )),
            };
            caller.data_mut().windows.creating.insert(id, (block, w));
            Ok((result.map_err(|msg| error(caller.data(), ErrorKind::InvalidArgument, msg)),))
        },
    )?;
    inst.func_wrap(
        "seal",
        |mut caller: StoreContextMut<'_, TaskState>,
         (id, size, codec, refs): (types::ObjectId, u64, types::Codec, Vec<types::ObjectId>)| {
            let state = caller.data_mut();
            let id: ObjectId = id.into();
            let Some((mut block, w)) = state.windows.creating.remove(&id) else {
                let msg = format!("object {id} is not being created by this task");
                return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),));
            };
            if let Some(w) = w {
                zero(&w);
            }
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            if size > block.len() {
                let msg = format!("sealing {size} bytes of an object created with {}", block.len());
                return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),));
            }
            block.truncate(size);
            let refs = refs.into_iter().map(Into::into).collect();
            state.rt.objects.seal(id, Object::Value { codec: codec.into(), data: Data::Shared(block), refs });
            Ok((Ok(()),))
        },
    )?;
    inst.func_wrap(
        "put-bytes",
        |mut caller: StoreContextMut<'_, TaskState>,
         (list, codec, refs): (WasmList<u8>, types::Codec, Vec<types::ObjectId>)| {
            let refs = refs.into_iter().map(Into::into).collect();
            let object = {
                let bytes = list.as_le_slice(&caller);
                caller.data().rt.objects.value(codec.into(), bytes, refs)
            };
            let state = caller.data_mut();
            let id = state.new_put();
            state.rt.objects.seal(id, object);
            Ok((types::ObjectId::from(id),))
        },
    )?;
    inst.func_wrap(
        "unmap",
        |mut caller: StoreContextMut<'_, TaskState>, (list,): (WasmList<u8>,)| {
            let slice = list.as_le_slice(&caller);
            let (start, end) = (
                slice.as_ptr() as usize,
                slice.as_ptr() as usize + slice.len(),
            );
            let state = caller.data_mut();
            state.windows.reading.retain(|(w, _)| {
                let inside = w.addr >= start && w.addr + w.len <= end;
                if inside {
                    zero(w);
                }
                !inside
            });
            Ok(())
        },
    )?;
    Ok(())
}
