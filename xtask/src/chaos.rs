//! `cargo xtask chaos [--minutes M] [--seed N]`: the chaos suite
//! (`cli/tests/all/cluster/chaos`) run on its own: with `--minutes`, schedules
//! of faults with fresh seeds, one after another, for M minutes (a soak), each
//! checked against the suite's invariants; with `--seed`, the schedule of one seed
//! replayed. Without either it plays what the test command plays (the default seed
//! and the kept regressions). Prints each seed, each fault as it happens, and the
//! counts at the end.

use anyhow::Result;

use crate::{guests, paths, run, setup};

/// Builds what the suite needs and runs it.
///
/// # Errors
/// When the build or a schedule fails (the failing seed is in the output).
pub fn chaos(minutes: Option<f64>, seed: Option<u64>) -> Result<()> {
    let toolchain = setup::setup()?;
    guests::build_guests(toolchain)?;
    run::header("the chaos suite: cargo test --release -p wray-cli --test all cluster::chaos");
    let mut test = run::cargo();
    test.env("WRAY_WASM_DIR", paths::wasm_dir()).args([
        "test",
        "--release",
        "-p",
        "wray-cli",
        "--test",
        "all",
        "cluster::chaos::",
        "--",
        "--nocapture",
    ]);
    if let Some(minutes) = minutes {
        test.env("WRAY_CHAOS_MINUTES", minutes.to_string());
    }
    if let Some(seed) = seed {
        test.env("WRAY_CHAOS_SEED", seed.to_string());
    }
    run::run(&mut test)
}
