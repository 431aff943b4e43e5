//! Which toolchain builds the guests, and the cargo arguments for it.
//!
//! - [`GuestToolchain::Ordinary`]: rustup's `wasm32-wasip1` target is installed (or
//!   `rustup target add` works); guests build with no overrides.
//! - [`GuestToolchain::Offline`]: rustup's server cannot be reached (it hangs, see
//!   `shared/TOOLCHAIN.md`), so Debian's `rustc-web` (`/usr/bin/rustc`, which knows
//!   wasm32-wasip1) compiles the standard library from `rust-web-src` with
//!   `-Z build-std`, linking against Debian's `wasi-libc` with `wasm-ld` from `lld`.
//!
//! The overrides are passed as `--config` flags, never as a committed config file, so the
//! ordinary path stays untouched on machines where rustup works.
//!
//! `WRAY_GUEST_TOOLCHAIN=ordinary|offline` skips detection and forces a path, e.g. to try
//! CI's offline path on a machine where rustup works.

use std::env;
use std::fs;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::paths;
use crate::run::{self, Timed};

/// The guest target triple.
pub const GUEST_TARGET: &str = "wasm32-wasip1";

/// How long `rustup target add` may take before it counts as failed.
const RUSTUP_ADD_TIMEOUT: Duration = Duration::from_secs(20);

/// Marker under [`paths::cache_dir`] recording that `rustup target add` failed once.
const RUSTUP_FAILED_MARKER: &str = "rustup-target-add-wasm32-wasip1.failed";

/// Environment variable that forces a path: `ordinary` or `offline`.
const OVERRIDE_VAR: &str = "WRAY_GUEST_TOOLCHAIN";

/// Debian packages the offline path builds with.
pub const OFFLINE_PACKAGES: &[&str] = &["rustc-web", "rust-web-src", "wasi-libc", "lld"];

/// The toolchain that builds the guest components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestToolchain {
    /// rustup's own `wasm32-wasip1` target.
    Ordinary,
    /// Debian's `rustc-web` with `-Z build-std` (rustup's server unreachable).
    Offline,
}

impl GuestToolchain {
    /// The Debian packages this path needs. `rust-web-src` is needed on both: its
    /// `/usr/lib/rustlib/src/rust/library` is the word-count demo's input.
    pub fn packages(self) -> &'static [&'static str] {
        match self {
            GuestToolchain::Ordinary => &["rust-web-src"],
            GuestToolchain::Offline => OFFLINE_PACKAGES,
        }
    }

    /// Arguments to `cargo` that build a guest workspace's components in release mode.
    pub fn build_args(self) -> Vec<String> {
        let mut args = vec!["component".to_string()];
        args.extend(self.core_build_args());
        args
    }

    /// Arguments to `cargo` that build a guest workspace's core modules in release
    /// mode (`cargo build`, no cargo-component: a library crate's module still
    /// carries its component type, for [`componentize`](crate::c_bindings::componentize)).
    pub fn core_build_args(self) -> Vec<String> {
        let mut args: Vec<String> = ["build", "--release"].map(String::from).into();
        match self {
            GuestToolchain::Ordinary => {
                args.extend(["--target".to_string(), GUEST_TARGET.to_string()]);
            }
            GuestToolchain::Offline => {
                let configs = [
                    r#"build.rustc="/usr/bin/rustc""#.to_string(),
                    format!(r#"build.target="{GUEST_TARGET}""#),
                    r#"unstable.build-std=["std","panic_abort"]"#.to_string(),
                    format!(r#"target.{GUEST_TARGET}.linker="wasm-ld""#),
                    format!(
                        r#"target.{GUEST_TARGET}.rustflags=["-C","link-self-contained=no","-L","/usr/lib/wasm32-wasi"]"#
                    ),
                ];
                for config in configs {
                    args.extend(["--config".to_string(), config]);
                }
            }
        }
        args
    }

    /// Environment variables the build needs: `RUSTC_BOOTSTRAP=1` lets stable cargo and
    /// Debian's rustc accept `-Z build-std` on the offline path.
    pub fn build_env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            GuestToolchain::Ordinary => &[],
            GuestToolchain::Offline => &[("RUSTC_BOOTSTRAP", "1")],
        }
    }
}

/// Parses a [`OVERRIDE_VAR`] value.
fn parse_override(value: &str) -> Option<GuestToolchain> {
    match value.trim() {
        "ordinary" => Some(GuestToolchain::Ordinary),
        "offline" => Some(GuestToolchain::Offline),
        _ => None,
    }
}

/// Whether `rustup target list --installed` output lists the guest target.
pub fn lists_guest_target(installed: &str) -> bool {
    installed.lines().any(|line| line.trim() == GUEST_TARGET)
}

/// Decides the guest toolchain for this machine, installing rustup's target if it can.
///
/// Ordinary if rustup lists `wasm32-wasip1` as installed. Otherwise, unless a marker says
/// it failed before, tries `rustup target add wasm32-wasip1` once with a 20 s limit;
/// ordinary if that works, offline (and the marker is written) if not.
/// Delete `~/.cache/wray/rustup-target-add-wasm32-wasip1.failed` to try again.
///
/// `WRAY_GUEST_TOOLCHAIN=ordinary|offline` overrides all of this.
///
/// # Errors
///
/// Fails when `WRAY_GUEST_TOOLCHAIN` has another value, `$HOME` is unset or the marker
/// cannot be written.
pub fn detect() -> Result<GuestToolchain> {
    if let Some(value) = env::var_os(OVERRIDE_VAR) {
        let value = value.to_string_lossy();
        let Some(toolchain) = parse_override(&value) else {
            bail!("{OVERRIDE_VAR}={value}: expected `ordinary` or `offline`");
        };
        println!("guest toolchain: {value} (set by {OVERRIDE_VAR})");
        return Ok(toolchain);
    }
    let installed = run::stdout_of(Command::new("rustup").args(["target", "list", "--installed"]));
    if installed.as_deref().is_some_and(lists_guest_target) {
        println!("guest toolchain: ordinary (rustup target {GUEST_TARGET} is installed)");
        return Ok(GuestToolchain::Ordinary);
    }
    let marker = paths::cache_dir()?.join(RUSTUP_FAILED_MARKER);
    if marker.exists() {
        println!(
            "guest toolchain: offline (`rustup target add {GUEST_TARGET}` failed before; \
             delete {} to retry)",
            marker.display()
        );
        return Ok(GuestToolchain::Offline);
    }
    println!("trying `rustup target add {GUEST_TARGET}` once");
    let mut add = Command::new("rustup");
    add.args(["target", "add", GUEST_TARGET]);
    let why = match run::run_with_timeout(&mut add, RUSTUP_ADD_TIMEOUT) {
        Ok(Timed::Exited(status)) if status.success() => {
            println!("guest toolchain: ordinary (rustup target {GUEST_TARGET} installed)");
            return Ok(GuestToolchain::Ordinary);
        }
        Ok(Timed::Exited(status)) => format!("it failed ({status})"),
        Ok(Timed::TimedOut) => format!("it timed out after {} s", RUSTUP_ADD_TIMEOUT.as_secs()),
        Err(err) => format!("{err:#}"),
    };
    let dir = marker.parent().unwrap_or(&marker);
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let note =
        format!("`rustup target add {GUEST_TARGET}` failed: {why}\ndelete this file to retry\n");
    fs::write(&marker, note).with_context(|| format!("cannot write {}", marker.display()))?;
    println!(
        "guest toolchain: offline (`rustup target add {GUEST_TARGET}`: {why}; \
         will not retry while {} exists)",
        marker.display()
    );
    Ok(GuestToolchain::Offline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_target_is_recognised() {
        assert!(lists_guest_target(
            "x86_64-unknown-linux-gnu\nwasm32-wasip1\n"
        ));
        assert!(!lists_guest_target("x86_64-unknown-linux-gnu\n"));
        assert!(!lists_guest_target(
            "wasm32-wasip1-threads\nwasm32-wasip2\n"
        ));
        assert!(!lists_guest_target(""));
    }

    #[test]
    fn override_values() {
        assert_eq!(parse_override("offline"), Some(GuestToolchain::Offline));
        assert_eq!(parse_override("ordinary\n"), Some(GuestToolchain::Ordinary));
        assert_eq!(parse_override("Offline"), None);
        assert_eq!(parse_override(""), None);
    }

    #[test]
    fn ordinary_build_has_no_overrides() {
        let args = GuestToolchain::Ordinary.build_args();
        assert_eq!(
            args,
            [
                "component",
                "build",
                "--release",
                "--target",
                "wasm32-wasip1"
            ]
        );
        assert!(GuestToolchain::Ordinary.build_env().is_empty());
    }

    #[test]
    fn core_build_is_the_component_build_without_cargo_component() {
        for toolchain in [GuestToolchain::Ordinary, GuestToolchain::Offline] {
            let (component, core) = (toolchain.build_args(), toolchain.core_build_args());
            assert_eq!(component[0], "component");
            assert_eq!(component[1..], core[..]);
        }
    }

    #[test]
    fn offline_build_uses_debian_rustc_and_build_std() {
        let args = GuestToolchain::Offline.build_args();
        assert_eq!(&args[..3], ["component", "build", "--release"]);
        let configs: Vec<&str> = args[3..]
            .chunks(2)
            .map(|pair| {
                assert_eq!(pair[0], "--config");
                pair[1].as_str()
            })
            .collect();
        assert_eq!(
            configs,
            [
                r#"build.rustc="/usr/bin/rustc""#,
                r#"build.target="wasm32-wasip1""#,
                r#"unstable.build-std=["std","panic_abort"]"#,
                r#"target.wasm32-wasip1.linker="wasm-ld""#,
                r#"target.wasm32-wasip1.rustflags=["-C","link-self-contained=no","-L","/usr/lib/wasm32-wasi"]"#,
            ]
        );
        assert_eq!(
            GuestToolchain::Offline.build_env(),
            [("RUSTC_BOOTSTRAP", "1")]
        );
    }

    #[test]
    fn demo_corpus_is_installed_on_both_paths() {
        assert_eq!(GuestToolchain::Ordinary.packages(), ["rust-web-src"]);
        assert!(GuestToolchain::Offline.packages().contains(&"rust-web-src"));
        assert!(GuestToolchain::Offline.packages().contains(&"lld"));
    }
}
