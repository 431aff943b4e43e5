//! [`Services`]: what a running instance may ask of its node, and nothing
//! more. A store's data ([`TaskState`](super::state::TaskState)) holds one
//! `Arc<dyn Services>`; the node implements it over its scheduler and
//! object store, so the executor never sees the node itself.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use wray_control_plane::{ActorId, ObjectId, TaskId};

use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::objects::{Holds, ObjectStore, TooManyHolds};
use crate::resources::Allocation;
use crate::scheduler::blocking::{Blocker, WaitEnd};
use crate::scheduler::submit::Submission;
use crate::scheduler::Callee;

/// A boxed future borrowing from its caller.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What an instance may ask of its node (see the module docs). Every
/// method is scoped by its arguments: the caller's holds, its submission,
/// and whether it may reach the actor; visibility checks happen in the
/// host imports before these are called.
pub(crate) trait Services: Send + Sync {
    /// The node's object store.
    fn objects(&self) -> &ObjectStore;
    /// The node's id.
    fn node_id(&self) -> &str;
    /// The node's configuration (WASI stdio, preopened directories).
    fn config(&self) -> &NodeConfig;
    /// Cancelled when the node shuts down.
    fn shutdown(&self) -> &CancelToken;
    /// Submits remote function `function` of `component` (the caller's
    /// own by hash, or another by its deployed name); returns its return
    /// ids, held by `caller`.
    ///
    /// # Errors
    /// [`TooManyHolds`] when `caller` cannot hold the returns.
    fn submit_function(
        &self,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        function: String,
    ) -> Result<Vec<ObjectId>, TooManyHolds>;
    /// Creates actor `call.id` of class `class` of `component`.
    fn create_actor(&self, component: Callee<'_>, call: Submission, class: String);
    /// Calls `method` of actor `actor` (`reachable`: the caller may name
    /// it); returns its return ids, held by `caller`.
    ///
    /// # Errors
    /// [`TooManyHolds`] when `caller` cannot hold the returns.
    fn call_actor(
        &self,
        caller: &mut Holds,
        actor: ActorId,
        reachable: bool,
        call: Submission,
        method: String,
    ) -> Result<Vec<ObjectId>, TooManyHolds>;
    /// Cancels `task` (and what it submitted, with `recursive`).
    fn cancel(&self, task: TaskId, force: bool, recursive: bool) -> bool;
    /// Kills actor `actor` on behalf of `by`.
    fn kill_actor(&self, actor: ActorId, by: &str) -> bool;
    /// Waits until `need` of `ids` are sealed or `until` passes, giving the
    /// blocker's CPUs back meanwhile.
    fn wait_sealed<'a>(
        &'a self,
        ids: &'a [ObjectId],
        need: usize,
        until: Option<Instant>,
        blocker: Blocker<'a>,
    ) -> BoxFuture<'a, WaitEnd>;
    /// Gives `allocation` back to the node.
    fn release_resources(&self, allocation: &Allocation);
}
