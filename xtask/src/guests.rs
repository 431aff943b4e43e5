//! `cargo xtask build-guests`: build the guest workspaces to components and stage them.
//!
//! Each workspace in [`GUEST_WORKSPACES`] is built with `cargo component build --release`
//! into `<target>/guests`, then every `<target>/guests/wasm32-wasip1/release/*.wasm` is
//! copied to `<target>/wasm/` (e.g. `wordcount.wasm`, `counter.wasm`), where the tests
//! (`WRAY_WASM_DIR`) and the demo find them. The Python examples are built
//! there too ([`crate::python::build_examples`]).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::paths;
use crate::run;
use crate::setup;
use crate::toolchain::{GuestToolchain, GUEST_TARGET};

/// The guest workspaces, relative to the repository root.
pub const GUEST_WORKSPACES: &[&str] = &["examples", "test-programs"];

/// Builds every guest workspace that exists with `toolchain` and stages its components.
///
/// # Errors
///
/// Fails when a build fails or a component cannot be copied.
pub fn build_guests(toolchain: GuestToolchain) -> Result<()> {
    let root = paths::repo_root();
    let guests_target = paths::guests_target_dir();
    let mut built = 0;
    for name in GUEST_WORKSPACES {
        let dir = root.join(name);
        if !dir.join("Cargo.toml").is_file() {
            println!("skipping {name}/: no Cargo.toml there yet");
            continue;
        }
        run::header(&format!("build-guests: {name}/"));
        let mut cmd = run::cargo();
        cmd.current_dir(&dir)
            .env("CARGO_TARGET_DIR", &guests_target)
            .envs(toolchain.build_env().iter().copied())
            .args(toolchain.build_args());
        run::run(&mut cmd).with_context(|| format!("building the guests in {name}/"))?;
        built += 1;
    }
    if built == 0 {
        println!("no guest workspace to build");
        return Ok(());
    }
    let release = guests_target.join(GUEST_TARGET).join("release");
    stage_components(&release, &paths::wasm_dir())?;
    crate::python::build_examples(&paths::wasm_dir())?;
    crate::js::build_examples(&paths::repo_root(), &paths::wasm_dir())?;
    run::header("build-guests: examples/c/ (clang, wasi-libc)");
    crate::c_guests::build(&paths::repo_root(), &paths::wasm_dir()).map(drop)
}

/// Copies every `*.wasm` file directly in `from` to `to`, keeping its name.
fn stage_components(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    let entries = fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name() else {
            continue;
        };
        if path.extension().is_some_and(|ext| ext == "wasm") && path.is_file() {
            let dest = to.join(name);
            fs::copy(&path, &dest)
                .with_context(|| format!("cannot copy {} to {}", path.display(), dest.display()))?;
            names.push(name.to_string_lossy().into_owned());
        }
    }
    names.sort();
    println!("staged in {}: {}", to.display(), names.join(" "));
    Ok(())
}

/// Sets up, builds the guests and the workspace, for `step` (the command
/// that needs them): what the demo, the fuzzer and the benchmarks run on.
///
/// # Errors
///
/// Fails when a set-up or build step fails.
pub fn build_all(step: &str) -> Result<()> {
    let toolchain = setup::setup()?;
    build_guests(toolchain)?;
    // The same package selection and targets as `cargo xtask test`, so both
    // share one build of every dependency (building `-p wray-host` alone
    // unifies features differently and rebuilds wasmtime: ~9 minutes).
    run::header(&format!(
        "{step}: cargo build --release --workspace --all-targets"
    ));
    run::run(run::cargo().args(["build", "--release", "--workspace", "--all-targets"]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_only_wasm_files() {
        let scratch = std::env::temp_dir().join(format!("xtask-stage-{}", std::process::id()));
        let (from, to) = (scratch.join("release"), scratch.join("wasm"));
        fs::create_dir_all(from.join("deps")).unwrap();
        fs::write(from.join("counter.wasm"), b"\0asm").unwrap();
        fs::write(from.join("counter.d"), b"deps").unwrap();
        fs::write(from.join("deps").join("inner.wasm"), b"\0asm").unwrap();

        stage_components(&from, &to).unwrap();

        let mut staged: Vec<_> = fs::read_dir(&to)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        staged.sort();
        assert_eq!(staged, ["counter.wasm"]);
        fs::remove_dir_all(&scratch).unwrap();
    }
}
