//! `NodeServices`: the node's side of the executor's
//! `Services` — what a running instance may ask — over the
//! node's scheduler and object store.

use std::sync::Arc;
use std::time::Instant;

use wray_control_plane::{ActorId, ObjectId, TaskId};

use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::executor::services::{BoxFuture, Services};
use crate::objects::{Holds, ObjectStore, TooManyHolds};
use crate::resources::Allocation;
use crate::scheduler::blocking::{Blocker, WaitEnd};
use crate::scheduler::submit::Submission;
use crate::scheduler::{Callee, Scheduler};

/// The services of one node (see the module docs).
pub(crate) struct NodeServices(pub Arc<Scheduler>);

impl Services for NodeServices {
    fn objects(&self) -> &ObjectStore {
        &self.0.objects
    }

    fn node_id(&self) -> &str {
        &self.0.node_id
    }

    fn config(&self) -> &NodeConfig {
        &self.0.config
    }

    fn shutdown(&self) -> &CancelToken {
        &self.0.shutdown
    }

    fn submit_function(
        &self,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        function: String,
    ) -> Result<Vec<ObjectId>, TooManyHolds> {
        self.0.submit_function(component, caller, call, function)
    }

    fn create_actor(&self, component: Callee<'_>, call: Submission, class: String) {
        self.0.create_actor(component, call, class);
    }

    fn call_actor(
        &self,
        caller: &mut Holds,
        actor: ActorId,
        reachable: bool,
        call: Submission,
        method: String,
    ) -> Result<Vec<ObjectId>, TooManyHolds> {
        self.0.call_actor(caller, actor, reachable, call, method)
    }

    fn cancel(&self, task: TaskId, force: bool, recursive: bool) -> bool {
        self.0.cancel(task, force, recursive)
    }

    fn kill_actor(&self, actor: ActorId, by: &str) -> bool {
        self.0.kill_actor(actor, by)
    }

    fn wait_sealed<'a>(
        &'a self,
        ids: &'a [ObjectId],
        need: usize,
        until: Option<Instant>,
        blocker: Blocker<'a>,
    ) -> BoxFuture<'a, WaitEnd> {
        Box::pin(self.0.wait_sealed(ids, need, until, blocker))
    }

    fn release_resources(&self, allocation: &Allocation) {
        self.0.release_resources(allocation);
    }
}
