//! wray-config: a node's configuration ([`NodeConfig`]: resources,
//! limits, the object store's size, where guests' output goes, the
//! compile program), and the table of plain tasks' output it may keep
//! ([`task_output`]). The layer above `wray-objects` and
//! `wray-resources`, below the scheduler; `wray-host` re-exports it whole
//! as its public module `config` (`wray_host::config::NodeConfig`).
//!
//! - `node_config`: [`NodeConfig`] and its defaults;
//! - `guest_io`: [`Preopen`] and [`Stdio`], what a guest sees of the
//!   host's directories and streams;
//! - `compiler`: [`CompileCommand`], the program a node compiles
//!   components with;
//! - [`task_output`]: [`TaskOutputs`], what plain tasks write, bounded.

#![warn(unreachable_pub)]

mod compiler;
mod guest_io;
mod node_config;
pub mod task_output;

// The layers below, under the names this crate's modules use (as in
// `wray-host`).
use wray_objects as objects;
use wray_objects::id_map;
use wray_proto as proto;
use wray_proto::{bounds, error};
use wray_resources as resources;

pub use crate::objects::sizing::{
    default_object_store_dir, default_object_store_memory, fitting_object_store_memory,
    total_memory,
};
pub use compiler::{CompileCommand, DEFAULT_COMPILE_MEMORY};
pub use guest_io::{MemoryOutput, Preopen, Stdio};
pub use node_config::{
    default_component_memory, Discovery, NodeConfig, DEFAULT_COMPILE_TIMEOUT,
    DEFAULT_COMPONENT_MEMORY, DEFAULT_KEEP_RESIDENT, DEFAULT_MAX_CODE_BYTES,
    DEFAULT_MAX_COMPONENTS, DEFAULT_MAX_INSTANCES, DEFAULT_MAX_PENDING_TASKS, DEFAULT_MAX_VERSIONS,
    DEFAULT_MAX_WORKING_DIR, DEFAULT_TASK_MEMORY, DEFAULT_TASK_TIMEOUT, DEFAULT_WORKING_DIR_CACHE,
    MAX_INSTANCES, MIN_DEFAULT_GUEST_MEMORY,
};
