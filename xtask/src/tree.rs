//! Whether a command changed the checkout: `git status` taken before and after.
//!
//! `cargo xtask test` ends with this check, so that CI fails when a command of the
//! README (the guest builds, the demo's steps, a test) writes a tracked file or leaves
//! an untracked one behind. Files that were already changed before it started are
//! compared by content, so a developer's own edits do not fail it, but a command
//! rewriting one of them does.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The changed paths of a checkout: each path that `git status` lists, with its
/// status (`" M"`, `"??"`, ...) and a hash of its content (`None`: no file there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeState {
    entries: BTreeMap<String, (String, Option<u64>)>,
}

impl TreeState {
    /// Takes the state of the checkout at `root`, or `None` where it is not a git
    /// checkout (an unpacked archive) or git is missing.
    ///
    /// # Errors
    ///
    /// When `git status` fails in a checkout.
    pub fn capture(root: &Path) -> Result<Option<Self>> {
        let inside = Command::new("git")
            .current_dir(root)
            .args(["rev-parse", "--is-inside-work-tree"])
            .output();
        match inside {
            Ok(out) if out.status.success() => {}
            _ => return Ok(None),
        }
        let out = Command::new("git")
            .current_dir(root)
            .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
            .output()
            .context("cannot run git status")?;
        if !out.status.success() {
            bail!(
                "git status failed in {}: {}",
                root.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let entries = parse_porcelain(&out.stdout)
            .into_iter()
            .map(|(status, path)| {
                let content = std::fs::read(root.join(&path)).ok().map(|bytes| {
                    let mut hasher = DefaultHasher::new();
                    bytes.hash(&mut hasher);
                    hasher.finish()
                });
                (path, (status, content))
            })
            .collect();
        Ok(Some(Self { entries }))
    }

    /// What differs from `before`, one line per path: `"?? sdk/js/x"`, `" M a.json"`,
    /// or `"a.json (changed back)"` for a path no longer listed.
    pub fn changes_since(&self, before: &Self) -> Vec<String> {
        let mut changes = Vec::new();
        for (path, now) in &self.entries {
            if before.entries.get(path) != Some(now) {
                changes.push(format!("{} {path}", now.0));
            }
        }
        for path in before.entries.keys() {
            if !self.entries.contains_key(path) {
                changes.push(format!("{path} (changed back)"));
            }
        }
        changes
    }
}

/// The (status, path) entries of `git status --porcelain=v1 -z` output. A rename or
/// copy (`R`, `C`) is followed by its old path, which is skipped.
fn parse_porcelain(out: &[u8]) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    let mut fields = out.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let Some(field) = fields.next() {
        let field = String::from_utf8_lossy(field);
        let (Some(status), Some(path)) = (field.get(..2), field.get(3..)) else {
            continue;
        };
        if status.contains('R') || status.contains('C') {
            fields.next();
        }
        entries.push((status.to_string(), path.to_string()));
    }
    entries
}

/// Fails, listing them, when the checkout at `root` changed since `before` (`None`:
/// not a git checkout, nothing to check). `what` names the command, for the message.
///
/// # Errors
///
/// When something changed, or `git status` fails.
pub fn check_unchanged(root: &Path, before: Option<&TreeState>, what: &str) -> Result<()> {
    let (Some(before), Some(after)) = (before, TreeState::capture(root)?) else {
        println!("not a git checkout: the check that {what} leaves it clean is skipped");
        return Ok(());
    };
    let changes = after.changes_since(before);
    if changes.is_empty() {
        println!("git status: {what} changed no file of the checkout");
        return Ok(());
    }
    bail!(
        "{what} changed the checkout ({} path(s), `git status --porcelain`):\n  {}\n\
         a command it ran wrote them: make it write under the target directory instead \
         (or, for a lock file, commit the version it needs)",
        changes.len(),
        changes.join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_entries_with_renames() {
        let out = b" M sdk/js/package-lock.json\0?? a b.txt\0R  new.rs\0old.rs\0";
        assert_eq!(
            parse_porcelain(out),
            [
                (" M".to_string(), "sdk/js/package-lock.json".to_string()),
                ("??".to_string(), "a b.txt".to_string()),
                ("R ".to_string(), "new.rs".to_string()),
            ]
        );
        assert!(parse_porcelain(b"").is_empty());
    }

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .current_dir(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn a_command_that_writes_or_leaves_files_is_caught_and_earlier_edits_are_not() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        git(root, &["init", "--quiet"]);
        for file in ["lock.json", "edited.rs", "same.rs"] {
            std::fs::write(root.join(file), "committed\n").unwrap();
        }
        git(root, &["add", "."]);
        git(root, &["commit", "--quiet", "-m", "start"]);
        // A developer's edits, before the command runs.
        std::fs::write(root.join("edited.rs"), "mine\n").unwrap();
        std::fs::write(root.join("same.rs"), "mine\n").unwrap();

        let before = TreeState::capture(root).unwrap().unwrap();
        assert!(check_unchanged(root, Some(&before), "nothing").is_ok());

        // The command rewrites a lock file, leaves a file behind, and changes a
        // file the developer had edited.
        std::fs::write(root.join("lock.json"), "rewritten\n").unwrap();
        std::fs::create_dir(root.join("out")).unwrap();
        std::fs::write(root.join("out/left.txt"), "x").unwrap();
        std::fs::write(root.join("edited.rs"), "rewritten\n").unwrap();

        let err = check_unchanged(root, Some(&before), "the command").unwrap_err();
        let said = err.to_string();
        assert!(
            said.starts_with("the command changed the checkout (3 path(s)"),
            "{said}"
        );
        for line in [" M lock.json", "?? out/left.txt", " M edited.rs"] {
            assert!(said.contains(line), "{said}");
        }
        assert!(!said.contains("same.rs"), "{said}");
    }

    #[test]
    fn outside_a_checkout_there_is_nothing_to_check() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(TreeState::capture(dir.path()).unwrap(), None);
        assert!(check_unchanged(dir.path(), None, "x").is_ok());
    }
}
