//! Looking before sleeping: a thread that waits for a job or an object
//! looks for it for [`SPIN_BEFORE_PARKING`] before it parks.

use std::time::Duration;

#[cfg(doc)]
use super::WaitingThread;

/// How long a worker done with its job, or a task blocking in a wait
/// (`scheduler/blocking.rs`), looks for its next job or its objects before
/// its thread sleeps: 50 µs, longer than a trivial task or actor call
/// takes here.
///
/// A sleeping thread is woken by whoever queues its job or seals its
/// object, and when it slept on another CPU that CPU was idle: the wake is
/// an inter-processor interrupt, and on this project's 2-core virtual
/// machines that took about as long as a whole small task (perf: 38% of a
/// synchronous round trip's samples in waking threads and switching to
/// them). It is what made `1:1 actor calls sync` run at 12k or 40k per
/// second from one run of a build to the next (which CPU the actor's
/// worker slept on), and 135k with the process pinned to one CPU. Looking
/// first: 90k to 116k, and `single client tasks sync` 20.6k -> 49.4k per
/// second, the other cases unchanged (docs/benchmarks.md, "Memory growth,
/// and waking threads across CPUs"). The cost: at most 50 µs of a CPU per
/// wait or idle period, given up to any runnable thread by the yields. A
/// wait on a runtime's thread serving many calls (the HTTP API's) never
/// looks ([`WaitingThread::looks_first`]).
pub const SPIN_BEFORE_PARKING: Duration = Duration::from_micros(50);

/// Looks whether `done` for up to [`SPIN_BEFORE_PARKING`], yielding the
/// CPU between looks (so that on a machine with fewer CPUs than runnable
/// threads what is waited for runs meanwhile); whether it became so.
pub fn spin_until(done: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= SPIN_BEFORE_PARKING {
            return false;
        }
        for _ in 0..32 {
            std::hint::spin_loop();
        }
        std::thread::yield_now();
    }
}
