//! [`GuestBytes`]: a `list<u8>` argument read in place from the calling
//! instance's memory, with where it lies in that memory.
//!
//! wasmtime's own `WasmList<u8>` gives the bytes without a copy, but not
//! their offset from the start of linear memory, and it charges the list's
//! length to the call's hostcall fuel although nothing is copied. The
//! zero-copy imports (`mapping`) need the offset (a window may not lie in
//! the part of memory the module's data was loaded into: see
//! `executor/src/windows.rs`) and must not be charged for a 1 GiB window, so they
//! lift their lists as this type instead. It implements wasmtime's lifting
//! traits the way `WasmList` does (pointer and length from the canonical
//! ABI's pointer pair, bounds-checked against the memory); those traits are
//! `doc(hidden)`, which is why wasmtime is pinned to one version (`=48.0.8`
//! in the workspace's Cargo.toml).

use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift};
use wasmtime::ValRaw;

/// A `list<u8>` of the calling instance's linear memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestBytes {
    /// Host address of the first byte.
    addr: usize,
    /// Offset of the first byte from the start of linear memory.
    offset: usize,
    /// Length in bytes.
    len: usize,
}

impl GuestBytes {
    fn new(cx: &LiftContext<'_>, ptr: u32, len: u32) -> wasmtime::Result<Self> {
        let memory = cx.memory();
        let (offset, len) = (ptr as usize, len as usize);
        match offset.checked_add(len) {
            Some(end) if end <= memory.len() => Ok(GuestBytes {
                addr: memory.as_ptr() as usize + offset,
                offset,
                len,
            }),
            _ => wasmtime::bail!(
                "list of {len} bytes at offset {offset} passes the end of linear memory ({} bytes)",
                memory.len()
            ),
        }
    }

    /// The bytes at host address `addr`, `offset` bytes into a memory
    /// (tests of windows, with no instance).
    #[cfg(test)]
    pub(crate) fn for_test(addr: usize, offset: usize, len: usize) -> Self {
        Self { addr, offset, len }
    }

    /// Host address of the first byte.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Offset of the first byte from the start of linear memory.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    ///
    /// # Safety
    /// Only during the host call that received the list: the instance's
    /// memory is then alive, cannot move (`Config::memory_may_move(false)`)
    /// or shrink, and the guest is suspended in the call, so nothing writes
    /// these bytes while the host reads them.
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: bounds checked against linear memory when lifted; the
        // caller upholds the lifetime.
        unsafe { std::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }
}

// SAFETY: lowered as a canonical-ABI pointer pair, exactly as `[u8]` (and
// `WasmList<u8>`) are: two core values, pointer then length.
unsafe impl ComponentType for GuestBytes {
    type Lower = [ValRaw; 2];

    const ABI: CanonicalAbiInfo = CanonicalAbiInfo::POINTER_PAIR;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <[u8] as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: reads the pointer pair as `WasmList` does and checks it against
// the memory the list lives in.
unsafe impl Lift for GuestBytes {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        _ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        GuestBytes::new(cx, src[0].get_u32(), src[1].get_u32())
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        _ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        let word = |at: usize| -> wasmtime::Result<u32> {
            let word: [u8; 4] = bytes
                .get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| wasmtime::format_err!("list pointer pair cut short"))?;
            Ok(u32::from_le_bytes(word))
        };
        GuestBytes::new(cx, word(0)?, word(4)?)
    }
}
