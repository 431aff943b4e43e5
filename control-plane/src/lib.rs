//! wray's control plane.
//!
//! The control plane holds what every node of a cluster must agree on. This
//! crate defines it as traits with backends: an embedded one (one process,
//! in memory) and, with the `etcd` feature (on by default), one on etcd.
//! Every node started with the same etcd and the same cluster name
//! ([`cluster`]) is one cluster.
//!
//! - [`ids`]: job, task, object and actor ids (shared vocabulary): a random
//!   job part, then a part derived deterministically within the job.
//! - [`function_table`]: the [`FunctionTable`] of deployed components (a
//!   record per name and version, bytes by content hash, a watch of
//!   changes), with the in-process [`EmbeddedFunctionTable`].
//! - [`job_table`]: the [`JobTable`]: every job's id comes from it, so ids
//!   are unique across the cluster, and any node finds a job's node.
//! - [`nodes`]: the [`NodeRegistry`]: a node registers its [`NodeRecord`]
//!   and keeps a [`Registration`] (heartbeats, availability updates); any
//!   node watches the cluster through a [`NodeView`] (ALIVE and DEAD
//!   nodes, membership events).
//! - [`actors`]: the [`ActorDirectory`] of named actors (put-if-absent by
//!   name).
//! - [`etcd`]: the etcd backends, sharing one [`EtcdClient`]:
//!   [`EtcdFunctionTable`], [`EtcdNodeRegistry`], [`EtcdActorDirectory`],
//!   [`EtcdJobTable`] (`docs/control-plane.md` has the key layout and
//!   what an etcd outage does).
//! - [`error`]: the [`Error`] of every call, saying whether a retry can
//!   help.
//!
//! The object directory joins later; a node keeps its objects' locations
//! in its own memory.

pub mod actors;
pub mod cluster;
mod codec;
pub mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod function_table;
pub mod ids;
pub mod job_table;
pub mod listing;
pub mod nodes;

pub use actors::{
    check_actor_record, ActorDirectory, ActorLimits, ActorPage, ActorRecord, ActorState,
    EmbeddedActorDirectory, MAX_ACTOR_PAGE, MAX_NAMED_ACTORS,
};
pub use cluster::{check_cluster, CLUSTER_RULE, DEFAULT_CLUSTER};
pub use error::{Error, Result};
#[cfg(feature = "etcd")]
pub use etcd::{
    EtcdActorDirectory, EtcdClient, EtcdConfig, EtcdFunctionTable, EtcdJobTable, EtcdNodeRegistry,
};
pub use function_table::{
    check_name, check_record, content_hash, is_content_hash, split_version, ComponentRecord,
    ComponentVersion, Declared, Deployment, EmbeddedFunctionTable, FunctionEvent, FunctionKind,
    FunctionRecord, FunctionTable, FunctionWatch, Param, TableLimits, MAX_COMPONENT_BYTES,
    MAX_NAME_BYTES, MAX_RECORD_BYTES, MAX_VERSIONS_KEPT, NAME_RULE, WRITE_ATTEMPTS,
};
pub use ids::{ActorId, BadId, JobId, ObjectId, TaskId, MAX_PUTS, MAX_RETURNS, PUT_INDEX_BIT};
pub use job_table::{EmbeddedJobTable, JobRecord, JobTable, MAX_LIVE_JOBS};
pub use listing::{Listed, Skipped, MAX_SKIPPED};
pub use nodes::{
    check_node_record, ClusterMember, EmbeddedNodeRegistry, NodeEvent, NodeId, NodeRecord,
    NodeRegistry, NodeState, NodeView, Registration, RegistrationHealth, RegistryOptions,
    MAX_ALLOWED_DIRS, MAX_DIR_BYTES, MAX_NODES,
};
