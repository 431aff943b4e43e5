//! The `wray` binary: exit codes, summary line, and clear errors.

use std::process::Command;

use crate::support::component;

fn wray() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wray"))
}

#[test]
fn run_prints_the_driver_output_and_a_summary() {
    let out = wray()
        .args(["run", "--num-cpus", "1", "--quiet"])
        .arg(component("nested"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("[45, 55, 65, 75, 85]"), "{stdout}");
    assert!(
        stderr.contains("tasks run (0 failed) on 1 CPUs"),
        "{stderr}"
    );
}

#[test]
fn a_failing_main_exits_1_with_its_message() {
    let out = wray()
        .args(["run", "--quiet"])
        .arg(component("api"))
        .args(["--", "bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
}

#[test]
fn bad_input_gets_a_clear_error() {
    let out = wray().args(["run", "/no/such/file.wasm"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/file.wasm"));

    let not_wasm = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(not_wasm.path(), b"hello").unwrap();
    let out = wray().arg("run").arg(not_wasm.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not usable"));

    let out = wray()
        .args(["run", "--dir", "/no/such/dir::/data"])
        .arg(component("nested"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/dir"));
}
