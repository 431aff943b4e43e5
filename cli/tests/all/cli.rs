//! The `wray` binary: exit codes, summary line, and clear errors.

use crate::support::{component, success_stdout, wray};

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
fn with_deploys_components_a_driver_calls_by_qualified_name() {
    let out = wray()
        .args(["run", "--quiet", "--with"])
        .arg(component("nested"))
        .arg("--with")
        .arg(component("counter"))
        .arg(component("api"))
        .args(["--", "deployed"])
        .output()
        .unwrap();
    let stdout = success_stdout(&out);
    assert!(
        stdout.starts_with("sub_experiment 42\nrun_experiment 95\ncounter 16\n"),
        "{stdout}"
    );
    // Without them, the qualified calls fail at `get`, naming the component.
    let out = wray()
        .args(["run", "--quiet"])
        .arg(component("api"))
        .args(["--", "deployed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no component is deployed as `nested`"),
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

#[test]
fn objects_lists_what_a_running_driver_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = wray()
        .env("TMPDIR", tmp.path())
        .args(["run", "--quiet"])
        .arg(component("api"))
        .args(["--", "hold_mapped"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let session = tmp
        .path()
        .join("wray")
        .join(format!("session-{}", child.id()));
    let mut seen = String::new();
    while child.try_wait().unwrap().is_none() {
        let out = wray()
            .arg("objects")
            .arg("--session")
            .arg(&session)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("shared-memory") {
            seen = text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(child.wait().unwrap().success());
    // The 1 MiB object the driver held, in the shared store, one holder
    // (rkyv adds a few bytes of header to the vector).
    let line = seen
        .lines()
        .find(|l| l.contains("shared-memory"))
        .unwrap_or_default();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields.len(), 4, "{seen}");
    assert!(fields[1].parse::<u64>().unwrap() >= 1 << 20, "{line}");
    assert_eq!(fields[3], "1", "{line}");
    // After the run: the final listing, everything freed; and the latest link.
    let out = wray()
        .env("TMPDIR", tmp.path())
        .arg("objects")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("0 objects\n"));
    let out = wray()
        .env("TMPDIR", tmp.path().join("none"))
        .arg("objects")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("has `wray run` run?"));
}

#[test]
fn status_tasks_errors_and_timeline_read_the_latest_session() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("direct.json");
    let out = wray()
        .env("TMPDIR", tmp.path())
        .args([
            "run",
            "--quiet",
            "--num-gpus",
            "2",
            "--resources",
            r#"{"accelerator": 1}"#,
        ])
        .arg("--timeline")
        .arg(&trace)
        .arg(component("api"))
        .args(["--", "infeasible"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cmd = |args: &[&str]| {
        let out = wray()
            .env("TMPDIR", tmp.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let status = cmd(&["status"]);
    for want in [
        "GPU: 0 / 2",
        "accelerator: 0 / 1",
        "CPU: 0 / ",
        "FINISHED: ",
        "FAILED: 4",
        "Errors: 4",
    ] {
        assert!(status.contains(want), "no {want:?} in\n{status}");
    }
    let failed = cmd(&["tasks", "--state", "failed"]);
    assert!(
        failed.contains("four_gpus") && failed.ends_with("4 tasks\n"),
        "{failed}"
    );
    let errors = cmd(&["errors"]);
    assert!(
        errors.contains("four_gpus task ")
            && errors.contains(": infeasible: resource request {CPU: 1, GPU: 4}"),
        "{errors}"
    );
    let written = tmp.path().join("t.json");
    let said = cmd(&["timeline", "-o", written.to_str().unwrap()]);
    assert!(said.starts_with("Trace file written to "), "{said}");
    for file in [&written, &trace] {
        let text = std::fs::read_to_string(file).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events = json["traceEvents"].as_array().unwrap();
        assert!(
            events
                .iter()
                .any(|e| e["name"] == "accelerated" && e["ph"] == "X"),
            "{text}"
        );
    }
    // Bad flags are named.
    let out = wray()
        .args(["run", "--resources", "[1]"])
        .arg(component("api"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--resources [1]: expected a JSON object")
    );
}

#[test]
fn a_command_whose_stdout_is_closed_ends_quietly_and_a_node_survives_it() {
    use std::os::unix::process::ExitStatusExt;
    // A pipe nobody reads: every write to it fails (`wray ... | head`).
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let out = wray()
        .arg("describe")
        .arg(component("api"))
        .stdout(closed())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);

    // `wray start` with its stdout closed: the node it started runs on,
    // and stops cleanly.
    let tmp = tempfile::tempdir().unwrap();
    let _ = crate::support::in_dir(tmp.path(), &["start", "--port", "0", "--num-cpus", "1"])
        .stdout(closed())
        .output()
        .unwrap();
    let said = success_stdout(
        &crate::support::in_dir(tmp.path(), &["stop"])
            .output()
            .unwrap(),
    );
    assert!(said.contains("stopped"), "{said}");
    let log = std::fs::read_to_string(tmp.path().join("wray/node_latest/node.log")).unwrap();
    assert!(log.contains("stopped listening on"), "{log}");
}
