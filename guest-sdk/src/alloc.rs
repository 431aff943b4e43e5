//! [`ZeroPages`]: a global allocator whose large zeroed allocations get
//! fresh zero pages from the host instead of being written with zeros.
//!
//! `vec![0u64; n]`, `calloc` and every other zeroed allocation go through
//! [`GlobalAlloc::alloc_zeroed`]. On a native Linux process a large one is
//! an `mmap`, whose pages are zero until written and cost nothing until
//! touched (glibc's `calloc` above its mmap threshold). In wasm, memory is
//! never given back, so wasi-libc's `calloc` cannot know that memory it
//! used before is zero and writes every byte: for an 80 MiB array that is
//! as much work as copying it. This allocator asks the host instead
//! (`wray:runtime/mapping.zero`), which puts the kernel's zero pages over
//! the allocation's whole pages: no byte is written, reads share one zero
//! page, and a page costs memory only once written.
//!
//! It is opt-in, as every global allocator is in Rust (a crate may have
//! only one):
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: wray::ZeroPages = wray::ZeroPages;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};

/// Zeroed allocations of at least this many bytes (2 MiB: one huge page)
/// are zeroed by the host; smaller ones by the system allocator. Below it
/// writing zeros costs less than the host call, the page faults and the
/// TLB flush that fresh pages bring.
pub const ZERO_PAGES_MIN: usize = 2 << 20;

/// The system allocator (wasi-libc's `malloc`), with large zeroed
/// allocations zeroed by the host's fresh pages (see the [module
/// docs](self)).
#[derive(Debug, Default, Clone, Copy)]
pub struct ZeroPages;

// SAFETY: every method forwards to `System` with the same arguments, and
// `alloc_zeroed` returns memory `System` allocated for `layout` with all of
// its `layout.size()` bytes zero (the host's `zero` fills the whole region,
// by pages or by writing).
unsafe impl GlobalAlloc for ZeroPages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() < ZERO_PAGES_MIN {
            // SAFETY: the caller's contract, forwarded.
            return unsafe { System.alloc_zeroed(layout) };
        }
        // SAFETY: the caller's contract, forwarded.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            // SAFETY: `ptr` is `layout.size()` bytes just allocated for us.
            unsafe { zero(ptr, layout.size()) };
        }
        ptr
    }
}

/// Fills `len` bytes at `ptr` with zeros, by the host's pages in wasm.
///
/// # Safety
/// `ptr..ptr + len` must be memory the caller owns.
unsafe fn zero(ptr: *mut u8, len: usize) {
    #[cfg(target_arch = "wasm32")]
    {
        // The raw import rather than wit-bindgen's `mapping::zero`, which
        // takes a `&[u8]`: a reference to memory not yet initialized is
        // undefined behaviour in Rust. The canonical ABI passes a
        // `list<u8>` as (pointer, length), nothing else.
        #[link(wasm_import_module = "wray:runtime/mapping@0.1.0")]
        unsafe extern "C" {
            #[link_name = "zero"]
            fn host_zero(ptr: *mut u8, len: usize);
        }
        // SAFETY: the host writes only inside `ptr..ptr + len`, which the
        // caller owns, and only zeros.
        unsafe { host_zero(ptr, len) }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        // SAFETY: the caller owns the range.
        unsafe { core::ptr::write_bytes(ptr, 0, len) }
    }
}
