//! The HTTP benchmark (`bench/http/run.sh`) in its quick mode, so that the
//! script cannot rot unnoticed (it did once: its deploy-to-first-result step
//! started an etcd node without the cluster token every such node needs).
//! It runs every deploy-to-first-result case once (embedded, on etcd, and
//! through a second node of the same etcd) and one second of `wrk` load on
//! each wray route; the yardstick and Ray Serve are left out. Timings are not
//! asserted (they are the benchmark's to report): each case must print its
//! line, and the load must meet no errors.

use std::process::Command;

use crate::support::component;

#[test]
fn the_http_benchmark_runs_in_its_quick_mode() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/http/run.sh");
    let microbench = component("microbench");
    let out = Command::new("bash")
        .args([script, "--quick"])
        .env("WRAY", env!("CARGO_BIN_EXE_wray"))
        .env(
            "WRAY_WASM_DIR",
            microbench.parent().expect("the guests' directory"),
        )
        .env_remove("PORT")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    for case in ["embedded_cold", "embedded_warm", "etcd_cold", "etcd_warm"] {
        let line = format!("first_result {case} ");
        assert!(stdout.contains(&line), "no `{line}` in\n{stdout}\n{stderr}");
    }
    for case in ["second_node_cold", "second_node_warm"] {
        let line = format!("second_node {case} ");
        assert!(stdout.contains(&line), "no `{line}` in\n{stdout}\n{stderr}");
    }
    let loads: Vec<&str> = stdout.lines().filter(|l| l.starts_with("load ")).collect();
    // wray_noop and wray_noop_reused, each at c=1 and c=64.
    assert_eq!(loads.len(), 4, "{stdout}\n{stderr}");
    for line in loads {
        let requests = field(line, "requests");
        assert!(requests > 0, "no request answered: {line}");
        assert_eq!(field(line, "non2xx"), 0, "{line}");
        assert_eq!(field(line, "socket_errors"), 0, "{line}");
    }
}

/// The integer value of `name=` in a `load` line.
fn field(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no integer {name}= in {line}"))
}
