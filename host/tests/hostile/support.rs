//! Running one attack of the `hostile` fixture on a fresh node, and
//! checking that the process got back everything the attack took.
//!
//! What is measured is process-wide (open files, mappings, threads, RSS,
//! files under `/dev/shm` and the spill directory), so the tests of this
//! binary run one at a time ([`serial`]).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wray_host::{Node, NodeConfig, Stdio};

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the lock that runs this binary's tests one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// With `RUST_BACKTRACE` set, symbolizes one backtrace, holding the
/// [`serial`] lock, so that a test whose node panics on purpose measures
/// its "before" after std's symbol cache is built.
///
/// The first backtrace symbolized in the process maps the binary's debug
/// info and keeps what it parsed on the heap for good (measured here:
/// 97 MiB of the mapped binary resident, 93-108 MiB of live heap). Done
/// outside the lock, it ran while another test's node ran its attack, and
/// that test counted it as the node's: `actor_flood 300` failed about one
/// run in three (RSS 24 MiB -> 213 MiB, live heap 94 MiB, where alone the
/// node left 20 MiB of RSS and under 1 MiB of live heap behind).
pub fn symbolize_a_backtrace() {
    if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
        let _serial = serial();
        let warm = std::backtrace::Backtrace::force_capture().to_string();
        assert!(!warm.is_empty(), "a backtrace was captured");
    }
}

#[path = "../common/components.rs"]
mod components;
pub use components::component;

/// Where each open file descriptor points (for failure messages).
fn open_files() -> String {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| {
                    let target = std::fs::read_link(e.path()).unwrap_or_default();
                    format!(
                        "{} -> {}",
                        e.file_name().to_string_lossy(),
                        target.display()
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// Open file descriptors, less wasmtime's `/proc/self/pagemap`: the
/// engine (`pagemap_scan`) opens it once per process, with the first node,
/// and keeps it for good, so it is no node's leak (it used to be counted
/// against whichever test ran first).
fn node_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| {
        d.filter_map(|e| e.ok())
            .filter(|e| !std::fs::read_link(e.path()).is_ok_and(|t| t.ends_with("pagemap")))
            .count()
    })
}

/// What the process holds, as far as a node can take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// Open file descriptors.
    pub fds: usize,
    /// Threads the node starts (`wray-*`, tokio's).
    pub node_threads: Vec<String>,
    /// Mappings of files that have no name any more, memfds, or files under
    /// `/dev/shm` or the spill directory.
    pub store_maps: Vec<String>,
    /// All mappings.
    pub maps: usize,
    /// Resident memory in KiB (after giving freed heap back to the OS).
    pub rss_kib: u64,
    /// Entries of `/dev/shm`.
    pub shm: BTreeSet<String>,
    /// Entries of the spill directory.
    pub spill: BTreeSet<String>,
}

/// Entries of `dir` (none when it cannot be read).
pub fn entries(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The process's usage now.
pub fn usage(spill: &Path) -> Usage {
    // SAFETY: glibc's malloc_trim takes no pointers; it hands freed heap
    // pages back so that RSS reflects what is really in use.
    unsafe { libc::malloc_trim(0) };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss_kib = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let spill_text = spill.display().to_string();
    let mut store_maps: Vec<String> = maps
        .lines()
        .filter(|l| {
            l.contains("(deleted)")
                || l.contains("memfd:")
                || l.contains("/dev/shm")
                || l.contains(&spill_text)
        })
        .map(|l| l.split_whitespace().skip(5).collect::<Vec<_>>().join(" "))
        .collect();
    store_maps.sort();
    let mut node_threads: Vec<String> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
                .map(|c| c.trim().to_string())
                .filter(|c| c.starts_with("wray") || c.starts_with("tokio"))
                .collect()
        })
        .unwrap_or_default();
    node_threads.sort();
    Usage {
        fds: node_fds(),
        node_threads,
        store_maps,
        maps: maps.lines().count(),
        rss_kib,
        shm: entries(Path::new("/dev/shm")),
        spill: entries(spill),
    }
}

/// Resident memory a node may leave behind, in KiB: what glibc keeps of
/// freed thread stacks and per-thread arenas (see [`assert_back`]).
const RSS_SLACK_KIB: u64 = 160 << 10;

/// Asserts that `after` is back to `before`: the same files, mappings of
/// the store and the spill files, no node thread left, at most a little
/// more anonymous memory and mappings (glibc keeps freed thread stacks, up
/// to 40 MiB, and per-thread arenas, up to 8 per core, mapped).
pub fn assert_back(label: &str, before: &Usage, spill: &Path) {
    // Threads exit just after they say so, and memory a node frees on its
    // way down (an instance's slot, the store's heap objects) may be given
    // back by another thread a moment later: give them that moment. A leak
    // stays past it.
    let start = Instant::now();
    let mut after = usage(spill);
    while (after.node_threads != before.node_threads
        || after.fds > before.fds
        || after.rss_kib > before.rss_kib + RSS_SLACK_KIB)
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
        after = usage(spill);
    }
    assert_eq!(
        after.node_threads, before.node_threads,
        "{label}: threads left"
    );
    // Fewer is fine (something of the harness closed meanwhile); more is a
    // leak.
    assert!(
        after.fds <= before.fds,
        "{label}: open files {} -> {}: {}",
        before.fds,
        after.fds,
        open_files()
    );
    assert_eq!(
        after.store_maps, before.store_maps,
        "{label}: mappings of store files"
    );
    assert_eq!(after.shm, before.shm, "{label}: files under /dev/shm");
    assert_eq!(after.spill, before.spill, "{label}: spill files");
    assert!(
        after.maps <= before.maps + 256,
        "{label}: mappings {} -> {}",
        before.maps,
        after.maps
    );
    assert!(
        after.rss_kib <= before.rss_kib + RSS_SLACK_KIB,
        "{label}: RSS {} KiB -> {} KiB",
        before.rss_kib,
        after.rss_kib
    );
}

/// The lines an attack printed, with helpers to check them.
#[derive(Debug)]
pub struct Lines {
    /// The attack and its parameters.
    pub label: String,
    /// Every line the driver printed.
    pub lines: Vec<String>,
    /// RSS growth while the node ran the attack, in KiB.
    pub rss_growth_kib: u64,
}

impl Lines {
    /// The line starting with `prefix`; fails the test, showing every line,
    /// when there is none.
    pub fn line(&self, prefix: &str) -> &str {
        self.lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| {
                panic!(
                    "{}: no line `{prefix}…` in:\n{}",
                    self.label,
                    self.lines.join("\n")
                )
            })
    }

    /// Asserts that a line starts with `prefix` and contains every one of
    /// `parts`.
    pub fn expect(&self, prefix: &str, parts: &[&str]) {
        let line = self.line(prefix);
        for part in parts {
            assert!(
                line.contains(part),
                "{}: `{part}` not in `{line}`",
                self.label
            );
        }
    }
}

/// A node configuration for attacks: 2 CPUs, a 64 MiB store spilling to
/// `spill`, 256 instance slots, 1 GiB per task, 60 s per task.
pub fn attack_config(spill: &Path, stdio: &Stdio) -> NodeConfig {
    NodeConfig {
        num_cpus: 2,
        task_timeout: Some(Duration::from_secs(60)),
        task_memory_limit: 1 << 30,
        stdio: stdio.clone(),
        max_instances: 256,
        object_store_memory: Some(64 << 20),
        spill_dir: Some(spill.to_path_buf()),
        ..NodeConfig::default()
    }
}

/// Runs attack `args` of the `hostile` fixture on a fresh node configured by
/// `tweak`, checks that the node then ran a plain task (`next: ok: 42`) and
/// that the process got back everything, and returns what it printed.
pub fn attack(tweak: impl FnOnce(&mut NodeConfig), args: &[&str]) -> Lines {
    run_on_node(
        tweak,
        |node| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let outcome = node.run_main_blocking("hostile", &args).expect("main runs");
            assert_eq!(outcome.result, Ok(()), "main of {args:?}");
        },
        args,
    )
}

/// Like [`attack`], with `drive` running whatever drivers it likes on the
/// node (`hostile` is deployed), and no check of what they printed.
pub fn run_on_node(
    tweak: impl FnOnce(&mut NodeConfig),
    drive: impl FnOnce(&Arc<Node>),
    args: &[&str],
) -> Lines {
    let _serial = serial();
    let label = args.join(" ");
    let spill = tempfile::tempdir().expect("spill dir");
    let before = usage(spill.path());
    let stdio = Stdio::memory();
    let mut config = attack_config(spill.path(), &stdio);
    tweak(&mut config);
    let rss_growth_kib;
    {
        let node = Arc::new(Node::start(config).expect("node starts"));
        node.deploy_file_blocking(component("hostile"))
            .expect("deploys");
        drive(&node);
        rss_growth_kib = usage(spill.path()).rss_kib.saturating_sub(before.rss_kib);
        let node = Arc::try_unwrap(node)
            .ok()
            .expect("the drivers are done with the node");
        drop(node);
    }
    assert_back(&label, &before, spill.path());
    let lines: Vec<String> = stdio.stdout_text().lines().map(str::to_string).collect();
    Lines {
        label,
        lines,
        rss_growth_kib,
    }
}
