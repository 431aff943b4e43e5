//! Submitting tasks, creating actors and calling them: the host calls behind
//! `.remote(..)`. Hidden: reached only through generated code (and
//! [`submit_raw`] for tests of the host).

use crate::actor::{Actor, ActorHandle};
use crate::bindings::{tasks, types as wit};
use crate::codec::Format;
use crate::ids::{ActorId, ObjectId};
use crate::object_ref::ObjectRef;
use crate::options::Options;

/// The return objects of one submission.
#[doc(hidden)]
#[derive(Debug)]
pub struct Returns {
    ids: Vec<ObjectId>,
}

impl Returns {
    /// The `i`-th (0-based) return object, typed.
    ///
    /// Return objects are numbered `1..=num_returns` after their task, so an
    /// id the host left out is rebuilt from the first one; with no ids at all
    /// the ref names a null object whose `get` fails.
    pub fn nth<T>(&self, i: usize) -> ObjectRef<T> {
        let id = match self.ids.get(i) {
            Some(id) => *id,
            None => match self.ids.first() {
                Some(first) => ObjectId {
                    task: first.task,
                    index: u32::try_from(i + 1).unwrap_or(u32::MAX),
                },
                None => ObjectId::default(),
            },
        };
        ObjectRef::from_id(id)
    }
}

fn returns(ids: Vec<wit::ObjectId>) -> Returns {
    // The host holds the arguments now.
    crate::refs::flush_deferred();
    Returns {
        ids: ids.into_iter().map(ObjectId::from).collect(),
    }
}

/// Submits remote function `function` of `component` (this component's
/// when `None`), its arguments encoded in `format` (results asked in it).
#[doc(hidden)]
pub fn submit(
    component: Option<&str>,
    function: &str,
    args: Vec<wit::Arg>,
    num_returns: u32,
    format: Format,
) -> Returns {
    submit_with(
        component,
        function,
        args,
        num_returns,
        &Options::new(),
        format,
    )
}

/// Submits remote function `function` of `component` with per-call
/// `options`.
#[doc(hidden)]
pub fn submit_with(
    component: Option<&str>,
    function: &str,
    args: Vec<wit::Arg>,
    num_returns: u32,
    options: &Options,
    format: Format,
) -> Returns {
    let placement = options.placement();
    let options = options.to_wit(num_returns, format);
    returns(match (component, placement) {
        (component, Some(placement)) => {
            tasks::submit_placed(component, function, &args, &options, &placement)
        }
        (None, None) => tasks::submit(function, &args, &options),
        (Some(component), None) => tasks::submit_to(component, function, &args, &options),
    })
}

/// Submits `function` by name, with arguments already encoded; the host
/// stores an error in the returned objects when it cannot run it (unknown
/// function, wrong argument count).
#[doc(hidden)]
pub fn submit_raw(function: &str, args: Vec<wit::Arg>, num_returns: u32) -> Vec<ObjectId> {
    submit(None, function, args, num_returns, Format::Rkyv).ids
}

/// Creates an actor of class `A` of `component` (this component's when
/// `None`) with its constructor's arguments.
#[doc(hidden)]
pub fn create_actor<A: Actor>(
    component: Option<&str>,
    class: &str,
    args: Vec<wit::Arg>,
    format: Format,
) -> ActorHandle<A> {
    create_actor_with(component, class, args, &Options::new(), format)
}

/// Creates an actor of class `A` of `component` with per-actor `options`
/// (resources held for its lifetime, limits of each call).
#[doc(hidden)]
pub fn create_actor_with<A: Actor>(
    component: Option<&str>,
    class: &str,
    args: Vec<wit::Arg>,
    options: &Options,
    format: Format,
) -> ActorHandle<A> {
    let actor = options.actor_options();
    let placement = options.placement();
    let options = options.to_wit(1, format);
    let id = match (component, actor, placement) {
        (component, actor, Some(placement)) => {
            let actor = actor.unwrap_or(wit::ActorOptions {
                name: None,
                max_restarts: 0,
                max_task_retries: 0,
            });
            tasks::create_actor_placed(component, class, &args, &options, &actor, &placement)
        }
        (component, Some(actor), None) => {
            tasks::create_actor_with(component, class, &args, &options, &actor)
        }
        (None, None, None) => tasks::create_actor(class, &args, &options),
        (Some(component), None, None) => tasks::create_actor_of(component, class, &args, &options),
    };
    let handle = ActorHandle::from_id(id.into());
    crate::refs::flush_deferred();
    handle
}

/// Calls `method` on `actor`, with per-call `options` if any.
#[doc(hidden)]
pub fn call_actor(
    actor: ActorId,
    method: &str,
    args: Vec<wit::Arg>,
    num_returns: u32,
    options: Option<&Options>,
    format: Format,
) -> Returns {
    let options = match options {
        Some(o) => o.to_wit(num_returns, format),
        None => Options::new().to_wit(num_returns, format),
    };
    returns(tasks::call_actor(actor.into(), method, &args, &options))
}
