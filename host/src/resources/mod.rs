//! Node resources and what tasks ask of them, as Ray models them.
//!
//! - [`quantity`]: fractional amounts in fixed point (1/10,000 of a unit,
//!   Ray's `kResourceUnitScaling`).
//! - [`request`]: what one task asks for ([`Request`]), merged from the call's
//!   options, the function's declaration and the node's defaults.
//! - [`node`]: a node's totals and free amounts, per unit id for `CPU`, `GPU`
//!   and custom resources ([`NodeResources`]): feasibility, allocation,
//!   release.
//! - [`discovery`]: where the node's GPUs come from (NVML, or a fixed list in
//!   tests).
//! - [`pin`]: pinning workers to the cores of their CPU units.

pub mod discovery;
pub mod node;
pub mod pin;
pub mod quantity;
pub mod request;

pub use discovery::{node_gpus, GpuDiscovery, GpuInfo, Nvml, StaticGpus};
pub use node::{Allocation, NodeResources, ResourceTotals};
pub use quantity::Quantity;
pub use request::Request;

/// Name of the CPU resource.
pub const CPU: &str = "CPU";
/// Name of the GPU resource.
pub const GPU: &str = "GPU";
/// Name of the memory resource (bytes).
pub const MEMORY: &str = "memory";
