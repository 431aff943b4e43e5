//! Workers: running tasks inside wasm instances.
//!
//! - [`state`]: what each store carries (WASI, limits, the current task).
//! - [`host_api`]: the `wray:runtime` imports guests call.
//! - [`mapping`]: zero-copy windows (objects mapped into guest memory).
//! - [`run`]: one remote-function task in a fresh instance.
//! - [`classify`]: traps to task errors.
//! - [`pool`]: the elastic pool of worker threads.

pub(crate) mod classify;
pub(crate) mod host_api;
pub mod mapping;
pub mod pool;
pub(crate) mod reuse;
pub(crate) mod run;
pub mod state;
