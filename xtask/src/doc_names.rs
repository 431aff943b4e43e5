//! The design docs name only files and Rust items that exist: a drift check.
//!
//! `cargo xtask test` runs [`check`] before everything else (and the unit test
//! `repo_docs_name_only_what_exists` runs it under `cargo test`), over [`DOCS`]. It reads
//! each doc's inline code spans (`` `...` ``), the words of its fenced blocks and its
//! relative links, and reports every name that no longer exists, with its line:
//!
//! - **Paths.** A span that looks like a repository path: it contains `/`, holds only
//!   path characters, and ends in one of [`EXTENSIONS`] or in `/` (a directory), or
//!   its first component is an entry of the repository root (`host/src`,
//!   `examples/c`). It is resolved against the repository root, then each crate's
//!   `src/` ([`CRATES`]: `scheduler/queue.rs`), then each directory of `host/src/`
//!   (`forward.rs` written `cluster/forward.rs` there is `host/src/cluster/forward.rs`).
//!   A bare file name with one of [`EXTENSIONS`] (`worker_pool.rs`) must be the name of
//!   some file in the repository. Fenced blocks (the diagrams) are checked word by
//!   word, for paths and `x::y` items only.
//! - **Links.** A relative Markdown link (`[cluster.md](cluster.md)`) must name a file
//!   next to the doc.
//! - **Rust items.** A span `X::y` (after `#[`, `!`, arguments and generics are
//!   dropped: `#[wray::remote]`, `Options::format(Format::Json)`,
//!   `PeerError::Remote { code, message }`): when `X` is CamelCase it must be a type
//!   (`struct`, `enum`, `trait`, `type`, `union`) of the workspace's Rust sources, and
//!   `y` an `fn` or a field there (or, capitalized, a type, enum variant or constant);
//!   when `X` is lowercase it must be a module or a crate of the workspace, and `y` any
//!   item there.
//!   A bare CamelCase span (`TaskTable`: at least two capitals, each followed by a
//!   lowercase letter or digit) must be a type or an enum variant.
//!
//! Names from other projects (wasmtime's `InstancePre`, `subtle::ConstantTimeEq`)
//! are in [`ALLOWED`], each with why. The check reads source text, not the compiler's
//! view: it knows that some `fn y` exists, not that it is `X`'s.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// The docs checked, relative to the repository root.
pub const DOCS: &[&str] = &[
    "docs/architecture.md",
    "docs/cluster.md",
    "docs/control-plane.md",
    "docs/peer-protocol.md",
];

/// This module, relative to the root: not scanned for items (its tests define some).
const THIS_FILE: &str = "xtask/src/doc_names.rs";

/// What a span must end in to be taken for a file path.
pub const EXTENSIONS: &[&str] = &[".rs", ".wit", ".md", ".toml", ".sh", ".py"];

/// The crates whose `src/` a relative path may start from, relative to the root.
pub const CRATES: &[&str] = &[
    "host",
    "http",
    "cli",
    "api",
    "control-plane",
    "peer",
    "proto",
    "objects",
    "resources",
    "config",
    "job",
    "scheduler",
    "executor",
    "cluster",
    "abi",
    "guest-sdk",
    "guest-sdk/macros",
    "xtask",
    "bench",
];

/// Names the docs may use that the workspace does not define: each from another
/// project, with where it comes from.
pub const ALLOWED: &[(&str, &str)] = &[
    (
        "InstancePre",
        "wasmtime: a component linked once, instantiated many times",
    ),
    (
        "ResourceLimiter",
        "wasmtime: the trait a store's memory limiter implements",
    ),
    (
        "NodeAffinitySchedulingStrategy",
        "Ray: the scheduling strategy that binds a task to a node",
    ),
    (
        "subtle::ConstantTimeEq",
        "subtle: the token comparison of the peer protocol",
    ),
    (
        "wit_bindgen::generate",
        "wit-bindgen: the bindings macro of Rust guests",
    ),
];

/// A name a doc uses that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// The doc, as given to [`check_doc`].
    pub doc: String,
    /// Its 1-based line.
    pub line: usize,
    /// The name as written (a span's text, a link's target, a word of a diagram).
    pub name: String,
    /// What is missing.
    pub why: String,
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}`: {}",
            self.doc, self.line, self.name, self.why
        )
    }
}

/// What exists in a checkout: its files' names and its Rust sources' items.
#[derive(Debug, Default)]
pub struct Index {
    /// Every file's name (`worker_pool.rs`), anywhere in the checkout.
    file_names: BTreeSet<String>,
    /// The entries of the root (`host`, `docs`, `Cargo.toml`).
    top_level: BTreeSet<String>,
    /// Directories a relative path may start from, relative to the root (`""` first).
    bases: Vec<String>,
    /// `struct`, `enum`, `trait`, `type` and `union` names.
    types: BTreeSet<String>,
    /// `fn` names.
    fns: BTreeSet<String>,
    /// What may qualify an item in lowercase: `mod` names, `.rs` file stems, crates
    /// (`wray`, `wray_host`), `use ... as` aliases.
    modules: BTreeSet<String>,
    /// Field names (and parameters written one to a line).
    fields: BTreeSet<String>,
    /// Enum variants, constants, statics and `macro_rules!` names.
    others: BTreeSet<String>,
}

impl Index {
    /// Reads the checkout at `root`: walks it (not `.git`, `target`, `node_modules`
    /// or hidden entries) and scans every `.rs` file for the items it defines.
    ///
    /// # Errors
    ///
    /// Fails when a directory or Rust source cannot be read.
    pub fn of(root: &Path) -> Result<Self> {
        let mut index = Self {
            bases: vec![String::new()],
            ..Self::default()
        };
        for krate in CRATES {
            index.bases.push(format!("{krate}/src"));
        }
        let host_src = root.join("host/src");
        if host_src.is_dir() {
            let mut dirs = Vec::new();
            for entry in fs::read_dir(&host_src)
                .with_context(|| format!("cannot read {}", host_src.display()))?
            {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    dirs.push(format!("host/src/{}", entry.file_name().to_string_lossy()));
                }
            }
            dirs.sort();
            index.bases.extend(dirs);
        }
        for entry in
            fs::read_dir(root).with_context(|| format!("cannot read {}", root.display()))?
        {
            index
                .top_level
                .insert(entry?.file_name().to_string_lossy().into_owned());
        }
        index.walk(root)?;
        Ok(index)
    }

    /// Adds the files under `dir`, and the items of its Rust sources.
    fn walk(&mut self, dir: &Path) -> Result<()> {
        for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                self.walk(&path)?;
            } else if kind.is_file() {
                if let Some(stem) = name.strip_suffix(".rs") {
                    self.modules.insert(stem.to_owned());
                    // This file's tests define and name stale items on purpose.
                    if path.ends_with(THIS_FILE) {
                        self.file_names.insert(name);
                        continue;
                    }
                    let text = fs::read_to_string(&path)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                    self.add_rust(&text);
                } else if name == "Cargo.toml" {
                    let text = fs::read_to_string(&path)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                    self.add_manifest(&text);
                }
                self.file_names.insert(name);
            }
        }
        Ok(())
    }

    /// Adds the items one Rust source defines.
    pub fn add_rust(&mut self, text: &str) {
        for line in text.lines() {
            // Comments name items too ("the struct X ..."): only code counts.
            let line = line.find("//").map_or(line, |at| &line[..at]);
            let words: Vec<&str> = line
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            for pair in words.windows(2) {
                let name = pair[1].to_owned();
                match pair[0] {
                    "struct" | "enum" | "trait" | "type" | "union" => {
                        self.types.insert(name);
                    }
                    "fn" => {
                        self.fns.insert(name);
                    }
                    "mod" | "as" => {
                        self.modules.insert(name);
                    }
                    "const" | "static" | "macro_rules" => {
                        self.others.insert(name);
                    }
                    _ => {}
                }
            }
            // A field: `pub name: Type,` or `name: Type,` (a parameter too, alone on its
            // line: what `X::name` may name besides a method).
            let field = trimmed_field(line);
            if let Some(field) = field {
                self.fields.insert(field.to_owned());
            }
            // An enum variant: a line that starts with a capitalized name and goes on
            // with its fields, a discriminant or a comma.
            let trimmed = line.trim_start();
            let end = trimmed
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(trimmed.len());
            let (name, rest) = trimmed.split_at(end);
            if name.starts_with(|c: char| c.is_ascii_uppercase())
                && (rest.is_empty()
                    || [",", "(", "{", " {", " ="]
                        .iter()
                        .any(|p| rest.starts_with(p)))
            {
                self.others.insert(name.to_owned());
            }
        }
    }

    /// Adds the crate names (`name = "wray-host"`: `wray_host`) of one manifest.
    fn add_manifest(&mut self, text: &str) {
        for line in text.lines() {
            if let Some(value) = line.trim().strip_prefix("name = \"") {
                if let Some(name) = value.strip_suffix('"') {
                    self.modules.insert(name.replace('-', "_"));
                }
            }
        }
    }
}

/// The field a line declares (`    pub(crate) name: Type,` -> `name`), if any.
fn trimmed_field(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = after.strip_prefix("(crate)").unwrap_or(after).trim_start();
    }
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    let (name, tail) = rest.split_at(end);
    let lowercase = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
    (lowercase && tail.starts_with(':') && !tail.starts_with("::")).then_some(name)
}

/// Checks [`DOCS`] in the checkout at `root`.
///
/// # Errors
///
/// Fails when a doc cannot be read, or names something that does not exist: the
/// message lists each such name with its doc and line.
pub fn check(root: &Path) -> Result<()> {
    let index = Index::of(root)?;
    let mut stale = Vec::new();
    for doc in DOCS {
        let path = root.join(doc);
        let text =
            fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        stale.extend(check_doc(root, doc, &text, &index));
    }
    if stale.is_empty() {
        println!("{} docs name only files and items that exist", DOCS.len());
        return Ok(());
    }
    let lines: Vec<String> = stale.iter().map(|s| format!("  {s}")).collect();
    bail!(
        "{} stale name(s) in the docs (rename them in the doc, or, for a name from \
         another project, add it to ALLOWED in xtask/src/doc_names.rs):\n{}",
        stale.len(),
        lines.join("\n")
    )
}

/// The names `text` (the doc `doc`, relative to `root`) uses that do not exist.
pub fn check_doc(root: &Path, doc: &str, text: &str, index: &Index) -> Vec<Stale> {
    let doc_dir = Path::new(doc).parent().unwrap_or_else(|| Path::new(""));
    let mut stale = Vec::new();
    let mut report = |line: usize, name: &str, why: String| {
        stale.push(Stale {
            doc: doc.to_owned(),
            line,
            name: name.to_owned(),
            why,
        });
    };
    for (line, span) in code_spans(text) {
        if let Some(why) = check_span(root, &span, index) {
            report(line, &span, why);
        }
    }
    for (line, word) in fenced_words(text) {
        let why = if looks_like_path(&word, index) {
            check_path(root, &word, index)
        } else if word.contains("::") {
            item_path(&word).and_then(|item| check_item(&item, index))
        } else {
            None
        };
        if let Some(why) = why {
            report(line, &word, why);
        }
    }
    for (line, target) in links(text) {
        if !root.join(doc_dir).join(&target).exists() {
            report(
                line,
                &target,
                format!("no file {}", doc_dir.join(&target).display()),
            );
        }
    }
    stale.sort_by_key(|s| s.line);
    stale
}

/// Why one inline span names nothing, or `None` when it is fine (or not a name).
fn check_span(root: &Path, span: &str, index: &Index) -> Option<String> {
    if ALLOWED.iter().any(|(name, _)| *name == span) {
        return None;
    }
    if looks_like_path(span, index) {
        return check_path(root, span, index);
    }
    if is_bare_file(span) {
        return (!index.file_names.contains(span)).then(|| format!("no file named {span}"));
    }
    let item = item_path(span)?;
    if ALLOWED.iter().any(|(name, _)| *name == item) {
        return None;
    }
    check_item(&item, index)
}

/// Whether `span` is taken for a repository path (see the module's docs).
fn looks_like_path(span: &str, index: &Index) -> bool {
    let path_chars = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if !path_chars || !span.contains('/') || span.starts_with(['/', '.']) || span.contains("//") {
        return false;
    }
    let first = span.split('/').next().unwrap_or_default();
    span.ends_with('/')
        || EXTENSIONS.iter().any(|ext| span.ends_with(ext))
        || index.top_level.contains(first)
}

/// A file name alone (`worker_pool.rs`).
fn is_bare_file(span: &str) -> bool {
    !span.contains('/')
        && EXTENSIONS
            .iter()
            .any(|ext| span.len() > ext.len() && span.ends_with(ext))
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Why a path resolves to nothing (see the module's docs), or `None`.
fn check_path(root: &Path, path: &str, index: &Index) -> Option<String> {
    let dir = path.ends_with('/');
    let found = index.bases.iter().any(|base| {
        let full = root.join(base).join(path.trim_end_matches('/'));
        if dir {
            full.is_dir()
        } else {
            full.exists()
        }
    });
    (!found).then(|| {
        format!(
            "no {} at the root, in a crate's src/ or in a directory of host/src/",
            if dir { "directory" } else { "file" }
        )
    })
}

/// The item path a span names (`#[wray::remote]` -> `wray::remote`,
/// `Options::format(Format::Json)` -> `Options::format`), or `None` when it names no
/// item.
fn item_path(span: &str) -> Option<String> {
    let mut s = span.trim();
    if let Some(attr) = s.strip_prefix("#[") {
        s = &attr[..attr.find(']')?];
    }
    let end = s.find(['(', '{', '<', ' ']).unwrap_or(s.len());
    let s = s[..end].trim_end_matches('!');
    let segments: Vec<&str> = s.split("::").collect();
    let identifiers = segments.iter().all(|seg| {
        seg.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    if !identifiers || (segments.len() == 1 && !is_camel_case(s)) {
        return None;
    }
    Some(s.to_owned())
}

/// `TaskTable`, `InUse`, `IdMap`: a capital, lowercase letters, and at least one
/// more capital each followed by lowercase letters or digits.
fn is_camel_case(name: &str) -> bool {
    let mut words = 0;
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_ascii_uppercase() {
            return false;
        }
        let mut tail = 0;
        while let Some(&next) = chars.peek() {
            let ok = next.is_ascii_lowercase() || (words > 0 && next.is_ascii_digit());
            if !ok {
                break;
            }
            chars.next();
            tail += 1;
        }
        if tail == 0 {
            return false;
        }
        words += 1;
    }
    words >= 2
}

/// Why an item path names nothing, or `None`.
fn check_item(item: &str, index: &Index) -> Option<String> {
    let segments: Vec<&str> = item.split("::").collect();
    let first = segments[0];
    let last = segments[segments.len() - 1];
    let capital = |s: &str| s.starts_with(|c: char| c.is_ascii_uppercase());
    if segments.len() == 1 {
        let known = index.types.contains(first) || index.others.contains(first);
        return (!known).then(|| format!("no type or enum variant `{first}` in the workspace"));
    }
    if capital(first) {
        if !index.types.contains(first) {
            return Some(format!("no type `{first}` in the workspace"));
        }
    } else if !index.modules.contains(first) {
        return Some(format!("no module or crate `{first}` in the workspace"));
    }
    let known = if capital(first) && !capital(last) {
        index.fns.contains(last) || index.fields.contains(last)
    } else if capital(first) {
        index.types.contains(last) || index.others.contains(last)
    } else {
        index.fns.contains(last)
            || index.types.contains(last)
            || index.modules.contains(last)
            || index.others.contains(last)
    };
    (!known).then(|| {
        if capital(first) && !capital(last) {
            format!("no `fn {last}` or field `{last}` in the workspace")
        } else {
            format!("no item `{last}` in the workspace")
        }
    })
}

/// The inline code spans of `text` outside fenced blocks, each with the line it
/// starts on. A span may run over a line break (read as a space), not over a blank
/// line.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    let mut open: Option<(usize, String)> = None;
    let mut fenced = false;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            open = None;
            continue;
        }
        if fenced || line.trim().is_empty() {
            open = None;
            continue;
        }
        if let Some((_, span)) = open.as_mut() {
            span.push(' ');
        }
        for c in line.chars() {
            match (c, open.as_mut()) {
                ('`', Some(_)) => {
                    if let Some((start, span)) = open.take() {
                        spans.push((start, span.trim().to_owned()));
                    }
                }
                ('`', None) => open = Some((number, String::new())),
                (c, Some((_, span))) => span.push(c),
                (_, None) => {}
            }
        }
    }
    spans
}

/// The words of the fenced blocks of `text`, stripped of the punctuation around
/// them, each with its line.
fn fenced_words(text: &str) -> Vec<(usize, String)> {
    let mut words = Vec::new();
    let mut fenced = false;
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            continue;
        }
        for word in line.split_whitespace() {
            let word = word.trim_matches(|c: char| "()[]{},;:|\"'".contains(c));
            if !word.is_empty() {
                words.push((number + 1, word.to_owned()));
            }
        }
    }
    words
}

/// The relative link targets of `text` outside fenced blocks (`[a](cluster.md#x)`
/// -> `cluster.md`), each with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                targets.push((number + 1, target.to_owned()));
            }
            rest = &rest[end..];
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkout with `host/src/scheduler/queue.rs` (defining `Scheduler::submit`,
    /// the variant `Error::Busy` and the field `Options::shared`), `docs/a.md` and
    /// `examples/c/`.
    fn checkout() -> (tempfile::TempDir, Index) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir_all(root.join("host/src/scheduler")).expect("mkdir");
        fs::create_dir_all(root.join("examples/c")).expect("mkdir");
        fs::create_dir_all(root.join("docs")).expect("mkdir");
        fs::write(root.join("docs/a.md"), "# a\n").expect("write");
        fs::write(
            root.join("host/src/scheduler/queue.rs"),
            "pub struct Scheduler;\nimpl Scheduler {\n    pub fn submit(&self) {}\n}\n\
             pub enum Error {\n    Busy,\n    TooLarge { got: u64 },\n}\n\
             pub struct Options {\n    pub(crate) shared: bool,\n}\n",
        )
        .expect("write");
        let index = Index::of(root).expect("index");
        (dir, index)
    }

    fn names(stale: &[Stale]) -> Vec<(usize, &str)> {
        stale.iter().map(|s| (s.line, s.name.as_str())).collect()
    }

    #[test]
    fn existing_names_pass() {
        let (dir, index) = checkout();
        let doc = "`host/src/scheduler/queue.rs` and `scheduler/queue.rs` and\n\
                   `queue.rs`, `host/src/scheduler/`, `examples/c`, `Scheduler::submit`,\n\
                   `Error::Busy`, `Error::TooLarge { got }`, `TooLarge`, `queue::Scheduler`,\n\
                   [a](a.md), `InstancePre`, `subtle::ConstantTimeEq`, `component/function`,\n\
                   `wray start --etcd http://h:1`, `/dev/shm`, `NodeID`, `CPU`,\n\
                   `Options::shared`\n\
                   ```\n  Node (host/src/scheduler/)  Scheduler::submit: Whatever\n```\n";
        let stale = check_doc(dir.path(), "docs/b.md", doc, &index);
        assert!(stale.is_empty(), "{stale:?}");
    }

    #[test]
    fn a_stale_path_is_reported_with_its_line() {
        let (dir, index) = checkout();
        let doc = "fine: `scheduler/queue.rs`\n\nstale: `scheduler/table.rs`\n\
                   and `host/src/gone/`, `table.rs`, `examples/rust`\n\
                   [gone](gone.md)\n```\n  TaskTable (scheduler/task_table/) gone::submit\n```\n";
        let stale = check_doc(dir.path(), "docs/b.md", doc, &index);
        assert_eq!(
            names(&stale),
            [
                (3, "scheduler/table.rs"),
                (4, "host/src/gone/"),
                (4, "table.rs"),
                (4, "examples/rust"),
                (5, "gone.md"),
                (7, "scheduler/task_table/"),
                (7, "gone::submit"),
            ]
        );
        assert_eq!(
            stale[0].to_string(),
            "docs/b.md:3: `scheduler/table.rs`: no file at the root, in a crate's src/ \
             or in a directory of host/src/"
        );
    }

    #[test]
    fn a_stale_item_is_reported_with_its_line() {
        let (dir, index) = checkout();
        let doc = "`Scheduler::submit` is fine;\n`Runtime::submit_function` is not,\n\
                   nor `Scheduler::submit_function`, `Error::Gone`, `TaskTable`,\n\
                   `#[gone::remote]` or `Scheduler::submit(\nx)`, which is.\n";
        let stale = check_doc(dir.path(), "docs/b.md", doc, &index);
        assert_eq!(
            names(&stale),
            [
                (2, "Runtime::submit_function"),
                (3, "Scheduler::submit_function"),
                (3, "Error::Gone"),
                (3, "TaskTable"),
                (4, "#[gone::remote]"),
            ]
        );
        assert!(
            stale[0].why.contains("no type `Runtime`"),
            "{}",
            stale[0].why
        );
        assert!(
            stale[1].why.contains("no `fn submit_function` or field"),
            "{}",
            stale[1].why
        );
    }

    #[test]
    fn the_allow_list_covers_other_projects_names() {
        let (dir, index) = checkout();
        for (name, why) in ALLOWED {
            assert!(!why.is_empty(), "{name} says why it is allowed");
            let stale = check_doc(dir.path(), "docs/b.md", &format!("`{name}`\n"), &index);
            assert!(stale.is_empty(), "{name}: {stale:?}");
        }
        // Only the exact names: another item of an allowed type is checked.
        let stale = check_doc(dir.path(), "docs/b.md", "`subtle::Choice`\n", &index);
        assert_eq!(names(&stale), [(1, "subtle::Choice")]);
    }

    #[test]
    fn camel_case_is_two_capitalized_words() {
        for name in ["TaskTable", "InUse", "IdMap", "WorkerV2", "HelloOk"] {
            assert!(is_camel_case(name), "{name}");
        }
        for name in [
            "Task",
            "NodeID",
            "Ipv4Addr",
            "CPU",
            "taskTable",
            "ALIVE",
            "Task_Table",
            "A",
        ] {
            assert!(!is_camel_case(name), "{name}");
        }
    }

    #[test]
    fn repo_docs_name_only_what_exists() {
        check(&crate::paths::repo_root()).expect("the docs name only what exists");
    }
}
