//! Ray's nested tasks, as a wray component.
//!
//! `run_experiment(i)` is itself a task that submits ten
//! `sub_experiment(i, j)` tasks and waits for them. While a task waits in
//! `get`, it gives its CPU back to the node, so this runs even on one CPU.

use wray::ObjectRef;

/// The inner task: `i + j`.
#[wray::remote]
fn sub_experiment(i: i64, j: i64) -> i64 {
    i + j
}

/// The outer task: the sum of `sub_experiment(i, j)` for `j` in `0..10`.
#[wray::remote]
fn run_experiment(i: i64) -> wray::Result<i64> {
    let refs: Vec<ObjectRef<i64>> = (0..10).map(|j| sub_experiment.remote(i, j)).collect();
    Ok(wray::get_all(&refs)?.into_iter().sum())
}

/// Prints `[45, 55, 65, 75, 85]`.
#[wray::main]
fn main() -> Result<(), wray::Error> {
    let refs: Vec<ObjectRef<i64>> = (0..5).map(|i| run_experiment.remote(i)).collect();
    println!("{:?}", wray::get_all(&refs)?);
    Ok(())
}

wray::export! {
    main: main,
    functions: [sub_experiment, run_experiment],
}
