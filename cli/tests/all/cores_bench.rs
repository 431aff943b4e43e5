//! The many-core script (`bench/cores/run.sh`, made for a borrowed 16-core
//! machine) in its quick mode, packed by `bench/cores/pack.sh` as it is for
//! that machine, so that neither can rot unnoticed between the rare runs
//! on one. It must print each step's JSON lines (the store alone, two
//! microbenchmark cases, the word count at 1 CPU and at 2); timings are
//! not asserted (they are the script's to report).

use std::path::Path;
use std::process::Command;

use crate::support::{component, json_lines};

#[test]
fn the_many_core_script_runs_in_its_quick_mode() {
    let wray = Path::new(env!("CARGO_BIN_EXE_wray"));
    let release = wray.parent().expect("the binaries' directory");
    let target = release.parent().expect("the target directory");
    assert!(
        release.join("store-contention").exists(),
        "{} is missing: cargo build --release -p wray-bench (cargo test --workspace builds it)",
        release.join("store-contention").display()
    );
    let guests = component("microbench");
    let guests = guests.parent().expect("the guests' directory");
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/cores");
    let carry = tempfile::tempdir().expect("a temporary directory");
    let packed = Command::new("bash")
        .arg(bench.join("pack.sh"))
        .arg(carry.path())
        .env("CARGO_TARGET_DIR", target)
        .env("WRAY_WASM_DIR", guests)
        .env("XZ_LEVEL", "-0")
        .output()
        .expect("bash runs");
    assert!(
        packed.status.success(),
        "{}",
        String::from_utf8_lossy(&packed.stderr)
    );
    // The word count reads this crate's sources: small, and always there.
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (lines, stdout) = json_lines(
        Command::new("bash")
            .arg(bench.join("run.sh"))
            .arg(carry.path())
            .arg("--quick")
            .arg("--corpus")
            .arg(&corpus),
    );
    let count = |bench: &str| lines.iter().filter(|l| l["bench"] == bench).count();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = if cores >= 2 { 2 } else { 1 };
    assert_eq!(count("store_contention"), threads, "{stdout}");
    // Two cases at 2 CPUs (and again at 1 on a one-core machine).
    assert!(count("cores_microbench") >= 2, "{stdout}");
    assert_eq!(count("cores_wordcount"), threads, "{stdout}");
    for line in &lines {
        let rate = ["puts_per_s", "rate", "seconds"]
            .iter()
            .find_map(|k| line[*k].as_f64())
            .unwrap_or_else(|| panic!("no measure in {line}"));
        assert!(rate > 0.0, "{line}");
    }
}
