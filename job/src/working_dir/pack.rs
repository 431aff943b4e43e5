//! Packing a local directory into a package ([`pack`]): a plain tar
//! archive of its regular files, directories and symbolic links, made the
//! same way every time so that the same files give the same id.

use std::path::{Component, Path, PathBuf};

use super::{PackageId, WorkingDirError};

/// Names always left out of a package, wherever they are (as Ray leaves
/// out `.git`).
pub const ALWAYS_EXCLUDED: &[&str] = &[".git"];

/// The most entries (files, directories, links) a package may hold; the
/// node holds what it unpacks to the same bound.
pub(crate) const MAX_ENTRIES: usize = 100_000;

/// How to pack a directory.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// Glob patterns of what to leave out besides [`ALWAYS_EXCLUDED`]
    /// (`*.log`, `data/raw`, `/build`): a pattern without `/` is matched
    /// against each entry's name, one with `/` against its path from the
    /// directory (a leading `/` anchors it there); a directory left out
    /// is left out whole.
    pub excludes: Vec<String>,
    /// The most bytes the package may have, in bytes.
    pub max_bytes: u64,
}

/// A packed directory.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The package: a tar archive.
    pub bytes: Vec<u8>,
    /// Its id.
    pub id: PackageId,
    /// Regular files in it.
    pub files: u64,
    /// Entries left out by the excludes.
    pub excluded: u64,
}

/// One exclude pattern.
struct Exclude {
    pattern: glob::Pattern,
    /// Matched against the whole relative path (it has a `/`).
    path: bool,
}

/// Packs directory `dir` (see [`PackOptions`]): every regular file,
/// directory and symbolic link under it, sorted by path, with times,
/// owners and user names left empty and modes fixed (`0644`, `0755` for
/// directories and files with any execute bit). Other kinds of files
/// (sockets, pipes, devices) are left out.
///
/// # Errors
/// [`WorkingDirError::Refused`] for a `dir` that is not a directory, a
/// bad pattern, or a symbolic link pointing outside `dir` (or absolute);
/// [`WorkingDirError::TooLarge`] past `options.max_bytes` or
/// [`MAX_ENTRIES`]; [`WorkingDirError::Io`] naming the file that could not
/// be read.
pub fn pack(dir: &Path, options: &PackOptions) -> Result<Packed, WorkingDirError> {
    let meta = std::fs::metadata(dir)
        .map_err(|e| WorkingDirError::Io(format!("working directory {}: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(WorkingDirError::Refused(format!(
            "working directory {} is not a directory",
            dir.display()
        )));
    }
    let excludes = options
        .excludes
        .iter()
        .map(|p| {
            let anchored = p.strip_prefix('/').unwrap_or(p);
            glob::Pattern::new(anchored.trim_end_matches('/'))
                .map(|pattern| Exclude {
                    pattern,
                    path: p.contains('/'),
                })
                .map_err(|e| WorkingDirError::Refused(format!("exclude pattern {p:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut packer = Packer {
        root: dir.to_path_buf(),
        excludes,
        max: options.max_bytes,
        builder: tar::Builder::new(Vec::new()),
        bytes: 0,
        entries: 0,
        files: 0,
        excluded: 0,
    };
    packer.add_dir(Path::new(""))?;
    let Packer {
        builder,
        files,
        excluded,
        max,
        ..
    } = packer;
    let bytes = builder
        .into_inner()
        .map_err(|e| WorkingDirError::Io(format!("packing {}: {e}", dir.display())))?;
    if bytes.len() as u64 > max {
        return Err(too_large(dir, bytes.len() as u64, max));
    }
    Ok(Packed {
        id: PackageId::of(&bytes),
        bytes,
        files,
        excluded,
    })
}

fn too_large(dir: &Path, bytes: u64, max: u64) -> WorkingDirError {
    WorkingDirError::TooLarge(format!(
        "working directory {} packs to more than {max} bytes ({bytes} so far): leave files \
         out with --exclude, or raise the bound (--max-working-dir-mib)",
        dir.display()
    ))
}

/// The state of one [`pack`].
struct Packer {
    root: PathBuf,
    excludes: Vec<Exclude>,
    max: u64,
    builder: tar::Builder<Vec<u8>>,
    /// Bytes added so far (file contents and a header each, about).
    bytes: u64,
    entries: usize,
    files: u64,
    excluded: u64,
}

impl Packer {
    /// Whether `rel` (named `name`) is left out.
    fn excluded(&self, rel: &Path, name: &str) -> bool {
        if ALWAYS_EXCLUDED.contains(&name) {
            return true;
        }
        let text = rel.to_string_lossy();
        self.excludes.iter().any(|e| {
            if e.path {
                e.pattern.matches(&text)
            } else {
                e.pattern.matches(name)
            }
        })
    }

    /// Counts one more entry of `size` bytes.
    fn count(&mut self, size: u64) -> Result<(), WorkingDirError> {
        self.entries += 1;
        // A header (512 bytes) and the contents rounded up to 512.
        self.bytes = self
            .bytes
            .saturating_add(512)
            .saturating_add(size.div_ceil(512).saturating_mul(512));
        if self.entries > MAX_ENTRIES {
            return Err(WorkingDirError::TooLarge(format!(
                "working directory {} has more than {MAX_ENTRIES} entries",
                self.root.display()
            )));
        }
        if self.bytes > self.max {
            return Err(too_large(&self.root, self.bytes, self.max));
        }
        Ok(())
    }

    /// Adds what directory `rel` (relative to the root) holds, sorted by
    /// name.
    fn add_dir(&mut self, rel: &Path) -> Result<(), WorkingDirError> {
        let full = self.root.join(rel);
        let io =
            |e: std::io::Error| WorkingDirError::Io(format!("reading {}: {e}", full.display()));
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&full)
            .map_err(io)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(io)?;
        names.sort();
        for name in names {
            let child = rel.join(&name);
            let text = name.to_string_lossy().into_owned();
            if self.excluded(&child, &text) {
                self.excluded += 1;
                continue;
            }
            self.add(&child)?;
        }
        Ok(())
    }

    /// Adds entry `rel` (and what is under it, for a directory).
    fn add(&mut self, rel: &Path) -> Result<(), WorkingDirError> {
        let full = self.root.join(rel);
        let io =
            |e: std::io::Error| WorkingDirError::Io(format!("reading {}: {e}", full.display()));
        let meta = std::fs::symlink_metadata(&full).map_err(io)?;
        let kind = meta.file_type();
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        if kind.is_dir() {
            self.count(0)?;
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            self.builder
                .append_data(&mut header, rel, std::io::empty())
                .map_err(io)?;
            return self.add_dir(rel);
        }
        if kind.is_symlink() {
            let target = std::fs::read_link(&full).map_err(io)?;
            if !stays_inside(rel, &target) {
                return Err(WorkingDirError::Refused(format!(
                    "{} is a symbolic link to {}, outside the working directory",
                    full.display(),
                    target.display()
                )));
            }
            self.count(0)?;
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            self.builder
                .append_link(&mut header, rel, &target)
                .map_err(io)?;
            return Ok(());
        }
        if !kind.is_file() {
            self.excluded += 1;
            return Ok(());
        }
        use std::os::unix::fs::PermissionsExt;
        self.count(meta.len())?;
        let file = std::fs::File::open(&full).map_err(io)?;
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(if meta.permissions().mode() & 0o111 != 0 {
            0o755
        } else {
            0o644
        });
        header.set_size(meta.len());
        // At most the length read above: a file that grows meanwhile is
        // cut there (the header says so).
        self.builder
            .append_data(&mut header, rel, std::io::Read::take(file, meta.len()))
            .map_err(io)?;
        self.files += 1;
        Ok(())
    }
}

/// Whether symbolic link `link` (a path relative to the root) pointing at
/// `target` stays inside the root, read as written: relative, and never
/// above the root as its `..`s are taken in turn from the link's
/// directory.
pub(super) fn stays_inside(link: &Path, target: &Path) -> bool {
    let mut depth = link.parent().map_or(0, |p| {
        p.components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .count()
    });
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(excludes: &[&str]) -> PackOptions {
        PackOptions {
            excludes: excludes.iter().map(|s| s.to_string()).collect(),
            max_bytes: 1 << 20,
        }
    }

    fn names(packed: &Packed) -> Vec<String> {
        let mut archive = tar::Archive::new(&packed.bytes[..]);
        archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_same_files_pack_to_the_same_id_and_git_and_excludes_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/.git")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("data/raw")).unwrap();
        std::fs::write(root.join("b.txt"), "b").unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("run.log"), "log").unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref").unwrap();
        std::fs::write(root.join("data/raw/x"), "x").unwrap();
        std::fs::write(root.join("data/keep"), "k").unwrap();
        std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
        let packed = pack(root, &options(&["*.log", "data/raw"])).unwrap();
        assert_eq!(
            names(&packed),
            ["a.txt", "b.txt", "data", "data/keep", "link", "src"]
        );
        assert_eq!(packed.files, 3);
        assert_eq!(packed.excluded, 4, "two .git, run.log, data/raw");
        // Again, after the times changed: the same bytes.
        std::fs::write(root.join("a.txt"), "a").unwrap();
        let again = pack(root, &options(&["*.log", "data/raw"])).unwrap();
        assert_eq!(again.id, packed.id);
        assert_eq!(again.bytes, packed.bytes);
    }

    #[test]
    fn a_link_outside_and_a_directory_past_the_bound_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("../outside", dir.path().join("up")).unwrap();
        let err = pack(dir.path(), &options(&[])).unwrap_err().to_string();
        assert!(err.contains("outside the working directory"), "{err}");
        std::fs::remove_file(dir.path().join("up")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("abs")).unwrap();
        assert!(pack(dir.path(), &options(&[])).is_err());
        std::fs::remove_file(dir.path().join("abs")).unwrap();

        std::fs::write(dir.path().join("big"), vec![b'x'; 4096]).unwrap();
        let small = PackOptions {
            excludes: Vec::new(),
            max_bytes: 2048,
        };
        let err = pack(dir.path(), &small).unwrap_err().to_string();
        assert!(err.contains("more than 2048 bytes"), "{err}");
        assert!(err.contains("--max-working-dir-mib"), "{err}");
    }

    #[test]
    fn links_are_read_from_their_own_directory() {
        for (link, target, inside) in [
            ("a", "b", true),
            ("d/a", "../b", true),
            ("d/a", "../../b", false),
            ("a", "..", false),
            ("a", "/b", false),
            ("d/e/a", "../../x/./y", true),
        ] {
            assert_eq!(
                stays_inside(Path::new(link), Path::new(target)),
                inside,
                "{link} -> {target}"
            );
        }
    }
}
