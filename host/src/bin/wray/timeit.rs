//! Ray's `timeit` (python/ray/_private/ray_microbenchmark_helpers.py) for the
//! cases `wray microbenchmark` measures on the host; the guest suite
//! (`test-programs/microbench/src/timeit.rs`) times its cases the same way.
//!
//! A warm-up of 1 s counting calls; `step = calls / 10 + 1`; 4 rounds, each
//! calling `f` in batches of `step` until 2 s have passed; a round's rate is
//! `multiplier * calls / seconds`; the result is the mean and the population
//! standard deviation of the 4 rates. Ray's 10 s sleep before each case is
//! left out. `scale` multiplies both durations.

use std::time::{Duration, Instant};

/// Number of timed rounds, as in Ray.
const ROUNDS: usize = 4;

/// Mean and population standard deviation of the per-round rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Mean rate.
    pub mean: f64,
    /// Population standard deviation (numpy's `np.std`).
    pub sd: f64,
}

/// Times `f` with Ray's method, durations multiplied by `scale` (> 0).
///
/// # Errors
/// The first error `f` returns.
pub fn timeit<E>(
    scale: f64,
    multiplier: f64,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<Rate, E> {
    let warmup = Duration::from_secs_f64(scale);
    let round = Duration::from_secs_f64(2.0 * scale);
    let start = Instant::now();
    let mut calls = 0u64;
    loop {
        f()?;
        calls += 1;
        if start.elapsed() >= warmup {
            break;
        }
    }
    let step = calls / 10 + 1;
    let mut rates = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let mut calls = 0u64;
        loop {
            for _ in 0..step {
                f()?;
            }
            calls += step;
            if start.elapsed() >= round {
                break;
            }
        }
        rates.push(multiplier * calls as f64 / start.elapsed().as_secs_f64());
    }
    Ok(mean_sd(&rates))
}

fn mean_sd(values: &[f64]) -> Rate {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    Rate {
        mean,
        sd: var.sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_population_sd() {
        let r = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.mean, 2.5);
        assert!((r.sd - 1.25f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn calls_until_done_and_stops_at_the_first_error() {
        let mut calls = 0;
        let rate = timeit(0.001, 1.0, || {
            calls += 1;
            Ok::<(), ()>(())
        })
        .expect("no error");
        assert!(rate.mean > 0.0 && calls >= 5);
        assert_eq!(timeit(0.001, 1.0, || Err::<(), _>("boom")), Err("boom"));
    }
}
