//! What the layers above read of the node's resources through the
//! scheduler, and the commands they give it about them: the resource
//! queue (`queue.rs`) stays the scheduler's own.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::actor_table::ActorTable;
use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::core::Scheduler;
use crate::objects::ObjectStore;
use crate::proto::Request;
use crate::queue::{Movable, Moved};
use crate::resources::Allocation;
use crate::task::PendingTask;
use crate::task_table::TaskTable;

impl Scheduler {
    /// The node's configuration (read-only, as given at construction).
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// The node's id (random: unique beyond this process).
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The node's object store.
    pub fn objects(&self) -> &Arc<ObjectStore> {
        &self.objects
    }

    /// Cancelled when the node shuts down: every running guest call stops.
    pub fn shutdown(&self) -> &CancelToken {
        &self.shutdown
    }

    /// Every task's state, times and error (the task table): what the
    /// node lists and reports.
    pub fn tasks(&self) -> &TaskTable {
        &self.tasks
    }

    /// The live and recently dead actors of this node (their mailboxes).
    pub fn actors(&self) -> &ActorTable {
        &self.actors
    }

    /// The node's resources: (totals, free), amounts by resource name
    /// (CPUs, GPUs, bytes of memory, custom units).
    pub fn resources(&self) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
        self.pool.resources()
    }

    /// What the node has free now, by resource name.
    pub fn free_resources(&self) -> BTreeMap<String, f64> {
        self.pool.resources().1
    }

    /// Ready tasks waiting for resources now.
    pub fn queued(&self) -> usize {
        self.pool.queued()
    }

    /// Whether a task asking for `request` could ever run on this node
    /// (its totals cover it).
    ///
    /// # Errors
    /// Why not, naming the request and the node's totals.
    pub fn check_feasible_here(&self, request: &Request) -> Result<(), crate::remote::Infeasible> {
        self.pool.check_feasible(request)
    }

    /// Takes every queued task another node forwarded here out of the
    /// queue, to hand back to their owners (the node drains); see
    /// `ResourcePool::take_peers`.
    pub fn take_peer_tasks(&self) -> Vec<Arc<PendingTask>> {
        self.pool.take_peers()
    }

    /// Takes out of the queue the waiting tasks that `pick` sends to
    /// another node (spillback); see `ResourcePool::take_movable`.
    pub fn take_movable(
        &self,
        pick: impl FnMut(&Request, Movable) -> Option<String>,
    ) -> Vec<Moved> {
        self.pool.take_movable(pick)
    }

    /// Takes `request` for a job's driver, at once or once it is freed;
    /// see `ResourcePool::acquire_for_driver`.
    pub fn acquire_for_driver(
        &self,
        request: &Request,
    ) -> Result<Allocation, oneshot::Receiver<Allocation>> {
        self.pool.acquire_for_driver(request)
    }
}
