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
        "{}",
        String::from_utf8_lossy(&out.stderr)
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
