//! JavaScript guests: componentize-js and jco installed with npm into
//! `sdk/js/node_modules` (pinned by `sdk/js/package.json` and its lock
//! file), the examples under `examples/js/` built with the SDK's own
//! build command (`node sdk/js/build.mjs`), and the build's unit tests run
//! by `cargo xtask test`.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::run;

/// The JavaScript components built: (directory from the repository root, its module,
/// the component's name). Named `<name>_js`, since a component is deployed
/// under its file stem: a Rust driver reaches the counter as
/// `wray::deployed! { pub mod js = "counter_js" as json { .. } }`.
pub const EXAMPLES: &[(&str, &str, &str)] = &[
    ("examples/js/counter_actor", "counter.js", "counter_js"),
    ("examples/js/driver", "driver.js", "driver_js"),
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
/// `sdk/js/node_modules` unless they are there (`npm install`, which
/// follows `sdk/js/package-lock.json`).
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
    // `npm install`, not `npm ci`: npm 11 refuses `ci` for a lock file that
    // lacks the other platforms' optional binaries (jco-node-fs-*), which
    // `npm install` leaves out of it; `install` still follows the lock file.
    run::header("npm install (sdk/js: componentize-js, jco)");
    run::run(
        npm()
            .current_dir(&sdk)
            .args(["install", "--no-audit", "--no-fund"]),
    )
    .context("installing the JavaScript SDK's npm packages")
}

/// Builds every JavaScript example into `out` (`<name>.wasm`), unless it is
/// newer than its sources and the SDK's (a build takes 7 to 20 s).
///
/// # Errors
/// A build fails.
pub fn build_examples(root: &Path, out: &Path) -> Result<()> {
    ensure_toolchain(root)?;
    let sdk = root.join("sdk/js");
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let sdk_mtime = mtime(&sdk.join("wray.js"))
        .max(mtime(&sdk.join("build.mjs")))
        .max(mtime(&sdk.join("package-lock.json")));
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
        run::run(&mut cmd).with_context(|| format!("building {dir}"))?;
    }
    Ok(())
}

/// Runs the unit tests of the SDK's build (`node --test`, no wasm: the
/// world chosen from what an app defines).
///
/// # Errors
/// A test fails, or node is missing.
pub fn unit_tests(root: &Path) -> Result<()> {
    run::header("node --test (sdk/js/tests/build.test.mjs)");
    run::run(
        node()
            .current_dir(root.join("sdk/js"))
            .args(["--test", "tests/build.test.mjs"]),
    )
}

fn mtime(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
