//! The host side of `wray:runtime/mapping`: objects mapped straight into a
//! guest's linear memory (zero-copy), and objects built in place.
//!
//! These imports are defined with `func_wrap` taking their windows and byte
//! lists as [`GuestBytes`]: the list read in place from exactly the calling
//! instance's memory, bounds-checked, with its offset in that memory, and
//! nothing copied. The host then `mmap`s arena pages over a window with
//! `MAP_FIXED`: `MAP_PRIVATE` for reading (a guest write stays private: it
//! can never change a sealed object, and host code writing into the window
//! cannot fault) and `MAP_SHARED` for an object being created. Every window
//! is given zero pages back before the instance's memory is released
//! ([`TaskStore`](super::store::TaskStore)), so a reused pooling slot never shows an earlier object.
//! Needs `Config::memory_may_move(false)` (set in `engine.rs`) so that
//! windows stay where they were mapped.
//!
//! Every size and offset the guest passes is checked arithmetic against the
//! block it names; an id the task may not name reads as "does not exist".

use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime::StoreContextMut;
use wray_control_plane::ObjectId;

use crate::bindings::types;
use crate::error::{ErrorKind, TaskError};
use crate::guest_bytes::GuestBytes;
use crate::objects::arena::PAGE;
use crate::objects::{Data, Object};
use crate::scheduler::blocking::{too_many_blocked, Blocker, WaitEnd};
use crate::state::TaskState;
use crate::values::{guest_refs, store_full, store_value};
use crate::windows::{map_file, Creating};

/// A `mapping` call's outcome: a value, or the task error to return.
type Outcome<T> = wasmtime::Result<(Result<T, types::TaskError>,)>;

fn error(state: &TaskState, kind: ErrorKind, message: impl ToString) -> types::TaskError {
    let message = message.to_string();
    TaskError::new(kind, state.current.label.clone(), state.current.id, message).into()
}

/// The `not-found` error for an object this task may not see or that does
/// not exist (the same words for both).
pub fn not_found(state: &TaskState, id: &ObjectId) -> types::TaskError {
    let msg = format!(
        "object {id} does not exist on node {}",
        state.node.node_id()
    );
    error(state, ErrorKind::NotFound, msg)
}

/// The `invalid-argument` error of a task waiting for an object it makes
/// itself (it would wait forever).
pub(crate) fn waits_on_itself(state: &TaskState, id: &ObjectId) -> types::TaskError {
    let msg =
        format!("the task waits for object {id}, which it makes itself: it would wait forever");
    error(state, ErrorKind::InvalidArgument, msg)
}

/// The page size windows must be aligned to: the arena's (2 MiB on huge
/// pages), else the host's.
fn page_size(state: &TaskState) -> usize {
    state.node.objects().arena().map_or(PAGE, |a| a.page_size())
}

/// Waits for `id` to be sealed; the object, or the error to return.
async fn sealed(
    state: &mut TaskState,
    id: ObjectId,
) -> wasmtime::Result<Result<Arc<Object>, types::TaskError>> {
    // The usual case first: sealed already (one lookup, no waiting).
    if let Some(object) = state
        .visible(&id)
        .then(|| state.node.objects().get(&id))
        .flatten()
    {
        return Ok(match &*object {
            Object::Error(e) => Err(e.clone().into()),
            Object::Value { .. } => Ok(object),
        });
    }
    if !state.visible(&id) || !state.node.objects().exists(&id) {
        return Ok(Err(not_found(state, &id)));
    }
    if state.waits_on_itself(&id) {
        return Ok(Err(waits_on_itself(state, &id)));
    }
    let node = state.node.clone();
    let current = &mut state.current;
    let blocker = Blocker {
        entry: current.entry.as_deref(),
        allocation: current.holds_cpu.then_some(&mut current.allocation),
        thread: &current.thread,
    };
    if node.wait_sealed(&[id], 1, None, blocker).await == WaitEnd::Refused {
        let msg = too_many_blocked(state.node.node_id());
        return Ok(Err(error(state, ErrorKind::System, msg)));
    }
    match state.node.objects().get(&id) {
        Some(object) => match &*object {
            Object::Error(e) => Ok(Err(e.clone().into())),
            Object::Value { .. } => Ok(Ok(object)),
        },
        None => Ok(Err(not_found(state, &id))),
    }
}

/// `map`: maps `object` over `list`, copy-on-write, or copies it in.
fn map_into(
    state: &mut TaskState,
    id: ObjectId,
    object: Arc<Object>,
    list: GuestBytes,
) -> wasmtime::Result<Result<u64, types::TaskError>> {
    let Object::Value { data, .. } = &*object else {
        return Ok(Ok(0));
    };
    let len = data.bytes().len();
    let in_file = data.file_range();
    let page = in_file.map_or(PAGE, |(_, _, page)| page);
    let w = match state.windows.admit(
        state.limiter.initial,
        &state.window_budget,
        list,
        len as u64,
        page,
    ) {
        Ok(w) => w,
        Err(msg) => return Ok(Err(error(state, ErrorKind::InvalidArgument, msg))),
    };
    // Both unsafe blocks below: `w` lies in this instance's memory (GuestBytes),
    // page-aligned, at or above its initial size; the guest is suspended in
    // this call, and nothing else borrows the window.
    let mapped = match in_file {
        // SAFETY: as above: `w` is this instance's own window, which nothing
        // else borrows while the guest is suspended here.
        Some((fd, offset, _)) => match unsafe { map_file(w.addr(), w.len(), fd, offset, false) } {
            Ok(()) => true,
            Err(e) => {
                // A private mapping of huge pages reserves as many for
                // copy-on-write; with too few free, copy instead.
                tracing::debug!("cannot map object {id} ({e}); copying it");
                if let Err(e) = state.windows.zero(&w) {
                    wasmtime::bail!("cannot restore a window after a failed map: {e}");
                }
                false
            }
        },
        None => false,
    };
    state.windows.replaced_by(&w);
    if !mapped {
        // SAFETY: as above; the window holds at least `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(data.bytes().as_ptr(), w.addr() as *mut u8, len) };
        // A copy needs no mapping kept: `w`'s budget place is given back.
        return Ok(Ok(len as u64));
    }
    // Pinned: its block or file cannot be reused while mapped.
    state.windows.add_reading(w, object.clone());
    Ok(Ok(len as u64))
}

/// `create`: a new object of `size` bytes, mapped writable over `list`.
fn create(state: &mut TaskState, size: u64, list: GuestBytes) -> Outcome<types::ObjectId> {
    if let Err(msg) = state.windows.may_create() {
        return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),));
    }
    if let Some(full) = state.node.objects().admit(1)? {
        return Ok((Err(error(state, ErrorKind::System, full.to_string())),));
    }
    let page = page_size(state);
    let w = match state.windows.admit(
        state.limiter.initial,
        &state.window_budget,
        list,
        size,
        page,
    ) {
        Ok(w) => w,
        Err(msg) => return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),)),
    };
    let Some(arena) = state.node.objects().arena().cloned() else {
        let msg = "this node has no shared-memory object store".to_string();
        return Ok((Err(error(state, ErrorKind::System, msg)),));
    };
    let block = match arena.alloc(size) {
        Ok(b) => b,
        Err(e) => return Ok((Err(error(state, ErrorKind::System, e.to_string())),)),
    };
    // SAFETY: as in `map_into`.
    if let Err(e) = unsafe { map_file(w.addr(), w.len(), arena.fd(), block.offset(), true) } {
        // The window may be half replaced: zero pages again, then report.
        if let Err(z) = state.windows.zero(&w) {
            wasmtime::bail!("cannot restore a window after a failed create: {e}; {z}");
        }
        let msg = format!("cannot map a new object of {size} bytes: {e}");
        return Ok((Err(error(state, ErrorKind::System, msg)),));
    }
    state.windows.replaced_by(&w);
    let id = match state.new_put() {
        Ok(id) => id,
        Err(trap) => {
            // The block goes back to the arena: the window must not keep
            // its pages (the instance's slot is reused).
            if let Err(z) = state.windows.zero(&w) {
                wasmtime::bail!("{trap:#}; and the window could not be restored: {z}");
            }
            return Err(trap);
        }
    };
    let window = Some(w);
    state.windows.add_creating(id, Creating { block, window });
    Ok((Ok(id.into()),))
}

/// `reserve`: a new object of `size` bytes for `write`s.
fn reserve(state: &mut TaskState, size: u64) -> Outcome<types::ObjectId> {
    if let Err(msg) = state.windows.may_create() {
        return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),));
    }
    if let Some(full) = state.node.objects().admit(1)? {
        return Ok((Err(error(state, ErrorKind::System, full.to_string())),));
    }
    let block = match state.node.objects().arena().map(|a| a.alloc(size)) {
        Some(Ok(b)) => b,
        Some(Err(e)) => return Ok((Err(error(state, ErrorKind::System, e.to_string())),)),
        None => {
            let msg = "this node has no shared-memory object store".to_string();
            return Ok((Err(error(state, ErrorKind::System, msg)),));
        }
    };
    let id = state.new_put()?;
    state.windows.add_creating(
        id,
        Creating {
            block,
            window: None,
        },
    );
    Ok((Ok(id.into()),))
}

/// `write`: copies `list` into object `id` at `offset`.
fn write(state: &mut TaskState, id: ObjectId, offset: u64, list: GuestBytes) -> Outcome<()> {
    let Some(mut making) = state.windows.take_creating(&id) else {
        let msg = format!("object {id} is not being created by this task");
        return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),));
    };
    let reserved = making.block.len();
    let target = usize::try_from(offset).ok().and_then(|o| {
        let end = o.checked_add(list.len())?;
        making.block.bytes_mut().get_mut(o..end)
    });
    let result = match target {
        Some(target) => {
            // SAFETY: during this call (see `GuestBytes::as_slice`); the
            // block is the host's own memory, disjoint from the guest's.
            target.copy_from_slice(unsafe { list.as_slice() });
            Ok(())
        }
        None => Err(format!(
            "writing {} bytes at offset {offset} passes the {reserved} bytes reserved for object {id}",
            list.len()
        )),
    };
    state.windows.add_creating(id, making);
    Ok((result.map_err(|msg| error(state, ErrorKind::InvalidArgument, msg)),))
}

/// `seal`: makes object `id` immutable and visible, its first `size` bytes
/// its value. On an error the object stays being made (and is sealed with
/// an error if the task ends first).
fn seal(
    state: &mut TaskState,
    id: ObjectId,
    size: u64,
    codec: types::Codec,
    refs: Vec<types::ObjectId>,
) -> Outcome<()> {
    let Some(mut making) = state.windows.take_creating(&id) else {
        let msg = format!("object {id} is not being created by this task");
        return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),));
    };
    let reserved = making.block.len();
    let size = match usize::try_from(size).ok().filter(|s| *s <= reserved) {
        Some(size) => size,
        None => {
            state.windows.add_creating(id, making);
            let msg = format!("sealing {size} bytes of object {id}, created with {reserved}");
            return Ok((Err(error(state, ErrorKind::InvalidArgument, msg)),));
        }
    };
    let refs = match guest_refs(state, &refs) {
        Ok(refs) => refs,
        Err(e) => {
            state.windows.add_creating(id, making);
            return Ok((Err(e.into()),));
        }
    };
    if let Some(w) = making.window.take() {
        if let Err(e) = state.windows.zero(&w) {
            // Still being made: sealed with an error when the task ends.
            state.windows.add_creating(id, making);
            wasmtime::bail!("cannot unmap the window of object {id}: {e}");
        }
    }
    making.block.truncate(size);
    let object = Object::Value {
        codec: codec.into(),
        data: Data::Shared(making.block),
        refs,
    };
    state.node.objects().seal(id, object);
    Ok((Ok(()),))
}

/// `put-bytes`: stores `list` as a new object (an error object when a ref
/// may not be named or the store has no room: the import cannot fail).
fn put_bytes(
    state: &mut TaskState,
    list: GuestBytes,
    codec: types::Codec,
    refs: Vec<types::ObjectId>,
) -> wasmtime::Result<(types::ObjectId,)> {
    let object = match (state.node.objects().admit(1)?, guest_refs(state, &refs)) {
        (Some(full), _) => Object::Error(store_full(state, full)),
        // SAFETY: during this call (see `GuestBytes::as_slice`).
        (None, Ok(refs)) => store_value(state, codec.into(), unsafe { list.as_slice() }, refs),
        (None, Err(e)) => Object::Error(e),
    };
    let id = state.new_put()?;
    state.node.objects().seal(id, object);
    Ok((types::ObjectId::from(id),))
}

/// Adds the `mapping` imports to `linker`.
///
/// # Errors
/// When wasmtime rejects a definition (a bug).
pub fn add_to_linker(linker: &mut Linker<TaskState>) -> wasmtime::Result<()> {
    type Cx<'a> = StoreContextMut<'a, TaskState>;
    let mut inst = linker.instance("wray:runtime/mapping@0.1.0")?;
    inst.func_wrap("page-size", |caller: Cx<'_>, (): ()| {
        Ok((page_size(caller.data()) as u64,))
    })?;
    inst.func_wrap_async("stat", |mut caller: Cx<'_>, (id,): (types::ObjectId,)| {
        Box::new(async move {
            let state = caller.data_mut();
            Ok((sealed(state, id.into())
                .await?
                .map(|object| match &*object {
                    Object::Value { codec, data, .. } => {
                        ((*codec).into(), data.bytes().len() as u64)
                    }
                    Object::Error(_) => (types::Codec::Raw, 0),
                }),))
        })
    })?;
    inst.func_wrap_async(
        "map",
        |mut caller: Cx<'_>, (id, list): (types::ObjectId, GuestBytes)| {
            Box::new(async move {
                let state = caller.data_mut();
                let id = ObjectId::from(id);
                let object = match sealed(state, id).await? {
                    Ok(o) => o,
                    Err(e) => return Ok((Err(e),)),
                };
                Ok((map_into(state, id, object, list)?,))
            })
        },
    )?;
    inst.func_wrap("create", |mut caller: Cx<'_>, (size, list)| {
        create(caller.data_mut(), size, list)
    })?;
    inst.func_wrap("reserve", |mut caller: Cx<'_>, (size,): (u64,)| {
        reserve(caller.data_mut(), size)
    })?;
    inst.func_wrap(
        "write",
        |mut caller: Cx<'_>, (id, offset, list): (types::ObjectId, u64, GuestBytes)| {
            write(caller.data_mut(), id.into(), offset, list)
        },
    )?;
    inst.func_wrap(
        "seal",
        |mut caller: Cx<'_>,
         (id, size, codec, refs): (types::ObjectId, u64, types::Codec, Vec<types::ObjectId>)| {
            seal(caller.data_mut(), id.into(), size, codec, refs)
        },
    )?;
    inst.func_wrap(
        "put-bytes",
        |mut caller: Cx<'_>,
         (list, codec, refs): (GuestBytes, types::Codec, Vec<types::ObjectId>)| {
            put_bytes(caller.data_mut(), list, codec, refs)
        },
    )?;
    inst.func_wrap("zero", |mut caller: Cx<'_>, (list,): (GuestBytes,)| {
        let state = caller.data_mut();
        let (initial, budget) = (state.limiter.initial, state.window_budget.clone());
        if let Err(e) = state.windows.zero_pages(initial, &budget, list) {
            wasmtime::bail!("cannot give a region zero pages: {e}");
        }
        Ok(())
    })?;
    inst.func_wrap("unmap", |mut caller: Cx<'_>, (list,): (GuestBytes,)| {
        let state = caller.data_mut();
        let (start, end) = (list.addr(), list.addr() + list.len());
        if let Err(e) = state.windows.unmap_inside(start, end) {
            wasmtime::bail!("cannot unmap a window: {e}");
        }
        Ok(())
    })?;
    Ok(())
}
