//! Stopping a guest call from outside, wherever it is.
//!
//! A task's call into its guest runs as a future (wasmtime's async support:
//! the guest runs on a fiber, and a host call that waits suspends it). Two
//! mechanisms stop it when its time limit passes, it is cancelled, or the
//! node shuts down:
//! - while wasm runs, the epoch callback ([`arm_limits`]), every
//!   [`EPOCH_TICK`](crate::bounds::EPOCH_TICK), traps with [`Stopped`];
//! - while it waits in a host call (a WASI sleep or read, a `get`),
//!   [`StopWhen::guard`] drops the call: wasmtime unwinds the fiber and the
//!   call ends with [`Stopped`].
//!
//! Either way the call returns at most one tick after the limit or the
//! cancel, and the task's store stays usable for its teardown.

use std::future::Future;
use std::time::Instant;

use wasmtime::Store;

use crate::cancel_token::CancelToken;
use crate::classify::Stopped;
use crate::state::TaskState;

/// What stops one guest call: its deadline, its cancel token, the node's
/// shutdown.
pub struct StopWhen {
    deadline: Option<Instant>,
    cancel: CancelToken,
    shutdown: CancelToken,
}

impl StopWhen {
    /// The stop conditions of the task `state` runs now.
    pub fn of(state: &TaskState) -> Self {
        StopWhen {
            deadline: state.current.deadline,
            cancel: state.current.cancel.clone(),
            shutdown: state.node.shutdown().clone(),
        }
    }

    /// Runs `call` to its end, or until a stop condition holds: then `call`
    /// is dropped (the guest unwinds) and the result is [`Stopped`]. A call
    /// whose condition holds already does not start (after a node's stop, a
    /// queued task runs no guest code).
    ///
    /// # Cancel safety
    /// Dropping the returned future drops `call`, as a stop does.
    pub async fn guard<R>(
        &self,
        call: impl Future<Output = wasmtime::Result<R>>,
    ) -> wasmtime::Result<R> {
        if let Some(why) = self.holds() {
            return Err(wasmtime::Error::new(why));
        }
        tokio::select! {
            biased;
            result = call => result,
            why = self.stopped() => Err(wasmtime::Error::new(why)),
        }
    }

    /// Why the call must stop now, if it must.
    fn holds(&self) -> Option<Stopped> {
        if self.shutdown.is_cancelled() {
            Some(Stopped::Shutdown)
        } else if self.cancel.is_cancelled() {
            Some(Stopped::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stopped::TimeLimit)
        } else {
            None
        }
    }

    /// Resolves when the call must stop, with why.
    async fn stopped(&self) -> Stopped {
        let deadline = async {
            match self.deadline {
                Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = self.shutdown.cancelled() => Stopped::Shutdown,
            () = self.cancel.cancelled() => Stopped::Cancelled,
            () = deadline => Stopped::TimeLimit,
        }
    }
}

/// Why the task `state` runs must stop now, if it must.
fn must_stop(state: &TaskState) -> Option<Stopped> {
    if state.node.shutdown().is_cancelled() {
        Some(Stopped::Shutdown)
    } else if state.current.is_cancelled() {
        Some(Stopped::Cancelled)
    } else if state.current.deadline.is_some_and(|d| Instant::now() >= d) {
        Some(Stopped::TimeLimit)
    } else {
        None
    }
}

/// Arms `store` for its current task: an epoch callback that, every tick,
/// stops the guest when it must stop ([`must_stop`]); and its fuel, when
/// the node meters fuel.
pub(crate) fn arm_limits(store: &mut Store<TaskState>) {
    store.epoch_deadline_callback(|ctx| match must_stop(ctx.data()) {
        Some(why) => Err(wasmtime::Error::new(why)),
        // Every call is async: a guest that computes for a tick lets the
        // thread's other tasks run (a task on the HTTP runtime shares it
        // with the connections; a worker thread re-polls at once). Through
        // tokio's `yield_now`, which waits for the runtime to poll its I/O
        // first: a plain self-wake reran the guest at once, and the
        // runtime looked for ready sockets only every 61 polls (0.6 s of a
        // spinning guest).
        None => Ok(wasmtime::UpdateDeadline::YieldCustom(
            1,
            Box::pin(tokio::task::yield_now()),
        )),
    });
    rearm_limits(store);
}

/// Re-arms `store` for a new current task (a reused or actor instance,
/// whose callback from [`arm_limits`] reads the task's deadline and cancel
/// token as they are now): the next epoch tick checks, and fuel is refilled
/// to the task's limit. The task's host calls may lift as many bytes from
/// the guest as its memory limit allows (wasmtime's hostcall fuel; the
/// default of 128 MiB would refuse a large return value).
pub(crate) fn rearm_limits(store: &mut Store<TaskState>) {
    let state = store.data();
    let lift = usize::try_from(state.current.limits.max_memory).unwrap_or(usize::MAX);
    let fuel = state
        .node
        .config()
        .fuel_metering
        .then(|| state.current.limits.fuel.unwrap_or(u64::MAX));
    store.set_hostcall_fuel(lift.saturating_add(1 << 20));
    if let Some(fuel) = fuel {
        // Cannot fail: fuel is enabled.
        let _ = store.set_fuel(fuel);
    }
    store.set_epoch_deadline(1);
}
