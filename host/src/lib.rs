//! wray-host: a wray node.
//!
//! A node runs tasks and actors of WebAssembly components (the
//! `wray:runtime` world in `wit/`) on wasmtime, with worker threads bounded
//! by its CPUs, an object store, and a local scheduler. The `wray` binary
//! (the `wray-cli` crate, `cli/`) is its command line.
//!
//! The layers, lowest first; each uses only those before it (see
//! `docs/architecture.md` for the check):
//! - [`proto`]: ids, [`TaskSpec`](proto::TaskSpec), options, resource
//!   requests, limits, [`TaskError`] and its one [`ErrorKind`]: plain data.
//! - the control plane (`wray-control-plane` crate): the function table and
//!   the job table, embedded by default.
//! - [`objects`]: the object store, its arena and spill files, holds
//!   (reference counts by holder), readiness.
//! - [`scheduler`]: dependencies, the resource queue, actor mailboxes, the
//!   task table, cancel; it starts work through a narrow executor
//!   interface and knows no wasmtime.
//! - [`executor`]: wasmtime: engine, components, linker, host imports,
//!   mapping, reusable and actor instances, the worker threads; its stores
//!   reach the node through `executor::services::Services`.
//! - [`node`]: [`Node`] wires them, owns the runtimes, and shuts down in
//!   order; drivers, state snapshots, the timeline.
//! - [`session`]: [`Session`], the one door for code outside a guest.
//! - [`jobs`]: [`Jobs`], drivers run in the background with a log each
//!   (Ray's Jobs API).
//! - [`cluster`]: a node's membership of a cluster: the node registry
//!   (etcd), the node-to-node channel, tasks forwarded to other nodes and
//!   their objects moved between stores.
//!
//! Leaves any layer may use: [`bounds`] (every bound a guest meets, every
//! setting's range), [`config`] ([`NodeConfig`]), [`resources`] (CPUs,
//! GPUs, pinning), [`cancel_token`], [`id_map`], [`error`], [`worker_pool`] (the worker
//! threads, bounded by the CPUs), [`job_log`] (a job's bounded output),
//! [`task_output`] (plain tasks' bounded output, on a node that keeps it),
//! [`job_env`] (a job's directories and environment variables).

pub mod bounds;
pub mod cancel_token;
pub mod cluster;
pub mod config;
pub mod error;
pub mod executor;
pub mod id_map;
pub mod job_env;
pub mod job_log;
pub mod jobs;
pub mod node;
pub mod objects;
pub mod proto;
pub mod resources;
pub mod scheduler;
pub mod session;
pub mod task_output;
pub mod worker_pool;

pub use config::{NodeConfig, Preopen, Stdio};
pub use error::{DeployBound, DeployLimit, Error, ErrorKind, Result, TaskError};
pub use executor::engine::build_engine;
pub use executor::instantiation::InstantiationHistogram;
pub use job_env::JobEnv;
pub use job_log::{JobLog, LogChunk};
pub use jobs::{JobDir, JobError, JobInfo, JobOptions, JobStatus, Jobs, JobsConfig};
pub use node::driver::DriverOutcome;
pub use node::{Node, StopHandle};
pub use scheduler::StatsSnapshot;
pub use session::{Session, SharedValue};
pub use task_output::{TaskOutput, TaskOutputs};
pub use wray_control_plane::{
    split_version, ActorId, ComponentRecord, ComponentVersion, FunctionKind, FunctionRecord, JobId,
    ObjectId, TaskId,
};
