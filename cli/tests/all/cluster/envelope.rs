//! The scalability envelope's benchmark (`bench/envelope/run.sh`) in its
//! quick mode, wray side only, so that it cannot rot unnoticed: every
//! dimension of Ray's envelope runs at a small size against this build
//! (nodes on an etcd of its own, actors, tasks blocked at once, a
//! broadcast, many args, returns and objects in a get, queued tasks, a
//! spilled object) and prints one JSON line, none an error. Its timings
//! are not asserted (they are `bench/envelope/run.sh`'s to report).

use std::path::Path;
use std::process::Command;

use crate::support::{component, json_lines};

/// Every dimension, in the order the script prints them.
const DIMENSIONS: [&str; 10] = [
    "nodes",
    "actors",
    "running",
    "broadcast",
    "args",
    "returns",
    "get",
    "queued",
    "large",
    "placement_groups",
];

#[test]
fn the_envelope_benchmark_runs_every_dimension_in_its_quick_mode() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/envelope/run.sh");
    let envelope = component("envelope");
    let (lines, stdout) = json_lines(
        Command::new("bash")
            .arg(&script)
            .args(["--quick", "--no-ray"])
            .env("WRAY_BIN", env!("CARGO_BIN_EXE_wray"))
            .env(
                "WRAY_WASM_DIR",
                envelope.parent().expect("the guests' directory"),
            ),
    );
    eprintln!("{stdout}");
    let dimensions: Vec<&str> = lines
        .iter()
        .map(|l| l["dimension"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(dimensions, DIMENSIONS, "{stdout}");
    for line in &lines {
        assert_eq!(line["bench"], "envelope", "{line}");
        assert_eq!(line["system"], "wray", "{line}");
        assert!(line.get("error").is_none(), "{line}");
        if line["dimension"] == "placement_groups" {
            // wray has none: said so, not measured.
            assert_eq!(line["supported"], false, "{line}");
            continue;
        }
        // Every size tried was reached: the largest is the last.
        let sizes = line["sizes"].as_array().expect("sizes tried");
        let last = sizes.last().expect("one size at least");
        assert!(line["reached"].as_u64().unwrap_or(0) > 0, "{line}");
        assert_eq!(line["reached"], last["n"], "{line}");
    }
}
