//! The host side of the `wray:runtime` imports, scoped to the task a store
//! is running.
//!
//! Nothing a guest passes is trusted: an id it may not name (another job's,
//! not handed to it) reads exactly as one that does not exist; every count
//! and length is bounded (`proto/src/bounds.rs`); a table that would pass its bound
//! fails the call (an error value where the WIT has one, else a trap that
//! ends the task).

use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_control_plane::{ObjectId, TaskId};

use crate::bindings::types;
use crate::bindings::wray::runtime::{objects, runtime, tasks};
use crate::bounds::{truncate, MAX_ACTOR_NAME, MAX_LOG_LINE};
use crate::error::{ErrorKind, TaskError};
use crate::mapping::{not_found, waits_on_itself};
use crate::objects::Object;
use crate::proto::actor_handle_object;
use crate::scheduler::blocking::{too_many_blocked, Blocker, WaitEnd};
use crate::scheduler::submit::Submission;
use crate::scheduler::Callee;
use crate::state::TaskState;
use crate::values::{from_payload, store_full, to_payload};

impl types::Host for TaskState {}

impl TaskState {
    /// Waits until `need` of `ids` are sealed or `timeout_ms` passes,
    /// giving the task's CPUs back meanwhile (see
    /// [`Services::wait_sealed`](crate::services::Services)).
    async fn block(&mut self, ids: &[ObjectId], need: usize, timeout_ms: Option<u64>) -> WaitEnd {
        let until = timeout_ms.and_then(|ms| Instant::now().checked_add(Duration::from_millis(ms)));
        let node = self.node.clone();
        let current = &mut self.current;
        let blocker = Blocker {
            entry: current.entry.as_deref(),
            allocation: current.holds_cpu.then_some(&mut current.allocation),
            thread: &current.thread,
        };
        node.wait_sealed(ids, need, until, blocker).await
    }

    fn error(&self, kind: ErrorKind, message: String) -> types::TaskError {
        TaskError::new(kind, self.current.label.clone(), self.current.id, message).into()
    }

    /// A submission by the running task of its next child.
    fn submission(&mut self, args: Vec<types::Arg>, options: types::TaskOptions) -> Submission {
        let id = self.current.next_child();
        let cancelled = self.current.is_cancelled() || self.node.shutdown().is_cancelled();
        Submission::new(
            self.current.id,
            id,
            args.into_iter().map(Into::into).collect(),
            options.into(),
            cancelled,
            self.node.objects(),
            |id| self.visible(id),
        )
    }

    /// Whether actor `actor` may be called or killed by this task: it
    /// belongs to the task's job, or the task holds its handle (from
    /// `get-actor`).
    fn may_reach_actor(&self, actor: &TaskId) -> bool {
        self.visible(&actor_handle_object(*actor))
    }
}

impl objects::Host for TaskState {
    fn put(&mut self, value: types::Payload) -> wasmtime::Result<types::ObjectId> {
        // Past the store's budget, the value is not stored: its object
        // says the store is full (past the reserve, `new_put` traps).
        let object = match self.node.objects().admit(1)? {
            Some(full) => Object::Error(store_full(self, full)),
            None => from_payload(self, value),
        };
        let id = self.new_put()?;
        self.node.objects().seal(id, object);
        Ok(id.into())
    }

    async fn get(
        &mut self,
        ids: Vec<types::ObjectId>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<types::Payload>, types::TaskError>> {
        let ids: Vec<ObjectId> = ids.into_iter().map(Into::into).collect();
        // The usual case first: every object sealed already (one lookup
        // each, no waiting).
        let mut found: Vec<Option<Arc<Object>>> = ids
            .iter()
            .map(|id| {
                self.visible(id)
                    .then(|| self.node.objects().get(id))
                    .flatten()
            })
            .collect();
        if found.iter().any(Option::is_none) {
            if let Some(missing) = ids
                .iter()
                .find(|id| !self.visible(id) || !self.node.objects().exists(id))
            {
                return Ok(Err(not_found(self, missing)));
            }
            if let Some(own) = ids.iter().find(|id| self.waits_on_itself(id)) {
                return Ok(Err(waits_on_itself(self, own)));
            }
            match self.block(&ids, ids.len(), timeout_ms).await {
                WaitEnd::Ready => {}
                WaitEnd::TimedOut => {
                    let msg = format!(
                        "no value within {} ms for {} (of {} objects asked for)",
                        timeout_ms.unwrap_or(0),
                        ids.iter()
                            .find(|id| self.node.objects().is_pending(id))
                            .map_or_else(|| "an object".to_string(), |id| format!("object {id}")),
                        ids.len(),
                    );
                    // Named `get`, not the task: the call timed out, the
                    // task goes on (and may fail with this error, or not).
                    let error = TaskError::new(ErrorKind::Timeout, "get", self.current.id, msg);
                    return Ok(Err(self.saw_error(error)));
                }
                WaitEnd::Refused => {
                    let msg = too_many_blocked(self.node.node_id());
                    return Ok(Err(self.error(ErrorKind::System, msg)));
                }
            }
            for (slot, id) in found.iter_mut().zip(&ids) {
                if slot.is_none() {
                    *slot = self.node.objects().get(id);
                }
            }
        }
        let mut values = Vec::with_capacity(ids.len());
        for (object, id) in found.iter().zip(&ids) {
            match object.as_deref() {
                Some(object @ Object::Value { .. }) => values.push(to_payload(object)),
                Some(Object::Error(e)) => return Ok(Err(self.saw_error(e.clone()))),
                // Freed meanwhile (its job ended): as if it never existed.
                None => return Ok(Err(not_found(self, id))),
            }
        }
        let refs: Vec<ObjectId> = values
            .iter()
            .flat_map(|p| p.refs.iter().map(|r| (*r).into()))
            .collect();
        self.hold_all(refs)?;
        Ok(Ok(values))
    }

    async fn wait(
        &mut self,
        ids: Vec<types::ObjectId>,
        num_returns: u32,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Vec<bool>> {
        let ids: Vec<ObjectId> = ids.into_iter().map(Into::into).collect();
        // An id the task may not name counts as ready, as one that does not
        // exist does, and one the task makes itself: `get` on it fails at
        // once.
        let hidden: Vec<bool> = ids
            .iter()
            .map(|id| !self.visible(id) || self.waits_on_itself(id))
            .collect();
        let seen: Vec<ObjectId> = ids
            .iter()
            .zip(&hidden)
            .filter(|(_, h)| !**h)
            .map(|(id, _)| *id)
            .collect();
        let need = (num_returns as usize).min(ids.len());
        let need_seen = need.saturating_sub(ids.len() - seen.len());
        // `wait` has no error value: a refused wait traps (a node limit).
        if need_seen > 0 && self.block(&seen, need_seen, timeout_ms).await == WaitEnd::Refused {
            wasmtime::bail!("{}", too_many_blocked(self.node.node_id()));
        }
        let mut left = need;
        Ok(self.node.objects().with_pending(ids.len(), |pending| {
            ids.iter()
                .zip(hidden)
                .map(|(id, hidden)| {
                    let ready = left > 0 && (hidden || !pending(id));
                    if ready {
                        left -= 1;
                    }
                    ready
                })
                .collect()
        }))
    }

    fn release(&mut self, ids: Vec<types::ObjectId>) -> wasmtime::Result<()> {
        for id in ids {
            self.holds.release(self.node.objects(), &id.into());
        }
        Ok(())
    }
}

impl TaskState {
    /// `submit` (`component` none: this component) and `submit-to`.
    fn submit_in(
        &mut self,
        component: Option<&str>,
        function: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<Vec<types::ObjectId>> {
        let call = self.submission(args, options);
        let callee = component.map_or(Callee::Hash(&self.component), Callee::Named);
        let returns = self
            .node
            .submit_function(callee, &mut self.holds, call, function)?;
        Ok(returns.into_iter().map(Into::into).collect())
    }

    /// `create-actor` (`component` none: this component) and
    /// `create-actor-of`.
    fn create_actor_in(
        &mut self,
        component: Option<&str>,
        class: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<types::ActorId> {
        let call = self.submission(args, options);
        let id = call.id;
        let callee = component.map_or(Callee::Hash(&self.component), Callee::Named);
        self.node
            .create_actor(callee, &mut self.holds, call, class)?;
        Ok(id.into())
    }
}

impl tasks::Host for TaskState {
    fn submit(
        &mut self,
        function: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<Vec<types::ObjectId>> {
        self.submit_in(None, function, args, options)
    }

    fn submit_to(
        &mut self,
        component: String,
        function: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<Vec<types::ObjectId>> {
        self.submit_in(Some(&component), function, args, options)
    }

    fn create_actor(
        &mut self,
        class: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<types::ActorId> {
        self.create_actor_in(None, class, args, options)
    }

    fn create_actor_of(
        &mut self,
        component: String,
        class: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<types::ActorId> {
        self.create_actor_in(Some(&component), class, args, options)
    }

    async fn create_actor_with(
        &mut self,
        component: Option<String>,
        class: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
        actor: types::ActorOptions,
    ) -> wasmtime::Result<types::ActorId> {
        self.create_actor_placed(
            component,
            class,
            args,
            options,
            actor,
            types::SchedulingStrategy::Default,
        )
        .await
    }

    async fn create_actor_placed(
        &mut self,
        component: Option<String>,
        class: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
        actor: types::ActorOptions,
        scheduling: types::SchedulingStrategy,
    ) -> wasmtime::Result<types::ActorId> {
        let mut call = self.submission(args, options);
        call.options.max_restarts = actor.max_restarts;
        call.options.max_task_retries = actor.max_task_retries;
        call.options.scheduling = scheduling.into();
        let id = call.id;
        let callee = component
            .as_deref()
            .map_or(Callee::Hash(&self.component), Callee::Named);
        self.node
            .create_actor(callee, &mut self.holds, call, class)?;
        if let Some(name) = actor.name {
            // The directory checks the name; a bad one kills the actor.
            self.node.name_actor(id, &name).await;
        }
        Ok(id.into())
    }

    fn submit_placed(
        &mut self,
        component: Option<String>,
        function: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
        scheduling: types::SchedulingStrategy,
    ) -> wasmtime::Result<Vec<types::ObjectId>> {
        let mut call = self.submission(args, options);
        call.options.scheduling = scheduling.into();
        let callee = component
            .as_deref()
            .map_or(Callee::Hash(&self.component), Callee::Named);
        let returns = self
            .node
            .submit_function(callee, &mut self.holds, call, function)?;
        Ok(returns.into_iter().map(Into::into).collect())
    }

    async fn get_actor(
        &mut self,
        name: String,
        class: String,
    ) -> wasmtime::Result<Result<types::ActorId, types::TaskError>> {
        if name.len() > MAX_ACTOR_NAME || class.len() > MAX_ACTOR_NAME {
            let message = format!("an actor name or class is at most {MAX_ACTOR_NAME} bytes");
            return Ok(Err(self.error(ErrorKind::InvalidArgument, message)));
        }
        let node = self.node.clone();
        match node.get_actor(&mut self.holds, &name, &class).await? {
            Ok(id) => Ok(Ok(id.into())),
            Err((kind, message)) => Ok(Err(self.error(kind, message))),
        }
    }

    fn call_actor(
        &mut self,
        actor: types::ActorId,
        method: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<Vec<types::ObjectId>> {
        let actor = TaskId::from(actor);
        let reachable = self.may_reach_actor(&actor);
        let call = self.submission(args, options);
        let returns = self
            .node
            .call_actor(&mut self.holds, actor, reachable, call, method)?;
        Ok(returns.into_iter().map(Into::into).collect())
    }

    fn cancel(
        &mut self,
        id: types::ObjectId,
        force: bool,
        recursive: bool,
    ) -> wasmtime::Result<bool> {
        let task = ObjectId::from(id).task;
        if task.job() != self.job {
            return Ok(false);
        }
        Ok(self.node.cancel(task, force, recursive))
    }

    fn kill_actor(&mut self, actor: types::ActorId) -> wasmtime::Result<bool> {
        let actor = TaskId::from(actor);
        if !self.may_reach_actor(&actor) {
            return Ok(false);
        }
        let by = self.current.label.clone();
        Ok(self.node.kill_actor(actor, &by))
    }
}

impl runtime::Host for TaskState {
    fn task_id(&mut self) -> wasmtime::Result<types::TaskId> {
        Ok(self.current.id.into())
    }

    fn current_actor(&mut self) -> wasmtime::Result<Option<types::ActorId>> {
        Ok(self.current.actor.map(Into::into))
    }

    fn node_id(&mut self) -> wasmtime::Result<String> {
        Ok(self.node.node_id().to_string())
    }

    fn log(&mut self, level: types::LogLevel, message: String) -> wasmtime::Result<()> {
        let message = truncate(message, MAX_LOG_LINE);
        let (task, function) = (self.current.id, self.current.label.as_str());
        match level {
            types::LogLevel::Trace => {
                tracing::trace!(target: "wray::guest", %task, function, "{message}")
            }
            types::LogLevel::Debug => {
                tracing::debug!(target: "wray::guest", %task, function, "{message}")
            }
            types::LogLevel::Info => {
                tracing::info!(target: "wray::guest", %task, function, "{message}")
            }
            types::LogLevel::Warn => {
                tracing::warn!(target: "wray::guest", %task, function, "{message}")
            }
            types::LogLevel::Error => {
                tracing::error!(target: "wray::guest", %task, function, "{message}")
            }
        }
        Ok(())
    }

    fn get_gpu_ids(&mut self) -> wasmtime::Result<Vec<u32>> {
        Ok(self.current.allocation.gpu.iter().map(|g| g.id).collect())
    }

    fn get_resource_ids(&mut self) -> wasmtime::Result<Vec<types::ResourceIds>> {
        Ok(self
            .current
            .allocation
            .ids()
            .into_iter()
            .map(|(name, ids)| types::ResourceIds { name, ids })
            .collect())
    }

    fn profile_begin(&mut self, name: String) -> wasmtime::Result<u32> {
        Ok(self
            .current
            .entry
            .as_ref()
            .map_or(u32::MAX, |e| e.span_begin(name)))
    }

    fn profile_end(&mut self, span: u32) -> wasmtime::Result<()> {
        if let Some(e) = &self.current.entry {
            e.span_end(span);
        }
        Ok(())
    }

    fn panicked(&mut self, message: String) -> wasmtime::Result<()> {
        self.panic_message = Some(truncate(message, MAX_LOG_LINE));
        Ok(())
    }
}
