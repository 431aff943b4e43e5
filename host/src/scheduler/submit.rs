//! Turning a guest's `submit` / `create-actor` / `call-actor` into task
//! specs, checked against the function table first: a call the component
//! cannot serve becomes error objects at once (submission never fails, as
//! in Ray, where errors surface at `get`).

use std::sync::Arc;

use wray_control_plane::{ActorId, FunctionRecord, ObjectId, TaskId};

use crate::actor::Actor;
use crate::bindings::types;
use crate::component::LoadedComponent;
use crate::error::{ErrorKind, TaskError};
use crate::runtime::Runtime;
use crate::task::{TaskKind, TaskSpec};
use crate::worker::state::Holds;

fn return_ids(id: TaskId, num_returns: u32) -> Vec<ObjectId> {
    (0..num_returns.max(1))
        .map(|i| id.return_object(i))
        .collect()
}

/// Checks a call against the function-table row it resolved to: `None`
/// means the export does not exist (`missing` says what is missing).
/// `returns` is `None` for constructors (they return no objects).
fn check_call(
    found: Option<&FunctionRecord>,
    missing: impl FnOnce() -> String,
    label: &str,
    args: usize,
    returns: Option<usize>,
) -> Result<(), (ErrorKind, String)> {
    let Some(f) = found else {
        return Err((ErrorKind::NotFound, missing()));
    };
    if f.num_args as usize != args {
        let msg = format!("`{label}` takes {} arguments, got {args}", f.num_args);
        return Err((ErrorKind::InvalidArgument, msg));
    }
    match returns {
        Some(n) if f.num_returns as usize != n => {
            let msg = format!(
                "`{label}` returns {} values, caller expects {n}",
                f.num_returns
            );
            Err((ErrorKind::InvalidArgument, msg))
        }
        _ => Ok(()),
    }
}

impl Runtime {
    /// Registers `returns` as pending objects held by the caller (before the
    /// task can possibly finish, so its results are not freed unread).
    fn expect_returns(&self, caller: &mut Holds, returns: &[ObjectId]) {
        for id in returns {
            self.objects.register_pending(*id);
            caller.hold(&self.objects, *id);
        }
    }

    /// Seals `returns` with an error at once.
    fn reject(&self, returns: &[ObjectId], error: TaskError) {
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
        caller: &mut Holds,
        id: TaskId,
        function: String,
        args: Vec<types::Arg>,
        num_returns: u32,
    ) -> Vec<ObjectId> {
        let returns = return_ids(id, num_returns);
        self.expect_returns(caller, &returns);
        let record = &component.record;
        let checked = check_call(
            record.function(&function),
            || {
                format!(
                    "component `{}` has no remote function `{function}`",
                    record.name
                )
            },
            &function,
            args.len(),
            Some(returns.len()),
        );
        if let Err((kind, message)) = checked {
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
            holds: Vec::new(),
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
        let checked = check_call(
            component.record.actor_class(&class),
            || {
                format!(
                    "component `{}` has no actor class `{class}`",
                    component.record.name
                )
            },
            &label,
            args.len(),
            None,
        );
        if let Err((kind, message)) = checked {
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
            holds: Vec::new(),
        });
    }

    /// Calls `method` on `actor` as task `id`; returns its return object ids.
    pub(crate) fn call_actor(
        self: &Arc<Self>,
        caller: &mut Holds,
        actor_id: ActorId,
        id: TaskId,
        method: String,
        args: Vec<types::Arg>,
        num_returns: u32,
    ) -> Vec<ObjectId> {
        let returns = return_ids(id, num_returns);
        self.expect_returns(caller, &returns);
        let Some(actor) = self.actors.lock().get(&actor_id).cloned() else {
            let msg = format!("no actor {actor_id} on node {}", self.node_id);
            self.reject(
                &returns,
                TaskError::new(ErrorKind::NotFound, method, id, msg),
            );
            return returns;
        };
        let label = format!("{}.{method}", actor.class);
        let checked = check_call(
            actor.component.record.actor_method(&actor.class, &method),
            || format!("actor class `{}` has no method `{method}`", actor.class),
            &label,
            args.len(),
            Some(returns.len()),
        );
        if let Err((kind, message)) = checked {
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
            holds: Vec::new(),
        });
        returns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wray_control_plane::FunctionKind;

    fn record(num_args: u32, num_returns: u32) -> FunctionRecord {
        FunctionRecord {
            kind: FunctionKind::Function,
            name: "f".into(),
            class: None,
            num_returns,
            num_args,
        }
    }

    #[test]
    fn check_call_names_what_is_wrong() {
        let f = record(2, 1);
        assert!(check_call(Some(&f), String::new, "f", 2, Some(1)).is_ok());
        let (kind, msg) = check_call(None, || "no `g`".into(), "g", 0, Some(1)).unwrap_err();
        assert_eq!((kind, msg.as_str()), (ErrorKind::NotFound, "no `g`"));
        let (kind, msg) = check_call(Some(&f), String::new, "f", 3, Some(1)).unwrap_err();
        assert_eq!(kind, ErrorKind::InvalidArgument);
        assert_eq!(msg, "`f` takes 2 arguments, got 3");
        let (_, msg) = check_call(Some(&f), String::new, "f", 2, Some(2)).unwrap_err();
        assert_eq!(msg, "`f` returns 1 values, caller expects 2");
        // Constructors return nothing and are not checked for returns.
        assert!(check_call(Some(&f), String::new, "C.new", 2, None).is_ok());
    }
}
