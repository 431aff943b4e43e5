//! `running N DEADLINE_MS`: N tasks running at once, each blocked in a
//! `get` (Ray's "10k+ simultaneously running tasks"). Each [`waiter`]
//! records its arrival with the [`Arrivals`] actor, then blocks in `get` of
//! the [`gate`]'s result, passed inside a `Vec` so that the waiter starts
//! before the gate exists. The gate returns only once all N have arrived,
//! so when every waiter ends, all N were blocked at once. A node that
//! cannot hold N blocked tasks fails the waiters past its bound, and the
//! gate gives up at DEADLINE_MS.

use std::time::{Duration, Instant};

use serde_json::json;
use wray::{ActorHandle, ObjectRef};

use crate::{arg, err, secs, Fields};

/// Counts the tasks that arrived.
#[wray::actor]
pub struct Arrivals {
    n: u64,
}

#[wray::actor]
impl Arrivals {
    /// None yet.
    pub fn new() -> Self {
        Arrivals { n: 0 }
    }

    /// One more arrived; the count.
    pub fn arrive(&mut self) -> u64 {
        self.n += 1;
        self.n
    }

    /// How many arrived.
    pub fn count(&self) -> u64 {
        self.n
    }
}

/// Returns the count once `n` tasks arrived at `arrivals` (polled every
/// 20 ms), or fails after `deadline_ms`.
#[wray::remote]
pub fn gate(arrivals: ActorHandle<Arrivals>, n: u64, deadline_ms: u64) -> Result<u64, String> {
    let start = Instant::now();
    loop {
        let c = arrivals.count().remote().get().map_err(err)?;
        if c >= n {
            return Ok(c);
        }
        if start.elapsed() > Duration::from_millis(deadline_ms) {
            return Err(format!("{c} of {n} tasks arrived in {deadline_ms} ms"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Arrives, then blocks in `get` of `opened[0]` until every waiter arrived.
#[wray::remote]
pub fn waiter(arrivals: ActorHandle<Arrivals>, opened: Vec<ObjectRef<u64>>) -> Result<u64, String> {
    arrivals.arrive().remote().get().map_err(err)?;
    let g = opened.first().ok_or("no gate")?;
    g.get().map_err(err)
}

/// How often the driver looks for a failed waiter while the gate is shut.
const POLL: Duration = Duration::from_millis(100);

/// `running N DEADLINE_MS`.
pub(crate) fn running(args: &[String]) -> Result<Fields, String> {
    let n = arg(args, 0, "N")?;
    let deadline_ms = arg(args, 1, "DEADLINE_MS").unwrap_or(120_000);
    let start = Instant::now();
    let arrivals = Arrivals::remote();
    let open = gate.remote(arrivals.clone(), n, deadline_ms);
    let waiters: Vec<_> = (0..n)
        .map(|_| waiter.remote(arrivals.clone(), vec![open.clone()]))
        .collect();
    let submit_s = secs(start);
    // Until the gate opens, no waiter can end but by failing: stop at the
    // first that does, rather than wait for the gate's deadline.
    let opened = loop {
        let (ready, _) = wray::wait(std::slice::from_ref(&open), 1, Some(POLL));
        if !ready.is_empty() {
            match open.get() {
                Ok(c) => break c,
                Err(e) => return Err(first_errors(&waiters, &e.to_string())),
            }
        }
        let (failed, _) = wray::wait(&waiters, 1, Some(Duration::ZERO));
        if let Some(w) = failed.first() {
            let e = w.get().err().map(|e| e.to_string()).unwrap_or_default();
            return Err(format!(
                "{} tasks arrived before a waiter failed: {e}",
                arrivals.count().remote().get().map_err(err)?
            ));
        }
    };
    let all_arrived_s = secs(start);
    let results = wray::get_all(&waiters).map_err(err)?;
    if results.iter().any(|&r| r != opened) {
        return Err("a waiter saw another gate value".into());
    }
    Ok(
        json!({ "submit_s": submit_s, "all_arrived_s": all_arrived_s })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

/// The gate's error `gate`, and the distinct errors (at most 3) of the
/// waiters that failed on their own (a bound they met, not the gate).
fn first_errors(waiters: &[ObjectRef<u64>], gate_error: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut failed = 0usize;
    for w in waiters {
        if let Err(e) = w.get() {
            let e = e.to_string();
            if !e.contains(gate_error) && !gate_error.contains(&e) {
                failed += 1;
                if seen.len() < 3 && !seen.contains(&e) {
                    seen.push(e);
                }
            }
        }
    }
    format!(
        "gate: {gate_error}; {failed} waiters failed on their own: {}",
        seen.join(" | ")
    )
}
