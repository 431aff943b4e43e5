//! Turning a guest's `submit` / `create-actor` / `call-actor` into task
//! specs, checked against the function table first: a call the component
//! cannot serve becomes error objects at once (submission never fails, as
//! in Ray, where errors surface at `get`).

use std::sync::Arc;

use wray_control_plane::{ActorId, Declared, FunctionRecord, ObjectId, TaskId, MAX_RETURNS};

use crate::actor::{Home, Restarts};
use crate::actor_table::MAX_STUBS;
use crate::core::Scheduler;
use crate::error::{ErrorKind, TaskError};
use crate::functions::Callee;
use crate::objects::holds::{Holds, TooManyHolds};
use crate::objects::{Object, ObjectStore, StoreFull};
use crate::proto::{
    actor_handle_object, Arg, LimitOptions, Limits, Request, ResourceOptions, Target, TaskOptions,
    TaskSpec,
};
use crate::remote::Placement;
use crate::task::Actor;
use crate::task::Task;

/// The ids of task `id`'s `num_returns` return objects (at least one); a
/// count past [`MAX_RETURNS`] gets one id, to hold the error saying so,
/// and the error.
fn return_ids(id: TaskId, num_returns: u32) -> (Vec<ObjectId>, Option<(ErrorKind, String)>) {
    let wanted = (0..num_returns.max(1))
        .map(|i| id.return_object(i))
        .collect::<Option<Vec<_>>>();
    match wanted {
        Some(ids) => (ids, None),
        None => (
            id.return_object(0).into_iter().collect(),
            Some((
                ErrorKind::InvalidArgument,
                format!("num_returns {num_returns} is out of range: a task returns 1 to {MAX_RETURNS} objects"),
            )),
        ),
    }
}

/// The label of a call of `name` (a function, or `Class.new`): qualified
/// as `component/name` when the caller named another component.
fn qualified(callee: Callee<'_>, name: String) -> String {
    match callee {
        Callee::Hash(_) => name,
        Callee::Named(component) => format!("{component}/{name}"),
    }
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
    if f.num_args() != args {
        let msg = format!("`{label}` takes {} arguments, got {args}", f.num_args());
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

/// What a call is checked against: the function-table row it resolved to
/// (`None`: it names nothing), or nothing here (a call to an actor that
/// lives on another node, whose component this node has not loaded: that
/// node checks it).
enum Against<'a> {
    Row(Option<&'a FunctionRecord>),
    Elsewhere,
}

/// One submission from a guest: who submits, the new task's id, its
/// arguments and options.
pub struct Submission {
    /// The submitting task.
    pub parent: TaskId,
    /// The new task's id.
    pub id: TaskId,
    /// Its arguments.
    pub args: Vec<Arg>,
    /// Its options (returns, resources, limits).
    pub options: TaskOptions,
    /// The first object among its arguments the submitter may not name
    /// (the submission fails as if it did not exist).
    pub hidden_arg: Option<ObjectId>,
    /// Whether the submitter was cancelled (a cancelled task starts
    /// nothing: a recursive cancel cannot be outrun).
    pub parent_cancelled: bool,
}

impl Submission {
    /// The submission of child `id` of `parent` (`parent_cancelled`: the
    /// parent, or the node, was cancelled); `may_name` says which objects
    /// the submitter may name, and the first argument object (or ref
    /// inside a value) it may not, or that does not exist in `objects`,
    /// fails the submission as not found.
    pub fn new(
        parent: TaskId,
        id: TaskId,
        args: Vec<Arg>,
        options: TaskOptions,
        parent_cancelled: bool,
        objects: &ObjectStore,
        may_name: impl Fn(&ObjectId) -> bool,
    ) -> Self {
        let hidden_arg = args
            .iter()
            .flat_map(Arg::named)
            .find(|id| !may_name(id) || !objects.exists(id))
            .copied();
        Self {
            parent,
            id,
            args,
            options,
            hidden_arg,
            parent_cancelled,
        }
    }
}

/// Why a submission could not even be recorded (the caller's task traps
/// with it): the caller holds too many objects, or the store has no room
/// for the return objects' metadata.
#[derive(Debug, thiserror::Error)]
pub enum NotSubmitted {
    /// The caller holds too many objects to hold the returns.
    #[error(transparent)]
    Holds(#[from] TooManyHolds),
    /// The object store has no room for the returns' metadata.
    #[error(transparent)]
    Full(#[from] StoreFull),
}

impl Scheduler {
    /// Registers `returns` as pending objects held by the caller (before the
    /// task can possibly finish, so its results are not freed unread).
    ///
    /// # Errors
    /// A trap when the caller holds too many objects already, or the store
    /// has no room for them.
    pub fn expect_returns(
        &self,
        caller: &mut Holds,
        returns: &[ObjectId],
    ) -> Result<(), NotSubmitted> {
        // Past the store's reserve the caller fails; within it, the task
        // runs and its results meet the store's room when they are sealed.
        self.objects.admit(returns.len())?;
        for id in returns {
            self.objects.register_pending(*id);
            caller.hold(&self.objects, *id)?;
        }
        Ok(())
    }

    /// Seals `returns` with an error at once.
    fn reject(&self, returns: &[ObjectId], error: TaskError) {
        self.stats
            .submitted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.tasks.failed_at_submission(&error);
        self.complete(returns, Err(error));
    }

    /// Checks a call against the function-table row it resolved to (see
    /// [`check_call`]), then resolves its request and limits: each from the
    /// call's options, then the row's declaration, then `default` (`None`:
    /// the task takes no resources of its own, as an actor call) and
    /// `base`. A request is checked against what the nodes could ever
    /// offer ([`Scheduler::check_placeable`]): where it runs is decided
    /// later (a function once its arguments exist, an actor right after).
    #[allow(clippy::too_many_arguments)]
    fn check_and_resolve(
        &self,
        found: Against<'_>,
        missing: impl FnOnce() -> String,
        label: &str,
        call: &Submission,
        returns: Option<usize>,
        default: Option<&Request>,
        base: Limits,
    ) -> Result<(Request, Limits), (ErrorKind, String)> {
        if call.parent_cancelled {
            let msg = format!("submitted by task {}, which was cancelled", call.parent);
            return Err((ErrorKind::Cancelled, msg));
        }
        if let Some(hidden) = call.hidden_arg {
            let msg = format!(
                "argument object {hidden} does not exist on node {}",
                self.node_id
            );
            return Err((ErrorKind::NotFound, msg));
        }
        let pending = self.stats().pending();
        if pending >= self.config.max_pending_tasks {
            let msg = format!(
                "the node has {pending} tasks pending, the most it queues (max_pending_tasks); \
                 get some results first"
            );
            return Err((ErrorKind::System, msg));
        }
        let found = match found {
            Against::Row(found) => {
                check_call(found, missing, label, call.args.len(), returns)?;
                found
            }
            Against::Elsewhere => None,
        };
        let none = Declared::default();
        let declared = found.map_or(&none, |f| &f.declared);
        let invalid = |m| (ErrorKind::InvalidArgument, m);
        let limits = Limits::resolve(
            &call.options.limits,
            &LimitOptions::from(declared),
            base,
            self.config.fuel_metering,
        )
        .map_err(invalid)?;
        let Some(default) = default else {
            return Ok((Request::default(), limits));
        };
        let request = Request::resolve(
            &call.options.resources,
            &ResourceOptions::from(declared),
            default,
        )
        .map_err(invalid)?;
        self.check_placeable(&request, &call.options.scheduling)?;
        Ok((request, limits))
    }

    /// Why `callee` names no component here.
    fn not_deployed(&self, callee: Callee<'_>) -> String {
        match callee {
            Callee::Hash(hash) => {
                format!("component {hash} is not deployed on node {}", self.node_id)
            }
            Callee::Named(name) => format!(
                "no component is deployed as `{name}` on node {} (deploy it first)",
                self.node_id
            ),
        }
    }

    /// Submits remote function `function` of `component`. Returns its
    /// return object ids.
    pub fn submit_function(
        self: &Arc<Self>,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        function: String,
    ) -> Result<Vec<ObjectId>, NotSubmitted> {
        let id = call.id;
        let (returns, bad_count) = return_ids(id, call.options.num_returns);
        self.expect_returns(caller, &returns)?;
        let resolved = self.functions.read().resolve(component);
        let found = resolved.as_ref().and_then(|r| r.record.function(&function));
        let label = qualified(component, function.clone());
        let checked = self.check_and_resolve(
            Against::Row(found),
            || match &resolved {
                Some(r) => {
                    format!(
                        "component `{}` has no remote function `{function}`",
                        r.record.name
                    )
                }
                None => self.not_deployed(component),
            },
            &label,
            &call,
            Some(returns.len()),
            Some(&Request::one_cpu()),
            self.config.limits(),
        );
        let (request, limits, hash, pin) = match (bad_count.map_or(checked, Err), resolved) {
            (Ok((request, limits)), Some(r)) => (request, limits, r.hash, r.pin),
            (Err((kind, message)), _) => {
                self.reject(&returns, TaskError::new(kind, label, id, message));
                return Ok(returns);
            }
            // Checked above: a call of no component has no function.
            (Ok(_), None) => {
                let message = self.not_deployed(component);
                let error = TaskError::new(ErrorKind::NotFound, label, id, message);
                self.reject(&returns, error);
                return Ok(returns);
            }
        };
        let spec = TaskSpec {
            id,
            label,
            target: Target::Function { name: function },
            component: hash,
            args: call.args,
            returns: returns.clone(),
            request,
            limits,
            parent: Some(call.parent),
            result_codec: call.options.result_codec,
            shared_reuse: call.options.shared_reuse,
        };
        let mut task = Task::new(spec, None);
        task.pin = Some(pin);
        task.scheduling = call.options.scheduling;
        if call.options.on_caller_runtime {
            task.runtime = caller_runtime();
        }
        self.submit(task);
        Ok(returns)
    }

    /// Creates actor `call.id` of class `class`: registers it and submits
    /// its constructor as its first task, which starts once the actor's
    /// resources are free. `caller` holds the actor's handle object
    /// ([`actor_handle_object`]): unless the actor is detached, it exits
    /// once that object is freed and its queue is empty (Ray's actor
    /// handles going out of scope).
    ///
    /// # Errors
    /// [`NotSubmitted`] when `caller` cannot hold the handle object.
    pub fn create_actor(
        self: &Arc<Self>,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        class: String,
    ) -> Result<(), NotSubmitted> {
        let id = call.id;
        let handle = actor_handle_object(id);
        self.expect_returns(caller, &[handle])?;
        if !call.options.detached {
            self.objects.watch_free(&handle);
        }
        self.objects.seal(handle, Object::empty());
        let label = qualified(component, format!("{class}.new"));
        let resolved = self.functions.read().resolve(component);
        let found = resolved.as_ref().and_then(|r| r.record.actor_class(&class));
        // The hash of a component not deployed: never run (the actor dies
        // at once below), so any name does.
        let hash = resolved
            .as_ref()
            .map_or_else(|| Arc::from(""), |r| r.hash.clone());
        // Actors use no CPU unless they ask (Ray's default for running).
        let checked = self.check_and_resolve(
            Against::Row(found),
            || match &resolved {
                Some(r) => format!("component `{}` has no actor class `{class}`", r.record.name),
                None => self.not_deployed(component),
            },
            &label,
            &call,
            None,
            Some(&Request::default()),
            self.config.limits(),
        );
        let checked = checked.and_then(|(request, limits)| {
            let placement = self.place(&request, &call.options.scheduling, 0, false, id.job())?;
            let full = match &placement {
                Placement::Here => {
                    let live = self.actors.live();
                    (live >= self.config.max_live_actors()).then(|| {
                        format!(
                            "the node has {live} live actors, the most it allows \
                             (max_actors); kill an actor first"
                        )
                    })
                }
                Placement::Node(_) | Placement::Later => {
                    let stubs = self.actors.stubs();
                    (stubs >= MAX_STUBS).then(|| {
                        format!(
                            "the node keeps {stubs} actors living on other nodes, the most \
                             it keeps ({MAX_STUBS}); kill an actor first"
                        )
                    })
                }
            };
            if let Some(msg) = full {
                if let (Placement::Node(node), Some(remote)) = (&placement, self.remote()) {
                    remote.unplace(node, &request);
                }
                return Err((ErrorKind::System, msg));
            }
            Ok((request, limits, placement))
        });
        let (request, limits, placement) = match checked {
            Ok(resolved) => resolved,
            Err((kind, message)) => {
                let actor = Arc::new(Actor::new(id, class, hash.clone(), self.config.limits()));
                self.actors.insert(actor.clone());
                let error = TaskError::new(kind, label, id, message);
                self.tasks.failed_at_submission(&error);
                self.actor_died(&actor, error);
                return Ok(());
            }
        };
        // Checked above: a class of no component has no constructor.
        let pin = resolved.map(|r| r.pin);
        let mut actor = Actor::new(id, class.clone(), hash.clone(), limits);
        if let Placement::Node(node) = placement {
            // Created there; this node keeps a stub ordering its calls.
            actor = actor.elsewhere(Home::new(node, true));
        }
        let actor = actor
            .detached(call.options.detached)
            .with_restarts(Restarts {
                max_restarts: call.options.max_restarts,
                max_task_retries: call.options.max_task_retries,
            });
        let actor = Arc::new(actor);
        actor.keep(pin.clone());
        self.actors.insert(actor.clone());
        let spec = TaskSpec {
            id,
            label,
            target: Target::ActorCreate { actor: id, class },
            component: hash.clone(),
            args: call.args,
            returns: Vec::new(),
            request,
            limits,
            parent: Some(call.parent),
            result_codec: call.options.result_codec,
            shared_reuse: call.options.shared_reuse,
        };
        let mut task = Task::new(spec, Some(actor));
        task.pin = pin;
        self.submit(task);
        Ok(())
    }

    /// Calls `method` on `actor`; returns its return object ids. The call
    /// runs with the actor's resources; its limits come from its options,
    /// then the method's declaration, then the actor's.
    pub fn call_actor(
        self: &Arc<Self>,
        caller: &mut Holds,
        actor_id: ActorId,
        reachable: bool,
        call: Submission,
        method: String,
    ) -> Result<Vec<ObjectId>, NotSubmitted> {
        let id = call.id;
        let (returns, bad_count) = return_ids(id, call.options.num_returns);
        self.expect_returns(caller, &returns)?;
        let Some(actor) = self.actors.get(&actor_id).filter(|_| reachable) else {
            let msg = format!("no actor {actor_id} on node {}", self.node_id);
            self.reject(
                &returns,
                TaskError::new(ErrorKind::NotFound, method, id, msg),
            );
            return Ok(returns);
        };
        let label = format!("{}.{method}", actor.class);
        let (record, pin) = {
            let functions = self.functions.read();
            (
                functions
                    .by_hash(&actor.component)
                    .map(|v| v.record.clone()),
                functions.pin(&actor.component),
            )
        };
        let found = match &record {
            Some(r) => Against::Row(r.actor_method(&actor.class, &method)),
            // A stub of an actor whose component this node has not loaded:
            // its node checks the call.
            None if actor.home.is_some() => Against::Elsewhere,
            None => Against::Row(None),
        };
        let checked = self.check_and_resolve(
            found,
            || format!("actor class `{}` has no method `{method}`", actor.class),
            &label,
            &call,
            Some(returns.len()),
            None,
            actor.limits,
        );
        let limits = match bad_count.map_or(checked, Err) {
            Ok((_, l)) => l,
            Err((kind, message)) => {
                self.reject(&returns, TaskError::new(kind, label, id, message));
                return Ok(returns);
            }
        };
        let spec = TaskSpec {
            id,
            label,
            target: Target::ActorCall {
                actor: actor_id,
                method,
            },
            component: actor.component.clone(),
            args: call.args,
            returns: returns.clone(),
            request: Request::default(),
            limits,
            parent: Some(call.parent),
            result_codec: call.options.result_codec,
            shared_reuse: call.options.shared_reuse,
        };
        let elsewhere = actor.home.is_some();
        let mut task = Task::new(spec, Some(actor));
        task.pin = pin;
        self.submit(task);
        if let (true, Some(first)) = (elsewhere, returns.first()) {
            self.calls_out.called(call.parent, actor_id, *first);
        }
        Ok(returns)
    }
}

/// The multi-threaded tokio runtime whose context the calling thread is
/// in, if any (a current-thread runtime would run a task only while its
/// owner blocks on it).
fn caller_runtime() -> Option<tokio::runtime::Handle> {
    tokio::runtime::Handle::try_current()
        .ok()
        .filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wray_control_plane::{FunctionKind, JobId, Param};

    fn record(num_args: u32, num_returns: u32) -> FunctionRecord {
        FunctionRecord {
            kind: FunctionKind::Function,
            name: "f".into(),
            class: None,
            num_returns,
            params: (0..num_args)
                .map(|i| Param {
                    name: format!("p{i}"),
                    schema: "{}".into(),
                })
                .collect(),
            returns: Vec::new(),
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

    #[test]
    fn return_counts_are_bounded_before_anything_is_allocated() {
        let id = TaskId::driver(JobId(1));
        let (ids, err) = return_ids(id, 3);
        assert_eq!((ids.len(), err), (3, None));
        assert_eq!(return_ids(id, 0).0.len(), 1);
        let (ids, err) = return_ids(id, u32::MAX);
        assert_eq!(ids.len(), 1, "one id to carry the error");
        let (kind, msg) = err.unwrap();
        assert_eq!(kind, ErrorKind::InvalidArgument);
        assert!(msg.contains("1 to 16384"), "{msg}");
    }
}
