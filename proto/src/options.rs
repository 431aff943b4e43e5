//! What a caller asks of one task: how many objects it returns, the
//! resources it needs and the limits it runs under. Every field is
//! optional; unset ones come from the function's declaration, then the
//! node's defaults (see [`Request::resolve`](super::Request::resolve) and
//! [`Limits::resolve`](super::Limits::resolve)). The same shapes as the
//! WIT `task-options`, without wasmtime.

use serde::{Deserialize, Serialize};
use wray_control_plane::Declared;

/// Resources a call or a declaration asks for (`None`: not said).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceOptions {
    /// CPU cores (fractional: 0.5 is half a core).
    pub num_cpus: Option<f64>,
    /// GPUs (fractional).
    pub num_gpus: Option<f64>,
    /// Bytes of memory to reserve.
    pub memory: Option<u64>,
    /// Custom resources by name, with amounts.
    pub custom: Vec<(String, f64)>,
}

/// Limits a call or a declaration asks for (`None`: not said).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitOptions {
    /// Most bytes of linear memory.
    pub max_memory: Option<u64>,
    /// Most wall-clock milliseconds.
    pub timeout_ms: Option<u64>,
    /// Most wasm fuel.
    pub fuel: Option<u64>,
}

/// The options of one submission.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskOptions {
    /// Objects the task returns (0 is taken as 1, as Ray's default).
    pub num_returns: u32,
    /// Resources it asks for.
    pub resources: ResourceOptions,
    /// Limits it asks for.
    pub limits: LimitOptions,
    /// An actor that lives until killed (past its job's end), not until its
    /// last handle is dropped.
    #[serde(default)]
    pub detached: bool,
    /// For an actor: a name unique in the cluster while it lives, that
    /// `get-actor` finds it by (Ray's `name`).
    #[serde(default)]
    pub name: Option<String>,
    /// For an actor: times it is created again after its node died (Ray's
    /// `max_restarts`; 0 by default).
    #[serde(default)]
    pub max_restarts: u32,
    /// For an actor: times a call running when its node died runs again
    /// on the restarted actor (Ray's `max_task_retries`; 0 by default).
    #[serde(default)]
    pub max_task_retries: u32,
    /// The codec the caller reads the results in (`None`: the callee's
    /// own; a Rust guest's is rkyv). JSON for callers in other languages
    /// and over HTTP.
    #[serde(default)]
    pub result_codec: Option<super::Codec>,
    /// A `reuse` function's task may run on a warm instance shared with
    /// tasks of other jobs that ask the same (a serverless platform's warm
    /// instances: the HTTP API's invocations ask it). Off by default: a
    /// job's instances are its own. Guests cannot ask it.
    #[serde(default)]
    pub shared_reuse: bool,
    /// Run the task's guest call as a task of the submitting thread's
    /// multi-threaded tokio runtime, not on a worker thread: a caller that
    /// is itself a task of that runtime (the HTTP API's handlers) then
    /// hands nothing to another thread. Ignored outside such a runtime and
    /// for actor tasks. Guests cannot ask it.
    #[serde(default)]
    pub on_caller_runtime: bool,
    /// Where in a cluster the task (or actor) is placed (Ray's
    /// `scheduling_strategy`); ignored on a node of its own.
    #[serde(default)]
    pub scheduling: Scheduling,
}

/// Where in a cluster a task or actor is placed: Ray's
/// `scheduling_strategy` values (`DEFAULT`, `SPREAD`,
/// `NodeAffinitySchedulingStrategy(node_id, soft)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scheduling {
    /// Ray's hybrid policy: on the submitting node while its busiest
    /// resource is used under the node's spread threshold (50%), else
    /// the least used node with room, else queued where it fits.
    #[default]
    Default,
    /// On the least used node with room, whatever the threshold (Ray's
    /// `SPREAD`): a burst goes round the nodes.
    Spread,
    /// On node `node` (Ray's `NodeAffinitySchedulingStrategy`): queued
    /// there until it has room. `soft`: when that node is dead or cannot
    /// ever run the request, placed as `Default` instead of failing.
    Node {
        /// The node's id (`node-<16 hex>`).
        node: String,
        /// Fall back to the default policy instead of failing.
        soft: bool,
    },
}

impl std::fmt::Display for Scheduling {
    /// Ray's names: `DEFAULT`, `SPREAD`, `node-..` (`soft` after it).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scheduling::Default => f.write_str("DEFAULT"),
            Scheduling::Spread => f.write_str("SPREAD"),
            Scheduling::Node { node, soft: false } => write!(f, "node affinity {node}"),
            Scheduling::Node { node, soft: true } => write!(f, "soft node affinity {node}"),
        }
    }
}

impl TaskOptions {
    /// One return object, everything else from the declaration and the node.
    pub fn new() -> Self {
        Self {
            num_returns: 1,
            ..Self::default()
        }
    }
}

impl From<&Declared> for ResourceOptions {
    /// The resources a function-table row declares.
    fn from(d: &Declared) -> Self {
        Self {
            num_cpus: d.num_cpus,
            num_gpus: d.num_gpus,
            memory: d.memory,
            custom: d.resources.clone(),
        }
    }
}

impl From<&Declared> for LimitOptions {
    /// The limits a function-table row declares.
    fn from(d: &Declared) -> Self {
        Self {
            max_memory: d.max_memory,
            timeout_ms: d.timeout_ms,
            fuel: d.fuel,
        }
    }
}
