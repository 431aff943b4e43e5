//! Counter actors, as a wray component.
//!
//! Ten `Counter` actors are created and incremented once each, in parallel
//! (each actor runs in its own instance); then one actor gets five calls,
//! which run one at a time in submission order.

use wray::{ActorHandle, ObjectRef};

/// A counter: an actor's state lives in its instance between calls.
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

    /// Adds `k` and returns the new count.
    pub fn add(&mut self, k: i64) -> i64 {
        self.n += k;
        self.n
    }
}

/// Prints `parallel [1, 1, ..]` and `serial [1, 2, 3, 4, 5]`.
#[wray::main]
fn main() -> Result<(), wray::Error> {
    let counters: Vec<ActorHandle<Counter>> = (0..10).map(|_| Counter::remote(0i64)).collect();
    let ones: Vec<ObjectRef<i64>> = counters.iter().map(|c| c.increment().remote()).collect();
    println!("parallel {:?}", wray::get_all(&ones)?);

    let c = Counter::remote(0i64);
    let serial: Vec<ObjectRef<i64>> = (0..5).map(|_| c.increment().remote()).collect();
    println!("serial {:?}", wray::get_all(&serial)?);

    let sum = c.add().remote(10i64);
    println!("add {}", sum.get()?);
    Ok(())
}

wray::export! {
    main: main,
    actors: [Counter],
}
