//! wray-proto: the lowest layer of a node (`wray-host` and the crates
//! under it), what travels between a session, the scheduler, the executor
//! and other nodes, as plain serializable data, and the bounds every layer
//! checks. Nothing here knows wasmtime or holds a live handle.
//!
//! - ids (`TaskId`, `ObjectId`, `ActorId`, `JobId`) come from the
//!   control plane crate (`wray_control_plane`);
//! - [`spec`]: [`TaskSpec`], what one task runs, with which arguments;
//! - [`options`]: what a caller asks of a task ([`TaskOptions`]);
//! - [`request`] and [`quantity`]: resource requests ([`Request`]);
//! - [`limits`]: per-task memory, time and fuel limits ([`Limits`]);
//! - [`bounds`]: every bound a guest meets and every setting's range;
//! - [`error`]: [`TaskError`](error::TaskError) (what an error object
//!   holds), its one [`ErrorKind`], and the host's
//!   [`Error`](error::Error).

#![warn(unreachable_pub)]

pub mod bounds;
pub mod error;
pub mod limits;
pub mod options;
pub mod quantity;
pub mod request;
pub mod spec;

pub use error::ErrorKind;
pub use limits::Limits;
pub use options::{LimitOptions, ResourceOptions, Scheduling, TaskOptions};
pub use quantity::Quantity;
pub use request::Request;
pub use spec::{actor_handle_object, Arg, Codec, Payload, Target, TaskSpec};

/// Name of the CPU resource.
pub const CPU: &str = "CPU";
/// Name of the GPU resource.
pub const GPU: &str = "GPU";
/// Name of the memory resource (bytes).
pub const MEMORY: &str = "memory";
