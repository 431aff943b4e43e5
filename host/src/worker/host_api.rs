//! The host side of the `wray:runtime` imports, scoped to the task a store
//! is running.

use std::time::{Duration, Instant};

use wray_control_plane::{ObjectId, TaskId};

use crate::bindings::types;
use crate::bindings::wray::runtime::{objects, runtime, tasks};
use crate::error::{ErrorKind, TaskError};
use crate::object_store::Object;
use crate::scheduler::blocking::{Blocker, WaitEnd};
use crate::scheduler::submit::Submission;
use crate::worker::run::{from_payload, to_payload};
use crate::worker::state::TaskState;

impl types::Host for TaskState {}

impl TaskState {
    /// The earlier of the call's own timeout and the task's time limit, and
    /// whether the task's limit is the one that ends the wait.
    fn wait_deadline(&self, timeout_ms: Option<u64>) -> (Option<Instant>, bool) {
        let call = timeout_ms.and_then(|ms| Instant::now().checked_add(Duration::from_millis(ms)));
        match (call, self.current.deadline) {
            (Some(c), Some(t)) if t < c => (Some(t), true),
            (Some(c), _) => (Some(c), false),
            (None, Some(t)) => (Some(t), true),
            (None, None) => (None, false),
        }
    }

    pub(crate) fn block(
        &mut self,
        ids: &[ObjectId],
        need: usize,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<WaitEnd> {
        let (deadline, is_task_limit) = self.wait_deadline(timeout_ms);
        let current = &mut self.current;
        let blocker = Blocker {
            entry: current.entry.as_deref(),
            allocation: current.holds_cpu.then_some(&mut current.allocation),
            cancel: &current.cancel,
        };
        let end = self.rt.block_until_sealed(ids, need, deadline, blocker);
        if end == WaitEnd::TimedOut && is_task_limit {
            self.timed_out = true;
            wasmtime::bail!("task time limit exceeded while blocked in get/wait");
        }
        if end == WaitEnd::Cancelled {
            wasmtime::bail!("task cancelled while blocked in get/wait");
        }
        Ok(end)
    }

    fn error(&self, kind: ErrorKind, message: String) -> types::TaskError {
        TaskError::new(kind, self.current.label.clone(), self.current.id, message).into()
    }
}

impl objects::Host for TaskState {
    fn put(&mut self, value: types::Payload) -> wasmtime::Result<types::ObjectId> {
        let id = self.new_put();
        self.rt
            .objects
            .seal(id, from_payload(&self.rt.objects, value));
        Ok(id.into())
    }

    fn get(
        &mut self,
        ids: Vec<types::ObjectId>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<types::Payload>, types::TaskError>> {
        let ids: Vec<ObjectId> = ids.into_iter().map(Into::into).collect();
        if let Some(missing) = ids.iter().find(|id| !self.rt.objects.exists(id)) {
            let msg = format!(
                "object {missing} does not exist on node {}",
                self.rt.node_id
            );
            return Ok(Err(self.error(ErrorKind::NotFound, msg)));
        }
        if self.block(&ids, ids.len(), timeout_ms)? == WaitEnd::TimedOut {
            let msg = format!(
                "get of {} objects timed out after {} ms",
                ids.len(),
                timeout_ms.unwrap_or(0)
            );
            return Ok(Err(self.error(ErrorKind::Timeout, msg)));
        }
        let mut values = Vec::with_capacity(ids.len());
        for id in &ids {
            match self.rt.objects.get(id).as_deref() {
                Some(object @ Object::Value { .. }) => values.push(to_payload(object)),
                Some(Object::Error(e)) => return Ok(Err(e.clone().into())),
                None => {
                    let msg = format!("object {id} vanished while being read");
                    return Ok(Err(self.error(ErrorKind::System, msg)));
                }
            }
        }
        let refs: Vec<ObjectId> = values
            .iter()
            .flat_map(|p| p.refs.iter().map(|r| (*r).into()))
            .collect();
        self.hold_all(refs);
        Ok(Ok(values))
    }

    fn wait(
        &mut self,
        ids: Vec<types::ObjectId>,
        num_returns: u32,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Vec<bool>> {
        let ids: Vec<ObjectId> = ids.into_iter().map(Into::into).collect();
        let need = (num_returns as usize).min(ids.len());
        self.block(&ids, need, timeout_ms)?;
        let mut left = need;
        Ok(ids
            .iter()
            .map(|id| {
                let ready = left > 0 && self.rt.objects.get(id).is_some();
                if ready {
                    left -= 1;
                }
                ready
            })
            .collect())
    }

    fn release(&mut self, ids: Vec<types::ObjectId>) -> wasmtime::Result<()> {
        for id in ids {
            self.holds.release(&self.rt.objects, &id.into());
        }
        Ok(())
    }
}

impl TaskState {
    /// A submission by the running task of its next child.
    fn submission(&mut self, args: Vec<types::Arg>, options: types::TaskOptions) -> Submission {
        Submission {
            parent: self.current.id,
            id: self.current.next_child(),
            args,
            options,
        }
    }
}

impl tasks::Host for TaskState {
    fn submit(
        &mut self,
        function: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<Vec<types::ObjectId>> {
        let call = self.submission(args, options);
        let returns = self
            .rt
            .submit_function(&self.component, &mut self.holds, call, function);
        Ok(returns.into_iter().map(Into::into).collect())
    }

    fn create_actor(
        &mut self,
        class: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<types::ActorId> {
        let call = self.submission(args, options);
        let id = call.id;
        self.rt.create_actor(&self.component, call, class);
        Ok(id.into())
    }

    fn call_actor(
        &mut self,
        actor: types::ActorId,
        method: String,
        args: Vec<types::Arg>,
        options: types::TaskOptions,
    ) -> wasmtime::Result<Vec<types::ObjectId>> {
        let call = self.submission(args, options);
        let returns = self
            .rt
            .call_actor(&mut self.holds, TaskId::from(actor), call, method);
        Ok(returns.into_iter().map(Into::into).collect())
    }

    fn cancel(
        &mut self,
        id: types::ObjectId,
        force: bool,
        recursive: bool,
    ) -> wasmtime::Result<bool> {
        let task = ObjectId::from(id).task;
        Ok(self.rt.cancel(task, force, recursive))
    }

    fn kill_actor(&mut self, actor: types::ActorId) -> wasmtime::Result<bool> {
        let by = self.current.label.clone();
        Ok(self.rt.kill_actor(TaskId::from(actor), &by))
    }
}

impl runtime::Host for TaskState {
    fn task_id(&mut self) -> wasmtime::Result<types::TaskId> {
        Ok(self.current.id.into())
    }

    fn node_id(&mut self) -> wasmtime::Result<String> {
        Ok(self.rt.node_id.clone())
    }

    fn log(&mut self, level: types::LogLevel, message: String) -> wasmtime::Result<()> {
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
            .map_or(0, |e| e.span_begin(name)))
    }

    fn profile_end(&mut self, span: u32) -> wasmtime::Result<()> {
        if let Some(e) = &self.current.entry {
            e.span_end(span);
        }
        Ok(())
    }

    fn panicked(&mut self, message: String) -> wasmtime::Result<()> {
        self.panic_message = Some(message);
        Ok(())
    }
}
