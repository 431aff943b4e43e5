//! [`Executor`]: what the scheduler asks of the layer that runs tasks. The
//! scheduler knows no wasmtime: it hands started work to this interface.

use std::sync::Arc;

use wray_control_plane::{ActorId, JobId};

use crate::error::TaskError;
use crate::resources::Allocation;
use crate::task::{Actor, PendingTask};

/// What the scheduler asks of the layer that runs tasks (the node's
/// wasmtime executor). Every method returns at once: work runs on the
/// executor's own threads.
pub trait Executor: Send + Sync {
    /// Runs remote-function task `task` holding `allocation`, on `runtime`
    /// as a task of it when given (`Task::runtime`), else on a worker
    /// thread; the executor seals its results and gives `allocation` back
    /// when it ends.
    fn run_function(
        &self,
        task: Arc<PendingTask>,
        allocation: Allocation,
        runtime: Option<tokio::runtime::Handle>,
    );
    /// Runs `task` (the constructor or a call) of `actor`, then each next
    /// call that is ready by then; `dead` is why the actor is dead, if it
    /// was when the task was taken.
    fn run_actor(&self, actor: Arc<Actor>, task: Arc<PendingTask>, dead: Option<TaskError>);
    /// Drops the instance of `actor` (it died), unless a call runs on it
    /// now (then it is dropped when the call ends).
    fn drop_actor(&self, actor: ActorId);
    /// Drops what the executor keeps for job `job` (its reusable
    /// instances): the job ended.
    fn end_job(&self, job: JobId);
    /// Drops what the executor keeps of the components with content
    /// hashes `hashes` (their idle reusable instances): the node forgot
    /// them.
    fn forget_components(&self, hashes: &[Arc<str>]);
}
