//! [`WasmExecutor`]: the node's executor, what it owns (the engine, the
//! linker, components, instances, the worker pool), and [`Handle`], the
//! scheduler's `Executor` over it.

use std::sync::Arc;

use parking_lot::Mutex;
use wasmtime::component::Linker;
use wasmtime::Engine;
use wray_control_plane::{ActorId, JobId};

use crate::actor::Instance;
use crate::compile;
use crate::component::LoadedComponent;
use crate::error::TaskError;
use crate::id_map::IdMap;
use crate::instantiation::Instantiations;
use crate::objects::Budget;
use crate::resources::{Allocation, Quantity};
use crate::reuse::InstanceCache;
use crate::scheduler::{Executor, PendingTask, Scheduler};
use crate::services::Services;
use crate::state::TaskState;
use crate::worker_pool::{WaitingThread, Worker, WorkerPool};

/// The node's wasmtime executor: it compiles components, makes instances
/// and runs tasks in them on its worker threads.
pub struct WasmExecutor {
    /// The wasmtime engine.
    pub engine: Engine,
    /// The host's imports, linked once.
    pub linker: Linker<TaskState>,
    /// Idle instances of reusable functions.
    pub reusable: InstanceCache,
    /// Live actors' instances, by actor id (absent while a call runs on
    /// one).
    pub instances: Mutex<IdMap<ActorId, Instance>>,
    /// Windows mapped over guests' memories, node-wide (each a kernel
    /// mapping: a share of `vm.max_map_count`).
    pub windows: Arc<Budget>,
    /// Bytes of linear memory of every instance of the node together
    /// (`NodeConfig::guest_memory_budget`): each store's limiter charges
    /// it, and gives it back when the store goes.
    pub guest_memory: Arc<Budget>,
    /// The scheduler whose tasks it runs (results, resources, actors).
    pub sched: Arc<Scheduler>,
    /// What its instances may ask of the node.
    pub services: Arc<dyn Services>,
    /// Where guest calls run: workers poll each task's future (parked
    /// between polls while it waits), an actor's call on a thread of its
    /// own; this runtime's one thread drives the timers and WASI's I/O.
    pub io: tokio::runtime::Handle,
    /// The worker threads.
    pub workers: WorkerPool,
    /// The jobs whose guests write to a log of their own (shared with
    /// the cluster, which writes their guests' output on other nodes).
    pub job_logs: Arc<crate::job_log::JobLogs>,
    /// The jobs whose guests get directories, variables or an outbox of
    /// their own (shared with the cluster, which adds the jobs whose tasks
    /// other nodes send here).
    pub job_envs: Arc<crate::job_env::JobEnvs>,
    /// How long its instantiations took.
    pub instantiations: Instantiations,
    /// Where components are compiled: a few threads, each compile under
    /// the node's compile time limit.
    pub compiles: compile::CompilePool,
}

impl WasmExecutor {
    /// Runs `f` on a worker thread, handed that thread's [`Worker`];
    /// `light` when it holds less than one whole CPU (see
    /// [`WorkerPool::spawn_light`]).
    pub fn spawn_blocking(&self, light: bool, f: impl FnOnce(&Worker) + Send + 'static) {
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

    /// The loaded component with content hash `hash`, if loaded here (the
    /// scheduler's `Functions` keeps it: one table of what is loaded).
    pub fn component(&self, hash: &str) -> Option<Arc<LoadedComponent>> {
        let version = self.sched.version(hash)?;
        version.loaded.clone().downcast::<LoadedComponent>().ok()
    }
}

/// Runs function task `task` on the worker threads: its future is polled
/// there and parked while it waits, holding no thread
/// ([`WorkerPool::spawn_task`]).
fn on_worker(exec: Arc<WasmExecutor>, task: Arc<PendingTask>, allocation: Allocation) {
    // Light: less than one whole CPU (zero-CPU and fractional tasks).
    let light = !allocation.cpu.iter().any(|g| g.amount >= Quantity::ONE);
    let io = exec.io.clone();
    let runs = exec.clone();
    exec.workers.spawn_task(light, io, move |thread| {
        Box::pin(runs.run_function_task_async(task, allocation, thread))
    });
}

/// A function task handed to a tokio runtime. Dropped before it was polled
/// (the runtime had shut down, and tokio drops what is spawned on it then),
/// it runs on a worker thread instead: a task is never lost with its
/// runtime.
struct OnRuntime {
    exec: Arc<WasmExecutor>,
    job: Option<(Arc<PendingTask>, Allocation)>,
}

impl Drop for OnRuntime {
    fn drop(&mut self) {
        if let Some((task, allocation)) = self.job.take() {
            on_worker(self.exec.clone(), task, allocation);
        }
    }
}

/// The executor's side of the scheduler's interface. `Arc<WasmExecutor>`
/// implements it: each method hands the work to a worker thread (a
/// function task submitted with `TaskOptions::on_caller_runtime`: to its
/// tokio runtime, as a task) that owns a strong reference while it runs.
pub struct Handle(pub Arc<WasmExecutor>);

impl Executor for Handle {
    fn run_function(
        &self,
        task: Arc<PendingTask>,
        allocation: Allocation,
        runtime: Option<tokio::runtime::Handle>,
    ) {
        let exec = self.0.clone();
        if let Some(runtime) = runtime {
            let mut handed = OnRuntime {
                exec,
                job: Some((task, allocation)),
            };
            runtime.spawn(async move {
                if let Some((task, allocation)) = handed.job.take() {
                    let exec = handed.exec.clone();
                    let thread = WaitingThread::Runtime;
                    exec.run_function_task_async(task, allocation, thread).await;
                }
            });
            return;
        }
        on_worker(exec, task, allocation);
    }

    fn run_actor(
        &self,
        actor: Arc<crate::scheduler::Actor>,
        task: Arc<PendingTask>,
        dead: Option<TaskError>,
    ) {
        let exec = self.0.clone();
        // Light: an actor runs one call at a time, like Ray's worker
        // process of its own, whatever CPUs it holds.
        self.0.spawn_blocking(true, move |worker| {
            exec.run_actor(worker, &actor, task, dead);
        });
    }

    fn drop_actor(&self, actor: ActorId) {
        let instance = self.0.instances.lock().remove(&actor);
        // Outside the lock: tearing the instance down seals what it left
        // unsealed, and their waiters may call back.
        drop(instance);
    }

    fn end_job(&self, job: JobId) {
        drop(self.0.reusable.take_job(job));
        // A job another node sent here ended: its environment goes (its
        // own node's jobs keep theirs until their driver is done).
        self.0.job_envs.remove_adopted(job);
    }

    fn forget_components(&self, hashes: &[Arc<str>]) {
        drop(self.0.reusable.take_components(hashes));
    }
}
