//! The data a wasm store carries for the task it runs: WASI, limits, and who
//! is calling (the current task).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use std::collections::HashSet;
use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use wray_control_plane::{ObjectId, TaskId};

use crate::component::LoadedComponent;
use crate::config::Stdio;
use crate::limits::Limits;
use crate::object_store::ObjectStore;
use crate::registry::TaskEntry;
use crate::resources::Allocation;
use crate::runtime::Runtime;
use crate::worker::mapping::Windows;

/// The task a store is running now (an actor's store runs many in turn).
#[derive(Debug, Clone)]
pub struct CurrentTask {
    /// Its id.
    pub id: TaskId,
    /// Function name or `Class.method`.
    pub label: String,
    /// Tasks it has submitted so far (the next child's index).
    pub children: u64,
    /// Objects it has put so far (the next put index).
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
    /// Set to stop it (`cancel`, `kill-actor`).
    pub cancel: Arc<AtomicBool>,
    /// When it started.
    pub started: Instant,
    /// Its entry in the task table.
    pub entry: Option<Arc<TaskEntry>>,
}

impl CurrentTask {
    /// A task that has submitted and put nothing yet, starting now under
    /// `limits` (its deadline counts from now).
    pub fn new(
        id: TaskId,
        label: impl Into<String>,
        holds_cpu: bool,
        limits: Limits,
        allocation: Allocation,
        cancel: Arc<AtomicBool>,
    ) -> Self {
        Self {
            id,
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
        }
    }

    /// The current task of a store about to run `spec` with `allocation`
    /// (giving its CPUs back while blocked when `holds_cpu`).
    pub(crate) fn for_spec(
        spec: &crate::task::TaskSpec,
        holds_cpu: bool,
        allocation: Allocation,
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
        current
    }

    /// Whether it was cancelled (or its actor killed).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The id of the next task it submits.
    pub fn next_child(&mut self) -> TaskId {
        let id = self.id.child(self.children);
        self.children += 1;
        id
    }
}

/// Enforces the task memory limit and remembers whether it was hit, so the
/// resulting trap is reported as out-of-memory with both sizes.
pub struct MemoryLimiter {
    /// The limit in bytes.
    pub limit: u64,
    /// The size (bytes) a refused growth asked for.
    pub refused: Option<u64>,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.limit {
            self.refused = Some(desired as u64);
            wasmtime::bail!("memory limit of {} bytes exceeded", self.limit);
        }
        Ok(true)
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

/// The objects one instance holds (see the WIT `objects` interface): each
/// id at most once, however many `ObjectRef`s the guest keeps to it.
#[derive(Default)]
pub struct Holds {
    ids: HashSet<ObjectId>,
}

impl Holds {
    /// Holds `id` (a no-op if already held).
    pub fn hold(&mut self, store: &ObjectStore, id: ObjectId) {
        if self.ids.insert(id) {
            store.acquire(&id);
        }
    }

    /// Drops the hold on `id`, if any.
    pub fn release(&mut self, store: &ObjectStore, id: &ObjectId) {
        if self.ids.remove(id) {
            store.release(id);
        }
    }

    /// Drops every hold.
    pub fn release_all(&mut self, store: &ObjectStore) {
        for id in self.ids.drain() {
            store.release(&id);
        }
    }

    /// Number of ids held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// The `T` of every `Store<T>` the node creates.
pub struct TaskState {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) component: Arc<LoadedComponent>,
    pub(crate) current: CurrentTask,
    pub(crate) limiter: MemoryLimiter,
    /// Set by the guest's panic hook (`runtime.panicked`).
    pub(crate) panic_message: Option<String>,
    /// Set when a host call found the task's time limit passed.
    pub(crate) timed_out: bool,
    /// Objects this instance holds; released when it ends.
    pub(crate) holds: Holds,
    /// Windows of its memory with objects mapped over them.
    pub(crate) windows: Windows,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl TaskState {
    /// State for running `current` from `component`, with `args` as the
    /// guest's command line (only `main` gets any).
    pub(crate) fn new(
        rt: Arc<Runtime>,
        component: Arc<LoadedComponent>,
        current: CurrentTask,
        args: &[String],
    ) -> Self {
        let mut wasi = WasiCtxBuilder::new();
        wasi.allow_blocking_current_thread(true).args(args);
        match &rt.config.stdio {
            Stdio::Inherit => {
                wasi.inherit_stdout().inherit_stderr();
            }
            Stdio::Memory { stdout, stderr } => {
                wasi.stdout(stdout.clone()).stderr(stderr.clone());
            }
        }
        for p in &rt.config.preopens {
            // Checked to be a directory when the node started; a directory
            // removed since then is simply not visible to the guest.
            if let Err(e) = wasi.preopened_dir(&p.host, &p.guest, FsPerms::ReadOnly) {
                tracing::warn!(dir = %p.host.display(), "cannot preopen: {e:#}");
            }
        }
        let limit = current.limits.max_memory;
        Self {
            rt,
            component,
            current,
            limiter: MemoryLimiter {
                limit,
                refused: None,
            },
            panic_message: None,
            timed_out: false,
            holds: Holds::default(),
            windows: Windows::default(),
            wasi: wasi.build(),
            table: ResourceTable::new(),
        }
    }
}

impl TaskState {
    /// Makes `current` the task this (long-lived) store runs now: its
    /// memory limit applies and what the last task left of panics, limits
    /// and timeouts is forgotten. Arm its limits afterwards.
    pub(crate) fn begin(&mut self, current: CurrentTask) {
        self.limiter.limit = current.limits.max_memory;
        self.limiter.refused = None;
        self.current = current;
        self.panic_message = None;
        self.timed_out = false;
    }

    /// Holds `id` for this instance.
    pub(crate) fn hold(&mut self, id: ObjectId) {
        self.holds.hold(&self.rt.objects, id);
    }

    /// The id of the running task's next `put`, registered as pending and
    /// held by this instance.
    pub(crate) fn new_put(&mut self) -> ObjectId {
        let id = self.current.id.put_object(self.current.puts);
        self.current.puts += 1;
        self.rt.objects.register_pending(id);
        self.hold(id);
        id
    }

    /// Holds every id in `ids`.
    pub(crate) fn hold_all(&mut self, ids: impl IntoIterator<Item = ObjectId>) {
        for id in ids {
            self.hold(id);
        }
    }
}

impl Drop for TaskState {
    fn drop(&mut self) {
        // The instance is gone, and with it every ObjectRef it had.
        self.holds.release_all(&self.rt.objects);
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
