//! Scenario `actors`.

use std::time::Duration;

use wray::{ActorHandle, ObjectRef};

/// A counter actor.
#[wray::actor]
pub struct Counter {
    n: i64,
}

#[wray::actor]
impl Counter {
    /// Starts at `start`.
    pub fn new(start: i64) -> Self {
        Counter { n: start }
    }

    /// Adds one and returns the new count.
    pub fn increment(&mut self) -> i64 {
        self.n += 1;
        self.n
    }

    /// The current count.
    pub fn get(&self) -> i64 {
        self.n
    }
}

/// An actor that records what it is given, in call order.
#[wray::actor]
pub struct Log {
    items: Vec<i64>,
}

#[wray::actor]
impl Log {
    /// Starts empty.
    pub fn new() -> Self {
        Log { items: Vec::new() }
    }

    /// Appends `v` and returns the new length.
    pub fn push(&mut self, v: i64) -> usize {
        self.items.push(v);
        self.items.len()
    }

    /// Everything pushed so far.
    pub fn items(&self) -> Vec<i64> {
        self.items.clone()
    }
}

/// An actor whose calls take as long as asked (to be cancelled while they
/// run).
#[wray::actor]
pub struct Napper {
    naps: u64,
}

#[wray::actor]
impl Napper {
    /// Has taken no nap.
    pub fn new() -> Self {
        Napper { naps: 0 }
    }

    /// Sleeps `ms` milliseconds; returns how many naps it has finished.
    pub fn nap(&mut self, ms: u64) -> u64 {
        std::thread::sleep(Duration::from_millis(ms));
        self.naps += 1;
        self.naps
    }
}

/// Sleeps `ms` milliseconds, then returns `v`.
#[wray::remote]
pub(crate) fn sleep_then(ms: u64, v: i64) -> i64 {
    std::thread::sleep(Duration::from_millis(ms));
    v
}

/// Increments a counter it was handed as an argument.
#[wray::remote]
pub(crate) fn bump(c: ActorHandle<Counter>) -> wray::Result<i64> {
    c.increment().remote().get()
}

/// `actors`: state, parallel actors, call order, handles in tasks.
pub(crate) fn actors() -> wray::Result<()> {
    let c = Counter::remote(10i64);
    let incs: Vec<ObjectRef<i64>> = (0..3).map(|_| c.increment().remote()).collect();
    let now = c.get().remote();
    println!("counter {:?} {}", wray::get_all(&incs)?, now.get()?);

    let counters: Vec<ActorHandle<Counter>> = (0..10).map(|_| Counter::remote(0i64)).collect();
    let ones: Vec<ObjectRef<i64>> = counters.iter().map(|c| c.increment().remote()).collect();
    println!("ten {:?}", wray::get_all(&ones)?);

    let log = Log::remote();
    for v in 0..20i64 {
        log.push().remote(v);
    }
    println!("log {:?}", log.items().remote().get()?);

    let ordered = Log::remote();
    ordered.push().remote(sleep_then.remote(200u64, 1i64));
    ordered.push().remote(2i64);
    println!("ordered {:?}", ordered.items().remote().get()?);

    let fresh = Counter::remote(0i64);
    println!("handle {}", bump.remote(fresh.clone()).get()?);
    Ok(())
}

/// Returns a new counter's handle: the value returned holds it, so the
/// actor outlives this task.
#[wray::remote]
pub(crate) fn make_counter(start: i64) -> ActorHandle<Counter> {
    Counter::remote(start)
}

/// `actor_lifetime`: actors exit when their last handle is dropped, after
/// the calls already submitted; detached ones stay; handles in values keep
/// theirs alive.
pub(crate) fn actor_lifetime() -> wray::Result<()> {
    // More short-lived actors than the node has instance slots: each
    // exits once its handle is dropped, freeing its slot.
    let mut sum = 0;
    for i in 0..1000i64 {
        let c = Counter::remote(i);
        sum += c.increment().remote().get()?;
    }
    println!("short_lived {sum}");

    // Calls submitted before the last handle is dropped still run.
    let c = Counter::remote(0i64);
    let pending: Vec<ObjectRef<i64>> = (0..3).map(|_| c.increment().remote()).collect();
    drop(c);
    println!("pending {:?}", wray::get_all(&pending)?);

    // A handle returned by a task (inside its value) keeps its actor.
    let made: ActorHandle<Counter> = make_counter.remote(40i64).get()?;
    println!("returned {}", made.increment().remote().get()?);
    // Passed to another task, it is held while that task runs.
    println!("passed {}", bump.remote(made.clone()).get()?);

    // A detached actor outlives its handles (until killed or its job ends).
    let d = Counter::remote_with(wray::Options::new().detached(), 5i64);
    let methods = *d;
    drop(d);
    println!("detached {}", methods.increment().remote().get()?);
    Ok(())
}
