//! The node's side of a compile process: a compile that can be stopped.
//! Cranelift cannot be interrupted inside a process, so a node that has a
//! [`CompileCommand`] (a `wray` binary, `wray __compile`) compiles in a
//! child process instead (its side is `child.rs`): the compile thread
//! starts it, hands it the component on stdin, and waits for it until the
//! compile's deadline; past it, the child is killed (SIGKILL) and reaped,
//! and the compile slot is free again at once. The child writes the
//! serialized artifact into a file the node made in a directory only this
//! user may write; the node then maps it (`Component::deserialize_file`).
//!
//! The child dies with the node (`PR_SET_PDEATHSIG`: the thread that
//! starts it waits for it, so it lives as long as the child), and may
//! map at most [`CompileCommand::memory_limit`] bytes writable
//! (`RLIMIT_DATA`): a compile past it fails, never the node.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::child::{Request, EXIT_ENGINE, EXIT_REFUSED, MAX_MESSAGE};
use crate::config::CompileCommand;
use crate::engine::CodeSettings;

/// Why a compile process gave no artifact.
#[derive(Debug)]
pub enum ChildError {
    /// It could not start (the program is missing, a system limit): the
    /// node may compile in-process instead.
    Spawn(std::io::Error),
    /// It ran to the deadline and was killed.
    Killed,
    /// The component does not compile: the compiler's message.
    Refused(String),
    /// It failed otherwise (its engine not the node's, killed by a signal,
    /// out of memory): what happened, for the deploy's error.
    Failed(String),
}

/// Compiles `bytes` in a child process running `command`, which writes the
/// artifact into `out` (a file that exists, in a private directory); waits
/// for it until `deadline`, then kills and reaps it. Blocks the calling
/// thread (a compile thread) until the child has ended and is reaped.
///
/// # Errors
/// [`ChildError`] saying why there is no artifact.
pub fn compile(
    command: &CompileCommand,
    settings: CodeSettings,
    engine: &str,
    bytes: &[u8],
    out: &Path,
    deadline: Instant,
) -> Result<(), ChildError> {
    use std::os::unix::ffi::OsStrExt;
    let request = Request {
        settings,
        engine: engine.to_string(),
        size: bytes.len() as u64,
        out: out.as_os_str().as_bytes().to_vec(),
    };
    let mut line = serde_json::to_vec(&request)
        .map_err(|e| ChildError::Failed(format!("cannot write the compile request: {e}")))?;
    line.push(b'\n');

    let mut cmd = std::process::Command::new(&command.program);
    cmd.args(&command.args)
        .envs(command.envs.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let parent = std::process::id();
    let memory = command.memory_limit;
    // SAFETY: only async-signal-safe calls (prctl, getppid, setrlimit,
    // _exit) between fork and exec, on values copied in beforehand.
    unsafe {
        cmd.pre_exec(move || {
            // Dies with the thread that started it (which waits for it).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The node died before the line above: nobody waits for it.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            let limit = libc::rlimit {
                rlim_cur: memory as libc::rlim_t,
                rlim_max: memory as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = Reaped(cmd.spawn().map_err(ChildError::Spawn)?);
    run(child, &line, bytes, deadline, memory)
}

/// A child that is killed (if it still runs) and reaped however its
/// compile ends, a panic of the compile thread included.
struct Reaped(Child);

impl Reaped {
    /// Kills (if it still runs) and reaps the child: its status. Again,
    /// the same status (std keeps it; no signal goes to a reaped pid).
    fn finish(&mut self) -> std::io::Result<ExitStatus> {
        let _ = self.0.kill();
        self.0.wait()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn run(
    mut child: Reaped,
    line: &[u8],
    bytes: &[u8],
    deadline: Instant,
    memory: u64,
) -> Result<(), ChildError> {
    let stdin = child.0.stdin.take();
    let stderr = child.0.stderr.take();
    let (waited, status, message) = std::thread::scope(|s| {
        // Writes the request; ends when the child has read it, or with a
        // broken pipe once it is dead.
        s.spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(line).and_then(|()| stdin.write_all(bytes));
            }
        });
        // Reads its message (bounded); ends when it is dead.
        let message = s.spawn(move || {
            let mut text = Vec::new();
            if let Some(mut stderr) = stderr {
                let _ = (&mut stderr)
                    .take(MAX_MESSAGE as u64 * 4)
                    .read_to_end(&mut text);
                // Whatever is past the bound is drained, unread.
                let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            }
            String::from_utf8_lossy(&text).trim().to_string()
        });
        let waited = wait_until(&mut child.0, deadline);
        let status = child.finish();
        let message = message.join().unwrap_or_default();
        (waited, status, message)
    });
    match waited {
        Ok(Some(_)) => {}
        Ok(None) => return Err(ChildError::Killed),
        Err(e) => {
            return Err(ChildError::Failed(format!(
                "cannot wait for the compile process: {e}"
            )))
        }
    }
    let status = status
        .map_err(|e| ChildError::Failed(format!("cannot wait for the compile process: {e}")))?;
    let said = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    match status.code() {
        Some(0) => Ok(()),
        Some(code) if code == i32::from(EXIT_REFUSED) => Err(ChildError::Refused(message)),
        Some(code) if code == i32::from(EXIT_ENGINE) => Err(ChildError::Failed(format!(
            "the compile process cannot compile for this node{said}"
        ))),
        Some(code) => Err(ChildError::Failed(format!(
            "the compile process failed (exit status {code}){said}"
        ))),
        None => {
            use std::os::unix::process::ExitStatusExt;
            let signal = status.signal().unwrap_or(0);
            Err(ChildError::Failed(format!(
                "the compile process was killed by signal {signal} (past its bound of {} MiB \
                 of memory?){said}",
                memory >> 20
            )))
        }
    }
}

/// Waits for `child` to exit until `deadline`: `Ok(Some(status))` when it
/// did (not reaped: `try_wait` keeps the status), `Ok(None)` past the
/// deadline. Sleeps on the child's pidfd (Linux 5.3) where there is one,
/// else in steps of 10 ms.
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    let pidfd = pidfd(child.id());
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        match &pidfd {
            Some(fd) => {
                use std::os::fd::AsRawFd;
                let mut poll = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = left.as_millis().clamp(1, 1000) as libc::c_int;
                // SAFETY: one valid pollfd; EINTR and the rest are retried
                // by the loop, which re-checks the child and the clock.
                unsafe { libc::poll(&mut poll, 1, ms) };
            }
            None => std::thread::sleep(left.min(Duration::from_millis(10))),
        }
    }
}

/// A pidfd of process `pid` (readable once it has exited), where the
/// kernel has `pidfd_open`.
fn pidfd(pid: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: a plain syscall; a non-negative result is a new fd we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: `fd` was just opened and is owned by no one else.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
