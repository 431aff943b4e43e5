//! Attacks that hung a task, a driver or the node: blocking calls past a
//! time limit or a cancel, waits on ids that do not exist, deadlocks on
//! oneself, runaway loops, recursion and memory growth, fork bombs, many
//! tiny tasks.

use std::time::{Duration, Instant};

use wray::{ActorHandle, ObjectRef, Options};

use crate::raw::{self, objects, wit};
use crate::report;

/// Sleeps `ms` in a WASI call; returns how long it slept.
#[wray::remote]
pub(crate) fn sleep_for(ms: u64) -> u64 {
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(ms));
    start.elapsed().as_millis() as u64
}

/// A task sleeping `ms` under a limit of `limit_ms`: it must stop at the
/// limit, not at the end of its sleep.
pub(crate) fn sleep_scenario(ms: u64, limit_ms: u64) {
    let start = Instant::now();
    let r = sleep_for
        .options(Options::new().timeout(Duration::from_millis(limit_ms)))
        .remote(ms);
    report("sleep", r.get());
    let waited = start.elapsed().as_millis() as u64;
    println!("stopped before its sleep ended: {}", waited < ms);
}

/// A task sleeping 30 s, cancelled after 200 ms.
pub(crate) fn cancel_sleep_scenario() {
    let start = Instant::now();
    let r = sleep_for.remote(30_000u64);
    std::thread::sleep(Duration::from_millis(200));
    println!("cancel: {}", wray::cancel(&r, false, false));
    report("cancel_sleep", r.get());
    println!(
        "stopped before its sleep ended: {}",
        start.elapsed() < Duration::from_secs(30)
    );
}

/// `wait` and `get` on ids that name nothing: both return at once.
pub(crate) fn wait_unknown_scenario() {
    for (label, id) in [
        ("other job", raw::foreign_id(1)),
        ("my job", raw::unknown_id_of_my_job(1)),
    ] {
        let ready = objects::wait(&[id], 1, None);
        let got = objects::get(&[id], None);
        println!(
            "wait_unknown {label}: ready {ready:?}, get {}",
            got.err().map_or("ok".into(), |e| raw::text(&e))
        );
    }
}

/// Never returns.
#[wray::remote]
pub(crate) fn spin() -> u64 {
    let mut n = 0u64;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// A spinning task asking for a time limit of `u64::MAX` ms and a memory
/// limit of `u64::MAX` bytes: the node's limits are ceilings.
pub(crate) fn escape_limit_scenario() {
    let greedy = Options::new()
        .timeout(Duration::from_millis(u64::MAX))
        .max_memory(u64::MAX);
    report("escape_limit", spin.options(greedy).remote().get());
}

/// Recurses until the stack is exhausted.
#[wray::remote]
pub(crate) fn deep_stack(n: u64) -> u64 {
    fn down(n: u64) -> u64 {
        if std::hint::black_box(n) == 0 {
            return 0; // never: `n` starts at 1 and only grows
        }
        std::hint::black_box(down(std::hint::black_box(n + 1))) + 1
    }
    down(n)
}

/// Grows linear memory by 4 GiB at once.
#[wray::remote]
pub(crate) fn grow_4g() -> String {
    match raw::grow(65536) {
        Ok(at) => format!("grew at {at}"),
        Err(e) => e,
    }
}

/// A fork bomb: `fanout` children per level, `levels` deep, each waiting
/// for its children.
#[wray::remote]
pub(crate) fn fork(levels: u32, fanout: u32) -> Result<u64, wray::Error> {
    if levels == 0 {
        return Ok(1);
    }
    let children: Vec<ObjectRef<u64>> = (0..fanout)
        .map(|_| fork.remote(levels - 1, fanout))
        .collect();
    let mut sum = 0;
    for c in children {
        sum += c.get()?;
    }
    Ok(sum)
}

/// A fork bomb of `levels` and `fanout`; once its root has failed, the
/// driver cancels what is left of it (recursively) and waits a moment for
/// the node's instance slots to come back.
pub(crate) fn fork_scenario(levels: u32, fanout: u32) {
    let root = fork.remote(levels, fanout);
    match root.get() {
        Ok(n) => println!("fork: ok: {n}"),
        Err(e) => {
            let message = e.message();
            let cause = message.rsplit(": ").next().unwrap_or(message);
            println!("fork: {}: ... {cause}", e.kind());
        }
    }
    let start = Instant::now();
    wray::cancel(&root, true, true);
    // The bomb's tasks stop within an epoch tick; wait until a probe runs.
    let mut tries = 0;
    while crate::ping0.remote().get().is_err() && tries < 100 {
        tries += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "fork cleaned up: {} ({tries} probes, {} ms)",
        tries < 100,
        start.elapsed().as_millis()
    );
}

/// Waits for its own return value.
#[wray::remote]
pub(crate) fn own_return() -> Result<u64, String> {
    let mine = wit::ObjectId {
        task: raw::me(),
        index: 1,
    };
    objects::get(&[mine], None).map_err(|e| raw::text(&e))?;
    Ok(0)
}

/// An actor that calls itself and waits for the answer.
#[wray::actor]
pub struct Selfish {}

#[wray::actor]
impl Selfish {
    /// A new one.
    pub fn new() -> Self {
        Selfish {}
    }

    /// Calls `echo` on itself (`me`) and waits: its own queue holds that
    /// call behind this one.
    pub fn call_self(&self, me: ActorHandle<Selfish>) -> Result<u64, wray::Error> {
        me.echo().remote(1u64).get()
    }

    /// Returns `x`.
    pub fn echo(&self, x: u64) -> u64 {
        x
    }
}

/// An actor calling itself, under a 1 s limit per call.
pub(crate) fn actor_self_call_scenario() {
    let a = Selfish::remote_with(Options::new().timeout(Duration::from_secs(1)));
    report("actor_self_call", a.call_self().remote(a.clone()).get());
}

/// `n` tiny tasks at once, then their sum.
pub(crate) fn tiny_tasks_scenario(n: u64) {
    let refs: Vec<ObjectRef<i64>> = (0..n).map(|_| crate::ping0.remote()).collect();
    report(
        "tiny_tasks",
        wray::get_all(&refs).map(|v| v.iter().sum::<i64>()),
    );
}

/// Counts the tasks that arrived at a gate.
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

    /// One more arrived; how many have.
    pub fn arrive(&mut self) -> u64 {
        self.n += 1;
        self.n
    }

    /// How many arrived.
    pub fn count(&self) -> u64 {
        self.n
    }
}

/// Opens (returns `n`) once `n` tasks arrived at `arrivals`, looking every
/// 10 ms (its own time limit ends a gate never reached).
#[wray::remote]
pub(crate) fn gate(arrivals: ActorHandle<Arrivals>, n: u64) -> Result<u64, wray::Error> {
    loop {
        if arrivals.count().remote().get()? >= n {
            return Ok(n);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Arrives, then blocks in `get` until the gate (the one ref in `gates`,
/// nested so that the task starts before it is sealed) opens; 1.
#[wray::remote]
pub(crate) fn wait_at_gate(
    arrivals: ActorHandle<Arrivals>,
    gates: Vec<ObjectRef<u64>>,
) -> Result<u64, wray::Error> {
    let _ = arrivals.arrive().remote();
    for g in &gates {
        g.get()?;
    }
    Ok(1)
}

/// `n` tasks of one CPU each blocked in `get` at once, on one gate that
/// opens once they all arrived; how many ended.
pub(crate) fn blocked_at_once_scenario(n: u64) {
    let arrivals = Arrivals::remote();
    let opened = gate.remote(arrivals.clone(), n);
    let waiting: Vec<ObjectRef<u64>> = (0..n)
        .map(|_| wait_at_gate.remote(arrivals.clone(), vec![opened.clone()]))
        .collect();
    report(
        "blocked_at_once",
        wray::get_all(&waiting).map(|v| v.iter().sum::<u64>()),
    );
}

/// `n` tasks of 0.0001 CPU each (all of them one CPU together) sleeping
/// `ms` each; how many ended.
pub(crate) fn sleeping_at_once_scenario(n: u64, ms: u64) {
    let tiny = Options::new().num_cpus(0.0001);
    let sleeping: Vec<ObjectRef<u64>> = (0..n)
        .map(|_| sleep_for.options(tiny.clone()).remote(ms))
        .collect();
    report(
        "sleeping_at_once",
        wray::get_all(&sleeping).map(|v| v.len() as u64),
    );
}
