//! Python guests: componentize-py installed by `cargo xtask setup`, the
//! examples under `examples/python/` built by `cargo xtask build-guests`
//! with the SDK's own build command (`python -m wray.build`, from
//! `sdk/python/`), and the SDK's unit tests run by `cargo xtask test`.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::guests::BuildFailure;

use crate::{paths, run};

/// The componentize-py release Python guests are built with (it bundles
/// CPython compiled to WASI and builds offline once installed).
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// The Python examples: (directory under `examples/python/`, its module,
/// the component's name). Named apart from the Rust examples they mirror
/// (`wordcount_py`), since a component is deployed under its file stem.
pub const EXAMPLES: &[(&str, &str, &str)] = &[
    ("wordcount", "wordcount.py", "wordcount_py"),
    (
        "tree_reduce_driver",
        "tree_reduce_driver.py",
        "tree_reduce_driver",
    ),
    ("keeper", "keeper.py", "keeper_py"),
];

fn python() -> Command {
    Command::new("python3")
}

/// Installs componentize-py unless the pinned release is importable.
///
/// # Errors
/// `pip install` fails.
pub fn ensure_componentize_py() -> Result<()> {
    let probe = python()
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('componentize-py'))",
        ])
        .output();
    if let Ok(out) = probe {
        if String::from_utf8_lossy(&out.stdout).trim() == COMPONENTIZE_PY_VERSION {
            println!("componentize-py {COMPONENTIZE_PY_VERSION}: installed");
            return Ok(());
        }
    }
    println!("installing componentize-py {COMPONENTIZE_PY_VERSION} from PyPI");
    run::run(python().args([
        "-m",
        "pip",
        "install",
        "--quiet",
        &format!("componentize-py=={COMPONENTIZE_PY_VERSION}"),
    ]))
}

/// Builds every Python example into `out` (`<name>.wasm`), unless it is
/// newer than its sources and the SDK's (a build takes 10 to 20 s), going
/// on past one that fails. Returns the examples that did not build.
pub fn build_examples(out: &Path) -> Vec<BuildFailure> {
    let root = paths::repo_root();
    let sdk = root.join("sdk/python");
    if let Err(err) = std::fs::create_dir_all(out) {
        let why = anyhow::Error::new(err).context(format!("cannot create {}", out.display()));
        return vec![BuildFailure {
            what: "examples/python/".into(),
            why,
        }];
    }
    let sdk_mtime = newest(&sdk.join("wray"));
    let mut failed = Vec::new();
    for (dir, module, name) in EXAMPLES {
        let app = root.join("examples/python").join(dir).join(module);
        let target = out.join(format!("{name}.wasm"));
        let built = std::fs::metadata(&target).and_then(|m| m.modified()).ok();
        let sources = newest(app.parent().unwrap_or(&root))
            .max(sdk_mtime)
            .max(newest(&root.join("wit")));
        if built.is_some_and(|b| Some(b) >= sources) {
            println!("{name}.wasm is up to date");
            continue;
        }
        run::header(&format!(
            "build-guests: examples/python/{dir} (componentize-py)"
        ));
        let mut cmd = python();
        cmd.current_dir(&sdk)
            .env("WRAY_WIT", root.join("wit"))
            .args(["-m", "wray.build"])
            .arg(&app)
            .arg("-o")
            .arg(&target);
        if let Err(why) = run::run(&mut cmd) {
            failed.push(BuildFailure {
                what: format!("examples/python/{dir}"),
                why,
            });
        }
    }
    failed
}

/// The newest modification time of the files under `dir` (`None` when
/// there are none): whether a guest built from them is out of date (the
/// JavaScript examples' check too).
pub(crate) fn newest(dir: &Path) -> Option<std::time::SystemTime> {
    let mut latest = None;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).ok()
        };
        latest = latest.max(time);
    }
    latest
}

/// Runs the Python SDK's unit tests and the examples' (plain CPython, no
/// wasm: `python3 -m unittest`).
///
/// # Errors
/// A test fails.
pub fn unit_tests() -> Result<()> {
    let root = paths::repo_root();
    run::header("python3 -m unittest (sdk/python, examples/python)");
    run::run(
        python()
            .current_dir(root.join("sdk/python"))
            .args(["-m", "unittest", "discover", "-s", "tests", "-t", "."]),
    )?;
    for (dir, _, _) in EXAMPLES {
        let dir = root.join("examples/python").join(dir);
        if std::fs::read_dir(&dir)?
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("test_"))
        {
            run::run(
                python()
                    .current_dir(&dir)
                    .env("PYTHONPATH", root.join("sdk/python"))
                    .args(["-m", "unittest", "discover", "-s", "."]),
            )?;
        }
    }
    Ok(())
}
