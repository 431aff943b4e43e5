//! The session directory of a `wray run`, and `wray objects`.
//!
//! Until nodes run as daemons with an API, a running `wray run` publishes
//! its state in a session directory (`<tmp>/wray/session-<pid>`, linked from
//! `<tmp>/wray/session_latest`, as Ray's `/tmp/ray/session_latest`): it
//! rewrites `objects.json` and `state.json` (nodes, resources, task counts,
//! the last [`LIVE_TASKS`] tasks, errors) every second, and when the driver
//! ends writes them once more with every task, plus `timeline.json`.
//! `wray objects`, `wray status`, `wray tasks`, `wray errors` and
//! `wray timeline` read them (see `state_cmds`).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use wray_host::objects::ObjectInfo;
use wray_host::Node;

/// Tasks listed in `state.json` while the driver runs (all of them once it
/// has ended).
pub const LIVE_TASKS: usize = 1000;

/// Root of session directories.
fn root() -> PathBuf {
    std::env::temp_dir().join("wray")
}

/// The directory `wray objects` reads by default.
pub fn latest() -> PathBuf {
    root().join("session_latest")
}

/// The objects as JSON: `[{"id", "size", "location", "holders"}]`.
fn to_json(objects: &[ObjectInfo]) -> serde_json::Value {
    objects
        .iter()
        .map(|o| {
            serde_json::json!({
                "id": o.id.to_string(),
                "size": o.size,
                "location": o.location,
                "holders": o.holders,
            })
        })
        .collect()
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(tmp, path)
}

/// A session: its directory and the thread publishing the node's objects.
pub struct Session {
    dir: PathBuf,
    /// Dropping it wakes and stops the publisher at once.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Session {
    /// Creates the session directory, points `session_latest` at it and
    /// starts publishing `node`'s objects. `None` (with a log line) when the
    /// directory cannot be made: a run never fails for it.
    pub fn start(node: &Node) -> Option<Self> {
        let dir = root().join(format!("session-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            tracing::warn!("no session directory {}: {e}", dir.display());
            return None;
        }
        let link = latest();
        let _ = std::fs::remove_file(&link);
        if let Err(e) = std::os::unix::fs::symlink(&dir, &link) {
            tracing::warn!("cannot link {}: {e}", link.display());
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let objects = node.objects_source();
        let status = node.status_source(LIVE_TASKS);
        let (file, state_file) = (dir.join("objects.json"), dir.join("state.json"));
        let thread = std::thread::Builder::new()
            .name("wray-session".into())
            .spawn(move || loop {
                let _ = write_atomically(&file, &to_json(&objects()).to_string());
                let _ = write_atomically(&state_file, &status().to_string());
                if stopped.recv_timeout(Duration::from_secs(1)) != Err(RecvTimeoutError::Timeout) {
                    break;
                }
            })
            .ok();
        Some(Self {
            dir,
            stop: Some(stop),
            thread,
        })
    }

    /// Stops publishing and writes the final state of `node`: objects,
    /// state with every task, and the timeline.
    pub fn finish(mut self, node: &Node) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let files = [
            ("objects.json", to_json(&node.objects())),
            ("state.json", node.status_source(usize::MAX)()),
            ("timeline.json", node.timeline()),
        ];
        for (name, value) in files {
            let file = self.dir.join(name);
            if let Err(e) = write_atomically(&file, &value.to_string()) {
                tracing::warn!("cannot write {}: {e}", file.display());
            }
        }
    }
}

/// `--session DIR`: which session a listing command reads.
#[derive(Args)]
pub struct SessionArg {
    /// Session directory (default: the latest `wray run`'s).
    #[arg(long, value_name = "DIR")]
    session: Option<PathBuf>,
}

impl SessionArg {
    /// Reads `name` of the session as JSON.
    ///
    /// # Errors
    /// No such file (no session yet), or not JSON.
    pub fn read(&self, name: &str) -> anyhow::Result<serde_json::Value> {
        let dir = self.session.clone().unwrap_or_else(latest);
        let file = dir.join(name);
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("no {name} at {} (has `wray run` run?)", file.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))
    }
}

/// Arguments of `wray objects`.
pub type ObjectsArgs = SessionArg;

/// Prints the objects of a session: id, size, location, holders.
///
/// # Errors
/// No session, or an unreadable `objects.json`.
pub fn objects(args: ObjectsArgs) -> anyhow::Result<()> {
    let listing = args.read("objects.json")?;
    let all = listing
        .as_array()
        .context("objects.json is not an object listing")?;
    println!(
        "{:<40}  {:>12}  {:<13}  {:>7}",
        "OBJECT ID", "SIZE", "LOCATION", "HOLDERS"
    );
    for o in all {
        println!(
            "{:<40}  {:>12}  {:<13}  {:>7}",
            o["id"].as_str().unwrap_or("?"),
            o["size"].as_u64().unwrap_or(0),
            o["location"].as_str().unwrap_or("?"),
            o["holders"].as_u64().unwrap_or(0)
        );
    }
    println!("{} objects", all.len());
    Ok(())
}
