//! The runtime model's check: where production code may block a thread on a future.
//!
//! docs/architecture.md ("Runtime model") says which threads run what: guests on the
//! node's worker pool, I/O (HTTP, peers, the control plane) as tasks of a tokio runtime,
//! and blocking only at the edges, where a synchronous caller meets async code. A
//! `block_on` on a runtime's thread stalls every task that thread serves, and
//! `block_in_place` hides the same stall from the type system; neither shows in a
//! signature, so this check counts them.
//!
//! [`check`] reads the `src/` of each crate in [`CRATES`] (not tests, benches or
//! examples: files named `tests.rs` and items under `#[cfg(test)]` are left out), and
//! counts each call of [`CALLS`] per file: the name followed by its arguments, a
//! definition (`fn block_on`) not counted. Every count must equal the file's entry in
//! [`ALLOWED`], which says why that file is an edge; a file not listed must have none.
//! `block_in_place` has no entry: none may appear. A count below its entry fails too, so
//! that the list stays exact (lower the entry).
//!
//! `cargo xtask runtime-check` runs it; `cargo xtask test` runs it first, with the docs'
//! names; the unit test `repo_blocks_only_at_its_edges` runs it under `cargo test`.
//! It reads tokens (`proc-macro2`), so comments and strings never count, but it knows
//! names, not types: a method of another type named `block_on` counts as well.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// The crates whose `src/` is production code, relative to the repository root.
pub const CRATES: &[&str] = &[
    "host",
    "proto",
    "objects",
    "resources",
    "config",
    "job",
    "scheduler",
    "executor",
    "cluster",
    "http",
    "cli",
    "control-plane",
    "peer",
    "api",
    "abi",
];

/// The calls counted.
pub const CALLS: &[&str] = &["block_on", "block_in_place"];

/// One file allowed to block a thread on a future.
pub struct Allowed {
    /// Relative to the repository root.
    pub path: &'static str,
    /// One of [`CALLS`].
    pub call: &'static str,
    /// How many calls the file makes.
    pub count: usize,
    /// Why a thread may block there.
    pub why: &'static str,
}

/// The edges: every production file that may block a thread on a future.
pub const ALLOWED: &[Allowed] = &[
    Allowed {
        path: "executor/src/wasm_executor.rs",
        call: "block_on",
        count: 1,
        why: "`WasmExecutor::block_on`: an actor's worker thread or a driver's thread \
              drives its guest call on the I/O runtime. A guest's host call (`get`, `wait`, \
              a WASI read) suspends the call's future, and wasmtime's fibers need a thread \
              under them: that thread, never a runtime's (a function task's future is \
              polled by the worker pool instead, and parked while it waits: \
              `WorkerPool::spawn_task`)",
    },
    Allowed {
        path: "executor/src/actor.rs",
        call: "block_on",
        count: 1,
        why: "an actor call on its worker thread (`WasmExecutor::block_on`)",
    },
    Allowed {
        path: "host/src/node/driver.rs",
        call: "block_on",
        count: 1,
        why: "a driver's `main` on its job's own thread, or the CLI's `wray run` thread \
              (`WasmExecutor::block_on`)",
    },
    Allowed {
        path: "host/src/jobs/run.rs",
        call: "block_on",
        count: 1,
        why: "a driver's thread waits for its resources before its `main` starts",
    },
    Allowed {
        path: "host/src/node/mod.rs",
        call: "block_on",
        count: 1,
        why: "`Node::wait`: the embedding API's edge, behind every blocking method of \
              `Node` and `Session`; it refuses inside a tokio runtime \
              (`Error::BlockingInRuntime`)",
    },
    Allowed {
        path: "cli/src/node_cmds.rs",
        call: "block_on",
        count: 5,
        why: "the CLI's edge: `wray start`'s main thread drives its runtime (etcd connect, \
              bind, join, serve until a signal, leave)",
    },
];

/// Checks the repository at `root` against [`ALLOWED`].
///
/// # Errors
/// Lists every file whose count differs from its entry, or a source that cannot be read
/// or tokenized.
pub fn check(root: &Path) -> Result<()> {
    let found = count(root)?;
    let mut problems = Vec::new();
    let mut allowed: BTreeMap<(&str, &str), &Allowed> = BTreeMap::new();
    for a in ALLOWED {
        allowed.insert((a.path, a.call), a);
    }
    for ((path, call), n) in &found {
        let entry = allowed.get(&(path.as_str(), *call));
        let want = entry.map_or(0, |a| a.count);
        if *n != want {
            let why = entry.map_or(String::new(), |a| format!(" [an edge: {}]", a.why));
            problems.push(format!(
                "{path}: {n} `{call}` call(s), {want} allowed{why}{}",
                if *n > want {
                    " (await instead: docs/architecture.md, \"Runtime model\"; or add an edge \
                     to xtask/src/runtime_check.rs ALLOWED, saying why)"
                } else {
                    " (lower its entry in xtask/src/runtime_check.rs ALLOWED)"
                }
            ));
        }
    }
    for a in ALLOWED {
        if !found.contains_key(&(a.path.to_string(), a.call)) {
            problems.push(format!(
                "{}: no `{}` call, {} allowed (remove its entry in \
                 xtask/src/runtime_check.rs ALLOWED)",
                a.path, a.call, a.count
            ));
        }
    }
    if !problems.is_empty() {
        bail!(
            "threads block on futures outside the runtime model's edges:\n  {}",
            problems.join("\n  ")
        );
    }
    let total: usize = found.values().sum();
    println!(
        "runtime model: {total} blocking call(s), all at the {} allowed edges",
        ALLOWED.len()
    );
    Ok(())
}

/// Each production file's calls of [`CALLS`], by (path from `root`, call); files with
/// none are left out.
///
/// # Errors
/// A source that cannot be read or tokenized.
pub fn count(root: &Path) -> Result<BTreeMap<(String, &'static str), usize>> {
    let mut found = BTreeMap::new();
    for krate in CRATES {
        let mut files = Vec::new();
        rust_files(&root.join(krate).join("src"), &mut files)?;
        for file in files {
            let text =
                fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let tokens = TokenStream::from_str(&text)
                .map_err(|e| anyhow::anyhow!("tokenizing {}: {e}", file.display()))?;
            let rel = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .to_string_lossy()
                .into_owned();
            for (call, n) in calls_in(tokens) {
                found.insert((rel.clone(), call), n);
            }
        }
    }
    Ok(found)
}

/// The `.rs` files under `dir`, but test modules' own files (`tests.rs`, `tests/`).
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        match name.as_deref() {
            Some("tests" | "tests.rs") => {}
            _ if path.is_dir() => rust_files(&path, out)?,
            _ if path.extension().is_some_and(|e| e == "rs") => out.push(path),
            _ => {}
        }
    }
    Ok(())
}

/// Calls of [`CALLS`] in `tokens`, items under `#[cfg(test)]` left out.
fn calls_in(tokens: TokenStream) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    walk(tokens, &mut counts);
    counts
}

fn walk(tokens: TokenStream, counts: &mut BTreeMap<&'static str, usize>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if is_cfg_test(&tokens, i) {
            i = item_end(&tokens, i + 2);
            continue;
        }
        match &tokens[i] {
            TokenTree::Group(g) => walk(g.stream(), counts),
            TokenTree::Ident(id) => {
                let called = matches!(
                    tokens.get(i + 1),
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis
                ) || is_turbofish(&tokens, i + 1);
                let defined = matches!(
                    i.checked_sub(1).and_then(|p| tokens.get(p)),
                    Some(TokenTree::Ident(f)) if f == "fn"
                );
                if called && !defined {
                    if let Some(call) = CALLS.iter().find(|c| id == *c) {
                        *counts.entry(*call).or_default() += 1;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Whether `tokens[i..]` is `::<`, as in `block_on::<T>(..)`.
fn is_turbofish(tokens: &[TokenTree], i: usize) -> bool {
    let punct =
        |j: usize, c: char| matches!(tokens.get(j), Some(TokenTree::Punct(p)) if p.as_char() == c);
    punct(i, ':') && punct(i + 1, ':') && punct(i + 2, '<')
}

/// Whether `tokens[i]` starts `#[cfg(test)]` (or another `cfg` naming `test` but not
/// under `not`).
fn is_cfg_test(tokens: &[TokenTree], i: usize) -> bool {
    let (Some(TokenTree::Punct(hash)), Some(TokenTree::Group(attr))) =
        (tokens.get(i), tokens.get(i + 1))
    else {
        return false;
    };
    if hash.as_char() != '#' || attr.delimiter() != Delimiter::Bracket {
        return false;
    }
    let mut inner = attr.stream().into_iter();
    let (Some(TokenTree::Ident(cfg)), Some(TokenTree::Group(args))) = (inner.next(), inner.next())
    else {
        return false;
    };
    cfg == "cfg" && names_test(args.stream())
}

fn names_test(tokens: TokenStream) -> bool {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    tokens.iter().enumerate().any(|(i, t)| match t {
        TokenTree::Ident(id) if id == "test" => true,
        TokenTree::Ident(id) if id == "not" => false,
        TokenTree::Group(g) => {
            let negated = matches!(
                i.checked_sub(1).and_then(|p| tokens.get(p)),
                Some(TokenTree::Ident(n)) if n == "not"
            );
            !negated && names_test(g.stream())
        }
        _ => false,
    })
}

/// Where the item starting at `tokens[i]` (after its `#[cfg(test)]`) ends: after its
/// first `;` or `{ .. }` block at this level (`mod tests { .. }`, `fn f() { .. }`,
/// `use a::b;`); further attributes are part of the item.
fn item_end(tokens: &[TokenTree], mut i: usize) -> usize {
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Punct(p) if p.as_char() == ';' => return i + 1,
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => return i + 1,
            _ => i += 1,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(src: &str) -> BTreeMap<&'static str, usize> {
        calls_in(TokenStream::from_str(src).expect("tokens"))
    }

    #[test]
    fn calls_count_and_definitions_comments_strings_and_tests_do_not() {
        let src = r#"
            // rt.block_on(f) in a comment
            /// and `block_in_place(|| ..)` in a doc
            fn block_on<F>(&self, f: F) {}
            fn a() { let s = "block_on(x)"; rt.block_on(f); h.block_on::<u8>(g); }
            fn b() { tokio::task::block_in_place(|| io.block_on(f)); }
            #[cfg(test)]
            mod tests { fn t() { rt.block_on(f); block_in_place(|| ()); } }
            #[cfg(all(test, unix))]
            fn only_in_tests() { rt.block_on(f); }
            #[cfg(not(test))]
            fn not_in_tests() { rt.block_on(f); }
        "#;
        let counts = counted(src);
        assert_eq!(counts.get("block_on"), Some(&4), "{counts:?}");
        assert_eq!(counts.get("block_in_place"), Some(&1), "{counts:?}");
    }

    #[test]
    fn repo_blocks_only_at_its_edges() {
        check(&crate::paths::repo_root()).expect("blocking only at the allowed edges");
    }
}
