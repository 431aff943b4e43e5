//! The cluster benchmark's wray side (`bench/cluster/wray_cluster.sh`) in
//! its quick mode, so that the script cannot rot unnoticed: it runs the
//! spread case (a burst on one node and on three) against this build and
//! prints a JSON line per measured case, none an error. Its timings are
//! not asserted (they are `bench/cluster/run.sh`'s to report).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{component, json_lines};

#[test]
fn the_cluster_benchmark_runs_in_its_quick_mode() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/cluster/wray_cluster.sh");
    let api = component("api");
    let (lines, stdout) = json_lines(
        Command::new("bash")
            .arg(&script)
            .args(["--quick", "--only", "spread"])
            .env("WRAY_BIN", env!("CARGO_BIN_EXE_wray"))
            .env(
                "WRAY_WASM_DIR",
                api.parent().expect("the guests' directory"),
            ),
    );
    eprintln!("{stdout}");
    // One line per node count, each from wray, none an error.
    assert_eq!(lines.len(), 2, "{stdout}");
    for line in &lines {
        assert_eq!(line["bench"], "spread", "{line}");
        assert_eq!(line["system"], "wray", "{line}");
        assert!(line.get("error").is_none(), "{line}");
        let per_node = line["last_run_tasks_per_node"]
            .as_object()
            .expect("tasks per node");
        let ran: u64 = per_node.values().filter_map(Value::as_u64).sum();
        assert_eq!(ran, 12, "{line}");
    }
}
