//! Ray's `timeit` (python/ray/_private/ray_microbenchmark_helpers.py), in
//! Rust: used natively by `wray-microbenchmark`'s yardsticks and, inside a
//! guest, by the microbench suite (there `std::time::Instant` is WASI's
//! `monotonic-clock`).
//!
//! Ray's method: call `fn` for 1 s as a warm-up, counting the calls; then
//! `step = calls / 10 + 1`; then 4 rounds, each calling `fn` in batches of
//! `step` until 2 s have passed; a round's rate is `multiplier * calls /
//! seconds`; report the mean and the (population) standard deviation of the
//! 4 rates. Ray also sleeps 10 s before each case to let noisy neighbours
//! settle; we do not (it would add minutes and measures nothing).
//!
//! `scale` multiplies both durations (the tests run with 0.01).

use std::time::{Duration, Instant};

/// Number of timed rounds, as in Ray.
const ROUNDS: usize = 4;
/// Warm-up length in seconds at scale 1, as in Ray.
const WARMUP_S: f64 = 1.0;
/// Length of one timed round in seconds at scale 1, as in Ray.
const ROUND_S: f64 = 2.0;

/// The timed rounds of one case: (calls, seconds) per round.
#[derive(Debug, Clone, PartialEq)]
pub struct Rounds(Vec<(u64, f64)>);

/// A mean and its standard deviation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Mean over the rounds.
    pub mean: f64,
    /// Population standard deviation over the rounds (numpy's `np.std`).
    pub sd: f64,
}

impl Rounds {
    /// Ray's figure: `multiplier * calls / seconds` per round.
    pub fn rate(&self, multiplier: f64) -> Stat {
        stat(self.0.iter().map(|&(n, s)| multiplier * n as f64 / s))
    }

    /// Mean time of one call in microseconds, per round.
    pub fn latency_us(&self) -> Stat {
        stat(self.0.iter().map(|&(n, s)| s * 1e6 / n as f64))
    }
}

fn stat(values: impl Iterator<Item = f64>) -> Stat {
    let values: Vec<f64> = values.collect();
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    Stat {
        mean,
        sd: var.sqrt(),
    }
}

/// Times `f` with Ray's method, durations multiplied by `scale` (> 0).
///
/// # Errors
///
/// The first error `f` returns.
pub fn timeit<E>(scale: f64, mut f: impl FnMut() -> Result<(), E>) -> Result<Rounds, E> {
    let warmup = Duration::from_secs_f64(WARMUP_S * scale);
    let round = Duration::from_secs_f64(ROUND_S * scale);
    let start = Instant::now();
    let mut calls = 0u64;
    // Like Ray's `while elapsed < 1`, but at least one call.
    loop {
        f()?;
        calls += 1;
        if start.elapsed() >= warmup {
            break;
        }
    }
    let step = calls / 10 + 1;
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let mut calls = 0u64;
        // Ray's `while elapsed < 2`, again with at least one batch.
        loop {
            for _ in 0..step {
                f()?;
            }
            calls += step;
            if start.elapsed() >= round {
                break;
            }
        }
        rounds.push((calls, start.elapsed().as_secs_f64()));
    }
    Ok(Rounds(rounds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_population_sd() {
        let r = stat([1.0, 2.0, 3.0, 4.0].into_iter());
        assert_eq!(r.mean, 2.5);
        assert!((r.sd - 1.25f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn calls_until_done_and_stops_at_the_first_error() {
        let mut calls = 0;
        let rounds = timeit(0.001, || {
            calls += 1;
            Ok::<(), ()>(())
        })
        .expect("no error");
        assert!(rounds.rate(1.0).mean > 0.0 && rounds.latency_us().mean > 0.0 && calls >= 5);
        assert_eq!(timeit(0.001, || Err::<(), _>("boom")), Err("boom"));
    }
}
