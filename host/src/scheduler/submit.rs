//! Turning a guest's `submit` / `create-actor` / `call-actor` into task
//! specs, checked against the function table first: a call the component
//! cannot serve becomes error objects at once (submission never fails, as
//! in Ray, where errors surface at `get`).

use std::sync::Arc;

use wray_control_plane::{ActorId, ObjectId, TaskId};

use crate::actor::Actor;
use crate::bindings::types;
use crate::component::LoadedComponent;
use crate::error::{ErrorKind, TaskError};
use crate::runtime::Runtime;
use crate::task::{TaskKind, TaskSpec};

fn return_ids(id: TaskId, num_returns: u32) -> Vec<ObjectId> {
    (0..num_returns.max(1))
        .map(|i| id.return_object(i))
        .collect()
}

impl Runtime {
    /// Seals `returns` with an error at once.
    fn reject(&self, returns: &[ObjectId], error: TaskError) {
        for id in returns {
            self.objects.expect(*id);
        }
        self.stats
            .submitted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.complete(returns, Err(error));
    }

    /// Submits remote function `function` of `component` as task `id`.
    /// Returns its return object ids.
    pub(crate) fn submit_function(
        self: &Arc<Self>,
        component: &Arc<LoadedComponent>,
        id: TaskId,
        function: String,
        args: Vec<types::Arg>,
        num_returns: u32,
    ) -> Vec<ObjectId> {
        let returns = return_ids(id, num_returns);
        let record = &component.record;
        let problem = match record.function(&function) {
            None => Some((
                ErrorKind::NotFound,
                format!(
                    "component `{}` has no remote function `{function}`",
                    record.name
                ),
            )),
            Some(f) if f.num_args as usize != args.len() => Some((
                ErrorKind::InvalidArgument,
                format!(
                    "`{function}` takes {} arguments, got {}",
                    f.num_args,
                    args.len()
                ),
            )),
            Some(f) if f.num_returns as usize != returns.len() => Some((
                ErrorKind::InvalidArgument,
                format!(
                    "`{function}` returns {} values, caller expects {}",
                    f.num_returns,
                    returns.len()
                ),
            )),
            Some(_) => None,
        };
        if let Some((kind, message)) = problem {
            self.reject(&returns, TaskError::new(kind, function, id, message));
            return returns;
        }
        self.submit(TaskSpec {
            id,
            label: function.clone(),
            kind: TaskKind::Function { name: function },
            component: component.clone(),
            args,
            returns: returns.clone(),
        });
        returns
    }

    /// Creates actor `id` of class `class`: registers it and submits its
    /// constructor as its first task.
    pub(crate) fn create_actor(
        self: &Arc<Self>,
        component: &Arc<LoadedComponent>,
        id: ActorId,
        class: String,
        args: Vec<types::Arg>,
    ) {
        let label = format!("{class}.new");
        let actor = Arc::new(Actor::new(id, class.clone(), component.clone()));
        self.actors.lock().insert(id, actor.clone());
        let problem = match component.record.actor_class(&class) {
            None => Some((
                ErrorKind::NotFound,
                format!(
                    "component `{}` has no actor class `{class}`",
                    component.record.name
                ),
            )),
            Some(c) if c.num_args as usize != args.len() => Some((
                ErrorKind::InvalidArgument,
                format!(
                    "`{class}::new` takes {} arguments, got {}",
                    c.num_args,
                    args.len()
                ),
            )),
            Some(_) => None,
        };
        if let Some((kind, message)) = problem {
            actor.kill(TaskError::new(kind, label, id, message));
            return;
        }
        self.submit(TaskSpec {
            id,
            label,
            kind: TaskKind::ActorCreate { actor },
            component: component.clone(),
            args,
            returns: Vec::new(),
        });
    }

    /// Calls `method` on `actor` as task `id`; returns its return object ids.
    pub(crate) fn call_actor(
        self: &Arc<Self>,
        actor_id: ActorId,
        id: TaskId,
        method: String,
        args: Vec<types::Arg>,
        num_returns: u32,
    ) -> Vec<ObjectId> {
        let returns = return_ids(id, num_returns);
        let Some(actor) = self.actors.lock().get(&actor_id).cloned() else {
            let msg = format!("no actor {actor_id} on node {}", self.node_id);
            self.reject(
                &returns,
                TaskError::new(ErrorKind::NotFound, method, id, msg),
            );
            return returns;
        };
        let label = format!("{}.{method}", actor.class);
        let problem = match actor.component.record.actor_method(&actor.class, &method) {
            None => Some((
                ErrorKind::NotFound,
                format!("actor class `{}` has no method `{method}`", actor.class),
            )),
            Some(m) if m.num_args as usize != args.len() => Some((
                ErrorKind::InvalidArgument,
                format!(
                    "`{label}` takes {} arguments, got {}",
                    m.num_args,
                    args.len()
                ),
            )),
            Some(m) if m.num_returns as usize != returns.len() => Some((
                ErrorKind::InvalidArgument,
                format!(
                    "`{label}` returns {} values, caller expects {}",
                    m.num_returns,
                    returns.len()
                ),
            )),
            Some(_) => None,
        };
        if let Some((kind, message)) = problem {
            self.reject(&returns, TaskError::new(kind, label, id, message));
            return returns;
        }
        self.submit(TaskSpec {
            id,
            label,
            kind: TaskKind::ActorCall {
                actor: actor.clone(),
                method,
            },
            component: actor.component.clone(),
            args,
            returns: returns.clone(),
        });
        returns
    }
}
