//! The state one node's workers share: engine, linker, object store,
//! scheduler, actors, deployed components and counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use wasmtime::component::Linker;
use wasmtime::Engine;
use wray_control_plane::ActorId;

use crate::actor::Actor;
use crate::component::LoadedComponent;
use crate::config::NodeConfig;
use crate::object_store::ObjectStore;
use crate::registry::Registry;
use crate::scheduler::queue::ResourcePool;
use crate::worker::pool::WorkerPool;
use crate::worker::state::TaskState;

/// Task counters of a node.
#[derive(Default)]
pub(crate) struct Stats {
    pub submitted: AtomicU64,
    pub finished: AtomicU64,
    pub failed: AtomicU64,
}

/// A point-in-time copy of a node's task counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatsSnapshot {
    /// Tasks submitted (functions, actor constructors and calls).
    pub submitted: u64,
    /// Tasks that finished with a value.
    pub finished: u64,
    /// Tasks that finished with an error object.
    pub failed: u64,
}

impl StatsSnapshot {
    /// Tasks submitted and not yet finished (queued, waiting or running).
    pub fn pending(&self) -> u64 {
        self.submitted.saturating_sub(self.finished + self.failed)
    }
}

pub(crate) struct Runtime {
    pub config: NodeConfig,
    pub node_id: String,
    pub engine: Engine,
    pub linker: Linker<TaskState>,
    pub objects: ObjectStore,
    /// Resources and the queue of tasks waiting for them.
    pub pool: ResourcePool,
    /// When workers are pinned to the cores of their CPU units (the node
    /// has fewer CPUs than the machine): every core the process may use.
    pub pin: Option<Vec<u32>>,
    /// Every task's state, times and error.
    pub registry: Registry,
    /// The node's GPUs.
    pub gpus: Vec<crate::resources::GpuInfo>,
    /// Idle instances of reusable functions.
    pub reusable: crate::worker::reuse::InstanceCache,
    pub actors: Mutex<HashMap<ActorId, Arc<Actor>>>,
    /// Loaded components by content hash.
    pub components: Mutex<HashMap<String, Arc<LoadedComponent>>>,
    pub stats: Stats,
    /// Drivers started so far (the next job's number - 1).
    pub jobs: AtomicU64,
    pub workers: WorkerPool,
}

impl Runtime {
    /// Runs `f` on a worker thread.
    pub fn spawn_blocking(&self, f: impl FnOnce() + Send + 'static) {
        self.workers.spawn(f);
    }

    pub fn stats(&self) -> StatsSnapshot {
        StatsSnapshot {
            submitted: self.stats.submitted.load(Ordering::Relaxed),
            finished: self.stats.finished.load(Ordering::Relaxed),
            failed: self.stats.failed.load(Ordering::Relaxed),
        }
    }
}
