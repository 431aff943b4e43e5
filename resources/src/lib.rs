//! wray-resources: what a node runs work on, as Ray models it: its
//! resources and what tasks ask of them, the worker threads bounded by its
//! CPUs, and the cancel flag every piece of work carries. The layer above
//! `wray-proto`, below the scheduler (in `wray-host` these are the modules
//! `resources`, `worker_pool` and `cancel_token`).
//!
//! Fractional amounts ([`Quantity`]) and what one task asks for
//! ([`Request`]) are plain data of the `wray-proto` layer,
//! re-exported here.
//! - [`node`]: a node's totals and free amounts, per unit id for `CPU`, `GPU`
//!   and custom resources ([`NodeResources`]): feasibility, allocation,
//!   release.
//! - [`discovery`]: where the node's GPUs come from (NVML, or a fixed list in
//!   tests).
//! - [`pin`]: pinning workers to the cores of their CPU units.
//! - [`worker_pool`]: the worker threads, a pool bounded by the CPU slots
//!   ([`WorkerPool`](worker_pool::WorkerPool)).
//! - [`cancel_token`]: [`CancelToken`](cancel_token::CancelToken), a flag
//!   that, once set, stays set, and wakes whatever awaits it.

#![warn(unreachable_pub)]

pub mod cancel_token;
pub mod discovery;
pub mod node;
pub mod pin;
pub mod worker_pool;

// The layer below, under the names this crate's modules use (as in
// `wray-host`).
use wray_proto as proto;
#[cfg(doc)]
use wray_proto::bounds;

pub use crate::proto::{Quantity, Request, CPU, GPU, MEMORY};
pub use discovery::{node_gpus, GpuDiscovery, GpuInfo, Nvml, StaticGpus};
pub use node::{Allocation, NodeResources, ResourceTotals};
