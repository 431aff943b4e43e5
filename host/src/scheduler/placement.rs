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
use crate::scheduler::remote::{Local, Placement};

impl Scheduler {
    /// Places a task asking for `request`: here, or (in a cluster) on the
    /// node the cluster picks (Ray's hybrid policy: here while it fits
    /// what is free here, else a node with room now, else here when it
    /// fits here at all, else a node whose totals fit).
    ///
    /// # Errors
    /// `infeasible`, naming the request and what the nodes offer, when no
    /// node could run it.
    pub(crate) fn place(&self, request: &Request) -> Result<Placement, (ErrorKind, String)> {
        let feasible = self.pool.check_feasible(request);
        let Some(remote) = self.remote() else {
            return feasible.map(|()| Placement::Here).map_err(|m| {
                (
                    ErrorKind::Infeasible,
                    format!("{m} (node {})", self.node_id),
                )
            });
        };
        let local = Local {
            feasible: feasible.is_ok(),
            fits_now: feasible.is_ok() && self.pool.fits_now(request),
        };
        if local.fits_now {
            return Ok(Placement::Here);
        }
        remote
            .place(request, local)
            .map_err(|m| (ErrorKind::Infeasible, m))
    }
}
