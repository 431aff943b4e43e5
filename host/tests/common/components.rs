//! Finding the built components; shared by the `all` and `hostile` test
//! binaries of this crate and of `cli/` (each includes this file with
//! `#[path]`).

use std::path::PathBuf;

/// Directory holding the built components (`WRAY_WASM_DIR`, else
/// `<target>/wasm`).
pub fn wasm_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WRAY_WASM_DIR") {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("wasm")
}

/// Path of the built component `name`; panics with the command that builds
/// it when it is missing.
pub fn component(name: &str) -> PathBuf {
    let path = wasm_dir().join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `cargo xtask build-guests` (or `cargo xtask test`) first",
        path.display()
    );
    path
}
