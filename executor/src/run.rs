//! Running one remote-function task in a fresh (or reused) instance, under
//! its limits.
//!
//! A task runs as one future: polled by the worker pool, which parks it
//! while it waits (`WorkerPool::spawn_task`: a task blocked in `get` or
//! sleeping holds no thread), or, submitted with `TaskOptions::on_caller_runtime`, as a task of the
//! tokio runtime it was submitted on (the HTTP API's calls: no handoff to
//! a worker thread and back). The instance is made and called with
//! wasmtime's async API, each guest call guarded by [`StopWhen`] so that a
//! time limit, a cancel or the node's shutdown stops it even inside a
//! blocking host call. A panic anywhere in the host while the task runs (a
//! host bug) is caught around that future: the task fails with a `system`
//! error and the node goes on.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;
use wasmtime::Store;
use wray_control_plane::{FunctionKind, JobId, ObjectId, TaskId};

use super::bindings::types;
use super::classify::{instantiate_error, trap_to_task_error};
use super::component::LoadedComponent;
use super::exports::Guest;
use super::guard::{arm_limits, rearm_limits, StopWhen};
use super::reuse::{Idle, Scope};
use super::services::Services;
use super::state::{CurrentTask, TaskState};
use super::store::TaskStore;
use super::values::{finish_call, host_bug, payload_refs, system_error, to_payload};
use super::WasmExecutor;
use crate::error::{ErrorKind, TaskError};
use crate::objects::{Codec, Object};
use crate::proto::{Arg, Target};
use crate::resources::Allocation;
use crate::scheduler::task_table::TaskEntry;
use crate::scheduler::{PendingTask, Task};
use crate::worker_pool::WaitingThread;

impl WasmExecutor {
    /// Runs a remote-function task holding `allocation`, seals its results,
    /// and gives the resources back. Never panics: a host bug fails the
    /// task. The future the worker pool polls and parks while it waits
    /// (`WorkerPool::spawn_task`), or a task of the runtime the task was
    /// submitted on (`TaskOptions::on_caller_runtime`); `thread` says
    /// which, for its guest's waits.
    pub(crate) async fn run_function_task_async(
        self: Arc<Self>,
        task: Arc<PendingTask>,
        allocation: Allocation,
        thread: WaitingThread,
    ) {
        let mut allocation = allocation;
        if let Some(mut spec) = task.take() {
            let holds = std::mem::take(&mut spec.holds);
            let mut running = Running {
                exec: &self,
                label: spec.label.clone(),
                id: spec.id,
                returns: spec.returns.clone(),
                entry: spec.entry.clone(),
                ended: false,
            };
            let ran = AssertUnwindSafe(self.execute_function(spec, &mut allocation, thread))
                .catch_unwind()
                .await;
            let failed = match ran {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(panic) => Some(host_bug(&running.label, running.id, &*panic)),
            };
            running.end(failed);
            self.sched.release_all(&holds);
        }
        if allocation != Allocation::default() {
            self.sched.release_resources(&allocation);
        }
    }

    /// Ends a task that ran on `store`: keeps the instance for the next task
    /// when `keep` (reusable functions; the cache has room), else tears it
    /// down; then gives the task's resources back and seals `result`, in
    /// that order: whoever sees the results sees the resources free, and no
    /// more instances live than the resources (and the cache) allow. What the
    /// instance held is kept until the results are sealed (a result may
    /// contain refs to objects it put).
    fn end_task(
        self: &Arc<Self>,
        spec: &Task,
        mut store: TaskStore,
        guest: Guest,
        keep: bool,
        result: Result<Vec<Object>, TaskError>,
    ) {
        let held = std::mem::take(&mut store.data_mut().current.allocation);
        let worker = store.data().current.thread.worker();
        store.data().end_output();
        let scope = reuse_scope(spec);
        // A shared instance carries nothing of its job to the next: no
        // object held, no window mapped, no log of the job's own.
        let keep = keep
            && (scope != Scope::Shared || {
                let data = store.data();
                data.holds.is_empty()
                    && data.windows.is_empty()
                    && !self.job_logs.has(spec.id.job())
                    && !self.job_envs.has(spec.id.job())
            });
        let rejected = if keep {
            let key = (scope, spec.component.clone());
            self.reusable
                .put(key, Idle { store, guest }, self.sched.config().num_cpus)
                .map(|idle| idle.store)
        } else {
            Some(store)
        };
        let mut holds = rejected.map(|mut store| std::mem::take(&mut store.data_mut().holds));
        // The slot's next task may start on another thread while this one
        // tears the instance down.
        if let Some(worker) = worker {
            worker.lend_slot();
        }
        self.sched.release_resources(&held);
        self.sched.finish(spec, result);
        if let Some(holds) = &mut holds {
            holds.release_all(self.sched.objects());
        }
    }

    /// Runs the task, then tears its instance down, gives its resources
    /// back and seals its results (see [`WasmExecutor::end_task`]). The
    /// allocation moves into the task's store (`allocation` is left empty)
    /// once there is one.
    async fn execute_function(
        self: &Arc<Self>,
        mut spec: Task,
        allocation: &mut Allocation,
        thread: WaitingThread,
    ) -> Result<(), TaskError> {
        if spec.cancel.is_cancelled() {
            return Err(TaskError::new(
                ErrorKind::Cancelled,
                spec.label.clone(),
                spec.id,
                "cancelled before it ran",
            ));
        }
        if self.sched.config().fail_point.as_deref() == Some(spec.label.as_str()) {
            panic!("fail point `{}` reached", spec.label);
        }
        let args = self.resolve_args(&mut spec)?;
        let Target::Function { name } = &spec.target else {
            return Err(system_error(&spec, "not a remote-function task"));
        };
        let Some(component) = self.component(&spec.component) else {
            return Err(system_error(
                &spec,
                "its component is not loaded on this node",
            ));
        };
        component
            .schemas
            .check(FunctionKind::Function, None, name, &args)
            .map_err(|m| {
                TaskError::new(
                    ErrorKind::InvalidArgument,
                    spec.label.clone(),
                    spec.id,
                    m.to_string(),
                )
            })?;
        if let Some(entry) = &spec.entry {
            entry.started();
        }
        self.sched.pin_worker(&thread, allocation);
        let reuse = component
            .record
            .function(name)
            .is_some_and(|f| f.declared.reuse);
        if reuse {
            return self
                .execute_reused(&spec, &component, name, args, allocation, thread)
                .await;
        }
        let current = CurrentTask::for_spec(&spec, true, std::mem::take(allocation), thread);
        let (mut store, mut guest) = self.instantiate(&component, spec.id.job(), current).await?;
        let stop = StopWhen::of(store.data());
        let result = match store.data_mut().hold_all(payload_refs(&args)) {
            Err(e) => Err(e.into()),
            Ok(()) => {
                stop.guard(guest.invoke(&mut store, name, &args, spec.result_codec.map(Into::into)))
                    .await
            }
        };
        let result = finish_call(result, store.data(), spec.returns.len());
        self.end_task(&spec, store, guest, false, result);
        Ok(())
    }

    /// Runs a reusable function's task on a cached instance of its component
    /// in its job (or a new one, after its `init`), calling `reinit` first
    /// on a reused one; keeps the instance for the next task of the job
    /// unless it trapped. Instances are never shared between jobs: what one
    /// task leaves in an instance is seen only by later tasks of its job.
    async fn execute_reused(
        self: &Arc<Self>,
        spec: &Task,
        component: &Arc<LoadedComponent>,
        name: &str,
        args: Vec<types::Arg>,
        allocation: &mut Allocation,
        thread: WaitingThread,
    ) -> Result<(), TaskError> {
        let key = (reuse_scope(spec), spec.component.clone());
        let current = CurrentTask::for_spec(spec, true, std::mem::take(allocation), thread);
        let (mut store, mut guest, fresh) = match self.reusable.take(&key) {
            Some(mut idle) => {
                // A shared instance runs each task in that task's job.
                idle.store.data_mut().job = spec.id.job();
                (idle.store, idle.guest, false)
            }
            None => {
                let (store, guest) = self
                    .instantiate(component, spec.id.job(), current.clone())
                    .await?;
                (store, guest, true)
            }
        };
        store.data_mut().begin(current);
        rearm_limits(&mut store);
        let stop = StopWhen::of(store.data());
        let (hook, prepared) = match store.data_mut().hold_all(payload_refs(&args)) {
            Err(e) => ("hold", Err(e.into())),
            Ok(()) if fresh => ("init", stop.guard(guest.init(&mut store)).await),
            Ok(()) => ("reinit", stop.guard(guest.reinit(&mut store)).await),
        };
        let codec = spec.result_codec.map(Into::into);
        let (ran, result) = match prepared {
            Ok(Ok(())) => {
                let r = stop
                    .guard(guest.invoke(&mut store, name, &args, codec))
                    .await;
                (r.is_ok(), finish_call(r, store.data(), spec.returns.len()))
            }
            Ok(Err(message)) => (
                false,
                Err(TaskError::new(
                    ErrorKind::Application,
                    spec.label.clone(),
                    spec.id,
                    format!(
                        "the component's {hook} hook failed: {}",
                        crate::bounds::truncate(message, crate::bounds::MAX_LOG_LINE)
                    ),
                )),
            ),
            Err(trap) => (false, Err(trap_to_task_error(&trap, store.data()))),
        };
        let keep = ran && !store.data().current.is_cancelled() && !store.is_tainted();
        self.end_task(spec, store, guest, keep, result);
        Ok(())
    }

    /// A fresh instance of `component` in job `job`, in a store running
    /// `current` as its current task. When every instance slot of the node
    /// is taken (blocked tasks keep theirs: a fork bomb takes them all),
    /// the task fails at once with a clear error rather than wait: waiting
    /// tasks would hold their CPUs and slow the bomb's collapse. A failed
    /// instantiation ends the task (its store, and with it `current`'s
    /// allocation, is dropped: see [`TaskState`]).
    pub async fn instantiate(
        self: &Arc<Self>,
        component: &Arc<LoadedComponent>,
        job: JobId,
        current: CurrentTask,
    ) -> Result<(TaskStore, Guest), TaskError> {
        let started = Instant::now();
        let mut store = self.new_store(component, job, current, &[]);
        match self.make_instance(component, &mut store, started).await {
            Ok(instance) => Ok((store, Guest::new(instance, component.exports.clone()))),
            Err(e) => {
                let hint = if e.is::<wasmtime::PoolConcurrencyLimitError>() {
                    " (every instance slot of the node is taken: tasks blocked in `get` \
                     keep theirs; see max_instances)"
                } else {
                    ""
                };
                Err(instantiate_error(&e, store.data(), hint))
            }
        }
    }

    /// A store for `current` in `job`, with its memory limit, time limit,
    /// fuel and cancel token armed.
    pub fn new_store(
        self: &Arc<Self>,
        component: &LoadedComponent,
        job: JobId,
        current: CurrentTask,
        args: &[String],
    ) -> TaskStore {
        self.new_store_with(self.services.clone(), component, job, current, args)
    }

    /// As [`new_store`](Self::new_store), the instance reaching the node
    /// through `services` (describe's refuse submissions).
    pub(crate) fn new_store_with(
        self: &Arc<Self>,
        services: Arc<dyn Services>,
        component: &LoadedComponent,
        job: JobId,
        current: CurrentTask,
        args: &[String],
    ) -> TaskStore {
        let state = TaskState::new(services, self, component.hash.clone(), job, current, args);
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        arm_limits(&mut store);
        TaskStore::new(store)
    }

    /// The task's arguments with object arguments replaced by their values,
    /// except rkyv and raw objects in a file (shared memory or spilled): those stay
    /// `object` arguments, which the guest maps into its memory and decodes
    /// there (the one copy; the SDK's `ArgReader`) rather than receive a
    /// host copy of the bytes that wasmtime copies again into its memory.
    /// The instance holds them while it runs ([`payload_refs`]). An
    /// argument holding an error fails the task with that error, unchanged
    /// (errors propagate through dependencies).
    pub(crate) fn resolve_args(&self, spec: &mut Task) -> Result<Vec<types::Arg>, TaskError> {
        std::mem::take(&mut spec.args)
            .into_iter()
            .map(|arg| match arg {
                Arg::Value(p) => Ok(types::Arg::Value(p.into())),
                Arg::Object(id) => match self.sched.objects().get(&id).as_deref() {
                    Some(Object::Value {
                        codec: Codec::Rkyv | Codec::Raw,
                        data,
                        ..
                    }) if data.file_range().is_some() => Ok(types::Arg::Object(id.into())),
                    Some(object @ Object::Value { .. }) => {
                        Ok(types::Arg::Value(to_payload(object)))
                    }
                    Some(Object::Error(e)) => Err(e.clone()),
                    None => Err(system_error(spec, &format!("argument {id} is not sealed"))),
                },
            })
            .collect()
    }
}

/// Whose idle instances a `reuse` task may take, and whom it leaves its
/// instance to.
fn reuse_scope(spec: &Task) -> Scope {
    if spec.shared_reuse {
        Scope::Shared
    } else {
        Scope::Job(spec.id.job())
    }
}

/// A function task's run under way, to seal its returns with the error it
/// failed with (`end`), or, dropped before it ended (a tokio runtime
/// running it shut down; the worker pool drops a task still parked when
/// it closes), with a `system`
/// error rather than leave its callers waiting. What its instance held
/// goes with the instance; the CPUs it held do not come back.
struct Running<'a> {
    exec: &'a WasmExecutor,
    label: String,
    id: TaskId,
    returns: Vec<ObjectId>,
    entry: Option<Arc<TaskEntry>>,
    ended: bool,
}

impl Running<'_> {
    /// The run ended, having sealed its returns unless it `failed`.
    fn end(&mut self, failed: Option<TaskError>) {
        self.ended = true;
        if let Some(e) = failed {
            self.exec
                .sched
                .settle(self.entry.as_ref(), &self.returns, Err(e));
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let e = TaskError::new(
                ErrorKind::System,
                self.label.as_str(),
                self.id,
                "its runtime shut down before it ended",
            );
            self.end(Some(e));
        }
    }
}
