//! `cargo xtask demo`: the distributed word count over the Rust standard library sources.
//!
//! Installs and builds only what the word count needs: the Rust guest toolchain and
//! `protoc` ([`Scope::Demo`]; no cargo-component), the word count guest alone
//! ([`guests::build_demo_guest`]) and the `wray` binary alone ([`HOST_BUILD`]); then
//! runs `wray run <target>/wasm/wordcount.wasm --dir <corpus>::/data -- /data` and
//! exits with its status. The corpus is `/usr/lib/rustlib/src/rust/library` from
//! Debian's `rust-web-src`, which the set-up installs.

use std::process::{self, Command};

use anyhow::Result;

use crate::run;
use crate::setup::{self, Scope};
use crate::{guests, paths};

/// The word count's input: the Rust standard library sources from `rust-web-src`.
const CORPUS: &str = "/usr/lib/rustlib/src/rust/library";

/// The cargo arguments that build the `wray` binary and nothing else (no test
/// binaries, no other crate's targets).
///
/// `--workspace` (not `--package wray-cli`) resolves features as `cargo xtask test`'s
/// `cargo build --workspace --all-targets` does, so every unit this builds is one of
/// the test build's and the two share one build of wasmtime. With `--package
/// wray-cli`, `indexmap`, `semver` and `serde_json` get other features (the guest SDK's
/// and the component tools' are left out), so wasmtime and everything above it are
/// built a second time (checked with cargo's `--unit-graph`: 0 units of this build
/// missing from the test build's, against 5 with `--package wray-cli`).
pub const HOST_BUILD: &[&str] = &["build", "--release", "--workspace", "--bin", "wray"];

/// Runs the demo; on success does not return but exits with `wray run`'s status.
///
/// # Errors
///
/// Fails when a set-up or build step fails or `wray` cannot be started.
pub fn demo(num_cpus: Option<u32>) -> Result<()> {
    let toolchain = setup::setup_for(Scope::Demo)?;
    let wasm = guests::build_demo_guest(toolchain)?;
    run::header("demo: build the wray binary (only)");
    run::run(run::cargo().args(HOST_BUILD))?;
    run::header("demo: word count over the Rust standard library sources");
    let mut wray = Command::new(paths::target_dir().join("release").join("wray"));
    wray.arg("run").arg(&wasm);
    if let Some(n) = num_cpus {
        wray.args(["--num-cpus", &n.to_string()]);
    }
    wray.args(["--dir", &format!("{CORPUS}::/data"), "--", "/data"]);
    let status = run::status(&mut wray)?;
    process::exit(status.code().unwrap_or(1));
}
