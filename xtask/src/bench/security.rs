//! The security section of the report: every attack of the sandbox suite run
//! through `wray run` on this machine, with what the node answered, how long
//! the run took and its peak memory; then the fuzzing guest on a million
//! calls.
//!
//! The same attacks are tests (`host/tests/hostile`), which also check that
//! the process got back every file, mapping and thread; here they are
//! measured and shown, one `wray run` each.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::run;

/// One attack of the `hostile` fixture: its group, what it does, the
/// `wray run` flags, the fixture's arguments, and the prefix of the line
/// that shows the outcome.
struct Attack {
    group: &'static str,
    what: &'static str,
    flags: &'static [&'static str],
    args: &'static [&'static str],
    shows: &'static str,
}

const fn attack(
    group: &'static str,
    what: &'static str,
    flags: &'static [&'static str],
    args: &'static [&'static str],
    shows: &'static str,
) -> Attack {
    Attack {
        group,
        what,
        flags,
        args,
        shows,
    }
}

/// What `shows` is for an attack the CLI refuses: the `error:` line of
/// stderr is its answer.
const REFUSED: &str = "ERR";

/// The attacks, in the groups. Three of the suite's are tests only,
/// as they need more than one `wray run`: reaching another job's objects
/// (two drivers on one node), escaping a `--dir` (a prepared directory with
/// links) and a host panic (a fail point only an embedder can set).
const ATTACKS: &[Attack] = &[
    attack(
        "crash",
        "`reserve`/`write`/`seal` with sizes and offsets up to `u64::MAX`",
        &[],
        &["reserve_sizes"],
        "reserve_sizes:",
    ),
    attack(
        "crash",
        "write and seal another task's object",
        &[],
        &["foreign_writes"],
        "foreign_writes:",
    ),
    attack(
        "crash",
        "`num-returns = u32::MAX`",
        &[],
        &["num_returns"],
        "num_returns 4294967295",
    ),
    attack(
        "crash",
        "32,000 one-page windows",
        &[],
        &["windows", "32000"],
        "windows:",
    ),
    attack(
        "crash",
        "an object larger than the store (80 MiB on 64 MiB)",
        &["--object-store-memory", "64"],
        &["bigger_than_store", "80"],
        "bigger_than_store:",
    ),
    attack(
        "crash",
        "a store larger than its file system (16 TiB)",
        &["--object-store-memory", "16777216"],
        &["ping"],
        REFUSED,
    ),
    attack(
        "crash",
        "`--task-timeout 1e20`",
        &["--task-timeout", "1e20"],
        &["ping"],
        REFUSED,
    ),
    attack(
        "hang",
        "a WASI sleep of 30 s under a 2 s limit",
        &[],
        &["sleep", "30000", "2000"],
        "sleep:",
    ),
    attack(
        "hang",
        "a WASI sleep of 30 s, cancelled after 0.2 s",
        &[],
        &["cancel_sleep"],
        "cancel_sleep:",
    ),
    attack(
        "hang",
        "`wait` on an id that does not exist",
        &[],
        &["wait_unknown"],
        "wait_unknown other job:",
    ),
    attack(
        "hang",
        "a driver sleeping 30 s under `--driver-timeout 1`",
        &["--driver-timeout", "1"],
        &["hang_driver", "30"],
        REFUSED,
    ),
    attack(
        "hang",
        "`--num-gpus 4294967295`",
        &["--num-gpus", "4294967295"],
        &["ping"],
        REFUSED,
    ),
    attack(
        "hang",
        "an infinite loop under `--task-timeout 1`",
        &["--task-timeout", "1"],
        &["spin"],
        "spin:",
    ),
    attack(
        "hang",
        "a guest asking for a `u64::MAX` time limit under `--task-timeout 1`",
        &["--task-timeout", "1"],
        &["escape_limit"],
        "escape_limit:",
    ),
    attack(
        "hang",
        "unbounded recursion",
        &[],
        &["deep_stack"],
        "deep_stack:",
    ),
    attack(
        "hang",
        "`memory.grow` by 4 GiB under a 1 GiB limit",
        &["--task-memory-mib", "1024"],
        &["grow_4g"],
        "grow_4g:",
    ),
    attack(
        "hang",
        "a fork bomb: 30 levels, 2 children each",
        &[],
        &["fork", "30", "2"],
        "fork:",
    ),
    attack(
        "hang",
        "`get` of its own return",
        &[],
        &["own_return"],
        "own_return:",
    ),
    attack(
        "hang",
        "an actor calling itself (1 s limit)",
        &[],
        &["actor_self_call"],
        "actor_self_call:",
    ),
    attack(
        "hang",
        "100,000 tiny tasks",
        &[],
        &["tiny_tasks", "100000"],
        "tiny_tasks:",
    ),
    attack(
        "leak",
        "3 M profile spans",
        &[],
        &["spans", "3000000"],
        "spans:",
    ),
    attack(
        "leak",
        "2 M `wait` polls (timeout 0)",
        &[],
        &["wait_polls", "2000000"],
        "wait_polls:",
    ),
    attack(
        "leak",
        "20,000 inline objects of 100 KiB on a 64 MiB store",
        &["--object-store-memory", "64"],
        &["inline_flood", "20000", "102300"],
        "inline_flood last:",
    ),
    attack(
        "leak",
        "1,100 live actors",
        &[],
        &["actor_flood", "1100"],
        "actor_flood refused:",
    ),
    attack(
        "leak",
        "objects naming themselves or an unsealed sibling",
        &[],
        &["self_refs"],
        "self_refs:",
    ),
    attack(
        "trust",
        "`map` and `get` of garbage as `Vec<u64>`",
        &[],
        &["map_garbage"],
        "map_garbage:",
    ),
    attack(
        "trust",
        "a `Vec<u8>` read as `Vec<f64>`",
        &[],
        &["wrong_type"],
        "wrong_type:",
    ),
    attack(
        "trust",
        "a guest error claiming another task and `out-of-memory`",
        &[],
        &["forged_error"],
        "forged_error:",
    ),
    attack(
        "trust",
        "forged ids (another job's) on every import",
        &[],
        &["forged_ids"],
        "forged_ids:",
    ),
    attack(
        "trust",
        "misaligned, empty, too small, data-segment and overlapping windows",
        &[],
        &["bogus_windows"],
        "bogus_windows:",
    ),
    attack(
        "trust",
        "a write into a mapped object",
        &[],
        &["private_writes"],
        "private_writes:",
    ),
    attack(
        "fault",
        "killing an actor whose teardown wakes its own queue",
        &[],
        &["actor_death"],
        "actor_death call:",
    ),
];

/// Seconds a measured run may take before it is killed (the slowest attack
/// takes about 6 s; the fuzzing run about 40 s).
const DEADLINE_S: u64 = 600;

/// Kills `pid` with SIGKILL unless `done` is set within [`DEADLINE_S`]
/// seconds; the caller sets `done` and joins before reaping `pid`, so the
/// pid cannot have been reused when the kill is sent.
fn watchdog(pid: libc::pid_t, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(DEADLINE_S);
        while !done.load(Ordering::Acquire) {
            if Instant::now() >= deadline {
                // SAFETY: a plain kill(2) of our own child, not yet reaped.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
}

/// Runs `cmd` to its end (or [`DEADLINE_S`], then kills it); (stdout,
/// stderr, exit code, wall seconds, peak RSS in MiB).
fn measured(cmd: &mut Command) -> Result<(String, String, Option<i32>, f64, f64)> {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{}`", run::display(cmd)))?;
    let pid = child.id() as libc::pid_t;
    let done = Arc::new(AtomicBool::new(false));
    let dog = watchdog(pid, done.clone());
    let mut stdout = String::new();
    let mut stderr = String::new();
    // The pipes are read to their end before the child is reaped.
    let err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = err {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut stdout)?;
    }
    stderr.push_str(&reader.join().unwrap_or_default());
    done.store(true, Ordering::Release);
    let _ = dog.join();
    let mut status = 0;
    // SAFETY: `rusage` is plain data, for which all zeros is a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are writable and the kernel fills them in;
    // `pid` is our child, reaped here (and so never by `child`, which is then
    // forgotten).
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    std::mem::forget(child);
    let wall = start.elapsed().as_secs_f64();
    let code = (reaped == pid && libc::WIFEXITED(status)).then(|| libc::WEXITSTATUS(status));
    Ok((stdout, stderr, code, wall, usage.ru_maxrss as f64 / 1024.0))
}

/// Table cell text: one line, `|` escaped, at most `max` characters.
fn cell(text: &str, max: usize) -> String {
    let one: String = text.replace('|', "\\|").replace('\n', " ");
    if one.chars().count() <= max {
        return one;
    }
    let cut: String = one.chars().take(max).collect();
    format!("{cut}…")
}

/// Runs every attack and the fuzzer; the section's Markdown.
///
/// # Errors
/// A run that cannot start.
pub fn section(wray: &Path, wasm: &Path, fuzz_calls: u64) -> Result<String> {
    let mut s = String::from("\n## Security\n\n");
    writeln!(
        s,
        "Every attack of the sandbox suite (`test-programs/hostile`, tested with the \
         process's files, mappings and threads checked in `host/tests/hostile`), each in a \
         `wray run` of its own on this machine: what the node answered (each run then ran a \
         plain task: `next: ok: 42`), the run's wall time and its peak RSS. The defaults: \
         a 1 GiB store where not given, 2 CPUs, a 600 s task limit; a run is killed after \
         {DEADLINE_S} s. Three attacks are tests only: another job's objects (two drivers \
         on one node), `--dir` escapes (a prepared directory) and a host panic (a fail \
         point only an embedder sets).\n"
    )?;
    writeln!(
        s,
        "| group | attack | the node's answer | next task | wall (s) | peak RSS (MiB) |\n\
         | --- | --- | --- | --- | ---: | ---: |"
    )?;
    for a in ATTACKS {
        run::header(&format!("bench: attack {}", a.args.join(" ")));
        let mut cmd = Command::new(wray);
        cmd.args(["run", "--quiet"]).args(a.flags);
        if !a.flags.contains(&"--object-store-memory") {
            cmd.args(["--object-store-memory", "1024"]);
        }
        cmd.args(["--num-cpus", "2"]);
        cmd.arg(wasm.join("hostile.wasm")).arg("--").args(a.args);
        let (out, err, code, wall, rss) = measured(&mut cmd)?;
        let answer = if a.shows == REFUSED {
            err.lines()
                .find(|l| l.starts_with("error"))
                .map(|l| format!("exit {}: {l}", code.unwrap_or(-1)))
                .unwrap_or_else(|| format!("exit {}", code.unwrap_or(-1)))
        } else {
            out.lines()
                .find(|l| l.starts_with(a.shows))
                .unwrap_or("(no answer line)")
                .to_string()
        };
        let next = if out.contains("next: ok: 42") {
            "ok"
        } else if a.shows == REFUSED {
            "(refused)"
        } else {
            "missing"
        };
        writeln!(
            s,
            "| {} | {} | {} | {next} | {wall:.2} | {rss:.0} |",
            a.group,
            a.what,
            cell(&answer, 220)
        )?;
    }
    s.push_str(&fuzz(wray, wasm, fuzz_calls)?);
    Ok(s)
}

/// The fuzzing guest on `calls` calls (one seed per 10,000).
fn fuzz(wray: &Path, wasm: &Path, calls: u64) -> Result<String> {
    run::header(&format!("bench: fuzzing, {calls} calls"));
    let (seeds, per_seed) = crate::fuzz::plan(calls, None);
    let spill = tempfile::tempdir()?;
    let mut cmd = crate::fuzz::command(
        wray,
        &wasm.join("fuzz.wasm"),
        spill.path(),
        [seeds, per_seed, 0],
    );
    let (out, _, code, wall, rss) = measured(&mut cmd)?;
    let total = out
        .lines()
        .find(|l| l.starts_with("total: "))
        .unwrap_or("total: (none)");
    let survived = code == Some(0) && out.contains("next: ok: 42");
    let made = crate::fuzz::calls_made(&out).unwrap_or(0);
    let mut s = String::new();
    writeln!(
        s,
        "\nFuzzing (`test-programs/fuzz`: random calls of every import with real, forged and \
         foreign ids, sizes and offsets up to `u64::MAX`, windows anywhere; CI runs 3 seeds \
         of 20,000 calls, `cargo xtask fuzz --calls N` any number): {seeds} seeds of {per_seed} \
         calls, {} in {wall:.1} s ({:.0} calls/s), peak RSS {rss:.0} MiB; the node {}.",
        total.trim_start_matches("total: "),
        made as f64 / wall,
        if survived {
            "survived and ran a plain task after"
        } else {
            "did NOT survive"
        }
    )?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_one_short_line() {
        assert_eq!(cell("a|b\nc", 10), "a\\|b c");
        assert_eq!(cell("abcdef", 3), "abc…");
    }

    #[test]
    fn every_attack_names_an_outcome() {
        for a in ATTACKS {
            assert!(!a.shows.is_empty(), "{}", a.what);
            assert!(!a.args.is_empty(), "{}", a.what);
        }
    }
}
