//! Running child processes: echo the command, then run it with inherited stdio.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A new `cargo` command. `cargo` is taken from `PATH` (rustup's proxy), so that
/// `cargo component`, `cargo fmt` and `cargo clippy` resolve as they do in a shell.
pub fn cargo() -> Command {
    Command::new("cargo")
}

/// Prints a one-line header for a step, e.g. `==> cargo fmt --all --check`.
pub fn header(step: &str) {
    println!("==> {step}");
}

/// The command as a shell line, with the environment it sets first:
/// `RUSTC_BOOTSTRAP=1 cargo component build --release`.
pub fn display(cmd: &Command) -> String {
    let envs = cmd.get_envs().filter_map(|(key, value)| {
        value.map(|value| format!("{}={}", key.to_string_lossy(), quote(value)))
    });
    let program = std::iter::once(quote(cmd.get_program()));
    let args = cmd.get_args().map(quote);
    envs.chain(program)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quotes one word for display if it holds characters a shell would interpret.
fn quote(word: &OsStr) -> String {
    let word = word.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.into_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Runs `cmd` with inherited stdio and returns its exit status.
///
/// # Errors
///
/// Fails when the program cannot be started.
pub fn status(cmd: &mut Command) -> Result<ExitStatus> {
    println!("$ {}", display(cmd));
    cmd.status()
        .with_context(|| format!("cannot start `{}`", display(cmd)))
}

/// Runs `cmd` with inherited stdio.
///
/// # Errors
///
/// Fails when the program cannot be started or exits unsuccessfully.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = status(cmd)?;
    if !status.success() {
        bail!("`{}` failed ({status})", display(cmd));
    }
    Ok(())
}

/// Runs `cmd` quietly and returns its stdout, or `None` when it cannot be started or
/// exits unsuccessfully. For probes such as `cargo component --version`.
pub fn stdout_of(cmd: &mut Command) -> Option<String> {
    let output = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// How a command run under [`run_with_timeout`] ended.
#[derive(Debug)]
pub enum Timed {
    /// It exited by itself with this status.
    Exited(ExitStatus),
    /// It was still running at the deadline and was killed.
    TimedOut,
}

/// Runs `cmd` with inherited stdout/stderr and kills it if it is still running after
/// `timeout`.
///
/// The command runs in its own process group, and the whole group is killed, so that no
/// grandchild lingers holding our stdout open.
///
/// # Errors
///
/// Fails when the program cannot be started or waited for.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<Timed> {
    println!("$ {}   (time limit {} s)", display(cmd), timeout.as_secs());
    let mut child = cmd
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start `{}`", display(cmd)))?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Timed::Exited(status));
        }
        if Instant::now() >= deadline {
            // The group id is the child's pid (`process_group(0)`). It may exit between
            // try_wait and kill; either way, reap it.
            let group = format!("-{}", child.id());
            let _ = Command::new("kill")
                .args(["-KILL", "--", &group])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            child.wait()?;
            return Ok(Timed::TimedOut);
        }
        thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_shows_env_and_quotes_special_words() {
        let mut cmd = Command::new("cargo");
        cmd.env("RUSTC_BOOTSTRAP", "1").args([
            "build",
            "--config",
            r#"build.rustc="/usr/bin/rustc""#,
        ]);
        assert_eq!(
            display(&cmd),
            r#"RUSTC_BOOTSTRAP=1 cargo build --config 'build.rustc="/usr/bin/rustc"'"#
        );
    }

    #[test]
    fn quote_escapes_single_quotes() {
        assert_eq!(quote(OsStr::new("it's")), r"'it'\''s'");
        assert_eq!(quote(OsStr::new("")), "''");
        assert_eq!(quote(OsStr::new("/a/b.wasm")), "/a/b.wasm");
    }

    #[test]
    fn timeout_kills_a_hanging_command() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let outcome = run_with_timeout(&mut cmd, Duration::from_millis(200)).unwrap();
        assert!(matches!(outcome, Timed::TimedOut));
    }

    #[test]
    fn timeout_kills_grandchildren_too() {
        let scratch = std::env::temp_dir().join(format!("xtask-timeout-{}", std::process::id()));
        let mut cmd = Command::new("sh");
        // The grandchild would write the file after 1 s if it survived the kill.
        cmd.arg("-c")
            .arg(format!("(sleep 1; touch {}) & sleep 30", scratch.display()));
        let outcome = run_with_timeout(&mut cmd, Duration::from_millis(200)).unwrap();
        assert!(matches!(outcome, Timed::TimedOut));
        thread::sleep(Duration::from_millis(1500));
        assert!(!scratch.exists(), "grandchild survived the timeout");
    }

    #[test]
    fn timeout_reports_a_quick_exit() {
        let outcome = run_with_timeout(&mut Command::new("true"), Duration::from_secs(10));
        assert!(matches!(outcome.unwrap(), Timed::Exited(s) if s.success()));
    }
}
