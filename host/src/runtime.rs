//! The state one node's workers share: engine, linker, object store,
//! scheduler, actors, deployed components and counters, and how a job ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use wasmtime::component::Linker;
use wasmtime::Engine;
use wray_control_plane::JobId;

use crate::actor::table::ActorTable;
use crate::cancel_token::CancelToken;
use crate::component::LoadedComponent;
use crate::config::NodeConfig;
use crate::error::{ErrorKind, TaskError};
use crate::object_store::data::Budget;
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
        self.submitted
            .saturating_sub(self.finished.saturating_add(self.failed))
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
    /// Live and recently dead actors.
    pub actors: ActorTable,
    /// Windows mapped over guests' memories, node-wide (each a kernel
    /// mapping: a share of `vm.max_map_count`).
    pub windows: Arc<Budget>,
    /// Loaded components by content hash.
    pub components: Mutex<HashMap<String, Arc<LoadedComponent>>>,
    pub stats: Stats,
    /// Cancelled when the node shuts down: every running guest call stops.
    pub shutdown: CancelToken,
    /// Where guest calls run: workers drive each task's future on their
    /// own thread; this runtime's one thread drives the timers and WASI's
    /// I/O.
    pub io: tokio::runtime::Handle,
    pub workers: WorkerPool,
}

impl Runtime {
    /// Runs `f` on a worker thread; `light` when it holds less than one
    /// whole CPU (see [`WorkerPool::spawn_light`]).
    pub fn spawn_blocking(&self, light: bool, f: impl FnOnce() + Send + 'static) {
        if light {
            self.workers.spawn_light(f);
        } else {
            self.workers.spawn(f);
        }
    }

    /// Drives `future` to completion on the calling (worker or driver)
    /// thread.
    ///
    /// # Panics
    /// When called from inside an async context (never the case: workers
    /// and drivers are plain threads).
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.io.block_on(future)
    }

    pub fn stats(&self) -> StatsSnapshot {
        StatsSnapshot {
            submitted: self.stats.submitted.load(Ordering::Relaxed),
            finished: self.stats.finished.load(Ordering::Relaxed),
            failed: self.stats.failed.load(Ordering::Relaxed),
        }
    }

    /// Ends job `job` (its driver returned), as Ray does when a driver
    /// exits: its unfinished tasks are cancelled, its actors killed, its
    /// reusable instances dropped, and every object it made freed (see
    /// `ObjectStore::end_job`), so that nothing a job
    /// made, reference cycles included, outlives it.
    pub(crate) fn end_job(self: &Arc<Self>, job: JobId) {
        for task in self.registry.unfinished_of_job(job) {
            self.cancel(task, true, false);
        }
        for actor in self.actors.of_job(job) {
            let cause = TaskError::new(
                ErrorKind::ActorDied,
                format!("{}.kill", actor.class),
                actor.id,
                "its job ended",
            );
            if actor.die(self, cause) {
                actor.try_run(self);
            }
        }
        drop(self.reusable.take_job(job));
        self.objects.end_job(job);
    }
}
