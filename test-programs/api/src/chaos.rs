//! The chaos suite's workload (`chaos SECONDS TASKS MS MIB`): while the
//! suite kills, stops, stalls and impersonates nodes around it, a driver
//! runs rounds of work whose results it knows, for SECONDS:
//!
//! - TASKS tasks of MS ms each, spread over the nodes, each returning a
//!   value the driver checks (exact, or an error: never a wrong value);
//! - one call on a counter actor (restarted at most once), whose total
//!   must hold every increment the driver saw acknowledged, unless the
//!   actor was restarted (its incarnation changed);
//! - one task reading an object of MIB MiB the driver holds, checked
//!   against its digest; at the end the driver reads the object itself
//!   (an object a live reference names is never lost).
//!
//! A result that arrives more than 15 s past its task's time limit (or an
//! actor call that takes as long) is counted overdue: a hang, for the
//! suite.
//!
//! It prints one summary line (`chaos rounds ..`) and one `chaos error
//! KIND: MESSAGE` line per distinct error (at most 20), which the suite
//! checks: errors must be of a kind a fault explains and say what failed.

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wray::{ActorHandle, ErrorKind, ObjectRef, Options, Scheduling};

/// The most distinct errors printed.
const MAX_ERRORS: usize = 20;

/// A task's time limit past its own sleep.
const TASK_SLACK: Duration = Duration::from_secs(5);

/// How long past a task's time limit its result may take to arrive (a
/// stalled or lost node found out, the task run again elsewhere); later
/// is overdue, which the suite reports as a hang.
const DETECT: Duration = Duration::from_secs(15);

/// The value task `i` of round `round` returns.
fn expected(round: u64, i: u64) -> u64 {
    round.wrapping_mul(1_000_003).wrapping_add(i * i)
}

/// FNV-1a (64 bit) of `bytes`.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Sleeps `ms`, then returns [`expected`]`(round, i)`.
#[wray::remote]
pub(crate) fn chaos_square(round: u64, i: u64, ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    expected(round, i)
}

/// The FNV-1a of `bytes` (the object passed by reference).
#[wray::remote]
pub(crate) fn chaos_digest(bytes: Vec<u8>) -> u64 {
    fnv(&bytes)
}

/// A counter that knows which incarnation it is.
#[wray::actor]
pub struct ChaosCounter {
    total: u64,
    incarnation: u64,
}

#[wray::actor]
impl ChaosCounter {
    /// A counter at 0, its incarnation the nanoseconds of its creation.
    pub fn new() -> Self {
        let incarnation = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        ChaosCounter {
            total: 0,
            incarnation,
        }
    }

    /// Adds one; (the new total, this incarnation).
    pub fn add(&mut self) -> (u64, u64) {
        self.total += 1;
        (self.total, self.incarnation)
    }
}

/// Options for the workload's tasks: spread over the nodes, bounded.
fn spread(timeout: Duration) -> Options {
    Options::new()
        .scheduling(Scheduling::Spread)
        .timeout(timeout)
}

/// What a run saw.
#[derive(Default)]
struct Tally {
    rounds: u64,
    tasks_ok: u64,
    tasks_wrong: u64,
    tasks_failed: u64,
    acked: u64,
    applied_unacked: u64,
    lost_updates: u64,
    restarts: u64,
    actors_died: u64,
    calls_failed: u64,
    reads_ok: u64,
    reads_wrong: u64,
    reads_failed: u64,
    overdue: u64,
    slowest: Duration,
    errors: BTreeSet<String>,
}

impl Tally {
    /// Notes a result that arrived `took` after its round began, against
    /// `limit`.
    fn took(&mut self, took: Duration, limit: Duration) {
        self.slowest = self.slowest.max(took);
        if took > limit + DETECT {
            self.overdue += 1;
        }
    }

    fn error(&mut self, e: &wray::Error) {
        if self.errors.len() < MAX_ERRORS {
            let message: String = e.message().chars().take(1000).collect();
            let line = format!("{:?}: {}", e.kind(), message.replace('\n', " "));
            self.errors.insert(line);
        }
    }
}

/// The counter and what the driver last saw of it.
struct Counter {
    handle: ActorHandle<ChaosCounter>,
    incarnation: Option<u64>,
    /// Calls failed in a row.
    failures: u32,
}

impl Counter {
    fn new() -> Self {
        let options = Options::new()
            .scheduling(Scheduling::Spread)
            .max_restarts(1);
        Counter {
            handle: ChaosCounter::remote_with(options),
            incarnation: None,
            failures: 0,
        }
    }
}

/// `chaos SECONDS TASKS MS MIB`: see the module's documentation.
pub(crate) fn chaos(seconds: u64, tasks: u64, ms: u64, mib: usize) -> wray::Result<()> {
    let bytes: Vec<u8> = (0..mib << 20).map(|i| (i % 253) as u8).collect();
    let digest = fnv(&bytes);
    let object: ObjectRef<Vec<u8>> = wray::put(&bytes);
    drop(bytes);
    let timeout = Duration::from_millis(ms) + TASK_SLACK;
    let mut seen = Tally::default();
    let mut counter = Counter::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(seconds) {
        let round = seen.rounds;
        seen.rounds += 1;
        let began = Instant::now();
        let refs: Vec<ObjectRef<u64>> = (0..tasks)
            .map(|i| chaos_square.options(spread(timeout)).remote(round, i, ms))
            .collect();
        let read = chaos_digest.options(spread(timeout)).remote(&object);
        let call = counter.handle.add().remote().get();
        seen.took(began.elapsed(), timeout);
        match call {
            Ok((total, incarnation)) => {
                if counter.incarnation.is_some_and(|was| was != incarnation) {
                    // Restarted: its state is the constructor's again.
                    seen.restarts += 1;
                    seen.acked = total;
                } else if total < seen.acked + 1 {
                    seen.lost_updates += seen.acked + 1 - total;
                    seen.acked = total;
                } else {
                    // A call that failed may still have been applied.
                    seen.applied_unacked += total - (seen.acked + 1);
                    seen.acked = total;
                }
                counter.incarnation = Some(incarnation);
                counter.failures = 0;
            }
            Err(e) => {
                seen.error(&e);
                seen.calls_failed += 1;
                counter.failures += 1;
                // A call fails with its actor's node (the actor restarts);
                // an actor that fails three calls in a row is gone for good.
                if e.kind() == ErrorKind::ActorDied && counter.failures >= 3 {
                    seen.actors_died += 1;
                    counter = Counter::new();
                    seen.acked = 0;
                }
            }
        }
        for (i, r) in refs.iter().enumerate() {
            let got = r.get();
            seen.took(began.elapsed(), timeout);
            match got {
                Ok(v) if v == expected(round, i as u64) => seen.tasks_ok += 1,
                Ok(_) => seen.tasks_wrong += 1,
                Err(e) => {
                    seen.tasks_failed += 1;
                    seen.error(&e);
                }
            }
        }
        let got = read.get();
        seen.took(began.elapsed(), timeout);
        match got {
            Ok(d) if d == digest => seen.reads_ok += 1,
            Ok(_) => seen.reads_wrong += 1,
            Err(e) => {
                seen.reads_failed += 1;
                seen.error(&e);
            }
        }
    }
    let kept = match object.get() {
        Ok(b) if fnv(&b) == digest => "kept",
        Ok(_) => "changed",
        Err(e) => {
            seen.error(&e);
            "lost"
        }
    };
    for line in &seen.errors {
        println!("chaos error {line}");
    }
    println!(
        "chaos rounds {} tasks_ok {} tasks_wrong {} tasks_failed {} acked {} \
         applied_unacked {} lost_updates {} restarts {} actors_died {} calls_failed {} \
         reads_ok {} reads_wrong {} reads_failed {} overdue {} slowest_ms {} object {kept}",
        seen.rounds,
        seen.tasks_ok,
        seen.tasks_wrong,
        seen.tasks_failed,
        seen.acked,
        seen.applied_unacked,
        seen.lost_updates,
        seen.restarts,
        seen.actors_died,
        seen.calls_failed,
        seen.reads_ok,
        seen.reads_wrong,
        seen.reads_failed,
        seen.overdue,
        seen.slowest.as_millis(),
    );
    Ok(())
}
