//! The scheduler's door to the other nodes of a cluster: where a task
//! that does not fit here may run ([`Remote::place`]), and handing it
//! there once its arguments are sealed ([`Remote::forward`]). A node of its
//! own has none; `cluster` implements it for a node that joined one.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use wray_control_plane::{ActorId, JobId};

use crate::error::TaskError;
use crate::proto::{Request, Scheduling};
use crate::task::{Actor, PendingTask};

/// Where a task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Queued on this node.
    Here,
    /// Forwarded to the node with this id once its arguments are sealed.
    Node(String),
    /// No node has room now and this one can never run it: it waits here,
    /// unplaced, and goes to the first node with room
    /// ([`Remote::park`]). Only a function whose arguments exist is
    /// placed so (`can_wait`).
    Later,
}

/// No node could ever run a task (or not the node a hard affinity names):
/// the task fails `infeasible`. The message names the request and what
/// the nodes offer, or the node asked for and why it cannot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Infeasible(pub(crate) String);

/// What this node knows of its own resources when a task is placed.
#[derive(Debug, Clone, Copy)]
pub struct Local {
    /// The request fits this node's totals (it can run here, some time).
    pub feasible: bool,
    /// It fits what is free here now (and nothing waits in the queue).
    pub fits_now: bool,
    /// The share in use here of the resources the task asks for, the
    /// busiest one's (0 to 1; see `Scheduler::local`).
    pub utilization: f64,
    /// Bytes of the task's object arguments, all here (its owner holds
    /// them): what leaving this node would ship.
    pub arg_bytes: u64,
}

/// The other nodes of the cluster, as the scheduler sees them.
pub trait Remote: Send + Sync {
    /// Where a task asking for `request` runs, given what this node
    /// offers (`local`) and its `scheduling`: here, or another node
    /// (counted as sent there until it ends, or [`Remote::unplace`]).
    ///
    /// # Errors
    /// [`Infeasible`], naming the request and what the nodes offer, when
    /// no live node could ever run it (or the node a hard affinity names
    /// cannot).
    fn place(
        &self,
        request: &Request,
        local: Local,
        scheduling: &Scheduling,
        can_wait: bool,
        job: JobId,
    ) -> Result<Placement, Infeasible>;

    /// Keeps `task` (its arguments sealed here, asking for `request`),
    /// placed [`Placement::Later`], until a node has room for it; then
    /// runs it there as [`Remote::forward`] does.
    fn park(&self, task: Arc<PendingTask>, request: Request);

    /// Whether some live node (this one when `here`: its totals fit) could
    /// ever run a task asking for `request` under `scheduling`: the check
    /// at submission, before the task is placed once its arguments exist.
    ///
    /// # Errors
    /// As [`Remote::place`].
    fn check_feasible(
        &self,
        request: &Request,
        here: bool,
        scheduling: &Scheduling,
    ) -> Result<(), Infeasible>;

    /// Whether node `node` is alive, as this node sees the cluster.
    fn alive(&self, node: &str) -> bool;

    /// Takes back a placement on `node` of a task that will not be
    /// forwarded after all (refused after it was placed).
    fn unplace(&self, node: &str, request: &Request);

    /// Runs `task` (its arguments sealed here, asking for `request`) on
    /// node `node`, where it was placed, sealing its return objects here
    /// when it ends (or with its error).
    fn forward(&self, task: Arc<PendingTask>, node: String, request: Request);

    /// Runs `task` (the constructor or a call, taken from the head of the
    /// queue of `actor`, a stub whose instance lives on another node;
    /// `dead`: why the actor is dead, if it is) on the actor's node, then
    /// the next ones as the executor's `run_actor` does here.
    fn run_actor(&self, actor: Arc<Actor>, task: Arc<PendingTask>, dead: Option<TaskError>);

    /// Notes that actor `actor`, a stub here, died for good (what was
    /// kept to restart it goes).
    fn actor_gone(&self, actor: ActorId);

    /// Kills actor `actor` on node `node`, where it lives, because of
    /// `why` (best effort: a node that died took it along).
    fn kill_actor(&self, node: &str, actor: ActorId, why: String);

    /// Tells node `node` that this node holds a handle of actor `actor`
    /// living there (a new stub): it lives on while any node does. Ends
    /// once `node` answered; false when it said the actor is dead or
    /// not there (or could not be reached).
    fn hold_actor(&self, node: &str, actor: ActorId) -> BoxFuture<'static, bool>;

    /// Tells node `node` that this node's stub of actor `actor` went (best
    /// effort: a node that died took the actor along).
    fn let_go_actor(&self, node: &str, actor: ActorId);

    /// Tells the nodes this node sent tasks of job `job` to that it ended
    /// (best effort), so that it ends there too.
    fn job_ended(&self, job: JobId);
}
