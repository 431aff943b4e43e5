//! The C guests built to components (by `cargo xtask build-guests`).
//!
//! Each directory under [`C_EXAMPLES`] is one component named after it (`sum_bytes/`
//! makes `sum_bytes.wasm`), made of its `*.c` files, the C SDK (`sdk/c/wray.c`) and the
//! checked-in bindings ([`c_bindings`]). Debian's clang compiles them for `wasm32-wasi`
//! against Debian's wasi-libc; `wasm-ld` links a reactor module carrying the bindings'
//! component type object; [`c_bindings::componentize`] makes the component.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::c_bindings::{self, BINDINGS_DIR};
use crate::guests::BuildFailure;

/// The C guests, relative to the repository root: one component per directory.
pub const C_EXAMPLES: &str = "examples/c";

/// The C SDK, relative to the repository root.
pub const C_SDK: &str = "sdk/c";

/// The compiler (Debian's default clang: 14 on Debian 12).
pub const CLANG: &str = "clang";

/// The Debian packages the C guests need: clang, wasm-ld, wasi-libc and compiler-rt's
/// wasm32 builtins (without which clang cannot link for wasm32).
pub const PACKAGES: &[&str] = &["clang", "lld", "wasi-libc", "libclang-rt-dev-wasm32"];

/// Flags of every compilation. `wasm32-wasi` is clang 14's name for WASI Preview 1
/// (newer clangs also take it); `-msimd128` lets the loops over mapped objects
/// vectorize (wasmtime enables SIMD by default).
const CFLAGS: &[&str] = &[
    "--target=wasm32-wasi",
    "-O2",
    "-msimd128",
    "-std=gnu11",
    "-Wall",
    "-Wextra",
];

/// Flags of the SDK's and the examples' own sources (not the generated bindings).
const STRICT: &[&str] = &["-Werror"];

/// Flags of the link: a reactor (exports called any number of times, no `main`), its
/// debug info and symbol names stripped (the component keeps what it needs).
const LDFLAGS: &[&str] = &[
    "--target=wasm32-wasi",
    "-mexec-model=reactor",
    "-Wl,--strip-all",
];

/// Builds every C guest under [`C_EXAMPLES`] into `out_dir` (`<name>.wasm`), with
/// intermediate files in a scratch directory, going on past a guest that fails.
/// Returns the components built and the guests that did not build.
pub fn build_each(root: &Path, out_dir: &Path) -> (Vec<PathBuf>, Vec<BuildFailure>) {
    let examples = root.join(C_EXAMPLES);
    let mut dirs = Vec::new();
    let listed = fs::read_dir(&examples).and_then(|entries| {
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            }
        }
        Ok(())
    });
    if let Err(err) = listed {
        let why = anyhow::Error::new(err).context(format!("cannot read {}", examples.display()));
        return (
            Vec::new(),
            vec![BuildFailure {
                what: format!("{C_EXAMPLES}/"),
                why,
            }],
        );
    }
    dirs.sort();
    let (mut built, mut failed) = (Vec::new(), Vec::new());
    for dir in &dirs {
        match build_one(root, dir, out_dir) {
            Ok(wasm) => built.push(wasm),
            Err(why) => failed.push(BuildFailure {
                what: dir.strip_prefix(root).unwrap_or(dir).display().to_string(),
                why,
            }),
        }
    }
    (built, failed)
}

/// [`build_each`], for `cargo xtask build-guests`: the guests that did not build.
pub fn build_all(root: &Path, out_dir: &Path) -> Vec<BuildFailure> {
    build_each(root, out_dir).1
}

/// Builds the C guest in `dir` (its `*.c` files) into `out_dir/<dir name>.wasm` and
/// returns that path.
///
/// # Errors
///
/// Fails when clang is missing (naming [`PACKAGES`]), a compile, link or
/// componentization fails, or `dir` holds no `.c` file.
pub fn build_one(root: &Path, dir: &Path, out_dir: &Path) -> Result<PathBuf> {
    let started = Instant::now();
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} has no usable name", dir.display()))?;
    let mut sources = c_files(dir)?;
    if sources.is_empty() {
        bail!("{} holds no .c file", dir.display());
    }
    sources.sort();
    // Objects and the core module in a scratch directory, so that `out_dir`
    // holds components only (the tests list it).
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let obj_dir = scratch.path();
    let sdk = root.join(C_SDK);
    let bindings = root.join(BINDINGS_DIR);

    // Every source compiled at once: (source, whether warnings are errors).
    let mut units: Vec<(PathBuf, bool)> = sources.into_iter().map(|s| (s, true)).collect();
    units.push((sdk.join("wray.c"), true));
    units.push((bindings.join(format!("{}.c", c_bindings::WORLD)), false));
    let mut children: Vec<(Child, String)> = Vec::new();
    let mut objects = Vec::new();
    for (source, strict) in &units {
        let stem = source
            .file_stem()
            .and_then(|s| s.to_str())
            .context("a source without a name")?;
        let object = obj_dir.join(format!("{stem}.o"));
        let mut cmd = Command::new(CLANG);
        cmd.args(CFLAGS)
            .args(if *strict { STRICT } else { &[] })
            .arg("-I")
            .arg(&sdk)
            .arg("-c")
            .arg(source)
            .arg("-o")
            .arg(&object);
        children.push((spawn(&mut cmd)?, display(&cmd)));
        objects.push(object);
    }
    for (child, line) in children {
        finish(child, &line)?;
    }

    let core = obj_dir.join(format!("{name}.core.wasm"));
    let mut link = Command::new(CLANG);
    link.args(LDFLAGS)
        .args(&objects)
        .arg(bindings.join(format!("{}_component_type.o", c_bindings::WORLD)))
        .arg("-o")
        .arg(&core);
    let line = display(&link);
    finish(spawn(&mut link)?, &line)?;

    let module = fs::read(&core).with_context(|| format!("cannot read {}", core.display()))?;
    let component = c_bindings::componentize(&module)
        .with_context(|| format!("componentizing {}", core.display()))?;
    fs::create_dir_all(out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    let wasm = out_dir.join(format!("{name}.wasm"));
    fs::write(&wasm, &component).with_context(|| format!("cannot write {}", wasm.display()))?;
    println!(
        "built {} ({} bytes; core module {} bytes) in {:.2?}",
        wasm.display(),
        component.len(),
        module.len(),
        started.elapsed()
    );
    Ok(wasm)
}

/// The `.c` files directly in `dir`.
fn c_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "c") {
            files.push(path);
        }
    }
    Ok(files)
}

/// Echoes and starts `cmd`.
/// Waits for `child` (the command `line`) and fails naming it when it
/// failed, with the packages C guests need.
fn finish(mut child: Child, line: &str) -> Result<()> {
    let status = child
        .wait()
        .with_context(|| format!("`{line}` did not finish"))?;
    if !status.success() {
        bail!(
            "`{line}` failed ({status}); the C guests need {}",
            PACKAGES.join(" ")
        );
    }
    Ok(())
}

fn spawn(cmd: &mut Command) -> Result<Child> {
    let line = display(cmd);
    println!("$ {line}");
    cmd.spawn().with_context(|| {
        format!(
            "cannot start `{line}`: is clang installed? (`apt-get install {}`)",
            PACKAGES.join(" ")
        )
    })
}

/// The command as one line.
fn display(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds the example C guests to components (skipped where `cargo xtask setup`
    /// has not installed [`PACKAGES`]).
    #[test]
    fn builds_the_c_examples() {
        let sysroot = Path::new("/usr/include/wasm32-wasi/stdio.h");
        if Command::new(CLANG).arg("--version").output().is_err() || !sysroot.is_file() {
            eprintln!(
                "skipped: no {CLANG} or wasi-libc (apt-get install {})",
                PACKAGES.join(" ")
            );
            return;
        }
        let out = tempfile::tempdir().unwrap();
        let (built, failed) = build_each(&crate::paths::repo_root(), out.path());
        assert!(failed.is_empty(), "{failed:?}");
        assert!(built.iter().any(|p| p.ends_with("sum_bytes.wasm")));
        for wasm in built {
            let bytes = fs::read(&wasm).unwrap();
            // A component: the wasm magic, then layer 1.
            assert_eq!(&bytes[..4], b"\0asm");
            assert_eq!(&bytes[6..8], [1, 0]);
        }
    }
}
