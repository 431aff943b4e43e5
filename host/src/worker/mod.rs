//! Workers: running tasks inside wasm instances.
//!
//! - [`state`]: what each store carries (WASI, limits, the current task,
//!   what the instance holds and may name).
//! - [`host_api`]: the `wray:runtime` imports guests call.
//! - [`mapping`]: zero-copy windows (objects mapped into guest memory);
//!   [`windows`]: the windows themselves, bounded, and the store that
//!   cleans them; [`guest_bytes`]: lists read in place.
//! - [`run`]: one remote-function task in a fresh instance, or a cached
//!   one of its job for `reuse` functions ([`reuse`]).
//! - [`guard`]: stopping a guest call from outside (limits, cancel,
//!   shutdown).
//! - [`classify`]: traps to task errors.
//! - [`pool`]: the elastic pool of worker threads.

pub(crate) mod classify;
pub(crate) mod guard;
pub mod guest_bytes;
pub(crate) mod host_api;
pub mod mapping;
pub mod pool;
pub(crate) mod reuse;
pub(crate) mod run;
pub mod state;
pub mod windows;
