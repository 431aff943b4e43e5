//! Controlling running work and reading what it holds: [`cancel`],
//! [`kill`], [`get_actor`], [`get_gpu_ids`], [`get_resource_ids`] and
//! [`profile`].

use crate::actor::{Actor, ActorHandle};
use crate::bindings::{runtime, tasks};
use crate::object_ref::ObjectRef;

/// Cancels the task that makes `r` (Ray's `ray.cancel`): a queued task never
/// runs; a running one is stopped within about 10 ms (a task blocked in
/// [`get`](crate::get) within about 20 ms). A `get` on its results then
/// fails with kind [`Cancelled`](crate::ErrorKind::Cancelled). A running
/// actor call runs on unless `force` is given: then it is stopped too, and
/// its actor dies with it (Ray's `force` kills the actor's worker); a
/// queued one is cancelled either way. With `recursive`, the
/// tasks it submitted are cancelled too. Returns false when the task had
/// already finished.
pub fn cancel<T>(r: &ObjectRef<T>, force: bool, recursive: bool) -> bool {
    tasks::cancel(r.id().into(), force, recursive)
}

/// Kills an actor (Ray's `ray.kill`): its running call stops, its queued and
/// later calls fail with [`ActorDied`](crate::ErrorKind::ActorDied), and
/// its resources go back to the node. Returns false when it was dead
/// already.
pub fn kill<A: Actor>(actor: &ActorHandle<A>) -> bool {
    tasks::kill_actor(actor.id().into())
}

/// The live actor named `name` (created with
/// [`Options::name`](crate::Options::name)), of class `A` (Ray's
/// `ray.get_actor`): a handle to it, from any task of any job on any node
/// of the cluster. The handle keeps the actor alive as a created one does,
/// but does not own it: the actor still dies with its owner (unless
/// detached) or its kill.
///
/// # Errors
/// [`NotFound`](crate::ErrorKind::NotFound) when no live actor has that
/// name; [`InvalidArgument`](crate::ErrorKind::InvalidArgument) when it is
/// of another class than `A`; [`System`](crate::ErrorKind::System) when
/// the cluster's directory cannot be read.
pub fn get_actor<A: Actor>(name: &str) -> crate::Result<ActorHandle<A>> {
    let id = tasks::get_actor(name, A::CLASS)?;
    Ok(ActorHandle::from_id(id.into()))
}

/// The ids of the GPUs the running task or actor holds, ascending (Ray's
/// `ray.get_gpu_ids()`); empty without GPUs.
pub fn get_gpu_ids() -> Vec<u32> {
    runtime::get_gpu_ids()
}

/// Every unit resource the running task holds: `(name, [(unit id,
/// fraction)])`, e.g. `("GPU", [(1, 0.5)])`, `("CPU", [(3, 1.0)])` (the
/// cores it is pinned to).
pub fn get_resource_ids() -> Vec<(String, Vec<(u32, f64)>)> {
    runtime::get_resource_ids()
        .into_iter()
        .map(|r| (r.name, r.ids))
        .collect()
}

/// A span of the node's timeline (`wray timeline`), open until dropped
/// (Ray's `ray.profiling.profile`).
#[must_use = "the span closes when this is dropped"]
pub struct ProfileSpan(u32);

impl Drop for ProfileSpan {
    fn drop(&mut self) {
        runtime::profile_end(self.0);
    }
}

/// Opens a span named `name` inside the running task's span of the
/// timeline: `let _span = wray::profile("load");`.
pub fn profile(name: &str) -> ProfileSpan {
    ProfileSpan(runtime::profile_begin(name))
}
