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
