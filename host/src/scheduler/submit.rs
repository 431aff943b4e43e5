//! Turning a guest's `submit` / `create-actor` / `call-actor` into task
//! specs, checked against the function table first: a call the component
//! cannot serve becomes error objects at once (submission never fails, as
//! in Ray, where errors surface at `get`).

use std::sync::Arc;

use wray_control_plane::{ActorId, Declared, FunctionRecord, ObjectId, TaskId};

use crate::actor::Actor;
use crate::bindings::types;
use crate::component::LoadedComponent;
use crate::convert::{declared_limits, declared_request};
use crate::error::{ErrorKind, TaskError};
use crate::limits::Limits;
use crate::resources::Request;
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

/// One submission from a guest: who submits, the new task's id, its
/// arguments and options.
pub(crate) struct Submission {
    /// The submitting task.
    pub parent: TaskId,
    /// The new task's id.
    pub id: TaskId,
    /// Its arguments.
    pub args: Vec<types::Arg>,
    /// Its options (returns, resources, limits).
    pub options: types::TaskOptions,
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
        self.registry.failed_at_submission(&error);
        self.complete(returns, Err(error));
    }

    /// Checks a call against the function-table row it resolved to (see
    /// [`check_call`]), then resolves its request and limits: each from the
    /// call's options, then the row's declaration, then `default` (`None`:
    /// the task takes no resources of its own, as an actor call) and
    /// `base`. A request is checked against the node's totals.
    #[allow(clippy::too_many_arguments)]
    fn check_and_resolve(
        &self,
        found: Option<&FunctionRecord>,
        missing: impl FnOnce() -> String,
        label: &str,
        call: &Submission,
        returns: Option<usize>,
        default: Option<&Request>,
        base: Limits,
    ) -> Result<(Request, Limits), (ErrorKind, String)> {
        check_call(found, missing, label, call.args.len(), returns)?;
        let none = Declared::default();
        let declared = found.map_or(&none, |f| &f.declared);
        let invalid = |m| (ErrorKind::InvalidArgument, m);
        let limits = Limits::resolve(
            &call.options.limits,
            &declared_limits(declared),
            base,
            self.config.fuel_metering,
        )
        .map_err(invalid)?;
        let Some(default) = default else {
            return Ok((Request::default(), limits));
        };
        let request = Request::resolve(
            &call.options.resources,
            &declared_request(declared),
            default,
        )
        .map_err(invalid)?;
        self.pool.check_feasible(&request).map_err(|m| {
            (
                ErrorKind::Infeasible,
                format!("{m} (node {})", self.node_id),
            )
        })?;
        Ok((request, limits))
    }

    /// Submits remote function `function` of `component`. Returns its
    /// return object ids.
    pub(crate) fn submit_function(
        self: &Arc<Self>,
        component: &Arc<LoadedComponent>,
        caller: &mut Holds,
        call: Submission,
        function: String,
    ) -> Vec<ObjectId> {
        let id = call.id;
        let returns = return_ids(id, call.options.num_returns);
        self.expect_returns(caller, &returns);
        let record = &component.record;
        let found = record.function(&function);
        let checked = self.check_and_resolve(
            found,
            || {
                format!(
                    "component `{}` has no remote function `{function}`",
                    record.name
                )
            },
            &function,
            &call,
            Some(returns.len()),
            Some(&Request::one_cpu()),
            Limits::node(&self.config),
        );
        let (request, limits) = match checked {
            Ok(resolved) => resolved,
            Err((kind, message)) => {
                self.reject(&returns, TaskError::new(kind, function, id, message));
                return returns;
            }
        };
        self.submit(TaskSpec {
            id,
            label: function.clone(),
            kind: TaskKind::Function { name: function },
            component: component.clone(),
            args: call.args,
            returns: returns.clone(),
            holds: Vec::new(),
            request,
            limits,
            parent: Some(call.parent),
            cancel: Arc::default(),
            entry: None,
        });
        returns
    }

    /// Creates actor `call.id` of class `class`: registers it and submits
    /// its constructor as its first task, which starts once the actor's
    /// resources are free.
    pub(crate) fn create_actor(
        self: &Arc<Self>,
        component: &Arc<LoadedComponent>,
        call: Submission,
        class: String,
    ) {
        let (id, label) = (call.id, format!("{class}.new"));
        let found = component.record.actor_class(&class);
        // Actors use no CPU unless they ask (Ray's default for running).
        let checked = self.check_and_resolve(
            found,
            || {
                format!(
                    "component `{}` has no actor class `{class}`",
                    component.record.name
                )
            },
            &label,
            &call,
            None,
            Some(&Request::default()),
            Limits::node(&self.config),
        );
        let (request, limits) = match checked {
            Ok(resolved) => resolved,
            Err((kind, message)) => {
                let actor = Arc::new(Actor::new(
                    id,
                    class,
                    component.clone(),
                    Limits::node(&self.config),
                ));
                self.actors.lock().insert(id, actor.clone());
                let error = TaskError::new(kind, label, id, message);
                self.registry.failed_at_submission(&error);
                actor.die(self, error);
                return;
            }
        };
        let actor = Arc::new(Actor::new(id, class, component.clone(), limits));
        self.actors.lock().insert(id, actor.clone());
        self.submit(TaskSpec {
            id,
            label,
            kind: TaskKind::ActorCreate { actor },
            component: component.clone(),
            args: call.args,
            returns: Vec::new(),
            holds: Vec::new(),
            request,
            limits,
            parent: Some(call.parent),
            cancel: Arc::default(),
            entry: None,
        });
    }

    /// Calls `method` on `actor`; returns its return object ids. The call
    /// runs with the actor's resources; its limits come from its options,
    /// then the method's declaration, then the actor's.
    pub(crate) fn call_actor(
        self: &Arc<Self>,
        caller: &mut Holds,
        actor_id: ActorId,
        call: Submission,
        method: String,
    ) -> Vec<ObjectId> {
        let id = call.id;
        let returns = return_ids(id, call.options.num_returns);
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
        let found = actor.component.record.actor_method(&actor.class, &method);
        let checked = self.check_and_resolve(
            found,
            || format!("actor class `{}` has no method `{method}`", actor.class),
            &label,
            &call,
            Some(returns.len()),
            None,
            actor.limits,
        );
        let limits = match checked {
            Ok((_, l)) => l,
            Err((kind, message)) => {
                self.reject(&returns, TaskError::new(kind, label, id, message));
                return returns;
            }
        };
        self.submit(TaskSpec {
            id,
            label,
            kind: TaskKind::ActorCall {
                actor: actor.clone(),
                method,
            },
            component: actor.component.clone(),
            args: call.args,
            returns: returns.clone(),
            holds: Vec::new(),
            request: Request::default(),
            limits,
            parent: Some(call.parent),
            cancel: Arc::default(),
            entry: None,
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
            declared: Declared::default(),
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
