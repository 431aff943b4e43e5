//! The dashboard's front end (`dashboard/`): its npm packages installed
//! with `npm ci` from the committed lock file ([`ensure_packages`]), and the
//! check that the committed bundle (`dashboard/dist/`, embedded in the
//! `wray` binary) is what `npm run build` makes of the sources
//! ([`check_bundle`]), and the page's unit tests ([`unit_tests`]).

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::run;

/// The files `npm run build` writes to `dashboard/dist/`.
pub const BUNDLE: &[&str] = &["index.html", "app.js", "app.css", "LICENSES.txt"];

/// Installs the dashboard's npm packages (Preact, uPlot, esbuild,
/// playwright-core) into `dashboard/node_modules` with `npm ci`, unless
/// they are there.
///
/// # Errors
/// Node or npm is missing, or the install fails.
pub fn ensure_packages(root: &Path) -> Result<()> {
    let dir = root.join("dashboard");
    let installed = ["preact", "uplot", "esbuild", "playwright-core"]
        .iter()
        .all(|p| {
            dir.join("node_modules")
                .join(p)
                .join("package.json")
                .is_file()
        });
    if installed {
        println!("the dashboard's npm packages: installed");
        return Ok(());
    }
    run::header("npm ci (dashboard: preact, uplot, esbuild, playwright-core)");
    run::run(
        Command::new("npm")
            .current_dir(&dir)
            .args(["ci", "--no-audit", "--no-fund"]),
    )
    .context("installing the dashboard's npm packages (`npm ci` in dashboard/)")
}

/// Runs the page's unit tests (`node --test tests/unit.test.mjs` in
/// `dashboard/`: the metrics parser, latency quantiles).
///
/// # Errors
/// A test fails, or node is missing.
pub fn unit_tests(root: &Path) -> Result<()> {
    run::header("node --test (dashboard/tests/unit.test.mjs)");
    run::run(
        Command::new("node")
            .current_dir(root.join("dashboard"))
            .args(["--test", "tests/unit.test.mjs"]),
    )
}

/// Builds the dashboard into a scratch folder and compares it with the
/// committed `dashboard/dist/`, byte for byte.
///
/// # Errors
/// The build fails, or a file differs (run `npm run build` in `dashboard/`
/// and commit `dist/`).
pub fn check_bundle(root: &Path) -> Result<()> {
    run::header("dashboard: the committed bundle is what `npm run build` makes");
    let dir = root.join("dashboard");
    let scratch = tempfile::tempdir()?;
    run::run(
        Command::new("node")
            .current_dir(&dir)
            .arg("build.mjs")
            .arg(scratch.path()),
    )?;
    for file in BUNDLE {
        let built = std::fs::read(scratch.path().join(file))
            .with_context(|| format!("the build made no {file}"))?;
        let committed = std::fs::read(dir.join("dist").join(file))
            .with_context(|| format!("dashboard/dist/{file} is not committed"))?;
        if built != committed {
            bail!(
                "dashboard/dist/{file} is not what `npm run build` makes of dashboard/src \
                 ({} bytes built, {} committed): run `npm run build` in dashboard/ and commit dist/",
                built.len(),
                committed.len()
            );
        }
        println!("dashboard/dist/{file}: {} bytes, as built", built.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `npm ci` accepts the committed lock file (in sync with
    /// `package.json`), checked offline in a scratch copy without installing.
    #[test]
    fn npm_ci_accepts_the_dashboards_lock_file() {
        let dir = crate::paths::repo_root().join("dashboard");
        let scratch = tempfile::tempdir().unwrap();
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(dir.join(file), scratch.path().join(file)).unwrap();
        }
        let out = Command::new("npm")
            .current_dir(scratch.path())
            .args([
                "ci",
                "--no-audit",
                "--no-fund",
                "--dry-run",
                "--offline",
                "--ignore-scripts",
                "--cache",
            ])
            .arg(scratch.path().join("cache"))
            .output()
            .expect("npm runs");
        assert!(
            out.status.success(),
            "npm ci refuses dashboard/package-lock.json:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
