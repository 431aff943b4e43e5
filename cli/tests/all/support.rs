//! Finding the built components (the host's test helper, shared by path)
//! and running the `wray` binary.

#[path = "../../../host/tests/common/components.rs"]
mod components;
pub use components::component;

use std::process::{Command, Output};

/// The `wray` binary under test.
pub fn wray() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wray"))
}

/// The stdout of a run that must have succeeded (its stderr in the
/// failure message otherwise).
pub fn success_stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `wray ARGS` with `tmp` as its temporary directory (`TMPDIR`), so that
/// its node and session directories are its own.
pub fn in_dir(tmp: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = wray();
    cmd.env("TMPDIR", tmp).args(args);
    cmd
}

/// Stops the node started in `.0` if the test ends without `wray stop`.
pub struct StopOnDrop(pub std::path::PathBuf);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = in_dir(&self.0, &["stop", "--timeout", "10"]).output();
    }
}

/// A cluster token file (32 random bytes as hex, mode 0600) in `dir`, for
/// nodes started with `--etcd`.
pub fn token_file(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("random bytes");
    let path = dir.join("cluster-token");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .expect("a token file");
    std::io::Write::write_all(&mut file, hex::encode(bytes).as_bytes()).expect("written");
    path
}

/// `wray start`'s arguments for a one-CPU node on any port joining the
/// cluster on the etcd at `url` with the token file `token`.
pub fn start_on_etcd<'a>(url: &'a str, token: &'a str) -> [&'a str; 9] {
    [
        "start",
        "--port",
        "0",
        "--num-cpus",
        "1",
        "--etcd",
        url,
        "--cluster-token-file",
        token,
    ]
}

/// Runs a benchmark script's command to its end and returns its stdout's
/// lines, each parsed as JSON, with the stdout itself (for messages);
/// panics naming its stderr if it fails, and naming a line that is not
/// JSON. The benchmarks' quick modes print one JSON line per result.
pub fn json_lines(script: &mut Command) -> (Vec<serde_json::Value>, String) {
    let out = script.output().expect("the script runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (lines, stdout)
}
