//! A task's calls on an actor are in the actor's queue before the task
//! counts as finished (`cluster_causal`): workers on one node push
//! updates to an actor on another without waiting, and the driver, once
//! it has every worker's result, reads all of them.

use wray::{ActorHandle, ObjectRef};

use crate::cluster::Tally;

/// Adds 1 to `tally` `n` times without waiting for any, from a node with
/// a relay; returns at once.
#[wray::remote(resources = {"relay": 1}, num_cpus = 0)]
pub(crate) fn push_from_relay(tally: ActorHandle<Tally>, n: u64) -> u64 {
    for _ in 0..n {
        drop(tally.add().remote(1i64));
    }
    n
}

/// `cluster_causal ROUNDS UPDATES`: each round, a worker on the relay
/// node pushes UPDATES to a tally on an accelerator node; the driver,
/// once it has the worker's result, reads the tally. Prints `causal
/// GOOD ROUNDS` (the rounds whose read saw every update so far).
pub(crate) fn cluster_causal(rounds: u64, updates: u64) -> wray::Result<()> {
    let tally = Tally::remote_with(crate::cluster::accelerated(), 0i64);
    let mut good = 0;
    for round in 1..=rounds {
        let pushed: ObjectRef<u64> = push_from_relay.remote(tally.clone(), updates);
        pushed.get()?;
        let total = tally.add().remote(0i64).get()?;
        if total == (round * updates) as i64 {
            good += 1;
        } else {
            println!("round {round} read {total} of {}", round * updates);
        }
    }
    println!("causal {good} {rounds}");
    Ok(())
}
