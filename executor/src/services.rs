//! [`Services`]: what a running instance may ask of its node, and nothing
//! more. A store's data ([`TaskState`](super::state::TaskState)) holds one
//! `Arc<dyn Services>`; the node implements it over its scheduler and
//! object store, so the executor never sees the node itself.

use std::sync::Arc;
use std::time::Instant;

use wray_control_plane::{ActorId, ObjectId, TaskId};

use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::error::ErrorKind;
use crate::objects::{Holds, ObjectStore};
use crate::resources::Allocation;
use crate::scheduler::blocking::{Blocker, WaitEnd};
use crate::scheduler::submit::{NotSubmitted, Submission};
use crate::scheduler::Callee;

/// Why a submission from an instance was refused; the host import traps
/// with it (the task fails with this message).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The caller holds too many objects to hold the returns, or the
    /// store has no room for them.
    #[error(transparent)]
    NotSubmitted(#[from] NotSubmitted),
    /// The instance only describes its component ([`DescribeOnly`]).
    #[error(
        "`describe` may not submit tasks, create actors or call them: it runs \
         in no job, only to list the component's exports"
    )]
    Describing,
}

/// What `get-actor` finds: the actor, or the kind and message of the
/// guest's error.
pub type ActorFound = Result<ActorId, (ErrorKind, String)>;

/// A boxed future borrowing from its caller (futures' own).
pub use futures_util::future::BoxFuture;

/// What an instance may ask of its node (see the module docs). Every
/// method is scoped by its arguments: the caller's holds, its submission,
/// and whether it may reach the actor; visibility checks happen in the
/// host imports before these are called.
pub trait Services: Send + Sync {
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
    /// [`Refused`]: `caller` cannot hold the returns, or this instance may
    /// not submit.
    fn submit_function(
        &self,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        function: String,
    ) -> Result<Vec<ObjectId>, Refused>;
    /// Creates actor `call.id` of class `class` of `component`; `caller`
    /// holds its handle object.
    ///
    /// # Errors
    /// [`Refused`]: `caller` cannot hold the handle object, or this
    /// instance may not create actors.
    fn create_actor(
        &self,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        class: String,
    ) -> Result<(), Refused>;
    /// Calls `method` of actor `actor` (`reachable`: the caller may name
    /// it); returns its return ids, held by `caller`.
    ///
    /// # Errors
    /// [`Refused`]: `caller` cannot hold the returns, or this instance may
    /// not submit.
    fn call_actor(
        &self,
        caller: &mut Holds,
        actor: ActorId,
        reachable: bool,
        call: Submission,
        method: String,
    ) -> Result<Vec<ObjectId>, Refused>;
    /// Names actor `actor`, just created by the caller, `name` in the
    /// actor directory (Ray's `name=`); a name another live actor holds,
    /// or one that breaks the directory's rule, kills the actor with a
    /// cause saying so.
    fn name_actor<'a>(&'a self, actor: ActorId, name: &'a str) -> BoxFuture<'a, ()>;
    /// The live actor named `name`, of class `class` (Ray's `get_actor`),
    /// its handle object held by `caller`; else the kind and message of
    /// the guest's error.
    ///
    /// # Errors
    /// [`Refused`]: `caller` cannot hold the handle object, or this
    /// instance may not reach actors.
    fn get_actor<'a>(
        &'a self,
        caller: &'a mut Holds,
        name: &'a str,
        class: &'a str,
    ) -> BoxFuture<'a, Result<ActorFound, Refused>>;
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

/// The services of an instance that only runs `describe` at deploy: it
/// belongs to no job, so it may not submit, create or call actors
/// ([`Refused::Describing`]), cancel or kill; its puts and gets reach a
/// store of its own, dropped with it, so nothing it does reaches the node.
pub struct DescribeOnly {
    node: Arc<dyn Services>,
    objects: ObjectStore,
}

impl DescribeOnly {
    /// Refusing services over `node`'s id, configuration and shutdown.
    pub fn new(node: Arc<dyn Services>) -> Self {
        Self {
            node,
            objects: ObjectStore::new(),
        }
    }
}

impl Services for DescribeOnly {
    fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    fn node_id(&self) -> &str {
        self.node.node_id()
    }

    fn config(&self) -> &NodeConfig {
        self.node.config()
    }

    fn shutdown(&self) -> &CancelToken {
        self.node.shutdown()
    }

    fn submit_function(
        &self,
        _: Callee<'_>,
        _: &mut Holds,
        _: Submission,
        _: String,
    ) -> Result<Vec<ObjectId>, Refused> {
        Err(Refused::Describing)
    }

    fn create_actor(
        &self,
        _: Callee<'_>,
        _: &mut Holds,
        _: Submission,
        _: String,
    ) -> Result<(), Refused> {
        Err(Refused::Describing)
    }

    fn call_actor(
        &self,
        _: &mut Holds,
        _: ActorId,
        _: bool,
        _: Submission,
        _: String,
    ) -> Result<Vec<ObjectId>, Refused> {
        Err(Refused::Describing)
    }

    fn name_actor<'a>(&'a self, _: ActorId, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    fn get_actor<'a>(
        &'a self,
        _: &'a mut Holds,
        _: &'a str,
        _: &'a str,
    ) -> BoxFuture<'a, Result<ActorFound, Refused>> {
        Box::pin(std::future::ready(Err(Refused::Describing)))
    }

    fn cancel(&self, _: TaskId, _: bool, _: bool) -> bool {
        false
    }

    fn kill_actor(&self, _: ActorId, _: &str) -> bool {
        false
    }

    fn wait_sealed<'a>(
        &'a self,
        ids: &'a [ObjectId],
        need: usize,
        _: Option<Instant>,
        _: Blocker<'a>,
    ) -> BoxFuture<'a, WaitEnd> {
        // Nothing it could wait for is ever made: what it put is sealed
        // already, and any other id names nothing here.
        let _ = (ids, need);
        Box::pin(std::future::ready(WaitEnd::Ready))
    }

    fn release_resources(&self, _: &Allocation) {}
}
