//! Making instances, timed: [`WasmExecutor::make_instance`] is where every
//! instance of the node is made (tasks, actors, drivers, `describe` at
//! deploy), and [`Instantiations`] is the lock-free histogram of how long
//! that took, read as an [`InstantiationHistogram`] (`GET /metrics` shows
//! it as `wray_instantiation_seconds`).
//!
//! What is timed: from before the instance's store is created to the end
//! of `instantiate_async` (store, WASI context, limits, the pooling
//! allocator's slot, the component's start), not the call into it. A
//! failed instantiation (every instance slot taken, a limit met in the
//! start, a cancel) is counted apart, in
//! [`InstantiationHistogram::failed`], and not in the buckets: its time
//! says how soon it failed, not what an instance costs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wasmtime::component::Instance;

use super::component::LoadedComponent;
use super::guard::StopWhen;
use super::store::TaskStore;
use super::WasmExecutor;

/// Upper bounds of the buckets, in nanoseconds: 5 µs to 100 ms in 1-2.5-5
/// steps. The steps are Prometheus' default buckets (client_golang
/// `DefBuckets`, 5 ms to 10 s) divided by 1000, since a pooled instance is
/// made in microseconds (bare wasmtime instantiates and calls a component
/// about 70,000 times a second here: `docs/benchmarks.md`); the last
/// three (25, 50, 100 ms) keep a busy node's cold starts out of `+Inf`.
pub const BUCKET_BOUNDS_NS: [u64; 14] = [
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
];

/// How long instantiations took, as counters any thread bumps without a
/// lock (relaxed atomics: a snapshot may miss an instantiation being
/// recorded, never count one twice).
#[derive(Default)]
pub struct Instantiations {
    /// Instantiations per bucket, not cumulative: bucket `i` counts those
    /// over bound `i - 1` and at most bound `i`; the last one those over
    /// every bound.
    buckets: [AtomicU64; BUCKET_BOUNDS_NS.len() + 1],
    /// Sum of the instantiations' times, in nanoseconds (wraps after 584
    /// years of instantiating).
    sum_ns: AtomicU64,
    /// Failed instantiations (in no bucket).
    failed: AtomicU64,
}

impl Instantiations {
    /// Records an instantiation that took `elapsed` (`ok`), or one that
    /// failed.
    pub fn record(&self, elapsed: Duration, ok: bool) {
        if !ok {
            self.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BUCKET_BOUNDS_NS.partition_point(|&bound| bound < ns);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// What was recorded so far. Its count is the sum of its buckets, so
    /// the cumulative counts end at the count whatever runs meanwhile.
    pub fn snapshot(&self) -> InstantiationHistogram {
        let mut cumulative = Vec::with_capacity(BUCKET_BOUNDS_NS.len());
        let mut count = 0u64;
        for (i, bucket) in self.buckets.iter().enumerate() {
            count = count.saturating_add(bucket.load(Ordering::Relaxed));
            if i < BUCKET_BOUNDS_NS.len() {
                cumulative.push(count);
            }
        }
        InstantiationHistogram {
            bounds_ns: &BUCKET_BOUNDS_NS,
            cumulative,
            count,
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// How long the node's instantiations took, since it started (see the
/// module docs for what is timed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstantiationHistogram {
    /// Upper bounds of the buckets, in nanoseconds, ascending
    /// ([`BUCKET_BOUNDS_NS`]); `+Inf` is implied.
    pub bounds_ns: &'static [u64],
    /// Instantiations that took at most each bound (cumulative, as
    /// Prometheus' `_bucket{le=..}`): one per bound, never decreasing, the
    /// last at most `count`.
    pub cumulative: Vec<u64>,
    /// Successful instantiations (the `+Inf` bucket).
    pub count: u64,
    /// Their total time, in nanoseconds.
    pub sum_ns: u64,
    /// Failed instantiations, in no bucket and not in `count`.
    pub failed: u64,
}

impl WasmExecutor {
    /// An instance of `component` in `store`, made under `store`'s stop
    /// conditions (its time limit, cancel and the node's shutdown), its time
    /// since `started` recorded: the caller takes `started` before it makes
    /// the store.
    ///
    /// # Errors
    /// Whatever `instantiate_async` fails with (no free instance slot, a
    /// trap or a limit in the component's start), or the stop that ended it.
    ///
    /// # Cancel safety
    /// Dropping the future drops the instantiation; nothing is recorded.
    pub async fn make_instance(
        &self,
        component: &LoadedComponent,
        store: &mut TaskStore,
        started: Instant,
    ) -> wasmtime::Result<Instance> {
        let stop = StopWhen::of(store.data());
        let made = stop
            .guard(component.pre.instantiate_async(&mut **store))
            .await;
        self.instantiations.record(started.elapsed(), made.is_ok());
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_bound_and_count_only_successes() {
        let h = Instantiations::default();
        h.record(Duration::from_nanos(5_000), true); // on the first bound
        h.record(Duration::from_nanos(5_001), true); // just over it
        h.record(Duration::from_millis(3), true);
        h.record(Duration::from_secs(1), true); // over every bound
        h.record(Duration::from_millis(1), false);
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.failed, 1);
        assert_eq!(s.cumulative.len(), BUCKET_BOUNDS_NS.len());
        assert_eq!(&s.cumulative[..3], &[1, 2, 2]);
        assert_eq!(
            s.cumulative[BUCKET_BOUNDS_NS.len() - 1],
            3,
            "1 s is in +Inf only"
        );
        assert!(s.cumulative.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(s.sum_ns, 5_000 + 5_001 + 3_000_000 + 1_000_000_000);
    }
}
