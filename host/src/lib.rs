//! wray-host: a wray node.
//!
//! A node runs tasks and actors of WebAssembly components (the
//! `wray:runtime` world in `wit/`) on wasmtime, with worker threads bounded
//! by its CPUs, an object store, and a local scheduler. The `wray` binary
//! (the `wray-cli` crate, `cli/`) is its command line.
//!
//! The layers, lowest first; each uses only those before it, and each
//! below `node` is a crate of its own, named here by its module path
//! (`crate::scheduler` is `wray_scheduler`), so cargo refuses an upward
//! import (`docs/architecture.md`, "The crates"):
//! - `proto`: `wray-proto` (`proto/src`): ids, `TaskSpec`, options,
//!   resource requests, limits, [`TaskError`] and its one [`ErrorKind`]:
//!   plain data; with [`bounds`] (every bound a guest meets, every
//!   setting's range) and `error`.
//! - the control plane (`wray-control-plane` crate): the function table and
//!   the job table, embedded by default.
//! - `objects`: `wray-objects` (`objects/src`): the object store, its
//!   arena and spill files, holds (reference counts by holder),
//!   readiness; and `id_map`, the tables keyed by ids.
//! - `resources`: `wray-resources` (`resources/src`): CPUs, GPUs,
//!   pinning; with its `worker_pool` (the worker threads, bounded by the
//!   CPUs) and `cancel_token`.
//! - [`config`]: `wray-config` (`config/src`), public here whole:
//!   [`NodeConfig`] and its defaults; with its `task_output` (plain
//!   tasks' bounded output, on a node that keeps it).
//! - `wray-job` (`job/src`): [`working_dir`] (jobs' working directories:
//!   packed, unpacked, kept), `job_env` (a job's directories and
//!   environment variables, and what of them travels with its tasks),
//!   `job_log` (a job's bounded output).
//! - `scheduler`: `wray-scheduler` (`scheduler/src`): dependencies, the
//!   resource queue, actor mailboxes, the task table, cancel, placement;
//!   it starts work through a narrow executor interface and knows no
//!   wasmtime.
//! - `executor`: `wray-executor` (`executor/src`): wasmtime: engine,
//!   components, linker, host imports, mapping, reusable and actor
//!   instances; its stores reach the node through
//!   `executor::services::Services`.
//! - `cluster`: `wray-cluster` (`cluster/src`), beside the executor: a
//!   node's membership of a cluster: the node registry (etcd), the
//!   node-to-node channel, tasks forwarded to other nodes and their
//!   objects moved between stores.
//! - this crate's own: `node`: [`Node`] wires them, owns the runtime, and
//!   shuts down in order; drivers, state snapshots, the timeline;
//!   `session`: [`Session`], the one door for code outside a guest;
//!   `jobs`: [`Jobs`], drivers run in the background with a log each
//!   (Ray's Jobs API).
//!
//! # The public surface
//!
//! What an embedder (the `wray` CLI, the HTTP server `wray-http`, the
//! benchmarks in `bench/`, this crate's integration tests) uses is
//! re-exported below, by what it is for. Three modules are public whole:
//! [`bounds`], because a front end checks its flags and requests against
//! the same ranges the node enforces (and names them in its messages),
//! [`config`], because [`NodeConfig`] is public data whose defaults a front
//! end shows in its help, and [`working_dir`], because the client packs a
//! job's working directory as the node unpacks it.

pub(crate) use wray_cluster as cluster;
pub use wray_config as config;
pub use wray_proto::bounds;
pub(crate) use wray_resources::cancel_token;
pub(crate) mod error;
pub(crate) use wray_executor as executor;
pub(crate) use wray_job::env as job_env;
pub(crate) use wray_job::log as job_log;
pub(crate) mod jobs;
pub(crate) mod node;
pub(crate) use wray_objects as objects;
pub(crate) use wray_proto as proto;
pub(crate) use wray_resources as resources;
pub(crate) use wray_scheduler as scheduler;
pub(crate) mod session;
pub(crate) use wray_config::task_output;
pub use wray_job::working_dir;
pub(crate) use wray_resources::worker_pool;

// The node and the doors into it.
pub use node::driver::{DriverError, DriverOutcome};
pub use node::{Node, StopHandle};
pub use session::{Session, SharedValue};

// Its configuration: what a front end sets (`wray run`'s and `wray
// start`'s flags, a test's node).
pub use cluster::{ClusterConfig, DEFAULT_SPREAD_THRESHOLD};
pub use config::{CompileCommand, DEFAULT_COMPILE_MEMORY};
pub use config::{NodeConfig, Preopen, Stdio};
pub use resources::{GpuDiscovery, GpuInfo, StaticGpus};

// The compile process a node runs (`wray __compile`).
pub use executor::compile::child::main as compile_process;

// What a caller passes to a task and gets back.
pub use error::{DeployBound, DeployLimit, Error, ErrorKind, Result, TaskError};
pub use proto::{
    Arg, Codec, LimitOptions, Limits, Payload, ResourceOptions, Scheduling, TaskOptions,
};
pub use wray_control_plane::{
    split_version, ActorId, BadId, ComponentRecord, ComponentVersion, Deployment, FunctionKind,
    FunctionRecord, JobId, Listed, ObjectId, Skipped, TaskId,
};

// Jobs (Ray's Jobs API) and what tasks print.
pub use job_env::JobEnv;
pub use job_log::{JobLog, LogChunk};
pub use jobs::{JobDir, JobError, JobInfo, JobOptions, JobStatus, Jobs, JobsConfig};
pub use task_output::TaskOutputs;

// What the node reports of itself: the rows, listings and statistics the
// session directory, `wray status|tasks|timeline` and the HTTP API's
// listings and `/metrics` show.
pub use cluster::ClusterStats;
pub use executor::compile::CompileStats;
pub use executor::instantiation::InstantiationHistogram;
pub use node::state::task_info;
pub use node::timeline::write_chrome_trace;
pub use objects::{ObjectRow, StoreStats};
pub use scheduler::task_table::{SpanRow, TaskRow, TaskStatus};
pub use scheduler::{ComponentUsage, StatsSnapshot};
pub use worker_pool::PoolStats;

// HTTP requests relayed to the node that holds what they name (the HTTP
// server answers them; the node forwards them).
pub use cluster::{
    Delivered, NodeAnswers, RelayAnswer, RelayError, RelayFailure, RelayHandler, RelayRequest,
    RelayResponse, RelayedRest, DEAD_NODE_KEEP, FAN_OUT, MAX_RELAY_BODY, MAX_RELAY_STREAM,
    RELAY_CHUNK,
};

// The engine a node compiles on: the benchmark's bare-wasmtime yardstick
// (`bench/`) builds the same one.
pub use executor::engine::build_engine;
