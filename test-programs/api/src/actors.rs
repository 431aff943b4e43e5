//! Scenario `actors`.

use std::time::Duration;

use wray::{ActorHandle, ActorId, ObjectRef};

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

/// An actor that names itself: its id, read in its constructor and its
/// methods, and a handle to itself handed to a task that calls it back.
#[wray::actor]
pub struct Mirror {
    /// The id its constructor read.
    born_as: Option<ActorId>,
    total: i64,
}

#[wray::actor]
impl Mirror {
    /// Starts at 0, noting the id its constructor reads.
    pub fn new() -> Self {
        Mirror {
            born_as: wray::current_actor_id(),
            total: 0,
        }
    }

    /// The id it reads now and the one its constructor read.
    pub fn me(&self) -> (Option<ActorId>, Option<ActorId>) {
        (wray::current_actor_id(), self.born_as)
    }

    /// Whether a typed handle to itself is had as a `Mirror` and not as a
    /// `Counter` (another class).
    pub fn typed(&self) -> (bool, bool) {
        let mine = ActorHandle::<Mirror>::current().map(|h| h.id());
        let other = ActorHandle::<Counter>::current();
        (
            mine.is_some() && mine == wray::current_actor_id(),
            other.is_none(),
        )
    }

    /// Adds `k`; the new total.
    pub fn add(&mut self, k: i64) -> i64 {
        self.total += k;
        self.total
    }

    /// Hands a handle to itself to a task that calls `add(k)` on it; the
    /// task's result (not waited for here: the call queues behind this one).
    pub fn call_me_back(&self, k: i64) -> wray::Result<ObjectRef<i64>> {
        let me = ActorHandle::<Mirror>::current().ok_or_else(|| {
            wray::Error::new(
                wray::ErrorKind::System,
                "Mirror.call_me_back",
                wray::task_id(),
                "no handle to the running actor",
            )
        })?;
        Ok(add_back.remote(me, k))
    }
}

/// Calls `add(k)` on the actor it was handed: its new total.
#[wray::remote]
pub(crate) fn add_back(mirror: ActorHandle<Mirror>, k: i64) -> wray::Result<i64> {
    mirror.add().remote(k).get()
}

/// What a remote function's task reads as its actor: none.
#[wray::remote]
pub(crate) fn actor_of_task() -> Option<ActorId> {
    wray::current_actor_id()
}

/// `current_actor`: an actor's id as it reads it (constructor and methods)
/// equals its creator's handle's; a task and the driver read none; a
/// handle to itself, handed to a task, calls it back.
pub(crate) fn current_actor() -> wray::Result<()> {
    let m = Mirror::remote();
    let (now, born) = m.me().remote().get()?;
    println!("method_sees_creator_id {}", now == Some(m.id()));
    println!("constructor_sees_creator_id {}", born == Some(m.id()));
    let (mine, other) = m.typed().remote().get()?;
    println!("typed_self {mine} other_class_none {other}");
    println!("task_sees_none {}", actor_of_task.remote().get()?.is_none());
    println!("driver_sees_none {}", wray::current_actor_id().is_none());
    m.add().remote(10i64);
    let back: ObjectRef<i64> = m.call_me_back().remote(5i64).get()?;
    println!("called_back {}", back.get()?);
    println!("after {}", m.add().remote(1i64).get()?);
    Ok(())
}
