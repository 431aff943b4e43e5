//! `wray-microbenchmark` runs its cases and yardsticks and names what is
//! missing (timings are reported by `cargo xtask bench`, never asserted
//! here; the component's cases are tested in `host/tests/all/microbench.rs`).

use std::process::{Command, Output};

#[path = "../../host/tests/common/components.rs"]
mod components;
use components::component;

/// A measured case's `--json` line.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseLine {
    case: String,
    rate: f64,
    sd: f64,
    unit: String,
}

/// The `wray-microbenchmark` binary under test.
fn microbenchmark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wray-microbenchmark"))
}

/// The stdout of a run that must have succeeded (its stderr in the
/// failure message otherwise).
fn success_stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn it_prints_json_lines_and_the_bare_wasmtime_yardstick() {
    let out = microbenchmark()
        .args(["--json", "--scale", "0.01", "--num-cpus", "2"])
        .args(["--filter", "1:1 actor calls sync"])
        .arg("--component")
        .arg(component("microbench"))
        .output()
        .unwrap();
    let stdout = success_stdout(&out);
    let lines: Vec<CaseLine> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert_eq!(lines[0].case, "1:1 actor calls sync");
    assert_eq!(lines[0].unit, "per second");
    assert!(lines[0].rate > 0.0 && lines[0].sd >= 0.0, "{stdout}");

    let out = microbenchmark()
        .args(["--scale", "0.01", "--filter", "bare wasmtime"])
        .env("WRAY_MICROBENCH", component("microbench"))
        .output()
        .unwrap();
    let stdout = success_stdout(&out);
    assert!(
        stdout.starts_with("bare wasmtime instantiate+call per second "),
        "{stdout}"
    );
}

#[test]
fn it_names_a_missing_component_and_how_to_build_it() {
    let out = microbenchmark()
        .args(["--component", "/no/such/microbench.wasm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/no/such/microbench.wasm"), "{stderr}");
    assert!(stderr.contains("cargo xtask build-guests"), "{stderr}");
}
