//! `cargo xtask vendor-check`: `vendor/wasmtime` is the published crate plus
//! `vendor/patches/`, and nothing else.
//!
//! The workspace uses `vendor/wasmtime` through `[patch.crates-io]`, so a build never
//! downloads the published crate it was made from. The check takes that crate's
//! `.crate` archive from cargo's registry cache (`$CARGO_HOME/registry/cache/*/`), or,
//! when it is not there (a fresh machine), has `cargo fetch` download it through a
//! scratch package that depends on it without the patch ([`fetch`]); unpacks it into a
//! scratch directory; applies every `vendor/patches/*.patch`, in name order, with
//! `git apply` (which refuses a patch that does not apply exactly, and works outside a
//! repository); and compares the result with `vendor/wasmtime` file by file
//! ([`compare`]). Which crate and version: `[package]`'s `name` and `version` in
//! `vendor/wasmtime/Cargo.toml`. `cargo xtask test` runs it early; vendor/README.md says
//! how the patches are made and rebased.

use std::collections::BTreeMap;
use std::env;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::run;

/// The vendored crate, relative to the repository root.
pub const VENDORED: &str = "vendor/wasmtime";

/// Its patches against the published crate, relative to the repository root.
pub const PATCHES: &str = "vendor/patches";

/// Checks that `vendor/wasmtime` under `root` is its published crate with
/// `vendor/patches/*.patch` applied.
///
/// # Errors
///
/// When the published crate is neither in cargo's registry cache nor downloadable,
/// when a patch does not apply, or when the result differs from `vendor/wasmtime`
/// (the error names each differing file).
pub fn check(root: &Path) -> Result<()> {
    let vendored = root.join(VENDORED);
    let (name, version) = package_id(&vendored.join("Cargo.toml"))?;
    let archive = match cached_crate(&name, &version)? {
        Some(archive) => archive,
        None => {
            fetch(root, &name, &version)?;
            cached_crate(&name, &version)?.with_context(|| {
                format!(
                    "`cargo fetch` ran, yet {name}-{version}.crate is not in {}",
                    registry_cache()
                        .map(|dir| dir.display().to_string())
                        .unwrap_or_default()
                )
            })?
        }
    };
    println!("published crate: {}", archive.display());
    let patches = patch_files(&root.join(PATCHES))?;
    let differences = check_against(&archive, &name, &version, &patches, &vendored)?;
    if differences.is_empty() {
        println!(
            "{VENDORED} is {name} {version} with the {} patches of {PATCHES}",
            patches.len()
        );
        return Ok(());
    }
    let list: Vec<String> = differences.iter().map(ToString::to_string).collect();
    bail!(
        "{VENDORED} is not {name} {version} with {PATCHES}/*.patch applied: {}; \
         make each change a patch (vendor/README.md, \"Changing a patch, or adding one\")",
        list.join(", ")
    )
}

/// Unpacks `archive` (a `.crate`: a gzipped tar of `<name>-<version>/`) into a scratch
/// directory, applies `patches` in order, and compares the result with `vendored`.
///
/// # Errors
///
/// When the archive cannot be unpacked, a patch does not apply, or a tree cannot be
/// read.
pub fn check_against(
    archive: &Path,
    name: &str,
    version: &str,
    patches: &[PathBuf],
    vendored: &Path,
) -> Result<Vec<Difference>> {
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    unpack(archive, scratch.path())?;
    let published = scratch.path().join(format!("{name}-{version}"));
    if !published.is_dir() {
        bail!("{} holds no {name}-{version}/ directory", archive.display());
    }
    for patch in patches {
        apply(patch, &published, scratch.path())?;
    }
    compare(&published, vendored)
}

/// One way two trees differ, by path relative to their roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The file is in both, with different contents (or one is a link).
    Differs(PathBuf),
    /// The file is only in the published crate with the patches applied.
    OnlyPatched(PathBuf),
    /// The file is only in the vendored directory.
    OnlyVendored(PathBuf),
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Differs(path) => write!(f, "{} differs", path.display()),
            Self::OnlyPatched(path) => write!(
                f,
                "{} is missing from {VENDORED} (the patched crate has it)",
                path.display()
            ),
            Self::OnlyVendored(path) => write!(
                f,
                "{} is only in {VENDORED} (the patched crate lacks it)",
                path.display()
            ),
        }
    }
}

/// The files of the trees `patched` and `vendored` that differ, in path order.
///
/// # Errors
///
/// When a directory or file cannot be read.
pub fn compare(patched: &Path, vendored: &Path) -> Result<Vec<Difference>> {
    let left = files(patched)?;
    let right = files(vendored)?;
    let mut differences = Vec::new();
    for (path, content) in &left {
        match right.get(path) {
            None => differences.push(Difference::OnlyPatched(path.clone())),
            Some(other) if other != content => differences.push(Difference::Differs(path.clone())),
            Some(_) => {}
        }
    }
    for path in right.keys().filter(|path| !left.contains_key(*path)) {
        differences.push(Difference::OnlyVendored(path.clone()));
    }
    differences.sort_by(|a, b| key(a).cmp(key(b)));
    Ok(differences)
}

/// The path a [`Difference`] is about.
fn key(difference: &Difference) -> &Path {
    match difference {
        Difference::Differs(path)
        | Difference::OnlyPatched(path)
        | Difference::OnlyVendored(path) => path,
    }
}

/// What a tree entry holds: a file's bytes or a link's target.
#[derive(Debug, PartialEq, Eq)]
enum Content {
    File(Vec<u8>),
    Link(PathBuf),
}

/// Every file and link under `root`, by path relative to it.
fn files(root: &Path) -> Result<BTreeMap<PathBuf, Content>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries =
            fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .with_context(|| format!("cannot stat {}", path.display()))?;
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_symlink() {
                let target = fs::read_link(&path)
                    .with_context(|| format!("cannot read link {}", path.display()))?;
                out.insert(rel, Content::Link(target));
            } else {
                let bytes =
                    fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
                out.insert(rel, Content::File(bytes));
            }
        }
    }
    Ok(out)
}

/// Applies one patch to the tree at `dir` with `git apply -p1`.
///
/// `GIT_CEILING_DIRECTORIES=<scratch>` keeps git from taking a repository above the
/// scratch directory for the tree's (`git apply` inside a repository patches paths
/// relative to the repository's root).
fn apply(patch: &Path, dir: &Path, scratch: &Path) -> Result<()> {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CEILING_DIRECTORIES", scratch)
        .args(["apply", "-p1", "--whitespace=nowarn"])
        .arg(patch)
        .output()
        .context("cannot run `git apply` (is git installed?)")?;
    if !out.status.success() {
        bail!(
            "{} does not apply: {}",
            patch.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The `*.patch` files of `dir`, in name order (the order they apply in).
///
/// # Errors
///
/// When `dir` cannot be read.
pub fn patch_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut patches = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        if path.extension().is_some_and(|ext| ext == "patch") && path.is_file() {
            patches.push(path);
        }
    }
    patches.sort();
    Ok(patches)
}

/// Unpacks a `.crate` archive (gzipped tar) into `into`.
fn unpack(archive: &Path, into: &Path) -> Result<()> {
    let file =
        fs::File::open(archive).with_context(|| format!("cannot open {}", archive.display()))?;
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(into)
        .with_context(|| format!("cannot unpack {}", archive.display()))
}

/// The `name` and `version` of a manifest's `[package]`.
fn package_id(manifest: &Path) -> Result<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Manifest {
        package: Package,
    }
    #[derive(serde::Deserialize)]
    struct Package {
        name: String,
        version: String,
    }
    let text = fs::read_to_string(manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let parsed: Manifest =
        toml::from_str(&text).with_context(|| format!("cannot parse {}", manifest.display()))?;
    Ok((parsed.package.name, parsed.package.version))
}

/// Cargo's home: `$CARGO_HOME`, else `$HOME/.cargo` (as cargo finds it).
fn cargo_home() -> Result<PathBuf> {
    if let Some(home) = env::var_os("CARGO_HOME").filter(|home| !home.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let home = env::var_os("HOME").context("neither CARGO_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cargo"))
}

/// Where cargo keeps downloaded `.crate` archives, one directory per registry.
fn registry_cache() -> Result<PathBuf> {
    Ok(cargo_home()?.join("registry").join("cache"))
}

/// The `.crate` archive of `name` `version` in cargo's registry cache, if there.
///
/// # Errors
///
/// When the cache exists but cannot be read.
fn cached_crate(name: &str, version: &str) -> Result<Option<PathBuf>> {
    let cache = registry_cache()?;
    let registries = match fs::read_dir(&cache) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", cache.display())),
    };
    let file = format!("{name}-{version}.crate");
    let mut found: Vec<PathBuf> = registries
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join(&file)))
        .filter(|path| path.is_file())
        .collect();
    // crates.io's index directory sorts before older `github.com-*` ones.
    found.sort();
    Ok(found.into_iter().next())
}

/// Downloads `name` `version` into cargo's registry cache with `cargo fetch`, through
/// a scratch package that depends on exactly that version and is not under the
/// workspace's `[patch.crates-io]`.
///
/// The workspace's `Cargo.lock` is copied into the scratch package first, so that the
/// crate's dependencies resolve to the versions the workspace already downloaded: on
/// a machine that has built the workspace, only the crate itself is downloaded.
fn fetch(root: &Path, name: &str, version: &str) -> Result<()> {
    run::header(&format!(
        "{name} {version} is not in cargo's registry cache: cargo fetch"
    ));
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let dir = scratch.path();
    let manifest = format!(
        "[package]\nname = \"wray-vendor-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\n{name} = {{ version = \"={version}\", \
         default-features = false }}\n"
    );
    fs::write(dir.join("Cargo.toml"), manifest).context("cannot write the scratch manifest")?;
    fs::create_dir(dir.join("src")).context("cannot make the scratch package's src/")?;
    fs::write(dir.join("src/lib.rs"), "").context("cannot write the scratch lib.rs")?;
    let lock = root.join("Cargo.lock");
    if lock.is_file() {
        fs::copy(&lock, dir.join("Cargo.lock")).context("cannot copy Cargo.lock")?;
    }
    run::run(run::cargo().current_dir(dir).args(["fetch", "--quiet"])).with_context(|| {
        format!("cannot download {name} {version} from crates.io (is the network reachable?)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.crate` of `demo-1.0.0/` with `files` in it, written to `path`.
    fn write_crate(path: &Path, files: &[(&str, &str)]) {
        let gz = flate2::write::GzEncoder::new(
            fs::File::create(path).unwrap(),
            flate2::Compression::fast(),
        );
        let mut builder = tar::Builder::new(gz);
        for (name, text) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, format!("demo-1.0.0/{name}"), text.as_bytes())
                .unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
    }

    /// Writes `files` under `dir`.
    fn write_tree(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    const LIB: &str = "pub fn a() -> u32 {\n    1\n}\n\npub fn b() -> u32 {\n    2\n}\n";
    const LIB_PATCHED: &str = "pub fn a() -> u32 {\n    1\n}\n\npub fn b() -> u32 {\n    3\n}\n";
    const PATCH: &str = "Subject: b returns 3\n\n\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -4,4 +4,4 @@ pub fn a() -> u32 {
 
 pub fn b() -> u32 {
-    2
+    3
 }
";

    /// A scratch directory with `demo-1.0.0.crate`, `patches/0001-b.patch` and
    /// `vendored/` (the crate with the patch applied).
    fn fixture() -> tempfile::TempDir {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        write_crate(
            &dir.join("demo-1.0.0.crate"),
            &[("Cargo.toml", "[package]\n"), ("src/lib.rs", LIB)],
        );
        write_tree(&dir.join("patches"), &[("0001-b.patch", PATCH)]);
        write_tree(
            &dir.join("vendored"),
            &[("Cargo.toml", "[package]\n"), ("src/lib.rs", LIB_PATCHED)],
        );
        scratch
    }

    fn differences(dir: &Path) -> Result<Vec<Difference>> {
        let patches = patch_files(&dir.join("patches")).unwrap();
        check_against(
            &dir.join("demo-1.0.0.crate"),
            "demo",
            "1.0.0",
            &patches,
            &dir.join("vendored"),
        )
    }

    #[test]
    fn the_published_crate_with_its_patches_matches() {
        let scratch = fixture();
        assert_eq!(differences(scratch.path()).unwrap(), vec![]);
    }

    #[test]
    fn one_byte_changed_in_a_vendored_file_is_named() {
        let scratch = fixture();
        let lib = scratch.path().join("vendored/src/lib.rs");
        fs::write(&lib, LIB_PATCHED.replace("    1", "    0")).unwrap();
        assert_eq!(
            differences(scratch.path()).unwrap(),
            vec![Difference::Differs(PathBuf::from("src/lib.rs"))]
        );
    }

    #[test]
    fn a_file_only_on_one_side_is_named() {
        let scratch = fixture();
        let dir = scratch.path();
        write_tree(&dir.join("vendored"), &[("src/extra.rs", "")]);
        fs::remove_file(dir.join("vendored/Cargo.toml")).unwrap();
        assert_eq!(
            differences(dir).unwrap(),
            vec![
                Difference::OnlyPatched(PathBuf::from("Cargo.toml")),
                Difference::OnlyVendored(PathBuf::from("src/extra.rs")),
            ]
        );
    }

    #[test]
    fn a_patch_that_does_not_apply_is_named() {
        let scratch = fixture();
        let dir = scratch.path();
        // A second patch against the same lines as the first.
        write_tree(&dir.join("patches"), &[("0002-again.patch", PATCH)]);
        let err = format!("{:#}", differences(dir).unwrap_err());
        assert!(err.contains("0002-again.patch does not apply"), "{err}");
    }

    #[test]
    fn patches_apply_in_name_order() {
        let scratch = fixture();
        let dir = scratch.path();
        write_tree(
            &dir.join("patches"),
            &[("0000-first.patch", ""), ("notes.txt", "")],
        );
        let names: Vec<_> = patch_files(&dir.join("patches"))
            .unwrap()
            .iter()
            .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["0000-first.patch", "0001-b.patch"]);
    }

    #[test]
    fn the_vendored_package_is_named_by_its_manifest() {
        let root = crate::paths::repo_root();
        let (name, version) = package_id(&root.join(VENDORED).join("Cargo.toml")).unwrap();
        assert_eq!(name, "wasmtime");
        assert_eq!(version, "48.0.8");
    }
}
