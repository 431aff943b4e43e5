//! `cargo xtask import-cycles [SRC_DIR...]`: source files of a crate that import each
//! other in a circle, by `crate::` paths.
//!
//! The layers of docs/architecture.md depend one way; this keeps them so until cargo
//! does (a layer per crate). `cargo xtask test` runs it over [`default_srcs`].
//!
//! A file's module path comes from its place under `SRC_DIR` (`foo/mod.rs` and
//! `foo.rs` are module `foo`; `lib.rs` and `main.rs` the root; `bin/` is left out). A
//! `use crate::a::b::C` (or an inline `crate::a::b::f(..)`, or a group
//! `crate::{a::b, c}`) points at the deepest module file among `a::b`, `a`. Test
//! modules (`#[cfg(test)]` and the braces after it) and `//` comments are dropped
//! first. Each strongly connected group of more than one file is a cycle (Tarjan's
//! algorithm, petgraph's `tarjan_scc`). The rules are those of the Python script
//! `import-cycles` that this replaces, so that both count the same.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{bail, Context, Result};
use petgraph::graph::{DiGraph, NodeIndex};
use regex::Regex;

/// Top-level directories of the repository whose crates are not checked: the
/// developer tasks, the guest workspaces, the benchmarks, build output, vendored code.
const SKIPPED: &[&str] = &[
    "xtask",
    "examples",
    "test-programs",
    "bench",
    "target",
    "vendor",
];

/// `crate::a::b`: a path into the crate.
static USE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)").expect("a valid pattern")
});

/// `crate::{a::b, c}`: a group of paths, up to the first `}`.
static GROUP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)\bcrate::\{([^}]*)\}").expect("a valid pattern"));

/// `// ...` to the end of the line.
static COMMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"//[^\n]*").expect("a valid pattern"));

/// Checks every crate of [`default_srcs`] under `root`, or `srcs` when given.
///
/// # Errors
///
/// When a source file cannot be read, or when there is a cycle: the error names
/// the files of each.
pub fn check(root: &Path, srcs: &[PathBuf]) -> Result<()> {
    let srcs = if srcs.is_empty() {
        default_srcs(root)?
    } else {
        srcs.to_vec()
    };
    let mut found = Vec::new();
    for src in &srcs {
        for cycle in cycles(src)? {
            let names: Vec<String> = cycle
                .iter()
                .map(|path| {
                    path.strip_prefix(root)
                        .unwrap_or(path)
                        .display()
                        .to_string()
                })
                .collect();
            let line = format!("cycle of {} files: {}", names.len(), names.join(", "));
            println!("{line}");
            found.push(line);
        }
    }
    println!("{} import cycles", found.len());
    if !found.is_empty() {
        bail!("{} import cycles: {}", found.len(), found.join("; "));
    }
    Ok(())
}

/// The `src/` directories checked by default: `<dir>/src` and `<dir>/<sub>/src` for
/// each top-level directory of `root` but [`SKIPPED`] and hidden ones, in name order.
///
/// # Errors
///
/// When `root` cannot be read.
pub fn default_srcs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for dir in sorted_entries(root)? {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        if SKIPPED.contains(&name.as_ref()) || name.starts_with('.') || !dir.is_dir() {
            continue;
        }
        if dir.join("src").is_dir() {
            out.push(dir.join("src"));
        }
        for sub in sorted_entries(&dir)? {
            if sub.join("src").is_dir() {
                out.push(sub.join("src"));
            }
        }
    }
    Ok(out)
}

/// The entries of `dir`, sorted by name.
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        entries.push(
            entry
                .with_context(|| format!("cannot read {}", dir.display()))?
                .path(),
        );
    }
    entries.sort();
    Ok(entries)
}

/// The cycles among the module files under `src`: each a group of more than one
/// file, sorted by path, the groups in order of their first file.
///
/// # Errors
///
/// When a directory or file cannot be read.
pub fn cycles(src: &Path) -> Result<Vec<Vec<PathBuf>>> {
    let modules = modules(src)?;
    let mut graph = DiGraph::<PathBuf, ()>::new();
    let mut nodes: BTreeMap<&PathBuf, NodeIndex> = BTreeMap::new();
    for path in modules.values() {
        nodes
            .entry(path)
            .or_insert_with(|| graph.add_node(path.clone()));
    }
    for path in modules.values() {
        let text = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let text = strip_tests(&String::from_utf8_lossy(&text));
        let text = COMMENT.replace_all(&text, "");
        for target in targets(&text) {
            let imported = (1..=target.len())
                .rev()
                .find_map(|n| modules.get(&target[..n]));
            if let Some(imported) = imported.filter(|imported| *imported != path) {
                graph.update_edge(nodes[path], nodes[imported], ());
            }
        }
    }
    let mut cycles: Vec<Vec<PathBuf>> = petgraph::algo::tarjan_scc(&graph)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut files: Vec<PathBuf> = component.iter().map(|i| graph[*i].clone()).collect();
            files.sort();
            files
        })
        .collect();
    cycles.sort();
    Ok(cycles)
}

/// Each module file under `src` by its module path (`["scheduler", "queue"]`).
///
/// Where two files give one path (`lib.rs` and `main.rs`), the later in path order
/// is taken.
fn modules(src: &Path) -> Result<BTreeMap<Vec<String>, PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for path in sorted_entries(&dir)? {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut modules = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(src).unwrap_or(&path).with_extension("");
        let mut module: Vec<String> = rel
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module
            .last()
            .is_some_and(|last| ["mod", "lib", "main"].contains(&last.as_str()))
        {
            module.pop();
        }
        if module.first().is_some_and(|first| first == "bin") {
            continue;
        }
        modules.insert(module, path);
    }
    Ok(modules)
}

/// The module paths `text` names after `crate::`, each as its segments.
fn targets(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = USE
        .captures_iter(text)
        .map(|found| {
            found[1]
                .trim_matches(':')
                .split("::")
                .map(str::to_owned)
                .collect()
        })
        .collect();
    for group in GROUP.captures_iter(text) {
        for part in group[1].split(',') {
            let part = part.trim();
            let part = part.split(" as ").next().unwrap_or_default().trim();
            if !part.is_empty() {
                out.push(
                    part.replace('{', "")
                        .trim()
                        .split("::")
                        .map(str::to_owned)
                        .collect(),
                );
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `text` without its test modules: each `#[cfg(test)]` up to the brace that closes
/// the first block after it (to the end of the text when none closes).
fn strip_tests(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut text = text.to_owned();
    while let Some(start) = text.find(MARK) {
        let Some(open) = text[start..].find('{').map(|at| start + at) else {
            break;
        };
        let mut depth = 0usize;
        let mut end = text.len();
        for (at, byte) in text.bytes().enumerate().skip(open) {
            match byte {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = at + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        text.replace_range(start..end, "");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` under `dir`.
    fn write_tree(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    #[test]
    fn a_layered_crate_has_no_cycle() {
        let scratch = tempfile::tempdir().unwrap();
        let src = scratch.path();
        write_tree(
            src,
            &[
                ("lib.rs", "mod a;\nmod b;\npub use crate::b::B;\n"),
                ("a.rs", "pub struct A;\n"),
                ("b/mod.rs", "use crate::a::A;\npub struct B(A);\nmod c;\n"),
                ("b/c.rs", "use crate::{a::A, b::B};\n"),
            ],
        );
        assert_eq!(cycles(src).unwrap(), Vec::<Vec<PathBuf>>::new());
    }

    #[test]
    fn files_that_import_each_other_are_a_cycle() {
        let scratch = tempfile::tempdir().unwrap();
        let src = scratch.path();
        write_tree(
            src,
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "pub fn f() { crate::b::g() }\n"),
                ("b/mod.rs", "mod c;\n"),
                ("b/c.rs", "use crate::{a::f as g};\n"),
                ("b/d.rs", "// crate::a is only named in a comment\n"),
            ],
        );
        // b/mod.rs -> nothing; a.rs -> b/mod.rs: no cycle yet.
        assert_eq!(cycles(src).unwrap(), Vec::<Vec<PathBuf>>::new());
        write_tree(src, &[("b/mod.rs", "mod c;\nuse crate::a::f;\n")]);
        assert_eq!(
            cycles(src).unwrap(),
            vec![vec![src.join("a.rs"), src.join("b/mod.rs")]]
        );
        let err = format!("{:#}", check(src, &[src.to_path_buf()]).unwrap_err());
        assert!(err.contains("cycle of 2 files: a.rs, b/mod.rs"), "{err}");
    }

    #[test]
    fn test_modules_and_comments_are_not_imports() {
        let scratch = tempfile::tempdir().unwrap();
        let src = scratch.path();
        write_tree(
            src,
            &[
                ("a.rs", "use crate::b::B;\n"),
                (
                    "b.rs",
                    "pub struct B;\n// use crate::a;\n#[cfg(test)]\nmod tests {\n    \
                     fn t() { { crate::a::x(); } }\n}\n",
                ),
            ],
        );
        assert_eq!(cycles(src).unwrap(), Vec::<Vec<PathBuf>>::new());
    }

    #[test]
    fn a_path_points_at_its_deepest_module_file() {
        assert_eq!(
            targets("use crate::a::b::C; crate::d::f(); use crate::{e::F as G, g};"),
            vec![
                vec!["a".to_owned(), "b".to_owned(), "C".to_owned()],
                vec!["d".to_owned(), "f".to_owned()],
                vec!["e".to_owned(), "F".to_owned()],
                vec!["g".to_owned()],
            ]
        );
    }

    #[test]
    fn the_workspace_has_no_import_cycle() {
        let root = crate::paths::repo_root();
        check(&root, &[]).unwrap();
    }
}
