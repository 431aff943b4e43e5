//! The embedded node `wray run` starts: one
//! node in this process, with one component deployed on it.

use std::path::Path;

use anyhow::Context;
use wray_host::{Node, NodeConfig};

/// Starts a node with `config` and deploys the component at `path`; returns
/// the node and the name the component was deployed under.
///
/// # Errors
/// The node cannot start (bad configuration, wasmtime), or the file is not
/// a readable wray component.
pub fn start_with_component(
    config: NodeConfig,
    path: &Path,
) -> anyhow::Result<(std::sync::Arc<Node>, String)> {
    let node = Node::start(config)?;
    let name = deploy(&node, path)?;
    Ok((node, name))
}

/// Deploys the component at `path` on `node` under its file stem; returns
/// that name.
///
/// # Errors
/// The file is not a readable wray component.
pub fn deploy(node: &Node, path: &Path) -> anyhow::Result<String> {
    let app = node
        .deploy_file_blocking(path)
        .with_context(|| format!("deploying {}", path.display()))?;
    Ok(app.name)
}
