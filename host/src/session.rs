//! `Session`: the one door into a node for code outside a guest (plain
//! Rust, the CLI, the HTTP API): submit, create and call actors, put, get,
//! wait, release and cancel, with its own job and its own holds. What may
//! wait (submit and create an actor, which may read the function table;
//! get; wait) is async; `_blocking` forms serve callers outside any
//! runtime (docs/architecture.md, "Runtime model").
//!
//! A session is a driver without a guest: it is the root task
//! (`TaskId::driver(job)`) of a job that the control plane's job table
//! issued; what it submits are that task's children, what it puts are its
//! puts. Everything it receives (returned ids, puts) it holds until it
//! releases them or ends; when it ends, its job ends as a driver's does
//! (unfinished tasks cancelled, actors killed, objects freed). A guest's
//! host calls reach the same scheduler operations through the executor's
//! `Services`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use wray_control_plane::{ActorId, JobId, ObjectId, TaskId};

use crate::error::{Error, Result, TaskError};
use crate::node::Node;
use crate::objects::{Holds, Object};
use crate::proto::{Arg, Codec, ErrorKind, Payload, TaskOptions};
use crate::scheduler::blocking::Blocker;
use crate::scheduler::submit::Submission;
use crate::scheduler::Callee;
use crate::worker_pool::WaitingThread;

/// A client's session with a node (see the module docs). Dropping it ends
/// its job. It shares the node (`Arc`), so it may live in any task or
/// thread, as long as it is needed.
pub struct Session {
    node: Arc<Node>,
    job: JobId,
    root: TaskId,
    holds: Mutex<Holds>,
    children: AtomicU64,
    puts: AtomicU32,
}

impl Node {
    /// Opens a session: a new job, from the control plane's job table.
    ///
    /// # Errors
    /// [`Error::ControlPlane`] when the job table refuses.
    pub fn session(self: &Arc<Self>) -> Result<Session> {
        let job = self.start_job("session")?;
        Ok(Session {
            node: self.clone(),
            job,
            root: TaskId::driver(job),
            holds: Mutex::new(Holds::default()),
            children: AtomicU64::new(0),
            puts: AtomicU32::new(0),
        })
    }
}

impl Session {
    /// The content hash of the component deployed as `component`: from
    /// the node's own table when it has it (no control-plane round trip),
    /// else loaded from the function table, awaited. `name@version` names
    /// a kept version (the function table is read).
    async fn hash_of(&self, component: &str) -> Result<Arc<str>> {
        if let Some(hash) = self.local_hash(component) {
            return Ok(hash);
        }
        if component.contains('@') {
            return Ok(self.node.loaded_spec_async(component).await?.hash.clone());
        }
        Ok(self.node.loaded_async(component).await?.hash.clone())
    }

    /// [`Session::hash_of`] for a caller that may block: the node's own
    /// table's answer at once when it has one, else the function table
    /// read on the calling thread ([`Node::wait`]).
    fn hash_blocking(&self, component: &str, call: &'static str) -> Result<Arc<str>> {
        match self.local_hash(component) {
            Some(hash) => Ok(hash),
            None => self.node.wait(call, self.hash_of(component))?,
        }
    }

    /// The content hash of the current version of `component` (a plain
    /// name) in the node's own table, if it has it.
    fn local_hash(&self, component: &str) -> Option<Arc<str>> {
        if component.contains('@') {
            return None;
        }
        let record = self.node.sched.deployed(component)?;
        Some(Arc::from(record.hash.as_str()))
    }

    /// The session's job.
    pub fn job(&self) -> JobId {
        self.job
    }

    /// Whether this session may name `id`: its job's, or one it holds.
    fn visible(&self, id: &ObjectId) -> bool {
        id.job() == self.job || self.holds.lock().contains(id)
    }

    /// A submission of the session's next child.
    fn submission(&self, args: Vec<Arg>, options: TaskOptions) -> Submission {
        Submission::new(
            self.root,
            self.root
                .child(self.children.fetch_add(1, Ordering::Relaxed)),
            args,
            options,
            self.node.sched.shutdown().is_cancelled(),
            self.node.sched.objects(),
            |id| self.visible(id),
        )
    }

    /// Submits remote function `function` of deployed component
    /// `component` (by name, or `name@version`); returns its return object ids, held by the
    /// session. A call the function table says is wrong (no such function,
    /// wrong argument count, infeasible resources) is not an error here:
    /// its returns hold the error, as in Ray.
    ///
    /// # Errors
    /// [`Error::NotDeployed`] for an unknown component; [`Error::Limit`]
    /// when the session holds too many objects.
    ///
    /// # Cancel safety
    /// Dropped before it ends, nothing was submitted (the component may
    /// have been loaded here).
    pub async fn submit(
        &self,
        component: &str,
        function: &str,
        args: Vec<Arg>,
        options: TaskOptions,
    ) -> Result<Vec<ObjectId>> {
        let hash = self.hash_of(component).await?;
        self.submit_hash(&hash, function, args, options)
    }

    /// [`Session::submit`] of the component with content hash `hash`.
    fn submit_hash(
        &self,
        hash: &Arc<str>,
        function: &str,
        args: Vec<Arg>,
        options: TaskOptions,
    ) -> Result<Vec<ObjectId>> {
        let call = self.submission(args, options);
        let mut holds = self.holds.lock();
        self.node
            .sched
            .submit_function(Callee::Hash(hash), &mut holds, call, function.to_string())
            .map_err(|e| Error::Limit(e.to_string()))
    }

    /// Creates an actor of class `class` of deployed component
    /// `component`; its constructor runs once its resources are free. The
    /// session holds the actor's handle object
    /// ([`actor_handle_object`](crate::proto::actor_handle_object)):
    /// [`release`](Self::release) it and the actor exits once its queue is
    /// empty, unless `options.detached`.
    ///
    /// # Errors
    /// [`Error::NotDeployed`] for an unknown component; [`Error::Limit`]
    /// when the session holds too many objects.
    ///
    /// # Cancel safety
    /// As [`Session::submit`].
    pub async fn create_actor(
        &self,
        component: &str,
        class: &str,
        args: Vec<Arg>,
        options: TaskOptions,
    ) -> Result<ActorId> {
        let hash = self.hash_of(component).await?;
        self.create_actor_hash(&hash, class, args, options)
    }

    /// [`Session::create_actor`] of the component with content hash `hash`.
    fn create_actor_hash(
        &self,
        hash: &Arc<str>,
        class: &str,
        args: Vec<Arg>,
        options: TaskOptions,
    ) -> Result<ActorId> {
        let call = self.submission(args, options);
        let id = call.id;
        let mut holds = self.holds.lock();
        self.node
            .sched
            .create_actor(Callee::Hash(hash), &mut holds, call, class.to_string())
            .map_err(|e| Error::Limit(e.to_string()))?;
        Ok(id)
    }

    /// [`Session::submit`] on the calling thread, for a caller outside
    /// any async runtime (the CLI, a program embedding the node). The
    /// submission itself is made on the calling thread (so a task with
    /// `TaskOptions::on_caller_runtime` runs on a worker thread); only
    /// reading the function table waits on the node's I/O runtime.
    ///
    /// # Errors
    /// As [`Session::submit`]; [`Error::BlockingInRuntime`] inside a tokio
    /// runtime when the function table must be read (a component the
    /// node does not have loaded under that name, or `name@version`).
    pub fn submit_blocking(
        &self,
        component: &str,
        function: &str,
        args: Vec<Arg>,
        options: TaskOptions,
    ) -> Result<Vec<ObjectId>> {
        let hash = self.hash_blocking(component, "Session::submit_blocking")?;
        self.submit_hash(&hash, function, args, options)
    }

    /// [`Session::create_actor`] on the calling thread, for a caller
    /// outside any async runtime.
    ///
    /// # Errors
    /// As [`Session::create_actor`]; [`Error::BlockingInRuntime`] as for
    /// [`Session::submit_blocking`].
    pub fn create_actor_blocking(
        &self,
        component: &str,
        class: &str,
        args: Vec<Arg>,
        options: TaskOptions,
    ) -> Result<ActorId> {
        let hash = self.hash_blocking(component, "Session::create_actor_blocking")?;
        self.create_actor_hash(&hash, class, args, options)
    }

    /// Calls `method` of actor `actor`; returns its return object ids,
    /// held by the session.
    ///
    /// # Errors
    /// [`Error::Limit`] when the session holds too many objects.
    pub fn call(
        &self,
        actor: ActorId,
        method: &str,
        args: Vec<Arg>,
        options: TaskOptions,
    ) -> Result<Vec<ObjectId>> {
        let reachable = actor.job() == self.job;
        let call = self.submission(args, options);
        let mut holds = self.holds.lock();
        self.node
            .sched
            .call_actor(&mut holds, actor, reachable, call, method.to_string())
            .map_err(|e| Error::Limit(e.to_string()))
    }

    /// Stores `value` as a new object, held by the session.
    ///
    /// # Errors
    /// [`Error::Limit`] past the puts one task may make or the objects one
    /// holder may hold; a ref inside `value` the session may not name, or
    /// a full store, makes the object an error object instead.
    pub fn put(&self, value: Payload) -> Result<ObjectId> {
        let objects = &self.node.sched.objects();
        let mut holds = self.holds.lock();
        holds.room().map_err(|e| Error::Limit(e.to_string()))?;
        let full = objects.admit(1).map_err(|e| Error::Limit(e.to_string()))?;
        let index = self.puts.fetch_add(1, Ordering::Relaxed);
        let id = self.root.put_object(index).ok_or_else(|| {
            Error::Limit(format!(
                "the session made {index} objects with put, the most one task may make"
            ))
        })?;
        let bad = value
            .refs
            .iter()
            .find(|r| !(r.job() == self.job || holds.contains(r)) || !objects.exists(r))
            .copied();
        let error =
            |kind, message: String| Object::Error(TaskError::new(kind, "put", self.root, message));
        let object = match (full, bad) {
            (Some(full), _) => error(ErrorKind::System, full.to_string()),
            (None, Some(bad)) => error(
                ErrorKind::NotFound,
                format!(
                    "a value refers to object {bad}, which does not exist on node {}",
                    self.node.id()
                ),
            ),
            (None, None) => match objects.refs(value.refs) {
                Err(full) => error(ErrorKind::System, full.to_string()),
                Ok(refs) => match objects.value(value.codec, &value.data, refs) {
                    Ok(object) => object,
                    Err(full) => error(ErrorKind::System, full.to_string()),
                },
            },
        };
        objects.register_pending(id);
        holds
            .hold(objects, id)
            .map_err(|e| Error::Limit(e.to_string()))?;
        objects.seal(id, object);
        Ok(id)
    }

    /// The value of object `id` once it is sealed: its payload (bytes
    /// copied out of the store), or the error of the task that should have
    /// made it. Waits without a thread of its own (an async fn); `timeout`
    /// bounds the wait.
    ///
    /// # Errors
    /// The task's [`TaskError`]; `not-found` for an id the session may not
    /// name or that does not exist; `timeout` when `timeout` passed first.
    pub async fn get(&self, id: ObjectId, timeout: Option<Duration>) -> Result<Payload, TaskError> {
        self.get_on(id, timeout, &WaitingThread::Runtime).await
    }

    /// [`Session::get`], its wait blocking `thread` (an async caller's: a
    /// runtime's; a `_blocking` caller's: its own).
    async fn get_on(
        &self,
        id: ObjectId,
        timeout: Option<Duration>,
        thread: &WaitingThread,
    ) -> Result<Payload, TaskError> {
        let value = self.get_shared_on(id, timeout, thread).await?;
        Ok(Payload {
            codec: value.codec(),
            data: value.bytes().to_vec(),
            refs: value.refs(),
        })
    }

    /// [`Session::get`] without a copy: the store's object itself, whose
    /// bytes stay valid (and in memory) while the [`SharedValue`] lives,
    /// even once the store has freed the id.
    ///
    /// # Errors
    /// As [`Session::get`].
    pub async fn get_shared(
        &self,
        id: ObjectId,
        timeout: Option<Duration>,
    ) -> Result<SharedValue, TaskError> {
        self.get_shared_on(id, timeout, &WaitingThread::Runtime)
            .await
    }

    /// [`Session::get_shared`], its wait blocking `thread`.
    async fn get_shared_on(
        &self,
        id: ObjectId,
        timeout: Option<Duration>,
        thread: &WaitingThread,
    ) -> Result<SharedValue, TaskError> {
        let objects = self.node.sched.objects();
        let not_found = || {
            TaskError::new(
                ErrorKind::NotFound,
                "get",
                self.root,
                format!("object {id} does not exist on node {}", self.node.id()),
            )
        };
        if !self.visible(&id) || !objects.exists(&id) {
            return Err(not_found());
        }
        let until = timeout.and_then(|t| Instant::now().checked_add(t));
        let blocker = Blocker {
            entry: None,
            allocation: None,
            thread,
        };
        self.node.sched.wait_sealed(&[id], 1, until, blocker).await;
        let Some(object) = objects.get(&id) else {
            return Err(if objects.is_pending(&id) {
                TaskError::new(
                    ErrorKind::Timeout,
                    "get",
                    self.root,
                    format!(
                        "object {id} was not ready within {}",
                        timeout
                            .map_or("its wait".to_string(), |t| format!("{} s", t.as_secs_f64()))
                    ),
                )
            } else {
                not_found()
            });
        };
        if let Object::Error(e) = &*object {
            return Err(e.clone());
        }
        Ok(SharedValue { object })
    }

    /// [`Session::get`] on the calling thread (which must not be inside
    /// an async runtime): a thread of its own, whose wait looks for the
    /// object a moment before it sleeps, as a worker's does.
    ///
    /// # Errors
    /// As [`Session::get`]; a `system` error inside a tokio runtime
    /// ([`Error::BlockingInRuntime`]).
    pub fn get_blocking(
        &self,
        id: ObjectId,
        timeout: Option<Duration>,
    ) -> Result<Payload, TaskError> {
        self.node
            .wait(
                "Session::get_blocking",
                self.get_on(id, timeout, &WaitingThread::Own),
            )
            .unwrap_or_else(|e| {
                Err(TaskError::new(
                    ErrorKind::System,
                    "get",
                    id.task,
                    e.to_string(),
                ))
            })
    }

    /// Waits until `num_returns` of `ids` are sealed or `timeout` passes;
    /// says which are (Ray's `ray.wait`). Ids the session may not name
    /// count as ready (a `get` of them fails at once).
    pub async fn wait(
        &self,
        ids: &[ObjectId],
        num_returns: usize,
        timeout: Option<Duration>,
    ) -> Vec<bool> {
        let until = timeout.and_then(|t| Instant::now().checked_add(t));
        let blocker = Blocker::on_runtime();
        let need = num_returns.min(ids.len());
        self.node.sched.wait_sealed(ids, need, until, blocker).await;
        let objects = &self.node.sched.objects();
        ids.iter()
            .map(|id| !self.visible(id) || !objects.is_pending(id))
            .collect()
    }

    /// Drops the session's holds on `ids` (their objects are freed once
    /// nothing else holds them).
    pub fn release(&self, ids: &[ObjectId]) {
        let objects = &self.node.sched.objects();
        let mut holds = self.holds.lock();
        for id in ids {
            holds.release(objects, id);
        }
    }

    /// Cancels the task that makes `id` (and what it submitted, with
    /// `recursive`); false when it finished already or is not the
    /// session's.
    pub fn cancel(&self, id: ObjectId, force: bool, recursive: bool) -> bool {
        if id.task.job() != self.job {
            return false;
        }
        self.node.sched.cancel(id.task, force, recursive)
    }

    /// Kills actor `actor`; false when it was dead already or is not the
    /// session's.
    pub fn kill_actor(&self, actor: ActorId) -> bool {
        actor.job() == self.job && self.node.sched.kill_actor(actor, "session")
    }
}

/// A sealed value of the store, shared rather than copied
/// ([`Session::get_shared`]): its bytes live as long as this does.
#[derive(Clone)]
pub struct SharedValue {
    /// Always an [`Object::Value`].
    object: Arc<Object>,
}

impl SharedValue {
    /// How its bytes are encoded.
    pub fn codec(&self) -> Codec {
        match &*self.object {
            Object::Value { codec, .. } => *codec,
            Object::Error(_) => Codec::Raw,
        }
    }

    /// Its bytes, in place in the store (heap, shared memory or a spill
    /// file's mapping).
    pub fn bytes(&self) -> &[u8] {
        match &*self.object {
            Object::Value { data, .. } => data.bytes(),
            Object::Error(_) => &[],
        }
    }

    /// The object refs serialized inside it.
    pub fn refs(&self) -> Vec<ObjectId> {
        match &*self.object {
            Object::Value { refs, .. } => refs.iter().copied().collect(),
            Object::Error(_) => Vec::new(),
        }
    }
}

impl AsRef<[u8]> for SharedValue {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

impl std::fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedValue")
            .field("codec", &self.codec())
            .field("len", &self.bytes().len())
            .finish()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.holds.get_mut().release_all(self.node.sched.objects());
        self.node.end_job(self.job);
    }
}
