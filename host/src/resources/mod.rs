//! Node resources and what tasks ask of them, as Ray models them.
//!
//! Fractional amounts ([`Quantity`]) and what one task asks for
//! ([`Request`]) are plain data of the [`proto`](crate::proto) layer,
//! re-exported here.
//! - [`node`]: a node's totals and free amounts, per unit id for `CPU`, `GPU`
//!   and custom resources ([`NodeResources`]): feasibility, allocation,
//!   release.
//! - [`discovery`]: where the node's GPUs come from (NVML, or a fixed list in
//!   tests).
//! - [`pin`]: pinning workers to the cores of their CPU units.

pub mod discovery;
pub mod node;
pub mod pin;

pub use crate::proto::{Quantity, Request, CPU, GPU, MEMORY};
pub use discovery::{node_gpus, GpuDiscovery, GpuInfo, Nvml, StaticGpus};
pub use node::{Allocation, NodeResources, ResourceTotals};
