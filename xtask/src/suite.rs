//! `cargo xtask test`: everything CI checks, in order, stopping at the first failure.
//!
//! 0. the design docs name only files and Rust items that exist
//!    ([`doc_names`](crate::doc_names): seconds, so it runs first), `vendor/wasmtime`
//!    is the published crate with `vendor/patches/` applied ([`vendor`](crate::vendor)),
//!    no crate's files import each other in a circle
//!    ([`import_cycles`](crate::import_cycles)), and production code blocks a thread
//!    on a future only at the runtime model's edges ([`runtime_check`](crate::runtime_check)),
//! 1. [`setup`](crate::setup) and [`build-guests`](crate::guests) (the tests load the
//!    components from `WRAY_WASM_DIR=<target>/wasm`),
//! 2. `cargo fmt --all --check`, in the root and in both guest workspaces,
//! 3. `cargo clippy --workspace --all-targets --release -- -D warnings`,
//! 4. the Python SDK's unit tests (`python3 -m unittest`) and the JavaScript
//!    SDK's build's (`node --test`),
//! 5. `cargo test --workspace --release`,
//! 6. `git status`: nothing above changed a tracked file or left an untracked one
//!    ([`tree`](crate::tree)); files already changed before it started are compared by
//!    content.
//!
//! Everything builds with `--release` so that the test build and the demo's build share
//! one set of compiled dependencies (wasmtime alone takes ~6 minutes on 2 cores).

use anyhow::Result;

use crate::run;
use crate::{guests, paths, setup, tree};

/// Runs the whole suite.
///
/// # Errors
///
/// Fails at the first step that fails.
pub fn test() -> Result<()> {
    let root = paths::repo_root();
    let before = tree::TreeState::capture(&root)?;

    run::header("docs: architecture, cluster, control-plane, peer-protocol name only what exists");
    crate::doc_names::check(&root)?;

    run::header("vendor/wasmtime is the published crate with vendor/patches/ applied");
    crate::vendor::check(&root)?;

    run::header("import cycles between a crate's files: none");
    crate::import_cycles::check(&root, &[])?;

    run::header("runtime model: block_on only at its edges, block_in_place nowhere");
    crate::runtime_check::check(&root)?;

    let toolchain = setup::setup()?;
    guests::build_guests(toolchain)?;

    run::header("cargo fmt --all --check (root, examples/, test-programs/)");
    run::run(run::cargo().args(["fmt", "--all", "--check"]))?;
    for guests in ["examples", "test-programs"] {
        let manifest = paths::repo_root().join(guests).join("Cargo.toml");
        run::run(
            run::cargo()
                .args(["fmt", "--all", "--check", "--manifest-path"])
                .arg(manifest),
        )?;
    }

    run::header("C bindings match wit/ (cargo xtask c-bindings regenerates them)");
    crate::c_bindings::check(&paths::repo_root())?;

    run::header("cargo clippy --workspace --all-targets --release -- -D warnings");
    run::run(run::cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--release",
        "--",
        "-D",
        "warnings",
    ]))?;

    crate::python::unit_tests()?;
    crate::js::unit_tests(&paths::repo_root())?;
    crate::dashboard::unit_tests(&paths::repo_root())?;
    crate::dashboard::check_bundle(&paths::repo_root())?;

    run::header("cargo test --workspace --release");
    let mut test = run::cargo();
    test.env("WRAY_WASM_DIR", paths::wasm_dir())
        .args(["test", "--workspace", "--release"]);
    run::run(&mut test)?;

    run::header("git status: the checkout is as the suite found it");
    tree::check_unchanged(&root, before.as_ref(), "cargo xtask test")
}
