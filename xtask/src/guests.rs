//! `cargo xtask build-guests`: build the guest workspaces to components and stage them.
//!
//! Each workspace in [`GUEST_WORKSPACES`] is built with `cargo component build --release
//! --keep-going` into `<target>/guests`, then every
//! `<target>/guests/wasm32-wasip1/release/*.wasm` is copied to `<target>/wasm/` (e.g.
//! `wordcount.wasm`, `counter.wasm`), where the tests (`WRAY_WASM_DIR`) and the demo find
//! them. The Python, JavaScript and C examples are built there too
//! ([`crate::python::build_examples`], [`crate::js::build_examples`],
//! [`crate::c_guests::build_all`]).
//!
//! A failing guest does not stop the others: every guest is tried, then the command
//! fails listing each one that did not build (a workspace that fails is rebuilt crate
//! by crate to name every failing crate, not only the first). A crate under a guest
//! workspace's directory that is not one of its members is never built: it gets a
//! warning.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::paths;
use crate::run;
use crate::setup;
use crate::toolchain::{GuestToolchain, GUEST_TARGET};

/// The guest workspaces, relative to the repository root.
pub const GUEST_WORKSPACES: &[&str] = &["examples", "test-programs"];

/// The demo's guest: (its workspace, its package), built to `wordcount.wasm`.
pub const DEMO_GUEST: (&str, &str) = ("examples", "wordcount");

/// A guest that did not build.
#[derive(Debug)]
pub struct BuildFailure {
    /// What failed, from the repository root: `examples/wordcount`,
    /// `examples/python/wordcount`.
    pub what: String,
    /// Why.
    pub why: anyhow::Error,
}

impl fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:#}", self.what, self.why)
    }
}

/// Fails listing `failed`, if any.
///
/// # Errors
///
/// When `failed` is not empty.
pub fn fail_listing(failed: &[BuildFailure]) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = failed.iter().map(|f| format!("  - {f}")).collect();
    bail!(
        "{} guest build(s) failed (the others were built):\n{}",
        failed.len(),
        list.join("\n")
    )
}

/// The `cargo component build` command of `toolchain`, into the guests' target dir.
fn guest_cargo(toolchain: GuestToolchain) -> Command {
    let mut cmd = run::cargo();
    cmd.env("CARGO_TARGET_DIR", paths::guests_target_dir())
        .envs(toolchain.build_env().iter().copied())
        .args(toolchain.build_args());
    cmd
}

/// Builds every guest (each workspace in [`GUEST_WORKSPACES`] that exists, the Python,
/// JavaScript and C examples) with `toolchain`, and stages the components.
///
/// # Errors
///
/// Fails after trying every guest when any failed, listing each one; or when a
/// component cannot be staged.
pub fn build_guests(toolchain: GuestToolchain) -> Result<()> {
    let root = paths::repo_root();
    let mut failed = Vec::new();
    let mut built = 0;
    for name in GUEST_WORKSPACES {
        let dir = root.join(name);
        if !dir.join("Cargo.toml").is_file() {
            println!("skipping {name}/: no Cargo.toml there yet");
            continue;
        }
        warn_of_non_members(&dir, name);
        run::header(&format!("build-guests: {name}/"));
        failed.extend(build_workspace(&dir, name, &|| guest_cargo(toolchain)));
        built += 1;
    }
    if built == 0 {
        println!("no guest workspace to build");
        return Ok(());
    }
    let release = paths::guests_target_dir()
        .join(GUEST_TARGET)
        .join("release");
    if release.is_dir() {
        stage_components(&release, &paths::wasm_dir(), |_| true)?;
    }
    failed.extend(crate::python::build_examples(&paths::wasm_dir()));
    failed.extend(crate::js::build_examples(&root, &paths::wasm_dir()));
    run::header("build-guests: examples/c/ (clang, wasi-libc)");
    failed.extend(crate::c_guests::build_all(&root, &paths::wasm_dir()));
    fail_listing(&failed)
}

/// Builds the demo's guest alone ([`DEMO_GUEST`]) and stages it as `<name>.wasm`,
/// without cargo-component (which takes minutes to install): its core module with a
/// plain `cargo build` into `<target>/guests-core` (apart from cargo-component's
/// `<target>/guests`, which rewrites its outputs in place), made a component here
/// ([`componentize`](crate::c_bindings::componentize), what cargo-component does
/// for a library crate).
///
/// # Errors
///
/// Fails when it does not build, cannot be made a component or cannot be staged.
pub fn build_demo_guest(toolchain: GuestToolchain) -> Result<PathBuf> {
    let (workspace, package) = DEMO_GUEST;
    run::header(&format!("demo: build {workspace}/{package} (only)"));
    let core_target = paths::target_dir().join("guests-core");
    let mut cmd = run::cargo();
    cmd.current_dir(paths::repo_root().join(workspace))
        .env("CARGO_TARGET_DIR", &core_target)
        .envs(toolchain.build_env().iter().copied())
        .args(toolchain.core_build_args())
        .args(["--package", package]);
    run::run(&mut cmd).with_context(|| format!("building {workspace}/{package}"))?;
    let file = format!("{package}.wasm");
    let module_path = core_target.join(GUEST_TARGET).join("release").join(&file);
    let module =
        fs::read(&module_path).with_context(|| format!("cannot read {}", module_path.display()))?;
    let component = crate::c_bindings::componentize(&module)
        .with_context(|| format!("making a component of {}", module_path.display()))?;
    let wasm_dir = paths::wasm_dir();
    fs::create_dir_all(&wasm_dir)
        .with_context(|| format!("cannot create {}", wasm_dir.display()))?;
    let staged = wasm_dir.join(file);
    fs::write(&staged, component).with_context(|| format!("cannot write {}", staged.display()))?;
    println!("staged {}", staged.display());
    Ok(staged)
}

/// Builds the workspace in `dir` (called `label`) with `cargo()` (a `cargo ... build`
/// command, to which `--keep-going` and `--package` are added) and returns what did
/// not build: when the whole build fails, each member is built alone to name every
/// failing crate.
pub fn build_workspace(dir: &Path, label: &str, cargo: &dyn Fn() -> Command) -> Vec<BuildFailure> {
    let mut whole = cargo();
    whole.current_dir(dir).arg("--keep-going");
    let Err(why) = run::run(&mut whole) else {
        return Vec::new();
    };
    let members = match workspace_members(dir) {
        Ok(members) => members,
        Err(err) => {
            return vec![BuildFailure {
                what: format!("{label}/"),
                why: why.context(format!("its members could not be listed ({err:#})")),
            }]
        }
    };
    run::header(&format!(
        "build-guests: {label}/ failed; building its {} crates one by one to name each failing one",
        members.len()
    ));
    let mut failed = Vec::new();
    for member in &members {
        let mut one = cargo();
        one.current_dir(dir).args(["--package", &member.name]);
        if let Err(why) = run::run(&mut one) {
            failed.push(BuildFailure {
                what: format!("{label}/{}", member.relative_dir(dir)),
                why,
            });
        }
    }
    if failed.is_empty() {
        // Each crate builds alone: the failure was the workspace's own.
        failed.push(BuildFailure {
            what: format!("{label}/"),
            why,
        });
    }
    failed
}

/// A member of a cargo workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its package name.
    pub name: String,
    /// Its directory (that of its `Cargo.toml`).
    pub dir: PathBuf,
}

impl Member {
    /// Its directory relative to `root`, for messages.
    fn relative_dir(&self, root: &Path) -> String {
        self.dir
            .strip_prefix(root)
            .unwrap_or(&self.dir)
            .display()
            .to_string()
    }
}

/// The members of the workspace in `dir`, from `cargo metadata --no-deps`.
///
/// # Errors
///
/// When cargo fails or says something unreadable.
pub fn workspace_members(dir: &Path) -> Result<Vec<Member>> {
    let out = run::cargo()
        .current_dir(dir)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .output()
        .with_context(|| format!("cannot run cargo metadata in {}", dir.display()))?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("cargo metadata in {} printed no JSON", dir.display()))?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let mut members = Vec::new();
    for package in packages {
        let (Some(name), Some(manifest)) =
            (package["name"].as_str(), package["manifest_path"].as_str())
        else {
            bail!(
                "cargo metadata in {} lists a package without a name or manifest",
                dir.display()
            );
        };
        let manifest = Path::new(manifest);
        members.push(Member {
            name: name.to_string(),
            dir: manifest.parent().unwrap_or(manifest).to_path_buf(),
        });
    }
    members.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(members)
}

/// Prints a warning for each crate under the workspace in `dir` (called `label`) that
/// is not one of its members, so not built.
fn warn_of_non_members(dir: &Path, label: &str) {
    let members = match workspace_members(dir) {
        Ok(members) => members,
        Err(err) => {
            println!("warning: cannot list the members of {label}/: {err:#}");
            return;
        }
    };
    for stray in non_members(dir, &members) {
        let shown = stray.strip_prefix(dir).unwrap_or(&stray).display();
        println!(
            "warning: {label}/{shown} is a crate but not a member of the workspace in \
             {label}/Cargo.toml, so build-guests does not build it: add \"{shown}\" to \
             `members` there"
        );
    }
}

/// The directories under `dir` (the workspace's own excepted) holding a crate
/// (`Cargo.toml` with a `[package]`) that is none of `members`. `target` and hidden
/// directories and `node_modules` are not searched.
pub fn non_members(dir: &Path, members: &[Member]) -> Vec<PathBuf> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let mut strays = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() && !name.starts_with('.') && name != "target" && name != "node_modules"
            {
                pending.push(path);
            }
        }
        if next == dir {
            continue;
        }
        let manifest = next.join("Cargo.toml");
        let is_crate = fs::read_to_string(&manifest)
            .is_ok_and(|text| text.lines().any(|line| line.trim() == "[package]"));
        if is_crate && !members.iter().any(|m| same(&m.dir, &next)) {
            strays.push(next);
        }
    }
    strays.sort();
    strays
}

/// Copies every `*.wasm` file directly in `from` whose name `keep` accepts to `to`,
/// keeping its name.
fn stage_components(from: &Path, to: &Path, keep: impl Fn(&str) -> bool) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    let entries = fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|ext| ext == "wasm") && path.is_file() && keep(name) {
            let dest = to.join(name);
            fs::copy(&path, &dest)
                .with_context(|| format!("cannot copy {} to {}", path.display(), dest.display()))?;
            names.push(name.to_string());
        }
    }
    names.sort();
    println!("staged in {}: {}", to.display(), names.join(" "));
    Ok(())
}

/// Sets up everything, builds every guest and the workspace, for `step` (the command
/// that needs them): what the fuzzer and the benchmarks run on.
///
/// # Errors
///
/// Fails when a set-up or build step fails.
pub fn build_all(step: &str) -> Result<()> {
    let toolchain = setup::setup()?;
    build_guests(toolchain)?;
    // The same package selection and targets as `cargo xtask test`, so both
    // share one build of every dependency (building `-p wray-host` alone
    // unifies features differently and rebuilds wasmtime: ~9 minutes; see
    // `demo::HOST_BUILD`).
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
        let scratch = tempfile::tempdir().unwrap();
        let (from, to) = (scratch.path().join("release"), scratch.path().join("wasm"));
        fs::create_dir_all(from.join("deps")).unwrap();
        fs::write(from.join("counter.wasm"), b"\0asm").unwrap();
        fs::write(from.join("other.wasm"), b"\0asm").unwrap();
        fs::write(from.join("counter.d"), b"deps").unwrap();
        fs::write(from.join("deps").join("inner.wasm"), b"\0asm").unwrap();

        stage_components(&from, &to, |_| true).unwrap();
        let staged = |dir: &Path| {
            let mut names: Vec<_> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(staged(&to), ["counter.wasm", "other.wasm"]);

        let only = scratch.path().join("only");
        stage_components(&from, &only, |name| name == "counter.wasm").unwrap();
        assert_eq!(staged(&only), ["counter.wasm"]);
    }

    /// Writes a crate in `root/dir`, named after its last component, whose library is
    /// `source`.
    fn write_crate(root: &Path, dir: &str, source: &str) {
        let dir = root.join(dir);
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        fs::create_dir_all(dir.join("src")).unwrap();
        fs::write(
            dir.join("Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        )
        .unwrap();
        fs::write(dir.join("src/lib.rs"), source).unwrap();
    }

    /// A workspace with a crate that builds, two that do not, and one that is not a
    /// member (built natively: the failure handling is the toolchain's business).
    fn broken_workspace() -> tempfile::TempDir {
        let scratch = tempfile::tempdir().unwrap();
        let ws = scratch.path();
        fs::write(
            ws.join("Cargo.toml"),
            "[workspace]\nresolver = \"2\"\nmembers = [\"good\", \"bad_one\", \"nested/bad_two\"]\n",
        )
        .unwrap();
        write_crate(ws, "good", "pub fn f() -> u8 { 1 }\n");
        write_crate(ws, "bad_one", "pub fn f() -> u8 { \"not a u8\" }\n");
        write_crate(ws, "nested/bad_two", "pub fn f() { undefined() }\n");
        write_crate(ws, "stray", "pub fn f() {}\n");
        // Ignored: build output and hidden directories.
        write_crate(ws, "target/old", "");
        write_crate(ws, ".hidden", "");
        scratch
    }

    /// `cargo build` into `target`, its output (the compile errors the tests
    /// cause on purpose) kept out of the test log.
    fn quiet_cargo_build(target: &Path) -> Command {
        let mut cmd = run::cargo();
        cmd.env("CARGO_TARGET_DIR", target)
            .args(["build", "--quiet", "--offline"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd
    }

    #[test]
    fn a_failing_workspace_names_every_failing_crate_and_builds_the_rest() {
        let ws = broken_workspace();
        let target = ws.path().join("target");
        let cargo = || quiet_cargo_build(&target);
        let failed = build_workspace(ws.path(), "guests", &cargo);
        let mut what: Vec<&str> = failed.iter().map(|f| f.what.as_str()).collect();
        what.sort();
        assert_eq!(
            what,
            ["guests/bad_one", "guests/nested/bad_two"],
            "{failed:?}"
        );
        assert!(
            target.join("debug/libgood.rlib").is_file(),
            "good was built"
        );
        let said = fail_listing(&failed).unwrap_err().to_string();
        assert!(said.starts_with("2 guest build(s) failed"), "{said}");
        assert!(
            said.contains("  - guests/bad_one: `") && said.contains("  - guests/nested/bad_two: `"),
            "{said}"
        );
    }

    #[test]
    fn a_crate_that_is_not_a_workspace_member_is_found() {
        let ws = broken_workspace();
        let members = workspace_members(ws.path()).unwrap();
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["bad_one", "bad_two", "good"]);
        assert_eq!(non_members(ws.path(), &members), [ws.path().join("stray")]);
    }

    #[test]
    fn the_repositorys_guest_crates_are_all_members() {
        for name in GUEST_WORKSPACES {
            let dir = paths::repo_root().join(name);
            let members = workspace_members(&dir).unwrap();
            assert!(!members.is_empty());
            assert_eq!(non_members(&dir, &members), Vec::<PathBuf>::new(), "{name}");
        }
    }

    #[test]
    fn a_workspace_that_builds_reports_nothing() {
        let scratch = tempfile::tempdir().unwrap();
        fs::write(
            scratch.path().join("Cargo.toml"),
            "[workspace]\nresolver = \"2\"\nmembers = [\"good\"]\n",
        )
        .unwrap();
        write_crate(scratch.path(), "good", "pub fn f() {}\n");
        let target = scratch.path().join("target");
        let cargo = || quiet_cargo_build(&target);
        assert!(build_workspace(scratch.path(), "guests", &cargo).is_empty());
    }
}
