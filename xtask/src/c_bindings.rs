//! `cargo xtask c-bindings`: the C SDK's bindings, generated from `wit/` and checked in.
//!
//! The C guest SDK (`sdk/c/`) is built on the bindings `wit-bindgen` emits for C from the
//! `wray:runtime/library` world: a header, a source file and the component type object
//! (`library_component_type.o`, the world's type, which the linker carries into the core
//! module for [`componentize`] to read). They are generated here, from the `wit-bindgen-c`
//! crate used as a library (building `wit-bindgen-cli` takes minutes), and checked in under
//! [`BINDINGS_DIR`], so that building a C guest needs only clang; [`check`] (run by the test
//! suite) fails when they no longer match `wit/`.
//!
//! [`componentize`] turns a linked `wasm32-wasi` core module into a component: its
//! WASI Preview 1 imports are adapted to WASI 0.2 by the reactor adapter that
//! `wasi-preview1-component-adapter-provider` ships (the one matching the host's
//! wasmtime).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The world the C SDK implements: `metadata` and `functions` exported, the host's
/// interfaces imported.
pub const WORLD: &str = "library";

/// Where the bindings are checked in, relative to the repository root.
pub const BINDINGS_DIR: &str = "sdk/c/bindings";

/// The command that regenerates the bindings.
pub const REGENERATE: &str = "cargo xtask c-bindings";

/// Generates the bindings from `<root>/wit/`: each file's path relative to `root`
/// (under [`BINDINGS_DIR`]) and its contents, sorted by path.
///
/// # Errors
///
/// Fails when `wit/` does not parse, has no [`WORLD`], or the generator refuses it.
pub fn generate(root: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let wit = root.join("wit");
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve
        .push_path(&wit)
        .with_context(|| format!("cannot parse the WIT in {}", wit.display()))?;
    let world = resolve
        .select_world(&[package], Some(WORLD))
        .with_context(|| format!("no world `{WORLD}` in {}", wit.display()))?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)
        .context("wit-bindgen-c failed")?;
    let dir = Path::new(BINDINGS_DIR);
    Ok(files
        .iter()
        .map(|(name, bytes)| (dir.join(name), bytes.to_vec()))
        .collect())
}

/// Writes the bindings under `<root>/`[`BINDINGS_DIR`], removing files there that
/// the generator no longer emits.
///
/// # Errors
///
/// Fails when generating fails or a file cannot be written or removed.
pub fn write(root: &Path) -> Result<()> {
    let files = generate(root)?;
    let dir = root.join(BINDINGS_DIR);
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let wanted: BTreeSet<PathBuf> = files.iter().map(|(path, _)| root.join(path)).collect();
    for stale in existing_files(&dir)?.difference(&wanted) {
        fs::remove_file(stale).with_context(|| format!("cannot remove {}", stale.display()))?;
        println!("removed {}", stale.display());
    }
    for (path, bytes) in &files {
        let path = root.join(path);
        if fs::read(&path).ok().as_deref() == Some(bytes.as_slice()) {
            println!("up to date: {}", path.display());
            continue;
        }
        fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Checks that the checked-in bindings are what [`generate`] makes of `wit/` now.
///
/// # Errors
///
/// Fails naming the first stale, missing or extra file and the command that
/// regenerates them; or when generating fails.
pub fn check(root: &Path) -> Result<()> {
    let files = generate(root)?;
    let dir = root.join(BINDINGS_DIR);
    for (path, bytes) in &files {
        match fs::read(root.join(path)) {
            Ok(have) if have == *bytes => {}
            Ok(_) => bail!(
                "{} is stale: wit/ changed since it was generated; run `{REGENERATE}`",
                path.display()
            ),
            Err(err) => bail!("{} is missing ({err}); run `{REGENERATE}`", path.display()),
        }
    }
    let wanted: BTreeSet<PathBuf> = files.iter().map(|(path, _)| root.join(path)).collect();
    if let Some(extra) = existing_files(&dir)?.difference(&wanted).next() {
        bail!(
            "{} is not generated from wit/ any more; run `{REGENERATE}`",
            extra.display()
        );
    }
    Ok(())
}

/// The files directly in `dir` (none when it does not exist).
fn existing_files(dir: &Path) -> Result<BTreeSet<PathBuf>> {
    let mut files = BTreeSet::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", dir.display())),
    };
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        if path.is_file() {
            files.insert(path);
        }
    }
    Ok(files)
}

/// Makes a component of `module`, a core `wasm32-wasi` reactor module carrying its
/// component type (a C guest's, linked with the bindings' component type object; a
/// Rust guest's, from the `wray` crate's `wit-bindgen` bindings): its exports and
/// `wray:runtime` imports become the component's, and its WASI Preview 1 imports are
/// served by the reactor adapter. What `cargo component build` does for a library
/// crate, which is how `cargo xtask demo` builds the word count without installing
/// cargo-component.
///
/// # Errors
///
/// Fails when the module carries no component type, or does not match it.
pub fn componentize(module: &[u8]) -> Result<Vec<u8>> {
    use wasi_preview1_component_adapter_provider::{
        WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
    };
    wit_component::ComponentEncoder::default()
        .module(module)
        .context(
            "the core module carries no valid component type (a C guest linked without the \
             bindings' object?)",
        )?
        .adapter(
            WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .context("cannot load the WASI adapter")?
        .validate(true)
        .encode()
        .context("cannot make a component of the core module")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in bindings match `wit/` (what `cargo xtask c-bindings` writes).
    #[test]
    fn bindings_are_up_to_date() {
        check(&crate::paths::repo_root()).unwrap();
    }

    #[test]
    fn generates_header_source_and_type_object() {
        let files = generate(&crate::paths::repo_root()).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|(path, _)| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["library.c", "library.h", "library_component_type.o"]
        );
        assert!(files.iter().all(|(path, _)| path.starts_with(BINDINGS_DIR)));
    }

    #[test]
    fn check_names_a_stale_file_and_the_command() {
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path();
        let repo = crate::paths::repo_root();
        fs::create_dir_all(root.join("wit")).unwrap();
        fs::copy(repo.join("wit/runtime.wit"), root.join("wit/runtime.wit")).unwrap();
        write(root).unwrap();
        check(root).unwrap();

        fs::write(root.join(BINDINGS_DIR).join("library.h"), b"// edited").unwrap();
        let err = format!("{:#}", check(root).unwrap_err());
        assert!(err.contains("library.h is stale"), "{err}");
        assert!(err.contains(REGENERATE), "{err}");

        write(root).unwrap();
        fs::write(root.join(BINDINGS_DIR).join("old.h"), b"").unwrap();
        let err = format!("{:#}", check(root).unwrap_err());
        assert!(err.contains("old.h"), "{err}");
        write(root).unwrap();
        check(root).unwrap();
    }
}
