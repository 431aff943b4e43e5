//! wray-cluster: a node's membership of a cluster. Every node started on the same etcd and cluster name is
//! one cluster. The control plane (`wray-control-plane`) holds who is in
//! it: each node registers itself under a lease, republishes what it has
//! free (`membership`), and watches the others ([`NodeView`]). The
//! node-to-node channel (`wray-peer`, authenticated by the cluster token)
//! carries tasks and object bytes:
//!
//! - `protocol`: the messages, one serde type each;
//! - `forward`: the owner's side: the scheduler's [`Remote`] (forwarding
//!   a task once its arguments are sealed, retrying it elsewhere when its
//!   node is lost, placing it again when that node hands it back);
//! - `health`: which live nodes this node places work on: a node not
//!   yet probed, one whose connection failed or stalled, and one that
//!   failed authentication (quarantined) are skipped until a probe
//!   passes;
//! - `deadline`: how long the owner waits for a forwarded task's answer
//!   before it asks whether the node still holds it;
//! - `choose`: the placement policy (Ray's hybrid policy, `SPREAD`, node
//!   affinity); `load`: what each other node has free, as this node
//!   estimates it; `spill`: tasks waiting here moved to a node with room
//!   (spillback);
//! - `serve`: the other side: running a forwarded task, answering reads
//!   of object bytes;
//! - `actors`: actors created on another node: their calls sent there
//!   from a stub; `handles`: actor handles in messages, carrying where
//!   their actor lives;
//! - `transfer`: objects shipped inline or pulled in chunks straight into
//!   the shared-memory store, checked before they are sealed;
//! - `membership`: this node's record, published as it changes;
//! - `jobs`: a job's end told to the nodes that ran its tasks;
//! - `fate`: what a dead node owned here goes with it (Ray's fate
//!   sharing); `drain`: a stopping node hands back what it queued and
//!   finishes what runs within its grace before it leaves;
//! - `relay`, `relay_stream`: requests to another node's HTTP API, their
//!   large answers pulled a chunk at a time.
//! - `environments`: a job's environment taken by the nodes its tasks
//!   reach (variables, directories, its working directory fetched once),
//!   and its guests' output there streamed back to its log.
//!
//! Per-task and per-object metadata never go through etcd: a task's
//! results go back to the node that owns them (Ray's ownership design).
//!
//! [`Remote`]: crate::scheduler::remote::Remote

#![warn(unreachable_pub)]

mod actors;
mod choose;
mod deadline;
mod drain;
mod draining;
mod environments;
mod fate;
mod forward;
mod handles;
mod health;
mod jobs;
mod joined;
mod load;
mod membership;
mod overdue;
mod protocol;
mod relay;
mod relay_stream;
mod serve;
mod spill;
mod transfer;

// The layers below, under the names this crate's modules use (as in
// `wray-host`).
use wray_config as config;
use wray_job::{env as job_env, log as job_log, outbox as job_outbox, working_dir};
use wray_objects as objects;
use wray_objects::id_map;
use wray_proto as proto;
use wray_proto::{bounds, error};
use wray_scheduler as scheduler;

pub use environments::{nodes_lacking, JobState};
pub use joined::{
    Cluster, ClusterConfig, ClusterStats, Loader, DEAD_NODE_KEEP, DEFAULT_SPREAD_THRESHOLD,
};
pub use relay::{
    NodeAnswers, RelayAnswer, RelayFailure, RelayHandler, RelayRequest, RelayResponse, RelaySlot,
    FAN_OUT, MAX_RELAY_BODY,
};
pub use relay_stream::{Delivered, RelayError, RelayedRest, MAX_RELAY_STREAM, RELAY_CHUNK};
