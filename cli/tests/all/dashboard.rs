//! The dashboard in a real headless Chromium (`dashboard/tests/e2e.mjs`,
//! Playwright over Debian's `chromium`, both installed by `cargo xtask
//! setup`) against a `wray start` node with the `api` test component
//! deployed: login (a wrong token refused), the function listed and
//! called from the form, a component deployed and undeployed from the
//! page, a job's log followed live and its submitted options, the
//! timeline's rows under their node in natural order, the newest task and
//! error first, the node's log and a task's output, an actor killed. Screenshots of each page go to
//! `<target>/tmp/dashboard-screenshots/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::node_ops::StartedNode;
use crate::support::{component, success_stdout};

/// The repository's `dashboard/` folder.
fn dashboard_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dashboard")
}

#[test]
fn the_dashboard_logs_in_lists_calls_follows_a_log_draws_the_timeline_and_kills_an_actor() {
    let dir = dashboard_dir();
    assert!(
        dir.join("node_modules/playwright-core").is_dir()
            && Path::new("/usr/bin/chromium").exists(),
        "the dashboard's browser test needs `npm ci` in dashboard/ and Debian's chromium \
         (`cargo xtask setup` installs both)"
    );
    let tmp = tempfile::tempdir().unwrap();
    // Four CPUs: a job's driver and its waiting task hold two while the
    // page calls a function and creates an actor.
    let node = StartedNode::start_with_cpus(tmp.path(), 4, &[]);
    let api = component("api");
    success_stdout(&node.run(&["deploy", api.to_str().unwrap(), "--name", "api"]));

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    let out = Command::new("node")
        .current_dir(&dir)
        .arg("tests/e2e.mjs")
        .args([&node.url, &node.token])
        .arg(&shots)
        // The page deploys it again (as `copy`) and undeploys it.
        .arg(&api)
        .output()
        .expect("node runs (the dashboard's tests need Node.js 18 or later)");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser test failed:\n{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for check in [
        "wrong token",
        "function is listed",
        "shows the result",
        "while it runs",
        "row per worker, under its node, in natural order",
        "newest task is the first row",
        "newest error is the first",
        "node log and a task's output",
        "actor is killed",
    ] {
        assert!(said.contains(check), "no check `{check}` ran:\n{said}");
    }
    assert!(shots.join("overview.png").exists());
}
