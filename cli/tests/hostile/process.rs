//! `wray run` as a process: out-of-range flags and files that are no
//! component get clear errors; SIGKILL, SIGTERM and SIGINT mid-run leave no
//! file behind; two runs at once do not collide.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{component, entries, serial};

fn wray() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wray"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn out_of_range_flags_are_refused_with_their_range() {
    let cases: [(&[&str], &str); 6] = [
        (&["--num-cpus", "4294967296"], "is not in 1..=4096"),
        (&["--num-gpus", "4294967295"], "is not in 0..=1024"),
        (&["--task-timeout", "1e20"], "(a year)"),
        (&["--driver-timeout=-1"], "(a year)"),
        (
            &["--object-store-memory", "18446744073709551615"],
            "is not in 0..=16777216",
        ),
        (&["--task-memory-mib", "999999"], "is not in 1..=4096"),
    ];
    for (flags, range) in cases {
        let out = wray()
            .arg("run")
            .args(flags)
            .arg(component("hostile"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(stderr(&out).contains(range), "{flags:?}: {}", stderr(&out));
    }
}

#[test]
fn files_that_are_not_components_say_what_they_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let core = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    let cases: [(&str, &[u8], &str); 4] = [
        ("empty", b"", "the file is empty, not a wasm component"),
        (
            "text",
            b"hello world\n",
            "starts with bytes 68 65 6c 6c 6f 20 77 6f (\"hello wo\")",
        ),
        (
            "random",
            &[0xc2, 0x9b, 0xa8, 0x97, 0x25, 0x79, 0x57, 0xb2, 1],
            "not the wasm magic 00 61 73 6d",
        ),
        ("core", &core, "a core wasm module, not a component"),
    ];
    for (name, bytes, says) in cases {
        let path = dir.path().join(format!("{name}.wasm"));
        std::fs::write(&path, bytes).expect("write");
        let out = wray().arg("run").arg(&path).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(stderr(&out).contains(says), "{name}: {}", stderr(&out));
    }
}

/// A `wray run` that spills an 80 MiB object from its 64 MiB store, reads
/// it back, and then holds it for `hold` seconds: its session and
/// temporary files go under `tmp`.
fn spilling_run(tmp: &Path, spill: &Path, hold: &str) -> Child {
    wray()
        .env("TMPDIR", tmp)
        .args([
            "run",
            "--quiet",
            "--object-store-memory",
            "64",
            "--spill-dir",
        ])
        .arg(spill)
        .arg(component("hostile"))
        .args(["--", "bigger_than_store", "80", hold])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns")
}

/// Waits until `pid` maps a spilled object (its spill file exists, with no
/// name): the run is mid-flight with files open.
fn wait_for_spill(pid: u32) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        if maps.lines().filter(|l| l.contains("(deleted)")).count() >= 2 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the run never spilled");
}

#[test]
fn a_run_killed_or_interrupted_mid_run_leaves_no_file_behind() {
    let _serial = serial();
    for signal in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT] {
        let shm_before = entries(Path::new("/dev/shm"));
        let tmp = tempfile::tempdir().expect("tmp");
        let spill = tempfile::tempdir().expect("spill");
        let child = spilling_run(tmp.path(), spill.path(), "30");
        wait_for_spill(child.id());
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().expect("waits");
        match signal {
            libc::SIGKILL => assert_eq!(out.status.code(), None),
            _ => assert!(
                out.status.code() == Some(128 + signal) || out.status.success(),
                "signal {signal}: {:?} {}",
                out.status,
                stderr(&out)
            ),
        }
        assert_eq!(
            entries(Path::new("/dev/shm")),
            shm_before,
            "signal {signal}: /dev/shm"
        );
        assert_eq!(
            entries(spill.path()),
            BTreeSet::<String>::new(),
            "signal {signal}: spill files"
        );
        // Only the session directory (kept, as Ray's) is under TMPDIR.
        let left: BTreeSet<String> = entries(tmp.path())
            .into_iter()
            .filter(|e| e != "wray")
            .collect();
        assert_eq!(
            left,
            BTreeSet::<String>::new(),
            "signal {signal}: temporary files"
        );
    }
}

#[test]
fn two_runs_at_once_do_not_collide() {
    let _serial = serial();
    let shm_before = entries(Path::new("/dev/shm"));
    let tmp = tempfile::tempdir().expect("tmp");
    let spill = tempfile::tempdir().expect("spill");
    let runs: Vec<Child> = (0..2)
        .map(|_| spilling_run(tmp.path(), spill.path(), "0"))
        .collect();
    for run in runs {
        let out = run.wait_with_output().expect("waits");
        assert!(out.status.success(), "{}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("bigger_than_store: ok: read back true"),
            "{stdout}"
        );
    }
    assert_eq!(entries(Path::new("/dev/shm")), shm_before);
    assert_eq!(entries(spill.path()), BTreeSet::<String>::new());
}
