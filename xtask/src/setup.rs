//! `cargo xtask setup`: install what building and running wray needs and is missing.
//!
//! Idempotent: each step checks first and says what it finds or does.
//! 1. The guest toolchain path ([`toolchain::detect`]).
//! 2. Debian packages, with one `apt-get` (through `sudo` only when not root):
//!    those of that path ([`GuestToolchain::packages`]), of the host's build
//!    ([`HOST_PACKAGES`]), of C guests and of the tests ([`TEST_PACKAGES`]).
//! 3. `cargo-component` at [`CARGO_COMPONENT_VERSION`] via `cargo install --locked`.
//! 4. componentize-py for Python guests, from PyPI
//!    ([`python::ensure_componentize_py`](crate::python::ensure_componentize_py)).
//! 5. componentize-js and jco for JavaScript guests, from npm, into
//!    `sdk/js/node_modules` ([`js::ensure_toolchain`](crate::js::ensure_toolchain)).
//! 6. openapi-spec-validator, from PyPI, into `<target>/venv`, where the HTTP
//!    API's tests find it ([`ensure_openapi_validator`]).
//! 7. The dashboard's npm packages (Preact, uPlot, esbuild, playwright-core),
//!    with `npm ci` into `dashboard/node_modules`
//!    ([`dashboard::ensure_packages`](crate::dashboard::ensure_packages)).
//!
//! `cargo xtask demo` installs only what the word count and the host need
//! ([`Scope::Demo`]): steps 1 and 2, without the C guests' and the tests' packages.

use std::process::Command;

use anyhow::{bail, Result};

use crate::run;
use crate::toolchain::{self, GuestToolchain};

/// The Debian packages the host's build needs: `protoc`, with which etcd-client
/// builds its gRPC code (the `etcd` feature of wray-control-plane, on by default,
/// so in every `wray` binary).
pub const HOST_PACKAGES: &[&str] = &["protobuf-compiler"];

/// The Debian packages the tests need beyond the build: etcd itself
/// (`/usr/bin/etcd`), which the control plane's and the CLI's tests start on
/// loopback ports, and Chromium (`/usr/bin/chromium`), which the
/// dashboard's browser test drives headless, and `wrk`, the HTTP load
/// generator of `bench/http/run.sh`, whose quick mode the CLI's tests run.
pub const TEST_PACKAGES: &[&str] = &["etcd-server", "chromium", "wrk"];

/// The openapi-spec-validator release the HTTP API's OpenAPI documents are
/// checked with (`http/tests`, which look for it in `<target>/venv`).
pub const OPENAPI_SPEC_VALIDATOR_VERSION: &str = "0.9.0";

/// The `cargo-component` release the guests are built with.
pub const CARGO_COMPONENT_VERSION: &str = "0.21.1";

/// What a command needs installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The Rust word count and the host: the guest toolchain and `protoc`
    /// (`cargo xtask demo`, which makes its one component without cargo-component).
    Demo,
    /// Everything: the C, Python and JavaScript guests' tools and etcd too
    /// (`cargo xtask setup`, `build-guests`, `test`).
    Everything,
}

impl Scope {
    /// The Debian packages this scope needs with `toolchain`, each once.
    pub fn packages(self, toolchain: GuestToolchain) -> Vec<&'static str> {
        let mut lists = vec![toolchain.packages(), HOST_PACKAGES];
        if self == Scope::Everything {
            lists.extend([crate::c_guests::PACKAGES, TEST_PACKAGES]);
        }
        let mut packages: Vec<&'static str> = Vec::new();
        for package in lists.into_iter().flatten() {
            if !packages.contains(package) {
                packages.push(package);
            }
        }
        packages
    }

    /// Whether this scope needs `cargo-component` (the guest workspaces' builds).
    pub fn needs_cargo_component(self) -> bool {
        self == Scope::Everything
    }
}

/// Runs every set-up step and returns the guest toolchain path it chose.
///
/// # Errors
///
/// Fails when a missing package or tool cannot be installed.
pub fn setup() -> Result<GuestToolchain> {
    setup_for(Scope::Everything)
}

/// Runs the set-up steps `scope` needs and returns the guest toolchain path it chose.
///
/// # Errors
///
/// Fails when a missing package or tool cannot be installed.
pub fn setup_for(scope: Scope) -> Result<GuestToolchain> {
    run::header("setup: guest toolchain");
    let toolchain = toolchain::detect()?;
    run::header(match scope {
        Scope::Demo => "setup: Debian packages (guest toolchain, the word count's input, protoc)",
        Scope::Everything => {
            "setup: Debian packages (guest toolchain, protoc, clang and wasi-libc for C guests, \
             etcd and chromium for the tests)"
        }
    });
    ensure_packages(&scope.packages(toolchain))?;
    if scope.needs_cargo_component() {
        run::header("setup: cargo-component");
        ensure_cargo_component()?;
    }
    if scope == Scope::Everything {
        run::header("setup: componentize-py (Python guests)");
        crate::python::ensure_componentize_py()?;
        run::header("setup: componentize-js and jco (JavaScript guests)");
        crate::js::ensure_toolchain(&crate::paths::repo_root())?;
        run::header("setup: openapi-spec-validator (the HTTP API's document tests)");
        ensure_openapi_validator()?;
        run::header("setup: the dashboard's npm packages (its build and browser test)");
        crate::dashboard::ensure_packages(&crate::paths::repo_root())?;
    }
    Ok(toolchain)
}

/// Installs openapi-spec-validator [`OPENAPI_SPEC_VALIDATOR_VERSION`] into a
/// virtual environment at `<target>/venv` (made with `python3 -m venv`),
/// unless that version is there.
fn ensure_openapi_validator() -> Result<()> {
    let venv = crate::paths::target_dir().join("venv");
    let python = venv.join("bin").join("python");
    let probe = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('openapi-spec-validator'))",
        ])
        .output();
    if let Ok(out) = probe {
        if String::from_utf8_lossy(&out.stdout).trim() == OPENAPI_SPEC_VALIDATOR_VERSION {
            println!(
                "openapi-spec-validator {OPENAPI_SPEC_VALIDATOR_VERSION}: installed in {}",
                venv.display()
            );
            return Ok(());
        }
    }
    if !python.exists() {
        println!("making a virtual environment at {}", venv.display());
        run::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    println!("installing openapi-spec-validator {OPENAPI_SPEC_VALIDATOR_VERSION} from PyPI");
    run::run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        &format!("openapi-spec-validator=={OPENAPI_SPEC_VALIDATOR_VERSION}"),
    ]))
}

/// Whether a `dpkg-query -W -f='${Status}'` status means installed
/// (`install ok installed`, `hold ok installed`).
fn status_is_installed(status: &str) -> bool {
    status.split_whitespace().last() == Some("installed")
}

/// Installs the Debian packages in `wanted` that are not installed yet.
fn ensure_packages(wanted: &[&str]) -> Result<()> {
    if run::stdout_of(Command::new("dpkg-query").arg("--version")).is_none() {
        bail!(
            "dpkg-query not found: this is not a Debian-like system; install the equivalents \
             of these Debian packages by hand: {}",
            wanted.join(" ")
        );
    }
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|pkg| {
            let status =
                run::stdout_of(Command::new("dpkg-query").args(["-W", "-f=${Status}", pkg]));
            !status.as_deref().is_some_and(status_is_installed)
        })
        .collect();
    if missing.is_empty() {
        println!("already installed: {}", wanted.join(" "));
        return Ok(());
    }
    println!("installing: {}", missing.join(" "));
    run::run(&mut apt_get(&["update"]))?;
    let mut install = apt_get(&["install", "-y"]);
    install.args(&missing);
    run::run(&mut install)
}

/// An `apt-get` command, through `sudo` unless we are root.
fn apt_get(args: &[&str]) -> Command {
    let mut cmd = if is_root() {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.arg("apt-get");
        sudo
    };
    cmd.env("DEBIAN_FRONTEND", "noninteractive").args(args);
    cmd
}

/// Whether this process runs as root (`id -u` prints 0).
fn is_root() -> bool {
    run::stdout_of(Command::new("id").arg("-u")).is_some_and(|uid| uid.trim() == "0")
}

/// Whether `cargo component --version` output reports `version`
/// (it prints e.g. `cargo-component-component 0.21.1`).
fn reports_version(output: &str, version: &str) -> bool {
    output.split_whitespace().any(|word| word == version)
}

/// Installs `cargo-component` unless `cargo component --version` reports the pinned one.
fn ensure_cargo_component() -> Result<()> {
    let found = run::stdout_of(run::cargo().args(["component", "--version"]));
    if let Some(found) = &found {
        if reports_version(found, CARGO_COMPONENT_VERSION) {
            println!("already installed: {}", found.trim());
            return Ok(());
        }
        println!("found {}, want {CARGO_COMPONENT_VERSION}", found.trim());
    }
    println!("installing cargo-component {CARGO_COMPONENT_VERSION} (about 5 minutes)");
    run::run(run::cargo().args([
        "install",
        "--locked",
        "cargo-component",
        "--version",
        CARGO_COMPONENT_VERSION,
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_installs_the_rust_guest_toolchain_and_protoc_only() {
        assert!(!Scope::Demo.needs_cargo_component());
        assert!(Scope::Everything.needs_cargo_component());
        for toolchain in [GuestToolchain::Ordinary, GuestToolchain::Offline] {
            let mut wanted = toolchain.packages().to_vec();
            wanted.push("protobuf-compiler");
            assert_eq!(Scope::Demo.packages(toolchain), wanted);
            for package in [
                "clang",
                "libclang-rt-dev-wasm32",
                "etcd-server",
                "chromium",
                "wrk",
            ] {
                assert!(!Scope::Demo.packages(toolchain).contains(&package));
                assert!(Scope::Everything.packages(toolchain).contains(&package));
            }
        }
        // Each package once: the offline path and C guests share wasi-libc and lld.
        let everything = Scope::Everything.packages(GuestToolchain::Offline);
        let mut unique = everything.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), everything.len(), "{everything:?}");
    }

    #[test]
    fn dpkg_status_installed() {
        assert!(status_is_installed("install ok installed"));
        assert!(status_is_installed("hold ok installed\n"));
        assert!(!status_is_installed("unknown ok not-installed"));
        assert!(!status_is_installed("deinstall ok config-files"));
        assert!(!status_is_installed(""));
    }

    #[test]
    fn cargo_component_version_check() {
        assert!(reports_version(
            "cargo-component-component 0.21.1\n",
            "0.21.1"
        ));
        assert!(reports_version(
            "cargo-component 0.21.1 (abc 2025-01-01)",
            "0.21.1"
        ));
        assert!(!reports_version(
            "cargo-component-component 0.20.0",
            "0.21.1"
        ));
        assert!(!reports_version(
            "cargo-component-component 0.21.10",
            "0.21.1"
        ));
    }
}
