//! wray-executor: the executor layer, everything that knows wasmtime. It runs the tasks
//! the scheduler starts (through `Executor`),
//! and its store data reaches the rest of the node only through
//! `Services`.
//!
//! - `engine`: the wasmtime engine (pooling allocator, epoch ticker).
//! - `component`: compile once per content hash, link, pre-instantiate,
//!   `describe`; `compile`: the cheap checks before a compile, and the
//!   bounded pool of compile threads, each compile under a time limit;
//!   `bindings`: the generated `wray:runtime` bindings;
//!   `convert`: between them and the `proto` types.
//! - `state`: what each store carries (WASI, limits, the current task,
//!   what the instance holds and may name).
//! - `host_api`: the `wray:runtime` imports guests call.
//! - `mapping`: zero-copy windows (objects mapped into guest memory);
//!   `windows`: the windows themselves, bounded, and the store that
//!   cleans them; `guest_bytes`: lists read in place.
//! - `store`: the store that cleans its windows before it goes;
//!   `values`: payloads to objects and back, results, host errors.
//! - `instantiation`: where every instance is made, timed into a
//!   lock-free histogram (`Node::instantiation_histogram`).
//! - `run`: one remote-function task in a fresh instance, or a cached
//!   one of its job for `reuse` functions (`reuse`).
//! - `actor`: actor instances keyed by actor id, and running their calls.
//! - `guard`: stopping a guest call from outside (limits, cancel,
//!   shutdown); `classify`: traps to task errors.
//! - `services`: what a store may ask of the node.
//! - `output`: where guests' stdout and stderr go (the node's stdio, or
//!   their job's log).
//! - `wasm_executor`: [`WasmExecutor`], what the executor owns, and
//!   [`Handle`], the scheduler's `Executor` over it.

#![warn(unreachable_pub)]

pub mod actor;
pub mod bindings;
pub mod classify;
pub mod compile;
pub mod component;
pub mod convert;
pub mod engine;
pub mod exports;
pub mod guard;
pub mod guest_bytes;
pub(crate) mod host_api;
pub mod instantiation;
pub mod integers;
pub mod mapping;
pub mod output;
pub mod reuse;
pub mod run;
pub mod schemas;
pub mod services;
pub mod state;
pub mod store;
pub mod values;
mod wasm_executor;
pub mod windows;

// The layers below, under the names this crate's modules use (as in
// `wray-host`).
use wray_config as config;
use wray_config::task_output;
use wray_job::{env as job_env, log as job_log, outbox as job_outbox};
use wray_objects as objects;
use wray_objects::id_map;
use wray_proto as proto;
use wray_proto::{bounds, error};
use wray_resources as resources;
use wray_resources::{cancel_token, worker_pool};
use wray_scheduler as scheduler;

pub use wasm_executor::{Handle, WasmExecutor};
