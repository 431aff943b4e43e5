//! A fuzzing guest: from a seed, it calls every `wray:runtime` import with
//! random arguments (ids real, forged and of other jobs; sizes, offsets and
//! counts from 0 to `u64::MAX`; windows aligned, misaligned, overlapping and
//! over the module's own data) and counts what came back.
//!
//! `main(["<seeds>", "<calls>"])` runs one task per seed, each making
//! `calls` host calls, and prints one line per seed (`seed S: C calls, E
//! errors` or `seed S: <kind>: <message>` when the task was stopped), then
//! `total: ...` and `next: 42` from a plain task. Every outcome but a host
//! crash is fine: the host test checks that the node survived and gave back
//! what the calls took (`host/tests/hostile`); `cargo xtask fuzz` runs it
//! long.

mod calls;
mod rng;

/// A plain task: the node still runs work after the fuzzing.
#[wray::remote]
pub(crate) fn ping0() -> i64 {
    42
}

/// A plain actor for the fuzzer to create and call.
#[wray::actor]
pub struct Target {
    n: u64,
}

#[wray::actor]
impl Target {
    /// Starts at `n`.
    pub fn new(n: u64) -> Self {
        Target { n }
    }

    /// The value.
    pub fn read(&self) -> u64 {
        self.n
    }
}

/// Makes `calls` random host calls from `seed`; returns (calls made,
/// errors returned).
#[wray::remote]
pub(crate) fn fuzz(seed: u64, calls: u64) -> (u64, u64) {
    calls::run(seed, calls)
}

/// Runs `args[0]` seeds of `args[1]` calls each.
#[wray::main]
fn main(args: Vec<String>) -> Result<(), String> {
    let seeds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(4);
    let calls: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let first: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0);
    let (mut made, mut errors, mut stopped) = (0u64, 0u64, 0u64);
    for seed in first..first + seeds {
        match fuzz.remote(seed, calls).get() {
            Ok((c, e)) => {
                println!("seed {seed}: {c} calls, {e} errors");
                made += c;
                errors += e;
            }
            Err(e) => {
                println!("seed {seed}: {}: {}", e.kind(), e.message());
                stopped += 1;
            }
        }
    }
    println!("total: {made} calls, {errors} errors, {stopped} seeds stopped");
    match ping0.remote().get() {
        Ok(v) => println!("next: ok: {v}"),
        Err(e) => println!("next: {}: {}", e.kind(), e.message()),
    }
    Ok(())
}

wray::export! {
    main: main,
    functions: [ping0, fuzz],
    actors: [Target],
}
