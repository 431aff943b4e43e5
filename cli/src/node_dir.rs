//! Node directories: where a `wray start` node keeps what the commands on
//! this machine find it by, and how `--node DIR|ID` names one.
//!
//! `<tmp>/wray/node-<pid>` holds, while the node runs, `node.json` (its
//! process id and start time, node id, URL), `token` (mode 0600) and, over
//! https, `cert.pem`; and for good, `node.log` (rotated: `node.log.1` ...)
//! and the session files `wray status`, `tasks`, `errors` and `timeline`
//! read. `<tmp>/wray/node_latest` links to the last node that started.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::process::ProcessRef;

/// Root of node and session directories.
pub fn root() -> PathBuf {
    std::env::temp_dir().join("wray")
}

/// The link to the directory of the node started last.
pub fn latest() -> PathBuf {
    root().join("node_latest")
}

/// The directory of the node whose process id is `pid`.
pub fn node_dir(pid: u32) -> PathBuf {
    root().join(format!("node-{pid}"))
}

/// The files of a running node, removed when it stops.
pub const RUNNING_FILES: [&str; 3] = ["node.json", "token", "cert.pem"];

/// The node directory's description of a running node.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct NodeFile {
    /// Its process: id and start time.
    #[serde(flatten)]
    pub process: ProcessRef,
    /// The node's id (hex).
    #[serde(default)]
    pub node_id: String,
    /// Base URL of its HTTP API: `http://` or `https://`, and the
    /// loopback address when it listens on every address.
    pub url: String,
    /// Whether requests need the token.
    pub auth: bool,
    /// Over https: the certificate the clients trust (the node directory's
    /// copy of `--tls-cert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
}

/// The node described in `dir`, whether or not it still runs.
///
/// # Errors
/// No `node.json` there (no node running), or it is unreadable.
pub fn read_node_file(dir: &Path) -> anyhow::Result<NodeFile> {
    let path = dir.join("node.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "no node is running ({} is missing: `wray start` one)",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
}

/// The node described in `dir`, if its process still runs.
///
/// # Errors
/// No node there, or its process has ended without stopping (killed):
/// the error names the stale directory.
pub fn running_node(dir: &Path) -> anyhow::Result<NodeFile> {
    let node = read_node_file(dir)?;
    if !node.process.is_alive() {
        bail!("{}", dead_message(dir, &node));
    }
    Ok(node)
}

/// Why the node of `dir` is not running though its `node.json` is there.
pub fn dead_message(dir: &Path, node: &NodeFile) -> String {
    format!(
        "the node of {} is dead: its process {} ended without stopping (killed?), \
         so the directory is stale (`wray stop --node {}` clears it)",
        shown(dir),
        node.process.pid,
        shown(dir)
    )
}

/// `dir`, resolved when it is the `node_latest` link.
pub fn shown(dir: &Path) -> String {
    std::fs::canonicalize(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// Removes the files of a running node from `dir` (its log and session
/// files stay).
pub fn remove_running_files(dir: &Path) {
    for name in RUNNING_FILES {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

/// The node directory `--node` names: a directory (as a path, or by its
/// name under the root: `node-<pid>`), or the process id or node id of a
/// `wray start` node on this machine.
///
/// # Errors
/// Nothing on this machine goes by that name.
pub fn resolve(selector: &str) -> anyhow::Result<PathBuf> {
    let path = Path::new(selector);
    if path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let under_root = root().join(selector);
    if selector.starts_with("node-") && under_root.is_dir() {
        return Ok(under_root);
    }
    if let Ok(pid) = selector.parse::<u32>() {
        let dir = node_dir(pid);
        if dir.is_dir() {
            return Ok(dir);
        }
        bail!(
            "--node {selector}: no node directory {} (no `wray start` of process {pid})",
            dir.display()
        );
    }
    let found = node_dirs().into_iter().find(|dir| {
        read_node_file(dir).is_ok_and(|n| !n.node_id.is_empty() && n.node_id == selector)
    });
    found.with_context(|| {
        format!(
            "--node {selector}: not a directory, nor the process id or node id of a running \
             node under {}",
            root().display()
        )
    })
}

/// The running node whose URL is `url`, among the node directories.
pub fn find_by_url(url: &str) -> Option<PathBuf> {
    let url = url.trim_end_matches('/');
    node_dirs()
        .into_iter()
        .find(|dir| read_node_file(dir).is_ok_and(|n| n.url == url))
}

/// Every `node-<pid>` directory under the root.
fn node_dirs() -> Vec<PathBuf> {
    std::fs::read_dir(root())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("node-"))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect()
}
