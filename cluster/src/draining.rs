//! [`Drain`]: a node's drain state (draining or not, its grace, the tasks
//! cut at the grace), held by its service (`cluster/serve.rs`) and read by
//! its record's publisher; the drain itself is `cluster/drain.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use wray_control_plane::TaskId;

use crate::id_map::IdSet;

/// A node's drain state, shared by its service and its publisher.
#[derive(Default)]
pub(crate) struct Drain {
    pub(super) draining: AtomicBool,
    /// The grace, in milliseconds (`--grace`), once draining.
    pub(super) grace_ms: AtomicU64,
    /// Woken when the node starts draining: its record is published then.
    pub(crate) started: Notify,
    /// The forwarded tasks stopped at the grace (bounded by `running`,
    /// which the connections bound).
    pub(super) cut: Mutex<IdSet<TaskId>>,
}

impl Drain {
    /// Whether the node is draining.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The node's grace, once it drains.
    pub(crate) fn grace(&self) -> Duration {
        Duration::from_millis(self.grace_ms.load(Ordering::Relaxed))
    }

    /// Whether forwarded task `task` was stopped at the grace.
    pub(crate) fn was_cut(&self, task: &TaskId) -> bool {
        self.cut.lock().contains(task)
    }
}
