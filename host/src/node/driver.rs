//! Running a component's `main` as the driver of a job.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_control_plane::{JobId, TaskId};

use crate::cancel_token::CancelToken;
use crate::error::{ErrorKind, TaskError};
use crate::executor::classify::{instantiate_error, trap_to_task_error};
use crate::executor::component::LoadedComponent;
use crate::executor::exports::Guest;
use crate::executor::guard::StopWhen;
use crate::executor::state::CurrentTask;
use crate::executor::WasmExecutor;
use crate::resources::Allocation;

/// Why a driver's `main` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// `main` returned an error: its message (at most
    /// [`MAX_LOG_LINE`](crate::bounds::MAX_LOG_LINE) bytes).
    #[error("{0}")]
    Main(String),
    /// A trap, a limit or a cancel ended it (or it could not start).
    #[error(transparent)]
    Stopped(#[from] TaskError),
    /// The job was cancelled while its driver waited for its resources
    /// (the request, resolved): `main` never ran.
    #[error("cancelled while its driver waited for resources {0}")]
    NeverStarted(crate::proto::Request),
}

/// How a driver ended.
#[derive(Debug, Clone)]
pub struct DriverOutcome {
    /// `main`'s result: [`DriverError::Main`] carries its message,
    /// [`DriverError::Stopped`] the trap (or limit, or cancel) that ended
    /// it.
    pub result: Result<(), DriverError>,
    /// Wall time of `main`.
    pub wall: Duration,
    /// The driver's task id (root of every id the job made).
    pub task: TaskId,
}

/// Runs `main(args)` of `component` as the driver of a new job, on the
/// calling thread (the caller ends the job: see
/// [`Scheduler::end_job`](crate::scheduler::Scheduler::end_job)). The
/// driver holds `allocation` (a job's entrypoint resources; none by
/// default) until it ends, giving its CPUs back while it waits in `get`
/// as a task does; its time limit is the node's `driver_timeout` (none
/// by default), and `cancel` or the node's shutdown stop it wherever it
/// is.
pub(crate) fn run_driver(
    exec: &Arc<WasmExecutor>,
    component: Arc<LoadedComponent>,
    args: &[String],
    job: JobId,
    cancel: CancelToken,
    allocation: Allocation,
) -> DriverOutcome {
    let start = Instant::now();
    let task = TaskId::driver(job);
    // Its version stays loaded while it runs (the tasks it submits name it
    // by hash), even if it is undeployed meanwhile.
    let _in_use = exec.sched.pin_component(&component.hash);
    let result = exec.block_on(drive(exec, component, args, job, cancel, allocation));
    DriverOutcome {
        result,
        wall: start.elapsed(),
        task,
    }
}

async fn drive(
    exec: &Arc<WasmExecutor>,
    component: Arc<LoadedComponent>,
    args: &[String],
    job: JobId,
    cancel: CancelToken,
    allocation: Allocation,
) -> Result<(), DriverError> {
    let task = TaskId::driver(job);
    let mut argv = vec![component.record.name.clone()];
    argv.extend_from_slice(args);
    let limits = crate::proto::limits::Limits {
        timeout: exec.sched.config().driver_timeout,
        ..exec.sched.config().limits()
    };
    // A driver holding resources gives its CPUs back while blocked (else
    // a one-CPU driver on a one-CPU node would wait forever on its own
    // tasks); its store gives everything back when it goes.
    let holds = allocation != Allocation::default();
    let mut current = CurrentTask::new(task, "main", holds, limits, allocation, cancel);
    let entry = exec.sched.tasks().driver_started(task);
    current.entry = Some(entry.clone());
    // The driver's thread is its own (`run_driver` blocks it): its waits
    // look before they sleep, as a worker's do.
    current.thread = crate::worker_pool::WaitingThread::Own;
    let started = Instant::now();
    let mut store = exec.new_store(&component, job, current, &argv);
    let stop = StopWhen::of(store.data());
    let result = match exec.make_instance(&component, &mut store, started).await {
        Err(e) => Err(instantiate_error(&e, store.data(), "").into()),
        Ok(instance) => match stop
            .guard(Guest::new(instance, component.exports.clone()).main(&mut store, args))
            .await
        {
            Ok(r) => r.map_err(|m| {
                DriverError::Main(crate::bounds::truncate(m, crate::bounds::MAX_LOG_LINE))
            }),
            Err(trap) => Err(trap_to_task_error(&trap, store.data()).into()),
        },
    };
    drop(store);
    let error = result
        .as_ref()
        .err()
        .map(|e| TaskError::new(ErrorKind::Application, "main", task, e.to_string()));
    exec.sched.tasks().ended(&entry, error.as_ref());
    result
}
