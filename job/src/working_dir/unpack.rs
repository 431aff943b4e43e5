//! Unpacking a package into a fresh directory, safely: the archive comes
//! from a client or a peer, so every entry is checked before anything is
//! written for it.
//!
//! - Only regular files, directories and symbolic links; a hard link, a
//!   device, a pipe or a sparse file refuses the package.
//! - A path is relative, without `..`, at most [`MAX_PATH_BYTES`] bytes
//!   and [`MAX_DEPTH`] deep.
//! - A symbolic link points inside the package as written (relative, its
//!   `..`s never above the root), and is made only after every file and
//!   directory, inside a directory this unpacking made: nothing is ever
//!   written through a link.
//! - Files are created new (a path given twice refuses the package), and
//!   every byte and entry is counted against the bounds as it is written.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use super::pack::{stays_inside, MAX_ENTRIES};
use super::WorkingDirError;

/// The longest path inside a package, in bytes.
pub(crate) const MAX_PATH_BYTES: usize = 4096;

/// The deepest path inside a package, in directories.
pub(crate) const MAX_DEPTH: usize = 128;

/// What a package unpacked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unpacked {
    /// Bytes of its files.
    pub bytes: u64,
    /// Its entries (files, directories, links).
    pub entries: u64,
}

fn refused(m: String) -> WorkingDirError {
    WorkingDirError::Refused(format!("the package is refused: {m}"))
}

/// `path` inside a package as a relative path of plain names; `None` for
/// the root itself (`./`).
fn relative(path: &Path) -> Result<Option<PathBuf>, WorkingDirError> {
    let shown = || crate::bounds::truncate(path.to_string_lossy().into_owned(), 256);
    if path.as_os_str().len() > MAX_PATH_BYTES {
        return Err(refused(format!(
            "entry {} has a path longer than {MAX_PATH_BYTES} bytes",
            shown()
        )));
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(refused(format!(
                    "entry {} is not a relative path without `..`",
                    shown()
                )))
            }
        }
    }
    if out.components().count() > MAX_DEPTH {
        return Err(refused(format!(
            "entry {} is more than {MAX_DEPTH} directories deep",
            shown()
        )));
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Unpacks `archive` (a package's bytes, read in turn) into directory
/// `into`, which must be empty and made by the caller: at most
/// `max_bytes` bytes of files and [`MAX_ENTRIES`] entries.
///
/// # Errors
/// [`WorkingDirError::Refused`] for an entry a package may not hold (see
/// the module docs); [`WorkingDirError::TooLarge`] past a bound;
/// [`WorkingDirError::Io`] when writing fails. What was written is left
/// for the caller to remove.
pub(crate) fn unpack(
    archive: impl Read,
    into: &Path,
    max_bytes: u64,
) -> Result<Unpacked, WorkingDirError> {
    let mut archive = tar::Archive::new(archive);
    let io = |what: &str, e: std::io::Error| WorkingDirError::Io(format!("{what}: {e}"));
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut bytes = 0u64;
    let mut entries = 0u64;
    let entries_iter = archive
        .entries()
        .map_err(|e| refused(format!("it is not a tar archive: {e}")))?;
    for entry in entries_iter {
        let mut entry = entry.map_err(|e| refused(format!("a malformed entry: {e}")))?;
        entries += 1;
        if entries > MAX_ENTRIES as u64 {
            return Err(WorkingDirError::TooLarge(format!(
                "the package has more than {MAX_ENTRIES} entries"
            )));
        }
        let path = entry
            .path()
            .map_err(|e| refused(format!("an entry's path: {e}")))?
            .into_owned();
        let Some(rel) = relative(&path)? else {
            continue;
        };
        let dest = into.join(&rel);
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&dest).map_err(|e| io(&dest.display().to_string(), e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| io(&parent.display().to_string(), e))?;
                }
                let left = max_bytes.saturating_sub(bytes);
                let said = entry.header().size().unwrap_or(u64::MAX);
                if said > left {
                    return Err(WorkingDirError::TooLarge(format!(
                        "the package unpacks to more than {max_bytes} bytes (entry {} has {said})",
                        rel.display()
                    )));
                }
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&dest)
                    .map_err(|e| refused(format!("entry {}: {e}", rel.display())))?;
                let written =
                    std::io::copy(&mut (&mut entry).take(left.saturating_add(1)), &mut file)
                        .map_err(|e| io(&dest.display().to_string(), e))?;
                file.flush()
                    .map_err(|e| io(&dest.display().to_string(), e))?;
                bytes = bytes.saturating_add(written);
                if bytes > max_bytes {
                    return Err(WorkingDirError::TooLarge(format!(
                        "the package unpacks to more than {max_bytes} bytes"
                    )));
                }
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(|e| refused(format!("link {}: {e}", rel.display())))?
                    .ok_or_else(|| refused(format!("link {} has no target", rel.display())))?
                    .into_owned();
                if target.as_os_str().len() > MAX_PATH_BYTES || !stays_inside(&rel, &target) {
                    return Err(refused(format!(
                        "link {} points outside the package ({})",
                        rel.display(),
                        crate::bounds::truncate(target.to_string_lossy().into_owned(), 256)
                    )));
                }
                links.push((rel, target));
            }
            other => {
                return Err(refused(format!(
                    "entry {} is a {other:?}: a package holds regular files, directories and \
                     symbolic links only",
                    rel.display()
                )))
            }
        }
    }
    // Last: no file or directory is ever made through one of them. Each
    // goes in a directory made above (checked: not a link).
    for (rel, target) in links {
        let dest = into.join(&rel);
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            let mut at = into.to_path_buf();
            for c in parent.components() {
                at.push(c);
                let meta = std::fs::symlink_metadata(&at);
                if !meta.is_ok_and(|m| m.is_dir()) {
                    return Err(refused(format!(
                        "link {} is not inside a directory of the package",
                        rel.display()
                    )));
                }
            }
        }
        std::os::unix::fs::symlink(&target, &dest)
            .map_err(|e| refused(format!("link {}: {e}", rel.display())))?;
    }
    Ok(Unpacked { bytes, entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar archive of `entries`: (path, kind, contents or link target),
    /// written with raw headers so that hostile paths pass through.
    fn archive(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, data) in entries {
            let mut h = tar::Header::new_old();
            // Raw name bytes: `set_path` refuses `..` itself.
            let name = &mut h.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            h.set_entry_type(*kind);
            h.set_mode(0o644);
            if *kind == tar::EntryType::Symlink || *kind == tar::EntryType::Link {
                h.set_link_name(std::str::from_utf8(data).unwrap()).unwrap();
                h.set_size(0);
                h.set_cksum();
                b.append(&h, std::io::empty()).unwrap();
            } else {
                h.set_size(data.len() as u64);
                h.set_cksum();
                b.append(&h, *data).unwrap();
            }
        }
        b.into_inner().unwrap()
    }

    fn unpack_into(
        bytes: &[u8],
        max: u64,
    ) -> (tempfile::TempDir, Result<Unpacked, WorkingDirError>) {
        let dir = tempfile::tempdir().unwrap();
        let into = dir.path().join("into");
        std::fs::create_dir(&into).unwrap();
        let got = unpack(bytes, &into, max);
        (dir, got)
    }

    use tar::EntryType::{Block, Char, Directory, Fifo, Link, Regular, Symlink};

    #[test]
    fn a_package_unpacks_its_files_directories_and_inner_links() {
        let bytes = archive(&[
            ("./", Directory, b""),
            ("d/", Directory, b""),
            ("d/a.txt", Regular, b"hello\n"),
            ("top", Regular, b"x"),
            ("d/link", Symlink, b"../top"),
            ("e/f/g", Regular, b"deep"),
        ]);
        let (dir, got) = unpack_into(&bytes, 1 << 20);
        let got = got.unwrap();
        assert_eq!(got.bytes, 6 + 1 + 4);
        let into = dir.path().join("into");
        assert_eq!(std::fs::read(into.join("d/a.txt")).unwrap(), b"hello\n");
        assert_eq!(std::fs::read(into.join("d/link")).unwrap(), b"x");
        assert_eq!(std::fs::read(into.join("e/f/g")).unwrap(), b"deep");
    }

    #[test]
    fn every_hostile_entry_refuses_the_package_and_writes_nothing_outside() {
        for (entries, says) in [
            (vec![("../escape", Regular, &b"x"[..])], "without `..`"),
            (vec![("/etc/escape", Regular, &b"x"[..])], "without `..`"),
            (vec![("a/../../escape", Regular, &b"x"[..])], "without `..`"),
            (vec![("up", Symlink, &b"../.."[..])], "outside the package"),
            (vec![("abs", Symlink, &b"/etc"[..])], "outside the package"),
            // A link, then a file through it: the link is refused first.
            (
                vec![("l", Symlink, &b".."[..]), ("l/escape", Regular, &b"x"[..])],
                "outside the package",
            ),
            (vec![("hard", Link, &b"/etc/passwd"[..])], "Link"),
            (vec![("dev", Char, &b""[..])], "Char"),
            (vec![("blk", Block, &b""[..])], "Block"),
            (vec![("fifo", Fifo, &b""[..])], "Fifo"),
            (
                vec![("twice", Regular, &b"a"[..]), ("twice", Regular, &b"b"[..])],
                "twice",
            ),
        ] {
            let bytes = archive(&entries);
            let (dir, got) = unpack_into(&bytes, 1 << 20);
            let err = got.unwrap_err().to_string();
            assert!(err.contains(says), "{entries:?}: {err}");
            assert!(!dir.path().join("escape").exists());
        }
    }

    #[test]
    fn a_link_inside_the_package_cannot_carry_a_later_link_out() {
        // `d` is a link to `sub` (inside); a link `d/x` would be made
        // through it: refused, as it is not in a directory made here.
        let bytes = archive(&[
            ("sub/", Directory, b""),
            ("d", Symlink, b"sub"),
            ("d/x", Symlink, b"y"),
        ]);
        let (_dir, got) = unpack_into(&bytes, 1 << 20);
        let err = got.unwrap_err().to_string();
        assert!(err.contains("not inside a directory"), "{err}");
    }

    #[test]
    fn the_bytes_are_bounded_while_unpacking() {
        let bytes = archive(&[("a", Regular, &[b'x'; 600]), ("b", Regular, &[b'y'; 600])]);
        let (_dir, got) = unpack_into(&bytes, 1000);
        let err = got.unwrap_err().to_string();
        assert!(err.contains("more than 1000 bytes"), "{err}");
        let (_dir, got) = unpack_into(&bytes, 1200);
        assert_eq!(got.unwrap().bytes, 1200);
        let (_dir, got) = unpack_into(b"not a tar archive, not at all, just text", 1000);
        assert!(got.is_err());
    }
}
