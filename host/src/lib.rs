//! wray-host: a wray node.
//!
//! A node runs tasks and actors of WebAssembly components (the
//! `wray:runtime` world in `wit/`) on wasmtime, with one worker per CPU slot,
//! an object store, and a local scheduler. The `wray` binary (`src/bin`) is
//! its command line.
//!
//! The moving parts, one module each:
//! - [`node`]: [`Node`], the public entry point: start, deploy, run a driver.
//! - [`config`]: [`NodeConfig`] (CPUs, limits, preopened directories).
//! - [`engine`]: the wasmtime engine (pooling allocator, epoch ticker).
//! - [`component`]: compile once per content hash, link, pre-instantiate,
//!   `describe`.
//! - `scheduler`: dependency tracking, CPU slots, blocking `get`/`wait`,
//!   submission checks.
//! - [`worker`]: running a task in an instance; the host imports.
//! - `actor`: actor instances and their ordered queues.
//! - [`object_store`]: immutable objects and readiness notification.
//! - [`error`]: [`Error`] (host failures) and [`TaskError`] (error objects).
//! - [`baseline`]: bare wasmtime (instantiate + call, no wray), the
//!   yardstick of `wray microbenchmark`.
//!
//! See `docs/architecture.md` for the path of one task from `.remote()` to
//! `get`.

mod actor;
pub mod baseline;
pub mod bindings;
pub mod component;
pub mod config;
mod convert;
mod driver;
pub mod engine;
pub mod error;
pub mod node;
pub mod object_store;
mod runtime;
mod scheduler;
mod task;
pub mod worker;

pub use config::{NodeConfig, Preopen, Stdio};
pub use driver::DriverOutcome;
pub use error::{Error, ErrorKind, Result, TaskError};
pub use node::Node;
pub use runtime::StatsSnapshot;
