//! `Forwarder::overdue`: what the owner of a forwarded task does once the
//! task's [`Deadline`] passes: it asks the node whether it still holds the
//! task (see `cluster/deadline.rs` for the numbers).

use crate::deadline::{Deadline, RECHECK};

impl crate::forward::Forwarder {
    /// Resolves once the call of task `task` on node `node` (at `addr`)
    /// is given up past `deadline` (see the module docs): why, naming the
    /// node and the deadline. Pending while the node holds the task.
    pub(crate) async fn overdue(
        &self,
        task: wray_control_plane::TaskId,
        node: &str,
        addr: &str,
        deadline: Deadline,
    ) -> String {
        tokio::time::sleep(deadline.total()).await;
        let mut answered_without = 0u32;
        loop {
            match crate::health::ping(&self.probes, addr, vec![task]).await {
                Err(e) => {
                    let seen = format!(
                        "it did not answer the task within its deadline of {deadline}, nor a \
                         liveness probe within {} s: {e}",
                        crate::health::PROBE_DEADLINE.as_secs()
                    );
                    self.health
                        .suspect(node, crate::health::Suspicion::Stalled, seen.clone());
                    return format!("node {node} ({addr}) timed out: {seen}");
                }
                Ok(held) if held.first() == Some(&false) => {
                    // Twice, a probe apart: an answer on its way as the
                    // node let go of the task is not taken for a lost one.
                    answered_without = answered_without.saturating_add(1);
                    if answered_without >= 2 {
                        return format!(
                            "node {node} ({addr}) timed out: it no longer holds the task past \
                             its deadline of {deadline}, and its answer never came"
                        );
                    }
                    tokio::time::sleep(crate::health::PROBE_EVERY).await;
                }
                Ok(_) => {
                    answered_without = 0;
                    tokio::time::sleep(RECHECK).await;
                }
            }
        }
    }
}
