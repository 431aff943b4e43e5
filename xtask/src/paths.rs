//! Where things live: the repository, cargo's target directory, staged components and
//! the per-user cache.

use std::env;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The repository root (the parent of this crate's manifest directory).
///
/// The directory `cargo run` names at run time (`CARGO_MANIFEST_DIR` in the
/// environment) comes first: a target directory shared by several
/// checkouts may hold an `xtask` built in another one, which cargo keeps
/// when the sources are the same, and whose built-in path would be that
/// checkout's. The path it was built in is the fallback.
pub fn repo_root() -> PathBuf {
    let xtask_dir = env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    xtask_dir
        .parent()
        .map_or_else(|| xtask_dir.clone(), Path::to_path_buf)
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` if set, else `<repo>/target`.
///
/// A relative `$CARGO_TARGET_DIR` is made absolute against the current directory, as
/// cargo does, so that commands run from other directories still agree on it.
pub fn target_dir() -> PathBuf {
    let cwd = env::current_dir().unwrap_or_else(|_| repo_root());
    target_dir_from(
        env::var_os("CARGO_TARGET_DIR").map(PathBuf::from),
        &repo_root(),
        &cwd,
    )
}

/// [`target_dir`] from its inputs.
fn target_dir_from(from_env: Option<PathBuf>, root: &Path, cwd: &Path) -> PathBuf {
    match from_env {
        Some(dir) if !dir.as_os_str().is_empty() => cwd.join(dir),
        _ => root.join("target"),
    }
}

/// Cargo's target directory for the guest workspaces: `<target>/guests`.
pub fn guests_target_dir() -> PathBuf {
    target_dir().join("guests")
}

/// Where built components are staged for tests and the CLI: `<target>/wasm`.
pub fn wasm_dir() -> PathBuf {
    target_dir().join("wasm")
}

/// The per-user cache for xtask's own markers: `$HOME/.cache/wray`.
///
/// # Errors
///
/// Fails when `$HOME` is not set.
pub fn cache_dir() -> Result<PathBuf> {
    let home = env::var_os("HOME").context("HOME is not set: cannot find ~/.cache/wray")?;
    Ok(PathBuf::from(home).join(".cache").join("wray"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_dir_defaults_to_repo_target() {
        let root = Path::new("/repo");
        assert_eq!(
            target_dir_from(None, root, Path::new("/x")),
            root.join("target")
        );
        let empty = Some(PathBuf::new());
        assert_eq!(
            target_dir_from(empty, root, Path::new("/x")),
            root.join("target")
        );
    }

    #[test]
    fn target_dir_from_env_is_absolute() {
        let root = Path::new("/repo");
        let abs = Some(PathBuf::from("/cache/target"));
        assert_eq!(
            target_dir_from(abs, root, Path::new("/x")),
            Path::new("/cache/target")
        );
        let rel = Some(PathBuf::from("out"));
        assert_eq!(
            target_dir_from(rel, root, Path::new("/x")),
            Path::new("/x/out")
        );
    }

    #[test]
    fn repo_root_holds_the_workspace_manifest() {
        assert!(repo_root().join("Cargo.toml").is_file());
        assert!(repo_root().join("xtask").is_dir());
    }
}
