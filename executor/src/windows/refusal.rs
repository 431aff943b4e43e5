//! Why a window (or an object made over one) is refused: each a task's
//! `invalid-argument` error, the text the guest reads.

use crate::bounds::{MAX_CREATING_PER_INSTANCE, MAX_WINDOWS_PER_INSTANCE};

/// A window a guest asked for that the host does not map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// The window lies below the end of the module's data (offset
    /// `initial` of linear memory).
    #[error(
        "a window may not lie below offset {initial} of linear memory, where the module's data \
         was loaded (this one is at {offset}); reserve windows with memory.grow"
    )]
    BelowData {
        /// Where the module's data ends, in bytes.
        initial: usize,
        /// The window's offset, in bytes.
        offset: usize,
    },
    /// The window's start or length is not a multiple of the page size.
    #[error("window at offset {offset}, {len} bytes long, is not aligned to {page}-byte pages")]
    Misaligned {
        /// The window's offset, in bytes.
        offset: usize,
        /// Its length in bytes.
        len: usize,
        /// The page size in bytes.
        page: usize,
    },
    /// The window is shorter than the object's bytes rounded up to pages.
    #[error("window of {len} bytes is too small for {need} bytes on {page}-byte pages")]
    TooSmall {
        /// Its length in bytes.
        len: usize,
        /// The object's size in bytes.
        need: u64,
        /// The page size in bytes.
        page: usize,
    },
    /// The instance has [`MAX_WINDOWS_PER_INSTANCE`] windows mapped.
    #[error(
        "the task has {MAX_WINDOWS_PER_INSTANCE} windows mapped, the most one instance may \
         have; unmap some first"
    )]
    InstanceFull,
    /// The node-wide budget (a quarter of `vm.max_map_count`) is spent.
    #[error(
        "the node has {0} windows mapped, the most it allows (a quarter of vm.max_map_count); \
         try again later"
    )]
    NodeFull(
        /// The node's budget of windows.
        usize,
    ),
    /// The instance is making [`MAX_CREATING_PER_INSTANCE`] objects.
    #[error(
        "the task is making {MAX_CREATING_PER_INSTANCE} objects at once, the most one instance \
         may; seal some first"
    )]
    Creating,
}
