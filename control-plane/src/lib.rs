//! wray's control plane.
//!
//! The control plane holds what every node of a cluster must agree on. This
//! crate defines it as traits with backends:
//!
//! - [`ids`]: job, task, object and actor ids (shared vocabulary): a random
//!   job part, then a part derived deterministically within the job.
//! - [`function_table`]: the [`FunctionTable`] of deployed components (a
//!   record per name and version, bytes by content hash, a watch of
//!   changes), with the in-process [`EmbeddedFunctionTable`] used by a
//!   single node.
//! - [`etcd`] (feature `etcd`, on by default): [`EtcdFunctionTable`], the
//!   same trait on etcd, for a cluster (`docs/control-plane.md`).
//! - [`job_table`]: the [`JobTable`]: every job's id comes from it, so ids
//!   are unique across the cluster.
//!
//! Node registry, object directory and actor directory join when the cluster
//! arrives; a single node keeps them in its own memory.

pub mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod function_table;
pub mod ids;
pub mod job_table;

pub use error::{Error, Result};
#[cfg(feature = "etcd")]
pub use etcd::{EtcdConfig, EtcdFunctionTable};
pub use function_table::{
    check_name, check_record, content_hash, is_content_hash, split_version, ComponentRecord,
    ComponentVersion, Declared, EmbeddedFunctionTable, FunctionEvent, FunctionKind, FunctionRecord,
    FunctionTable, FunctionWatch, Param, TableLimits, MAX_COMPONENT_BYTES, MAX_NAME_BYTES,
    MAX_RECORD_BYTES, MAX_VERSIONS_KEPT, NAME_RULE, WRITE_ATTEMPTS,
};
pub use ids::{ActorId, BadId, JobId, ObjectId, TaskId, MAX_PUTS, MAX_RETURNS, PUT_INDEX_BIT};
pub use job_table::{EmbeddedJobTable, JobRecord, JobTable};
