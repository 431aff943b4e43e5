//! The session directory of a `wray run`, and `wray objects`.
//!
//! Until nodes run as daemons with an API, a running `wray run` publishes
//! its state in a session directory (`<tmp>/wray/session-<pid>`, linked from
//! `<tmp>/wray/session_latest`, as Ray's `/tmp/ray/session_latest`): it
//! rewrites `objects.json` every second and once more when the driver ends.
//! `wray objects` prints the latest one.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use wray_host::object_store::ObjectInfo;
use wray_host::Node;

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
        let file = dir.join("objects.json");
        let thread = std::thread::Builder::new()
            .name("wray-session".into())
            .spawn(move || loop {
                let _ = write_atomically(&file, &to_json(&objects()).to_string());
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

    /// Stops publishing and writes the final state of `node`'s objects.
    pub fn finish(mut self, node: &Node) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let file = self.dir.join("objects.json");
        if let Err(e) = write_atomically(&file, &to_json(&node.objects()).to_string()) {
            tracing::warn!("cannot write {}: {e}", file.display());
        }
    }
}

/// Arguments of `wray objects`.
#[derive(Args)]
pub struct ObjectsArgs {
    /// Session directory (default: the latest `wray run`'s).
    #[arg(long, value_name = "DIR")]
    session: Option<PathBuf>,
}

/// Prints the objects of a session: id, size, location, holders.
///
/// # Errors
/// No session, or an unreadable `objects.json`.
pub fn objects(args: ObjectsArgs) -> anyhow::Result<()> {
    let dir = args.session.unwrap_or_else(latest);
    let file = dir.join("objects.json");
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "no object listing at {} (has `wray run` run?)",
            file.display()
        )
    })?;
    let all: Vec<serde_json::Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an object listing", file.display()))?;
    println!(
        "{:<40}  {:>12}  {:<13}  {:>7}",
        "OBJECT ID", "SIZE", "LOCATION", "HOLDERS"
    );
    for o in &all {
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
