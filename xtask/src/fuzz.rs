//! `cargo xtask fuzz [--calls N] [--seeds S] [--first-seed K]`: the fuzzing guest
//! (`test-programs/fuzz`) run long on an embedded node.
//!
//! `N` host calls in all (default 1,000,000), split over `S` seeds (default: one per
//! 10,000 calls), each seed a task making random calls of every `wray:runtime` import
//! (see the guest's docs). Every outcome of a call is fine; what is checked is that
//! the node survives it all: `wray run` exits 0, the driver still runs a plain task
//! at the end, and nothing is left in `/dev/shm` or the spill directory. Prints the
//! guest's totals, the wall time and the calls per second.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::{guests, paths, run};

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Seeds and calls per seed for `calls` calls over `seeds` seeds (default:
/// one per 10,000 calls).
pub fn plan(calls: u64, seeds: Option<u64>) -> (u64, u64) {
    let seeds = seeds.unwrap_or_else(|| default_seeds(calls)).max(1);
    (seeds, calls.div_ceil(seeds))
}

/// The calls the guest made, from its `total: N calls, …` line.
pub fn calls_made(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("total: "))?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

/// Seeds for `calls` calls when none are given: one per 10,000 calls.
fn default_seeds(calls: u64) -> u64 {
    calls.div_ceil(10_000).max(1)
}

/// `wray run` of the fuzzing component `wasm` with `[seeds, calls per seed,
/// first seed]`, on a 256 MiB store that spills into `spill`.
pub fn command(wray: &Path, wasm: &Path, spill: &Path, args: [u64; 3]) -> Command {
    let mut cmd = Command::new(wray);
    cmd.args([
        "run",
        "--quiet",
        "--object-store-memory",
        "256",
        "--spill-dir",
    ])
    .arg(spill)
    .arg(wasm)
    .arg("--")
    .args(args.map(|a| a.to_string()));
    cmd
}

/// Runs the fuzzer.
///
/// # Errors
///
/// Fails when a build fails, `wray` cannot be started, or the node did not survive
/// (non-zero exit, no plain task at the end, files left behind).
pub fn fuzz(calls: u64, seeds: Option<u64>, first_seed: u64) -> Result<()> {
    guests::build_all("fuzz")?;
    let (seeds, per_seed) = plan(calls, seeds);
    let wasm = paths::wasm_dir().join("fuzz.wasm");
    let spill = tempfile::tempdir().context("cannot make a spill directory")?;
    let shm_before = entries(Path::new("/dev/shm"));
    run::header(&format!(
        "fuzz: {seeds} seeds x {per_seed} calls, from seed {first_seed}"
    ));
    let start = Instant::now();
    let out = command(
        &paths::target_dir().join("release").join("wray"),
        &wasm,
        spill.path(),
        [seeds, per_seed, first_seed],
    )
    .output()
    .context("cannot start wray")?;
    let wall = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines().filter(|l| !l.contains(" calls, ")) {
        println!("{line}");
    }
    let total = stdout.lines().find(|l| l.starts_with("total: "));
    if let Some(total) = total {
        println!("{total}");
    }
    if !out.status.success() {
        bail!(
            "wray run exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if !stdout.contains("next: ok: 42") || total.is_none() {
        bail!("the node did not run a plain task after the fuzzing:\n{stdout}");
    }
    if entries(Path::new("/dev/shm")) != shm_before || !entries(spill.path()).is_empty() {
        bail!("files were left in /dev/shm or the spill directory");
    }
    let made = calls_made(&stdout).unwrap_or(0);
    println!(
        "fuzz: {made} calls in {:.1} s ({:.0} calls/s); the node survived and left nothing behind",
        wall.as_secs_f64(),
        made as f64 / wall.as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_per_ten_thousand_calls() {
        assert_eq!(default_seeds(1), 1);
        assert_eq!(default_seeds(10_000), 1);
        assert_eq!(default_seeds(1_000_000), 100);
        assert_eq!(default_seeds(0), 1);
    }

    #[test]
    fn plans_never_overflow_and_totals_parse() {
        assert_eq!(plan(u64::MAX, Some(2)), (2, u64::MAX.div_ceil(2)));
        assert_eq!(plan(30, Some(0)), (1, 30));
        assert_eq!(
            calls_made("seed 1: ...\ntotal: 60000 calls, 12 errors, 0 seeds stopped\n"),
            Some(60000)
        );
        assert_eq!(calls_made("nothing"), None);
    }
}
