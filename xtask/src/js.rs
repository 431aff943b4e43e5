//! JavaScript guests: componentize-js and jco installed with npm into
//! `sdk/js/node_modules` (pinned by `sdk/js/package.json` and its lock
//! file), the examples under `examples/js/` built with the SDK's own
//! build command (`node sdk/js/build.mjs`), and the build's unit tests run
//! by `cargo xtask test`.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::guests::BuildFailure;
use crate::run;

/// The JavaScript components built: (directory from the repository root, its module,
/// the component's name). Named `<name>_js`, since a component is deployed
/// under its file stem: a Rust driver reaches the counter as
/// `wray::deployed! { pub mod js = "counter_js" as json { .. } }`.
pub const EXAMPLES: &[(&str, &str, &str)] = &[
    ("examples/js/counter_actor", "counter.js", "counter_js"),
    ("examples/js/driver", "driver.js", "driver_js"),
    ("examples/js/keeper", "keeper.js", "keeper_js"),
    // The SDK's own end-to-end checks (host/tests/all/javascript.rs).
    ("sdk/js/tests", "api.js", "api_js"),
];

fn node() -> Command {
    Command::new("node")
}

fn npm() -> Command {
    Command::new("npm")
}

/// Installs the SDK's npm packages (componentize-js 0.23, jco 1.35) into
/// `sdk/js/node_modules` unless they are there, with `npm ci`: exactly
/// what `sdk/js/package-lock.json` pins, which npm then never rewrites
/// (`npm install` would, leaving the checkout dirty).
///
/// The lock file holds every platform's optional binaries (`jco-node-fs-*`),
/// as `npm ci` requires. After changing `package.json`, regenerate it with
/// `npm install --package-lock-only` from a directory without
/// `node_modules` (an `npm install` over an existing `node_modules` drops
/// the other platforms' entries) and commit it.
///
/// # Errors
/// Node or npm is missing, or the install fails.
pub fn ensure_toolchain(root: &Path) -> Result<()> {
    let sdk = root.join("sdk/js");
    let Some(version) = run::stdout_of(node().arg("--version")) else {
        bail!("node is not installed (the JavaScript SDK needs Node.js 18 or later, and npm)");
    };
    let installed = sdk
        .join("node_modules/@bytecodealliance/componentize-js/package.json")
        .is_file()
        && sdk
            .join("node_modules/@bytecodealliance/jco/package.json")
            .is_file();
    if installed {
        println!("componentize-js, jco (node {}): installed", version.trim());
        return Ok(());
    }
    run::header("npm ci (sdk/js: componentize-js, jco, as package-lock.json pins them)");
    run::run(npm().current_dir(&sdk).args(NPM_CI)).context(
        "installing the JavaScript SDK's npm packages (`npm ci` in sdk/js); if it says the \
         lock file is out of sync with package.json, see the doc of js::ensure_toolchain",
    )
}

/// `npm ci`'s arguments: no audit or funding requests.
const NPM_CI: &[&str] = &["ci", "--no-audit", "--no-fund"];

/// Builds every JavaScript example into `out` (`<name>.wasm`), unless it is
/// newer than its sources and the SDK's (a build takes 7 to 20 s), going on
/// past one that fails. Returns what did not build (the SDK's npm packages,
/// or examples).
pub fn build_examples(root: &Path, out: &Path) -> Vec<BuildFailure> {
    if let Err(why) = ensure_toolchain(root) {
        return vec![BuildFailure {
            what: "sdk/js (npm ci)".into(),
            why,
        }];
    }
    let sdk = root.join("sdk/js");
    if let Err(err) = std::fs::create_dir_all(out) {
        let why = anyhow::Error::new(err).context(format!("cannot create {}", out.display()));
        return vec![BuildFailure {
            what: "examples/js/".into(),
            why,
        }];
    }
    let sdk_mtime = mtime(&sdk.join("wray.js"))
        .max(mtime(&sdk.join("build.mjs")))
        .max(mtime(&sdk.join("package-lock.json")));
    let mut failed = Vec::new();
    for (dir, module, name) in EXAMPLES {
        let app = root.join(dir).join(module);
        let target = out.join(format!("{name}.wasm"));
        let built = mtime(&target);
        let sources = crate::python::newest(app.parent().unwrap_or(root))
            .max(sdk_mtime)
            .max(crate::python::newest(&root.join("wit")));
        if built.is_some() && built >= sources {
            println!("{name}.wasm is up to date");
            continue;
        }
        run::header(&format!("build-guests: {dir} (componentize-js)"));
        let mut cmd = node();
        cmd.current_dir(root)
            .env("WRAY_WIT", root.join("wit"))
            .arg(sdk.join("build.mjs"))
            .arg(&app)
            .arg("-o")
            .arg(&target);
        if let Err(why) = run::run(&mut cmd) {
            failed.push(BuildFailure {
                what: (*dir).to_string(),
                why,
            });
        }
    }
    failed
}

/// Runs the SDK's unit tests (`node --test`, no wasm): the build's (the
/// world chosen from what an app defines) and the actor options' (against
/// the fake host of `sdk/js/tests/fakehost.mjs`).
///
/// # Errors
/// A test fails, or node is missing.
pub fn unit_tests(root: &Path) -> Result<()> {
    run::header("node --test (sdk/js/tests/build.test.mjs, actors.test.mjs)");
    run::run(node().current_dir(root.join("sdk/js")).args([
        "--test",
        "tests/build.test.mjs",
        "tests/actors.test.mjs",
    ]))
}

fn mtime(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `npm ci` accepts the committed lock file: in sync with `package.json`,
    /// every platform's optional binaries included. Checked offline, without
    /// installing anything (`--dry-run`) or touching the checkout (copies in
    /// a scratch directory, with a scratch npm cache).
    #[test]
    fn npm_ci_accepts_the_committed_lock_file() {
        let sdk = crate::paths::repo_root().join("sdk/js");
        let scratch = tempfile::tempdir().unwrap();
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(sdk.join(file), scratch.path().join(file)).unwrap();
        }
        let out = npm()
            .current_dir(scratch.path())
            .args(NPM_CI)
            .args(["--dry-run", "--offline", "--ignore-scripts", "--cache"])
            .arg(scratch.path().join("cache"))
            .output()
            .expect("npm runs (the JavaScript SDK needs Node.js and npm)");
        assert!(
            out.status.success(),
            "npm ci refuses sdk/js/package-lock.json:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
