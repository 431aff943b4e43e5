//! Whether a recorded process still runs, by process id *and* start time
//! (`/proc/<pid>/stat` field 22, in clock ticks since boot), so that a
//! process id the kernel gave to another process since is never taken for
//! the node, nor signalled.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::bail;

/// A process as recorded when it started: its id and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessRef {
    /// Its process id.
    pub pid: u32,
    /// When it started, in clock ticks since boot (`/proc/<pid>/stat`
    /// field 22); `None` in a file written before it was recorded.
    pub start_time: Option<u64>,
}

impl ProcessRef {
    /// This process.
    pub fn current() -> Self {
        let pid = std::process::id();
        Self {
            pid,
            start_time: stat(pid).map(|s| s.start_time),
        }
    }

    /// Whether the process still runs: its id names a live process (not a
    /// zombie) that started when this one was recorded to.
    pub fn is_alive(&self) -> bool {
        match stat(self.pid) {
            Some(s) => s.state != 'Z' && self.start_time.is_none_or(|t| t == s.start_time),
            None => false,
        }
    }

    /// Sends `signal` to the process, only if it is still the recorded one:
    /// through a pidfd (Linux 5.3), which names the process whose start
    /// time is checked, so a process id reused since is never signalled.
    ///
    /// # Errors
    /// The process is gone (or its id was reused), or cannot be signalled.
    pub fn signal(&self, signal: libc::c_int) -> anyhow::Result<()> {
        let pid = libc::pid_t::try_from(self.pid)
            .map_err(|_| anyhow::anyhow!("process id {} is out of range", self.pid))?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = match i32::try_from(fd) {
            // SAFETY: a new descriptor that nothing else owns.
            Ok(fd) if fd >= 0 => Some(unsafe { OwnedFd::from_raw_fd(fd) }),
            _ => None,
        };
        // Checked after the pidfd was opened: the pidfd names this very
        // process for as long as it is held.
        if !self.is_alive() {
            bail!("process {} is not running", self.pid);
        }
        let sent = match &pidfd {
            // SAFETY: a valid pidfd, a plain signal, no siginfo.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            },
            // No pidfds (a kernel before 5.3): by id, just after the check.
            // SAFETY: kill(2) with a plain signal number has no memory effects.
            None => libc::c_long::from(unsafe { libc::kill(pid, signal) }),
        };
        if sent != 0 {
            bail!(
                "cannot signal process {}: {}",
                self.pid,
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }
}

/// What `/proc/<pid>/stat` says of a process.
struct Stat {
    /// Field 3: R, S, D, Z, T...
    state: char,
    /// Field 22: start time in clock ticks since boot.
    start_time: u64,
}

/// `/proc/<pid>/stat` of `pid`, if it exists and reads as expected.
fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Fields 3 and 22 of a `/proc/<pid>/stat` line. Field 2, the command
/// name in parentheses, may hold spaces and parentheses itself: the fields
/// after it start after the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields 4 to 21 come between the state and the start time.
    let start_time = fields.nth(22 - 4)?.parse().ok()?;
    Some(Stat { state, start_time })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_state_and_start_time_past_a_command_with_parentheses() {
        let line = "4242 (a) (b c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 999 19";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.state, s.start_time), ('S', 999));
        assert!(parse_stat("4242 (x) S 1 2").is_none());
    }

    #[test]
    fn this_process_is_alive_and_another_start_time_is_not() {
        let me = ProcessRef::current();
        assert!(me.start_time.is_some() && me.is_alive());
        let reused = ProcessRef {
            start_time: me.start_time.map(|t| t + 1),
            ..me
        };
        assert!(!reused.is_alive());
        assert!(reused.signal(0).is_err());
    }
}
