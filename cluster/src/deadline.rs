//! How long the owner of a forwarded task waits for its answer before it
//! asks the node whether it still holds the task ([`Deadline`]; the
//! asking is `Forwarder::overdue`, in `cluster/overdue.rs`).
//!
//! The deadline is the task's own time limit (its call's or declared
//! one within its owner's `--task-timeout`, as `Limits::resolve` gives
//! it; [`NO_LIMIT`] when it has none), plus a bound for the transfers the
//! call carries ([`FLOOR_RATE`]), plus [`SLACK`]. Past it the node is
//! probed with the task's id: a node that does not answer within
//! `health::PROBE_DEADLINE` stalled (the task is given up there and run
//! elsewhere, or fails naming the node and the deadline); a node that
//! answers but no longer holds the task lost its answer (the same); a
//! node that still holds it (queued behind other work, receiving large
//! arguments) is asked again every [`RECHECK`]. So a task is never waited
//! for on a node that stopped answering, whatever its limit; a stall is
//! usually seen sooner by the node's liveness probes (`health`).

use std::time::Duration;

use crate::protocol::INLINE_MESSAGE_MAX;

/// The time limit taken for a task that has none: the default
/// `--task-timeout` (600 s).
pub(crate) const NO_LIMIT: Duration = crate::config::DEFAULT_TASK_TIMEOUT;

/// The slowest transfer rate assumed for a task's arguments and inline
/// results: 10 MiB/s, under the 11.9 MiB/s of a 100 Mbit/s link (the
/// slowest network a cluster is expected on).
pub(crate) const FLOOR_RATE: u64 = 10 << 20;

/// Added to every deadline: 10 s for what the call does besides running
/// and transferring (loading the task's component on a node that has not
/// followed a deploy yet, its job's environment, the answer's trip).
pub(crate) const SLACK: Duration = Duration::from_secs(10);

/// How often a node that still holds an overdue task is asked again.
pub(crate) const RECHECK: Duration = Duration::from_secs(5);

/// The deadline of one forwarded call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    /// The task's time limit.
    pub(crate) limit: Duration,
    /// The bound for its transfers.
    pub(crate) transfer: Duration,
}

impl Deadline {
    /// The deadline of a task limited to `limit` (`None`: [`NO_LIMIT`])
    /// whose call carries `bytes` of argument values (inline or pulled);
    /// its inline results are bounded by [`INLINE_MESSAGE_MAX`].
    pub(crate) fn of(limit: Option<Duration>, bytes: u64) -> Self {
        let bytes = bytes.saturating_add(INLINE_MESSAGE_MAX as u64);
        Deadline {
            limit: limit.unwrap_or(NO_LIMIT),
            transfer: Duration::from_secs(bytes.div_ceil(FLOOR_RATE)),
        }
    }

    /// All of it: limit, transfers and [`SLACK`].
    pub(crate) fn total(&self) -> Duration {
        self.limit
            .saturating_add(self.transfer)
            .saturating_add(SLACK)
    }
}

impl std::fmt::Display for Deadline {
    /// `16.0 s (time limit 5.0 s + 1 s of transfers + 10 s)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1} s (time limit {:.1} s + {} s of transfers + {} s)",
            self.total().as_secs_f64(),
            self.limit.as_secs_f64(),
            self.transfer.as_secs(),
            SLACK.as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_the_limit_plus_transfers_at_the_floor_rate_plus_slack() {
        let d = Deadline::of(Some(Duration::from_secs(5)), 0);
        // 8 MiB of inline results at 10 MiB/s: 1 s.
        assert_eq!(d.total(), Duration::from_secs(16));
        assert!(d.to_string().starts_with("16.0 s (time limit 5.0 s"), "{d}");
        let big = Deadline::of(None, 1 << 30);
        assert_eq!(big.limit, NO_LIMIT);
        assert_eq!(big.transfer, Duration::from_secs(104));
        let huge = Deadline::of(Some(Duration::MAX), u64::MAX);
        assert_eq!(huge.total(), Duration::MAX);
    }
}
