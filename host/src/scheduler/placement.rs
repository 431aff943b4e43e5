//! The placement step: which node a submitted task runs on, decided once
//! its resource request is resolved and before it is queued.
//!
//! A node of its own (the embedded default) places every task here when
//! its request fits the node's totals, and refuses it as `infeasible`
//! otherwise, at submission, as Ray does for a request no node of the
//! cluster could ever meet. In a cluster this is the step that will look
//! up the node table and forward a task that fits another node; nothing
//! above it (submission checks) or below it (the resource queue) changes
//! then.

use crate::error::ErrorKind;
use crate::proto::Request;
use crate::scheduler::core::Scheduler;

impl Scheduler {
    /// Places a task asking for `request`: `Ok` to queue it here.
    ///
    /// # Errors
    /// `infeasible`, naming the request, the node's totals and the node,
    /// when no node could run it (this one is the only one).
    pub(crate) fn place(&self, request: &Request) -> Result<(), (ErrorKind, String)> {
        self.pool.check_feasible(request).map_err(|m| {
            (
                ErrorKind::Infeasible,
                format!("{m} (node {})", self.node_id),
            )
        })
    }
}
