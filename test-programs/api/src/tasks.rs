//! Scenarios `num_returns`, `chain` and `nested`.

use wray::ObjectRef;

/// Two results: `2 * x` and `x` as text.
#[wray::remote(num_returns = 2)]
pub(crate) fn split(x: i64) -> (i64, String) {
    (2 * x, x.to_string())
}

/// `x + 1`.
#[wray::remote]
pub(crate) fn inc(x: i64) -> i64 {
    x + 1
}

/// Sums objects whose refs arrive inside a value (unresolved).
#[wray::remote]
pub(crate) fn sum_refs(refs: Vec<ObjectRef<i64>>) -> wray::Result<i64> {
    Ok(wray::get_all(&refs)?.into_iter().sum())
}

/// Ray's nested-task example: the inner task.
#[wray::remote]
pub(crate) fn sub_experiment(i: i64, j: i64) -> i64 {
    i + j
}

/// Ray's nested-task example: submits ten inner tasks and sums them.
#[wray::remote]
pub(crate) fn run_experiment(i: i64) -> wray::Result<i64> {
    let refs: Vec<ObjectRef<i64>> = (0..10).map(|j| sub_experiment.remote(i, j)).collect();
    Ok(wray::get_all(&refs)?.into_iter().sum())
}

/// Fibonacci, one task per call: deep nesting that must not deadlock on one CPU.
#[wray::remote]
pub(crate) fn fib(n: u64) -> wray::Result<u64> {
    if n < 2 {
        return Ok(n);
    }
    let a = fib.remote(n - 1);
    let b = fib.remote(n - 2);
    Ok(a.get()? + b.get()?)
}

/// `num_returns`: a task with two return objects.
pub(crate) fn num_returns() -> wray::Result<()> {
    let (doubled, text) = split.remote(21i64);
    println!("split {} {:?}", doubled.get()?, text.get()?);
    Ok(())
}

/// `chain`: dependencies between tasks, and refs passed inside a value.
pub(crate) fn chain() -> wray::Result<()> {
    let x = wray::put(&1i64);
    let y = inc.remote(&x);
    let z = inc.remote(&y);
    println!("chain {}", z.get()?);

    let refs: Vec<ObjectRef<i64>> = (1..=3i64).map(|i| wray::put(&i)).collect();
    println!("sum_refs {}", sum_refs.remote(refs).get()?);
    Ok(())
}

/// `nested`: tasks that submit tasks and wait for them.
pub(crate) fn nested() -> wray::Result<()> {
    let refs: Vec<ObjectRef<i64>> = (0..5).map(|i| run_experiment.remote(i)).collect();
    println!("nested {:?}", wray::get_all(&refs)?);
    println!("fib {}", fib.remote(10u64).get()?);
    Ok(())
}
