//! The session directory of a node, and `wray objects`.
//!
//! A running node publishes its state in a session directory: a `wray
//! run`'s is `<tmp>/wray/session-<pid>`, a `wray start` node's is its node
//! directory (`node_dir`); `<tmp>/wray/session_latest` links to the last
//! one started, as Ray's `/tmp/ray/session_latest`. It writes
//! `process.json` (its process id and start time, so that readers can tell
//! whether it still runs) once, and every second, and once more when the
//! node stops,
//! - rewrites `objects.json` (the first [`LISTED_OBJECTS`] objects by id,
//!   and how many there are) and `state.json` (nodes, resources, exact task
//!   counts by state, errors, and at most [`LIVE_TASKS`] pending and running
//!   tasks), whose cost grows neither with the tasks that finished nor
//!   with the objects held;
//! - appends the tasks finished since to `tasks-<n>.jsonl`, one
//!   [`TaskRow`] a line: a file holds [`SEGMENT_TASKS`] rows, then the next
//!   begins and the one before the last is removed, so that the directory
//!   keeps between one and two files' worth, as the task table keeps its
//!   last [`MAX_FINISHED_TASKS`]. Writing as tasks finish keeps the exit
//!   short: what is left then is at most a second's tasks.
//!
//! `wray objects`, `wray status`, `wray tasks`, `wray errors` and
//! `wray timeline` read them (see `state_cmds`); the timeline is drawn from
//! the rows when asked for.

use std::fs::File;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use wray_host::bounds::MAX_FINISHED_TASKS;
use wray_host::Node;
use wray_host::TaskRow;

use crate::process::ProcessRef;

/// Pending and running tasks listed in `state.json`.
pub const LIVE_TASKS: usize = 1000;

/// Objects listed in `objects.json` (about 1 MB of JSON): a node holding
/// millions would otherwise rewrite gigabytes every second.
pub const LISTED_OBJECTS: usize = 10_000;

/// Finished tasks per `tasks-<n>.jsonl` file.
pub const SEGMENT_TASKS: u64 = MAX_FINISHED_TASKS as u64 / 2;

/// Finished tasks taken from the node at once (to bound the rows in memory).
const ROWS_PER_READ: usize = 10_000;

/// The directory the session readers read by default.
pub fn latest() -> PathBuf {
    crate::node_dir::root().join("session_latest")
}

/// The session directory of a `wray run` in this process.
pub fn run_dir() -> PathBuf {
    crate::node_dir::root().join(format!("session-{}", std::process::id()))
}

/// The file naming the process that publishes a session.
const PROCESS_FILE: &str = "process.json";

/// The objects as `objects.json` lists them.
fn listing((objects, total): (Vec<wray_api::ObjectInfo>, usize)) -> wray_api::ObjectListing {
    wray_api::ObjectListing {
        objects,
        total: total as u64,
    }
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(tmp, path)
}

/// The file of segment `n`.
fn segment(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("tasks-{n}.jsonl"))
}

/// The `tasks-<n>.jsonl` files of `dir`, oldest first.
fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n = name.strip_prefix("tasks-")?.strip_suffix(".jsonl")?;
            Some((n.parse().ok()?, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// The finished tasks' log: `tasks-<n>.jsonl` files (see the module docs).
struct TaskLog {
    dir: PathBuf,
    /// The number of the next finished task to write.
    next: u64,
    /// The segment written now, its rows, and its file.
    segment: u64,
    rows: u64,
    file: Option<BufWriter<File>>,
    /// Finished tasks dropped by the node before they were written.
    missed: u64,
}

impl TaskLog {
    fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            next: 0,
            segment: 0,
            rows: 0,
            file: None,
            missed: 0,
        }
    }

    /// Appends the tasks finished since the last call.
    fn append(
        &mut self,
        source: &impl Fn(u64, usize) -> (Vec<TaskRow>, u64),
    ) -> std::io::Result<()> {
        loop {
            let (rows, next) = source(self.next, ROWS_PER_READ);
            // Rows dropped from the table before they were read (saturating: the
            // source's numbering is its own).
            let read = u64::try_from(rows.len()).unwrap_or(u64::MAX);
            self.missed = self
                .missed
                .saturating_add(next.saturating_sub(self.next).saturating_sub(read));
            self.next = next;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                let file = self.file()?;
                serde_json::to_writer(&mut *file, row)?;
                file.write_all(b"\n")?;
                self.rows += 1;
            }
        }
        if let Some(f) = &mut self.file {
            f.flush()?;
        }
        Ok(())
    }

    /// The file to append to: a new segment when the current one is full
    /// (the one before it is removed then).
    fn file(&mut self) -> std::io::Result<&mut BufWriter<File>> {
        if self.rows >= SEGMENT_TASKS {
            if let Some(mut f) = self.file.take() {
                f.flush()?;
            }
            self.segment += 1;
            self.rows = 0;
            if let Some(old) = self.segment.checked_sub(2) {
                let _ = std::fs::remove_file(segment(&self.dir, old));
            }
        }
        match &mut self.file {
            Some(f) => Ok(f),
            file => Ok(file.insert(BufWriter::new(File::create(segment(
                &self.dir,
                self.segment,
            ))?))),
        }
    }
}

/// A session: its directory and the thread publishing the node's state.
pub struct Session {
    /// Dropping it wakes the publisher, which publishes once more and stops.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Session {
    /// Creates the session directory `dir`, points `session_latest` at it
    /// and starts publishing `node`'s state. `None` (with a log line) when
    /// the directory cannot be made: a run never fails for it.
    pub fn start(node: &Node, dir: PathBuf) -> Option<Self> {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            tracing::warn!("no session directory {}: {e}", dir.display());
            return None;
        }
        // A run before with the same process id left its log here.
        for old in segments(&dir) {
            let _ = std::fs::remove_file(old);
        }
        let process = serde_json::to_string(&ProcessRef::current()).unwrap_or_default();
        if let Err(e) = write_atomically(&dir.join(PROCESS_FILE), &process) {
            tracing::warn!("cannot write {}: {e}", dir.join(PROCESS_FILE).display());
        }
        let link = latest();
        let _ = std::fs::remove_file(&link);
        if let Err(e) = std::os::unix::fs::symlink(&dir, &link) {
            tracing::warn!("cannot link {}: {e}", link.display());
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let objects = node.objects_source(LISTED_OBJECTS);
        let status = node.status_source(LIVE_TASKS);
        let finished = node.finished_source();
        let (file, state_file) = (dir.join("objects.json"), dir.join("state.json"));
        let mut log = TaskLog::new(&dir);
        let mut publish = move || {
            if let Err(e) = log.append(&finished) {
                tracing::warn!("cannot write the tasks of {}: {e}", log.dir.display());
            }
            if let Ok(text) = serde_json::to_string(&listing(objects())) {
                let _ = write_atomically(&file, &text);
            }
            if let Some(mut state) = status() {
                state.tasks_not_logged = log.missed;
                if let Ok(text) = serde_json::to_string(&state) {
                    let _ = write_atomically(&state_file, &text);
                }
            }
        };
        // Once before it returns, so that the session is readable (and a
        // node killed at once still has a state to be shown dead with).
        publish();
        let thread = std::thread::Builder::new()
            .name("wray-session".into())
            .spawn(move || loop {
                if stopped.recv_timeout(Duration::from_secs(1)) != Err(RecvTimeoutError::Timeout) {
                    publish();
                    break;
                }
                publish();
            })
            .ok();
        Some(Self {
            stop: Some(stop),
            thread,
        })
    }

    /// Publishes the final state (the node must still be up) and stops.
    pub fn finish(mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `--session DIR` or `--node DIR|ID`: which session a listing command
/// reads.
#[derive(Args)]
pub struct SessionArg {
    /// Session directory: a `wray run`'s, or a `wray start` node's
    /// directory (default: the latest started).
    #[arg(long, value_name = "DIR")]
    session: Option<PathBuf>,
    /// A `wray start` node on this machine: its directory, or its process
    /// id or node id (its session is its directory).
    #[arg(long = "node", value_name = "DIR|ID", conflicts_with = "session")]
    node: Option<String>,
}

impl SessionArg {
    /// The session in `dir`.
    pub fn at(dir: PathBuf) -> Self {
        Self {
            session: Some(dir),
            node: None,
        }
    }

    /// The session directory: `--session`, `--node`'s directory, or the
    /// latest.
    ///
    /// # Errors
    /// A `--node` that names no node on this machine.
    fn resolve(&self) -> anyhow::Result<PathBuf> {
        match (&self.session, &self.node) {
            (Some(dir), _) => Ok(dir.clone()),
            (None, Some(node)) => crate::node_dir::resolve(node),
            (None, None) => Ok(latest()),
        }
    }

    /// The session directory (the latest when `--node` names none: every
    /// command reads a file with [`SessionArg::read`] first, which says so).
    pub fn dir(&self) -> PathBuf {
        self.resolve().unwrap_or_else(|_| latest())
    }

    /// The process that publishes the session, when it says; whether it
    /// still runs is [`ProcessRef::is_alive`].
    pub fn process(&self) -> Option<ProcessRef> {
        let text = std::fs::read_to_string(self.dir().join(PROCESS_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The finished tasks the session logged, in the order they finished
    /// (a line being written, or not a row, is skipped).
    ///
    /// # Errors
    /// A log file that cannot be read.
    pub fn finished_tasks(&self) -> anyhow::Result<Vec<TaskRow>> {
        let mut rows = Vec::new();
        for file in segments(&self.dir()) {
            let reader = match File::open(&file) {
                Ok(f) => std::io::BufReader::new(f),
                // Removed by the writer since listed: its rows were old.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
            };
            for line in reader.lines() {
                let line = line.with_context(|| format!("cannot read {}", file.display()))?;
                rows.extend(serde_json::from_str::<TaskRow>(&line).ok());
            }
        }
        Ok(rows)
    }

    /// Reads `name` of the session, a JSON `T`.
    ///
    /// # Errors
    /// No such file (no session yet), or not a `T`.
    pub fn read<T: serde::de::DeserializeOwned>(&self, name: &str) -> anyhow::Result<T> {
        let file = self.resolve()?.join(name);
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("no {name} at {} (has `wray run` run?)", file.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not what wray writes there", file.display()))
    }
}

/// Arguments of `wray objects`.
#[derive(Args)]
pub struct ObjectsArgs {
    #[command(flatten)]
    session: SessionArg,
    #[command(flatten)]
    address: crate::remote_state::AddressArg,
}

/// Prints the objects: id, size, location, holders: of a session (by
/// id), or with `--address` of every node's store (newest first, with the
/// node holding each).
///
/// # Errors
/// No session, or an unreadable `objects.json`; the node at `--address`
/// cannot be reached.
pub fn objects(args: ObjectsArgs) -> anyhow::Result<()> {
    let remote = args.address.client()?;
    let (all, total) = match &remote {
        Some(client) => {
            let read = args
                .address
                .rows::<wray_api::ObjectList>(client, "/v1/objects")?;
            crate::remote_state::tell_unreachable(&read.unreachable);
            let total = read.rows.len() as u64 + u64::from(read.more);
            (read.rows, total)
        }
        None => {
            let listing: wray_api::ObjectListing = args.session.read("objects.json")?;
            (listing.objects, listing.total)
        }
    };
    // A cluster's objects name the node holding each.
    let node = |o: &wray_api::ObjectInfo| {
        if remote.is_some() {
            format!("  {}", o.node_id)
        } else {
            String::new()
        }
    };
    let heading = if remote.is_some() { "  NODE" } else { "" };
    println!(
        "{:<40}  {:>12}  {:<13}  {:>7}{heading}",
        "OBJECT ID", "SIZE", "LOCATION", "HOLDERS"
    );
    for o in &all {
        println!(
            "{:<40}  {:>12}  {:<13}  {:>7}{}",
            o.id,
            o.size,
            o.location,
            o.holders,
            node(o)
        );
    }
    if total > all.len() as u64 {
        let which = if remote.is_some() { "newest" } else { "first" };
        println!("{total} objects (the {which} {} listed)", all.len());
    } else {
        println!("{total} objects");
    }
    Ok(())
}
