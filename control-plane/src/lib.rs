//! wray's control plane.
//!
//! The control plane holds what every node of a cluster must agree on. This
//! crate defines it as traits with backends:
//!
//! - [`ids`]: job, task, object and actor ids (shared vocabulary): a random
//!   job part, then a part derived deterministically within the job.
//! - [`function_table`]: the [`FunctionTable`] of deployed components, with
//!   the in-process [`EmbeddedFunctionTable`] used by a single node. The etcd
//!   backend implements the same trait over the key layout in DESIGN.md.
//!
//! - [`job_table`]: the [`JobTable`]: every job's id comes from it, so ids
//!   are unique across the cluster.
//!
//! Node registry, object directory and actor directory join when the cluster
//! arrives; a single node keeps them in its own memory.

pub mod error;
pub mod function_table;
pub mod ids;
pub mod job_table;

pub use error::{Error, Result};
pub use function_table::{
    content_hash, ComponentRecord, Declared, EmbeddedFunctionTable, FunctionKind, FunctionRecord,
    FunctionTable, Param,
};
pub use ids::{ActorId, BadId, JobId, ObjectId, TaskId, MAX_PUTS, MAX_RETURNS, PUT_INDEX_BIT};
pub use job_table::{EmbeddedJobTable, JobRecord, JobTable};
