//! Running a component's `main` as the driver of a job.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wray_control_plane::TaskId;

use crate::component::LoadedComponent;
use crate::runtime::Runtime;
use crate::worker::classify::trap_to_task_error;
use crate::worker::state::CurrentTask;

/// How a driver ended.
#[derive(Debug, Clone)]
pub struct DriverOutcome {
    /// `main`'s result: `Err` carries its message, or the trap that ended it.
    pub result: Result<(), String>,
    /// Wall time of `main`.
    pub wall: Duration,
    /// The driver's task id (root of every id the job made).
    pub task: TaskId,
}

impl Runtime {
    /// Runs `main(args)` of `component` on the calling thread. The driver
    /// holds no CPU slot and has no time limit.
    pub(crate) fn run_driver(
        self: &Arc<Self>,
        component: Arc<LoadedComponent>,
        args: &[String],
    ) -> DriverOutcome {
        let start = Instant::now();
        // Jobs are numbered per node from 1, so the same program run on a
        // fresh node gets the same ids every time.
        let task = TaskId::driver(self.jobs.fetch_add(1, Ordering::Relaxed) + 1);
        let mut argv = vec![component.record.name.clone()];
        argv.extend_from_slice(args);
        let limits = crate::limits::Limits {
            timeout: None,
            ..crate::limits::Limits::node(&self.config)
        };
        let mut current = CurrentTask::new(
            task,
            "main",
            false,
            limits,
            Default::default(),
            Default::default(),
        );
        let entry = self.registry.driver_started(task);
        current.entry = Some(entry.clone());
        let mut store = self.new_store(component.clone(), current, &argv);
        let result = match component.pre.instantiate(&mut store) {
            Err(e) => Err(format!(
                "cannot instantiate `{}`: {e:#}",
                component.record.name
            )),
            Ok(guest) => match guest.wray_runtime_app().call_main(&mut store, args) {
                Ok(r) => r,
                Err(trap) => Err(trap_to_task_error(&trap, store.data()).to_string()),
            },
        };
        let error = result.as_ref().err().map(|message| {
            crate::error::TaskError::new(
                crate::error::ErrorKind::Application,
                "main",
                task,
                message.clone(),
            )
        });
        self.registry.ended(&entry, error.as_ref());
        DriverOutcome {
            result,
            wall: start.elapsed(),
            task,
        }
    }
}
