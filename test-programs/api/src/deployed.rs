//! `deployed`: calls into other deployed components by qualified name,
//! through `wray::deployed!`: the `nested` and `counter` examples, which
//! the host's test deploys beside this fixture.

use wray::{ActorHandle, ObjectRef};

wray::deployed! {
    /// The `nested` example.
    pub mod nested = "nested" {
        /// `i + j`.
        pub fn sub_experiment(i: i64, j: i64) -> i64;
        /// The sum of `sub_experiment(i, j)` for j in 0..10, from tasks it
        /// submits itself (within `nested`).
        pub fn run_experiment(i: i64) -> i64;
        /// Not a function of `nested`: `not-found` at `get`.
        pub fn missing(i: i64) -> i64;
    }

    /// The `counter` example.
    pub mod counter = "counter" {
        pub actor Counter {
            pub fn new(start: i64);
            pub fn increment(&mut self) -> i64;
            pub fn add(&mut self, k: i64) -> i64;
        }
    }

    /// Deployed nowhere.
    mod absent = "absent" {
        pub fn anything() -> i64;
    }
}

/// Prints one line per check.
pub fn deployed() -> wray::Result<()> {
    let one: ObjectRef<i64> = nested::sub_experiment.remote(40i64, 2i64);
    println!("sub_experiment {}", one.get()?);
    // An object made here is an argument of a task of another component.
    let x = wray::put(&5i64);
    let nested_sum = nested::run_experiment.remote(&x);
    println!("run_experiment {}", nested_sum.get()?);

    let c: ActorHandle<counter::Counter> = counter::Counter::remote(10i64);
    c.increment().remote();
    println!("counter {}", c.add().remote(5i64).get()?);

    for (case, r) in [
        ("missing", nested::missing.remote(1i64)),
        ("absent", absent::anything.remote()),
    ] {
        match r.get() {
            Ok(v) => println!("{case} ok {v}"),
            Err(err) => println!(
                "{case} {} {}: {}",
                err.kind(),
                err.function(),
                err.message()
            ),
        }
    }
    Ok(())
}

wray::deployed! {
    /// `examples/js/counter_actor`: an actor class written in JavaScript.
    pub mod js = "counter_js" as json {
        pub actor Counter {
            pub fn new(start: i64);
            pub fn add(&mut self, k: i64) -> i64;
        }
    }

    /// `examples/c/sum_bytes`: remote functions written in C.
    pub mod c = "sum_bytes" as json {
        pub fn sum_bytes(data: Vec<u8>) -> u64;
        pub fn add(a: f64, b: f64) -> f64;
    }
}

/// `languages`: a JavaScript actor and C functions called from Rust, the
/// values crossing as JSON (and a large raw object, mapped by the C side).
pub fn languages() -> wray::Result<()> {
    let counter = js::Counter::remote(10i64);
    counter.add().remote(5i64);
    println!("js counter {}", counter.add().remote(7i64).get()?);
    let data = wray::put_bytes(&vec![3u8; 300 << 10]);
    println!("c sum_bytes {}", c::sum_bytes.remote(&data).get()?);
    println!("c add {}", c::add.remote(1.5f64, 2.25f64).get()?);
    // The Rust default (rkyv) is refused by name.
    let rkyv = js::Counter::remote_with(wray::Options::new().format(wray::Format::Rkyv), 1i64);
    match rkyv.add().remote(1i64).get() {
        Ok(v) => println!("rkyv accepted {v}"),
        Err(e) => println!("rkyv {}", e.kind()),
    }
    Ok(())
}
