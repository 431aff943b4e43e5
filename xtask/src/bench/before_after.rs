//! Before and after: this build's `wray-microbenchmark` against a baseline
//! build's, in the same run, alternating (A B A B …) so that the machine's
//! drift falls on both sides alike; the median of each side per case and
//! their ratio.
//!
//! The baseline is a directory holding another build's `wray-microbenchmark`
//! binary (or, for a build from before it moved to `bench/`, its `wray`,
//! run as `wray microbenchmark`) and its `wasm/microbench.wasm` (`cargo
//! xtask bench --baseline DIR`), e.g. the commit before a change, built in a
//! worktree: `git worktree add /tmp/base <commit>`, `cargo xtask
//! build-guests` and `cargo build --release` there, then copy
//! `target/release/wray-microbenchmark` and `target/wasm/microbench.wasm`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::compare::{wray_side, Side};
use super::median;
use crate::run;

/// Durations are Ray's scaled by this (1 s warm-up and 4 × 2 s become 0.3 s
/// and 4 × 0.6 s): many short alternating rounds rather than one long one.
const SCALE: &str = "0.3";

/// Cases slower after than before by more than this fraction are marked.
pub const TOLERANCE: f64 = 0.05;

/// `rounds` alternating runs of the baseline's and this build's
/// microbenchmark.
///
/// # Errors
/// A run that cannot start or reports nothing.
pub fn measure(
    baseline: &Path,
    program: &Path,
    component: &Path,
    rounds: usize,
) -> Result<(Vec<Side>, Vec<Side>)> {
    let base_program = Some(baseline.join("wray-microbenchmark"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| baseline.join("wray"));
    let base_component = baseline.join("wasm").join("microbench.wasm");
    let side = |program: &Path, component: &Path| {
        wray_side(program, component, Some(SCALE))
            .with_context(|| format!("running {}", program.display()))
    };
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for round in 1..=rounds.max(1) {
        run::header(&format!("bench: before and after, round {round}"));
        before.push(side(&base_program, &base_component)?);
        after.push(side(program, component)?);
    }
    Ok((before, after))
}

/// Whether a higher figure is better for `unit` (rates; not latencies).
fn higher_is_better(unit: &str) -> bool {
    unit != "us"
}

/// The table: case, median before, median after, after/before for rates
/// (before/after for latencies, so that below 1 is always slower), marked
/// where slower by more than [`TOLERANCE`].
///
/// # Errors
/// Never in practice (writing to a `String`).
pub fn render(before: &[Side], after: &[Side]) -> Result<String> {
    let mut s = String::new();
    let rounds = before.len().min(after.len());
    writeln!(
        s,
        "Medians of {rounds} alternating rounds of each build's `wray-microbenchmark --scale \
         {SCALE}` in this run. Speed is after/before for rates and before/after for \
         latencies: below 1 is slower; ⚠ marks a case more than {:.0}% slower.\n",
        TOLERANCE * 100.0
    )?;
    writeln!(
        s,
        "| case | before | after | speed |\n| --- | ---: | ---: | ---: |"
    )?;
    let order = after.first().map(|a| a.order.clone()).unwrap_or_default();
    for case in order {
        let pick = |sides: &[Side]| {
            let unit = sides
                .iter()
                .find_map(|s| s.get(&case).map(|r| r.unit.clone()));
            let mut rates: Vec<f64> = sides
                .iter()
                .filter_map(|s| s.get(&case).map(|r| r.rate))
                .collect();
            ((!rates.is_empty()).then(|| median(&mut rates)), unit)
        };
        let ((Some(b), unit), (Some(a), _)) = (pick(before), pick(after)) else {
            continue;
        };
        let unit = unit.unwrap_or_default();
        let speed = if higher_is_better(&unit) {
            a / b
        } else {
            b / a
        };
        let mark = if speed < 1.0 - TOLERANCE { " ⚠" } else { "" };
        writeln!(s, "| {case} | {b:.2} | {a:.2} | {speed:.3}{mark} |")?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::compare::CaseResult;

    fn side(case: &str, rate: f64, unit: &str) -> Side {
        Side {
            results: vec![CaseResult {
                case: case.into(),
                rate,
                sd: 0.0,
                unit: unit.into(),
            }],
            order: vec![case.into()],
            ..Side::default()
        }
    }

    #[test]
    fn speeds_read_the_same_way_for_rates_and_latencies() {
        let before = [
            side("tasks", 100.0, "per second"),
            side("tasks", 120.0, "per second"),
        ];
        let after = [
            side("tasks", 90.0, "per second"),
            side("tasks", 90.0, "per second"),
        ];
        let table = render(&before, &after).unwrap();
        assert!(
            table.contains("| tasks | 120.00 | 90.00 | 0.750 ⚠ |"),
            "{table}"
        );
        let before = [side("get latency", 10.0, "us")];
        let after = [side("get latency", 10.2, "us")];
        let table = render(&before, &after).unwrap();
        assert!(
            table.contains("| get latency | 10.00 | 10.20 | 0.980 |"),
            "{table}"
        );
    }
}
