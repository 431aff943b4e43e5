//! The data a wasm store carries for the task it runs: WASI, limits, who is
//! calling (the current task), and what the instance holds.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wray_control_plane::{JobId, ObjectId, TaskId};

use super::WasmExecutor;
use crate::bindings::types;
use crate::bounds::{MAX_PUTS, MAX_SEEN_ERRORS};
use crate::cancel_token::CancelToken;
use crate::error::TaskError;
use crate::objects::{Budget, Charge, Holds, TooManyHolds};
use crate::output::OutputWriter;
use crate::proto::limits::Limits;
use crate::proto::Target;
use crate::resources::Allocation;
use crate::scheduler::task_table::TaskEntry;
use crate::services::Services;
use crate::windows::Windows;
use crate::worker_pool::WaitingThread;

/// The task a store is running now (an actor's store runs many in turn).
#[derive(Debug, Clone)]
pub struct CurrentTask {
    /// Its id.
    pub id: TaskId,
    /// The actor whose constructor or method it runs (`runtime.current-actor`;
    /// the actor's id, which it keeps on every node and across restarts);
    /// `None` for a remote function's task and a driver.
    pub actor: Option<TaskId>,
    /// Function name or `Class.method`.
    pub label: String,
    /// Tasks it has submitted so far (the next child's index).
    pub children: u64,
    /// Objects it has put so far (the next put index, below
    /// [`MAX_PUTS`]).
    pub puts: u32,
    /// Whether it gives its CPUs back while blocked in `get` (a remote
    /// function does; an actor keeps its resources for its lifetime).
    pub holds_cpu: bool,
    /// When its time limit passes.
    pub deadline: Option<Instant>,
    /// Its limits.
    pub limits: Limits,
    /// What it holds of the node's resources (an actor call: the actor's).
    pub allocation: Allocation,
    /// Cancelled to stop it (`cancel`, `kill-actor`).
    pub cancel: CancelToken,
    /// When it started.
    pub started: Instant,
    /// Its entry in the task table.
    pub entry: Option<Arc<TaskEntry>>,
    /// The thread it runs on, which its waits (`get`, `wait`) block: a
    /// pool's worker, a driver's own thread, or (a task run on its
    /// caller's runtime) a runtime's.
    pub thread: WaitingThread,
}

impl CurrentTask {
    /// A task that has submitted and put nothing yet, starting now under
    /// `limits` (its deadline counts from now), on a runtime's thread until
    /// told otherwise ([`CurrentTask::thread`]).
    pub fn new(
        id: TaskId,
        label: impl Into<String>,
        holds_cpu: bool,
        limits: Limits,
        allocation: Allocation,
        cancel: CancelToken,
    ) -> Self {
        Self {
            id,
            actor: None,
            label: label.into(),
            children: 0,
            puts: 0,
            holds_cpu,
            deadline: limits.timeout.and_then(|t| Instant::now().checked_add(t)),
            limits,
            allocation,
            cancel,
            started: Instant::now(),
            entry: None,
            thread: WaitingThread::Runtime,
        }
    }

    /// The current task of a store about to run `spec` with `allocation`
    /// on `thread` (giving its CPUs back while blocked when `holds_cpu`).
    pub(crate) fn for_spec(
        spec: &crate::scheduler::Task,
        holds_cpu: bool,
        allocation: Allocation,
        thread: WaitingThread,
    ) -> Self {
        let mut current = Self::new(
            spec.id,
            spec.label.clone(),
            holds_cpu,
            spec.limits,
            allocation,
            spec.cancel.clone(),
        );
        current.entry = spec.entry.clone();
        current.thread = thread;
        current.actor = match &spec.target {
            Target::ActorCreate { actor, .. } | Target::ActorCall { actor, .. } => Some(*actor),
            Target::Function { .. } => None,
        };
        current
    }

    /// Whether it was cancelled (or its actor killed).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The id of the next task it submits.
    pub fn next_child(&mut self) -> TaskId {
        let id = self.id.child(self.children);
        self.children += 1;
        id
    }

    /// The id of its next `put` (or `create`/`reserve`).
    ///
    /// # Errors
    /// A trap once it has made [`MAX_PUTS`] objects (ids would repeat).
    pub fn next_put(&mut self) -> wasmtime::Result<ObjectId> {
        let Some(id) = self.id.put_object(self.puts) else {
            wasmtime::bail!(
                "task {} made {MAX_PUTS} objects with put, the most one task may make",
                self.id
            );
        };
        self.puts += 1;
        Ok(id)
    }
}

/// The node's budget of guest linear memory refused a growth: what was
/// asked, what the node's instances held, and the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRefusal {
    /// The size (bytes) the memory was to grow to.
    pub desired: u64,
    /// By how many bytes.
    pub grow_by: u64,
    /// Bytes the node's instances held then.
    pub used: u64,
    /// The budget (`--guest-memory`).
    pub limit: u64,
}

/// Enforces the task memory limit and the node's budget of guest memory,
/// and remembers which one refused a growth, so the resulting trap is
/// reported as out-of-memory naming it; also remembers how large the
/// instance's memories were created (windows may not lie below: that is
/// where the module's initial data lives).
///
/// The node's budget is charged what each memory may hold now (its size
/// in pages, as wasmtime asks: the pooling allocator and copy-on-write
/// images commit less, but the guest may touch all of it), from its
/// creation; the store gives it all back when it is dropped, however its
/// instance ends.
pub struct MemoryLimiter {
    /// The limit in bytes.
    pub limit: u64,
    /// The size (bytes) a refused growth asked for.
    pub refused: Option<u64>,
    /// The largest initial size (bytes) of the instance's memories.
    pub initial: usize,
    /// What the instance holds of the node's budget of guest memory.
    pub node: Charge,
    /// Set when the node's budget refused a growth.
    pub node_refused: Option<NodeRefusal>,
    /// The growth approved last, given back if wasmtime then fails it.
    last_grant: usize,
}

impl MemoryLimiter {
    /// A limiter of `limit` bytes per memory, charging `budget`.
    pub fn new(limit: u64, budget: &Arc<Budget>) -> Self {
        MemoryLimiter {
            limit,
            refused: None,
            initial: 0,
            node: budget.nothing(),
            node_refused: None,
            last_grant: 0,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.limit {
            self.refused = Some(desired as u64);
            wasmtime::bail!("memory limit of {} bytes exceeded", self.limit);
        }
        let grow_by = desired.saturating_sub(current);
        if !self.node.grow(grow_by) {
            let budget = self.node.budget();
            self.node_refused = Some(NodeRefusal {
                desired: desired as u64,
                grow_by: grow_by as u64,
                used: budget.used() as u64,
                limit: budget.limit() as u64,
            });
            wasmtime::bail!(
                "the node's guest memory budget of {} bytes is spent",
                budget.limit()
            );
        }
        self.last_grant = grow_by;
        if current == 0 {
            // wasmtime asks with `current == 0` when it creates a memory.
            self.initial = self.initial.max(desired);
        }
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        // The growth approved last did not happen.
        self.node.shrink(std::mem::take(&mut self.last_grant));
        tracing::debug!("a guest memory could not grow: {error:#}");
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// The `T` of every `Store<T>` the node creates.
pub struct TaskState {
    /// What it may ask of the node.
    pub node: Arc<dyn Services>,
    /// The node's budget of windows.
    pub(crate) window_budget: Arc<Budget>,
    /// Content hash of the component it runs (what it submits within).
    pub component: Arc<str>,
    /// The job the instance belongs to: it reaches this job's objects,
    /// tasks and actors, and whatever else it was handed.
    pub job: JobId,
    /// The task it runs now (its id, label, children and puts so far).
    pub current: CurrentTask,
    /// Its memory limit, and what its instances use.
    pub limiter: MemoryLimiter,
    /// Set by the guest's panic hook (`runtime.panicked`).
    pub(crate) panic_message: Option<String>,
    /// Objects this instance holds; released when it ends.
    pub holds: Holds,
    /// Windows of its memory with objects mapped over them.
    pub windows: Windows,
    /// The last [`MAX_SEEN_ERRORS`] errors `get` returned to the running
    /// task: the ones its own error may name as its cause.
    seen_errors: VecDeque<TaskError>,
    /// Where its stdout and stderr go on a node that captures them: pointed
    /// at each task it runs.
    output: Option<OutputWriter>,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl TaskState {
    /// State for running `current` from `component` in `job` on `exec`'s
    /// node, with `args` as the guest's command line (only `main` gets
    /// any): the job's log as stdout and stderr, and the job's
    /// directories and variables, if it has them.
    pub fn new(
        node: Arc<dyn Services>,
        exec: &WasmExecutor,
        component: Arc<str>,
        job: JobId,
        current: CurrentTask,
        args: &[String],
    ) -> Self {
        let mut wasi = WasiCtxBuilder::new();
        wasi.allow_blocking_current_thread(true).args(args);
        let output = crate::output::attach(
            &exec.job_logs,
            &exec.job_envs,
            &mut wasi,
            job,
            &node.config().stdio,
            (current.id, &current.label),
        );
        for p in &node.config().preopens {
            // Checked to be a directory when the node started; a directory
            // removed since then is simply not visible to the guest.
            if let Err(e) = wasi.preopened_dir(&p.host, &p.guest, FsPerms::ReadOnly) {
                tracing::warn!(dir = %p.host.display(), "cannot preopen: {e:#}");
            }
        }
        if let Some(env) = exec.job_envs.get(job) {
            // The job's variables and directories (`JobEnv`): each
            // directory checked to be allowed when the job came; one
            // removed since is simply not visible to the guest.
            wasi.envs(&env.portable.vars);
            for p in &env.preopens {
                if let Err(e) = wasi.preopened_dir(&p.host, &p.guest, FsPerms::ReadOnly) {
                    tracing::warn!(%job, dir = %p.host.display(), "cannot preopen: {e:#}");
                }
            }
        }
        let limit = current.limits.max_memory;
        Self {
            node,
            window_budget: exec.windows.clone(),
            component,
            job,
            current,
            limiter: MemoryLimiter::new(limit, &exec.guest_memory),
            panic_message: None,
            holds: Holds::default(),
            windows: Windows::default(),
            seen_errors: VecDeque::new(),
            output,
            wasi: wasi.build(),
            table: ResourceTable::new(),
        }
    }

    /// Makes `current` the task this (long-lived) store runs now: its
    /// memory limit applies and what the last task left of panics, limits
    /// and timeouts is forgotten. Arm its limits afterwards.
    pub fn begin(&mut self, current: CurrentTask) {
        if let Some(output) = &self.output {
            output.begin(current.id, &current.label);
        }
        self.limiter.limit = current.limits.max_memory;
        self.limiter.refused = None;
        self.limiter.node_refused = None;
        self.current = current;
        self.panic_message = None;
        self.seen_errors.clear();
    }

    /// The task this store ran ended: what its output left unfinished
    /// goes out (a job whose log is on another node).
    pub(crate) fn end_output(&self) {
        if let Some(output) = &self.output {
            output.end();
        }
    }

    /// Remembers that `get` returns `error` to the running task, and gives
    /// it in the WIT form.
    pub(crate) fn saw_error(&mut self, error: TaskError) -> types::TaskError {
        if self.seen_errors.len() == MAX_SEEN_ERRORS {
            self.seen_errors.pop_front();
        }
        self.seen_errors.push_back(error.clone());
        error.into()
    }

    /// The most recent error `get` returned to the running task that
    /// `matches`.
    pub(crate) fn seen_error(&self, matches: impl Fn(&TaskError) -> bool) -> Option<&TaskError> {
        self.seen_errors.iter().rev().find(|e| matches(e))
    }

    /// Whether this instance may name object `id`: it belongs to the
    /// instance's job, or the instance holds it (it was handed the id).
    /// Everything else reads as "does not exist".
    pub fn visible(&self, id: &ObjectId) -> bool {
        id.job() == self.job || self.holds.contains(id)
    }

    /// Whether the running task would wait forever for `id`: an object it
    /// makes itself (one of its own returns, or a put it has not sealed),
    /// still pending.
    pub(crate) fn waits_on_itself(&self, id: &ObjectId) -> bool {
        id.task == self.current.id && self.node.objects().is_pending(id)
    }

    /// Holds `id` for this instance.
    ///
    /// # Errors
    /// [`TooManyHolds`] past [`MAX_HOLDS_PER_INSTANCE`](crate::bounds::MAX_HOLDS_PER_INSTANCE).
    pub fn hold(&mut self, id: ObjectId) -> Result<(), TooManyHolds> {
        self.holds.hold(self.node.objects(), id)
    }

    /// The id of the running task's next `put`, registered as pending and
    /// held by this instance.
    ///
    /// # Errors
    /// A trap past [`MAX_PUTS`] or [`MAX_HOLDS_PER_INSTANCE`](crate::bounds::MAX_HOLDS_PER_INSTANCE),
    /// or when the store has no room even for the object's metadata
    /// ([`ObjectStore::admit`](crate::objects::ObjectStore::admit)).
    pub(crate) fn new_put(&mut self) -> wasmtime::Result<ObjectId> {
        // Every limit is checked before the id is registered, so a trap
        // here leaves nothing pending.
        self.holds.room()?;
        self.node.objects().admit(1)?;
        let id = self.current.next_put()?;
        self.node.objects().register_pending(id);
        self.hold(id)?;
        Ok(id)
    }

    /// Holds every id in `ids`.
    ///
    /// # Errors
    /// [`TooManyHolds`] past [`MAX_HOLDS_PER_INSTANCE`](crate::bounds::MAX_HOLDS_PER_INSTANCE).
    pub(crate) fn hold_all(
        &mut self,
        ids: impl IntoIterator<Item = ObjectId>,
    ) -> Result<(), TooManyHolds> {
        for id in ids {
            self.hold(id)?;
        }
        Ok(())
    }

    /// The first of `refs` (the refs inside a value this instance is about
    /// to store) that it may not name: one it cannot see, one that does not
    /// exist, or one it is still making itself (an object holding its own
    /// unsealed sibling or itself could form a cycle that is never freed).
    pub(crate) fn forbidden_ref<'a>(
        &self,
        refs: impl IntoIterator<Item = &'a ObjectId>,
    ) -> Option<ObjectId> {
        refs.into_iter()
            .find(|r| !self.visible(r) || !self.node.objects().exists(r) || self.waits_on_itself(r))
            .copied()
    }
}

impl TaskState {
    /// Gives back what the instance holds: its objects, and the running
    /// task's resources when it owns them (a remote function's; an actor
    /// call runs on its actor's). Runs when the store is dropped, so that a
    /// task that ends early (a failed instantiation, a host bug) loses
    /// nothing; a task that ends normally has taken its allocation already.
    pub fn give_back(&mut self) {
        self.holds.release_all(self.node.objects());
        if self.current.holds_cpu {
            let allocation = std::mem::take(&mut self.current.allocation);
            if allocation != Allocation::default() {
                self.node.release_resources(&allocation);
            }
        }
    }
}

impl Drop for TaskState {
    fn drop(&mut self) {
        // The instance is gone, and with it every ObjectRef it had.
        self.give_back();
    }
}

impl WasiView for TaskState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::ObjectStore;

    #[test]
    fn put_ids_stop_before_they_repeat() {
        let mut current = CurrentTask::new(
            TaskId::driver(JobId(3)),
            "t",
            false,
            crate::config::NodeConfig::default().limits(),
            Allocation::default(),
            CancelToken::new(),
        );
        let first = current.next_put().unwrap();
        assert!(first.is_put());
        current.puts = MAX_PUTS - 1;
        assert!(current.next_put().is_ok());
        let err = current.next_put().unwrap_err().to_string();
        assert!(err.contains("the most one task may make"), "{err}");
        // Still refused: the counter never wraps to an id handed out before.
        assert!(current.next_put().is_err());
    }

    #[test]
    fn holds_are_bounded_and_ignore_unknown_ids() {
        let store = ObjectStore::new();
        let mut holds = Holds::default();
        let root = TaskId::driver(JobId(4));
        let known = root.return_object(0).unwrap();
        store.register_pending(known);
        holds.hold(&store, known).unwrap();
        holds.hold(&store, known).unwrap();
        holds.hold(&store, root.return_object(1).unwrap()).unwrap();
        assert_eq!(holds.len(), 1, "held once; the unknown id not at all");
        holds.release_all(&store);
        assert!(holds.is_empty());
    }
}
