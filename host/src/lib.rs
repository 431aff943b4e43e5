//! wray-host: a wray node.
//!
//! A node runs tasks and actors of WebAssembly components (the
//! `wray:runtime` world in `wit/`) on wasmtime, with one worker per CPU slot,
//! an object store, and a local scheduler. The `wray` binary (the `wray-cli`
//! crate, `cli/`) is its command line.
//!
//! The moving parts, one module each:
//! - [`node`]: [`Node`], the public entry point: start, deploy, run a driver,
//!   shut down.
//! - [`cancel_token`]: the cancel flag of every task and of the node.
//! - [`bounds`]: every bound a guest meets (sizes, counts, tables) and the
//!   valid range of every node setting.
//! - [`config`]: [`NodeConfig`] (CPUs, limits, preopened directories).
//! - [`engine`]: the wasmtime engine (pooling allocator, epoch ticker).
//! - [`component`]: compile once per content hash, link, pre-instantiate,
//!   `describe`.
//! - `scheduler`: dependency tracking, the resource queue, blocking
//!   `get`/`wait`, submission checks, cancel and kill.
//! - [`resources`]: CPUs, GPUs (NVML discovery), memory and custom
//!   resources; fractional requests; unit ids; pinning.
//! - [`limits`]: per-task memory, time and fuel limits.
//! - [`registry`]: the task table (`tasks()`, `errors()`, the timeline).
//! - [`state`]: cluster state snapshots (nodes, tasks, errors) and
//!   [`timeline`]: Chrome trace JSON of what ran where.
//! - [`worker`]: running a task in an instance; the host imports.
//! - `actor`: actor instances and their ordered queues; the actor table.
//! - [`object_store`]: immutable objects and readiness notification.
//! - [`error`]: [`Error`] (host failures) and [`TaskError`] (error objects).
//!
//! See `docs/architecture.md` for the path of one task from `.remote()` to
//! `get`.

mod actor;
pub mod bindings;
pub mod bounds;
pub mod cancel_token;
pub mod component;
pub mod config;
mod convert;
mod driver;
pub mod engine;
pub mod error;
pub mod id_map;
pub mod limits;
pub mod node;
pub mod object_store;
pub mod registry;
pub mod resources;
mod runtime;
mod scheduler;
pub mod state;
mod task;
pub mod timeline;
pub mod worker;

pub use config::{NodeConfig, Preopen, Stdio};
pub use driver::DriverOutcome;
pub use error::{Error, ErrorKind, Result, TaskError};
pub use node::{Node, StopHandle};
pub use runtime::StatsSnapshot;
