//! `cargo xtask demo`: the distributed word count over the Rust standard library sources.
//!
//! Sets up, builds the guests and the workspace (as `cargo xtask test` does), then
//! runs `wray run <target>/wasm/wordcount.wasm --dir <corpus>::/data -- /data` and exits
//! with its status. The corpus is `/usr/lib/rustlib/src/rust/library` from Debian's
//! `rust-web-src`, which [`setup`](crate::setup) installs.

use std::process::{self, Command};

use anyhow::{bail, Result};

use crate::run;
use crate::{guests, paths};

/// The word count's input: the Rust standard library sources from `rust-web-src`.
const CORPUS: &str = "/usr/lib/rustlib/src/rust/library";

/// Runs the demo; on success does not return but exits with `wray run`'s status.
///
/// # Errors
///
/// Fails when a set-up or build step fails or `wray` cannot be started.
pub fn demo(num_cpus: Option<u32>) -> Result<()> {
    guests::build_all("demo")?;
    let wasm = paths::wasm_dir().join("wordcount.wasm");
    if !wasm.is_file() {
        bail!(
            "{} was not built: is examples/wordcount missing?",
            wasm.display()
        );
    }
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
