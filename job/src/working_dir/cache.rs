//! [`WorkingDirs`]: the packages a node keeps, by id, each unpacked once
//! into a directory of its own that every job using it mounts read-only.
//!
//! On disk, under the cache's root: `<hex>.tar` (the package, served to
//! the nodes that fetch it) and `<hex>/` (what it unpacked to). A package
//! is written to a temporary name, checked against its id, unpacked, and
//! only then renamed into place and listed. The cache is bounded in bytes
//! (packages and what they unpack to together): the least recently used
//! package no job holds ([`Pinned`]) is removed to make room, and a
//! package that does not fit beside those held is refused.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use sha2::Digest;

use super::unpack::unpack;
use super::{PackageId, WorkingDirError};

/// What a node keeps of one package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptPackage {
    /// Its id.
    pub id: PackageId,
    /// Bytes of the package.
    pub bytes: u64,
    /// Bytes of the files it unpacked to.
    pub unpacked: u64,
    /// Entries it unpacked to.
    pub entries: u64,
}

impl KeptPackage {
    /// Bytes it takes in the cache.
    fn footprint(&self) -> u64 {
        self.bytes.saturating_add(self.unpacked)
    }
}

/// One package listed.
struct Kept {
    info: KeptPackage,
    /// Jobs holding it now.
    users: usize,
    /// When it was last pinned (a counter).
    used: u64,
}

#[derive(Default)]
struct State {
    packages: HashMap<PackageId, Kept>,
    /// Bytes of every listed package.
    total: u64,
    tick: u64,
}

/// A node's packages (see the module docs). Shared behind an `Arc`.
pub struct WorkingDirs {
    root: PathBuf,
    /// Whether the root is a temporary directory of its own: made at the
    /// first package (a node that takes none, even killed, leaves none
    /// behind) and removed when the cache goes.
    temporary: bool,
    /// Whether the temporary root is made yet.
    made: Mutex<bool>,
    max_package: u64,
    max_total: u64,
    state: Mutex<State>,
    /// Held while a package is fetched from a peer: one fetch at a time,
    /// so that tasks of a job arriving together fetch its package once.
    fetching: tokio::sync::Mutex<()>,
}

impl Drop for WorkingDirs {
    fn drop(&mut self) {
        if self.temporary && *self.made.get_mut() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

impl std::fmt::Debug for WorkingDirs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkingDirs")
            .field("root", &self.root)
            .field("max_package", &self.max_package)
            .field("max_total", &self.max_total)
            .finish_non_exhaustive()
    }
}

/// A package held by a job: not removed while this lives.
pub struct Pinned {
    dirs: Arc<WorkingDirs>,
    id: PackageId,
    path: PathBuf,
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pinned({}, {})", self.id, self.path.display())
    }
}

impl Pinned {
    /// The directory it unpacked to (absolute, free of links).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its id.
    pub fn id(&self) -> PackageId {
        self.id
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(k) = self.dirs.state.lock().packages.get_mut(&self.id) {
            k.users = k.users.saturating_sub(1);
        }
    }
}

/// A package arriving from a peer, written to a temporary file as its
/// chunks come ([`WorkingDirs::incoming`]).
pub struct Incoming {
    id: PackageId,
    size: u64,
    written: u64,
    file: std::fs::File,
    path: PathBuf,
    hasher: sha2::Sha256,
}

impl Incoming {
    /// Appends `bytes`.
    ///
    /// # Errors
    /// Past the size announced, or when writing fails.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), WorkingDirError> {
        let end = self.written.saturating_add(bytes.len() as u64);
        if end > self.size {
            return Err(WorkingDirError::Refused(format!(
                "package {} has more than the {} bytes announced",
                self.id, self.size
            )));
        }
        self.file
            .write_all(bytes)
            .map_err(|e| WorkingDirError::Io(format!("writing {}: {e}", self.path.display())))?;
        self.hasher.update(bytes);
        self.written = end;
        Ok(())
    }

    /// Bytes still to come.
    pub fn left(&self) -> u64 {
        self.size.saturating_sub(self.written)
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        // Renamed away when installed; otherwise it goes.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A unique suffix for a temporary name.
fn suffix() -> String {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    hex::encode(b)
}

impl WorkingDirs {
    /// A cache under `root` (made if need be; what an earlier run left
    /// there is removed: a package is trusted only once checked here), or
    /// under a temporary directory of its own when `None`, keeping
    /// packages of at most `max_package` bytes and `max_total` bytes in
    /// all (packages and what they unpack to).
    ///
    /// # Errors
    /// [`WorkingDirError::Io`] when the directory cannot be made.
    pub fn new(
        root: Option<PathBuf>,
        max_package: u64,
        max_total: u64,
    ) -> Result<Arc<Self>, WorkingDirError> {
        let io = |what: &Path, e: std::io::Error| {
            WorkingDirError::Io(format!("working-dir cache {}: {e}", what.display()))
        };
        let (root, temporary) = match root {
            Some(root) => {
                if root.exists() {
                    std::fs::remove_dir_all(&root).map_err(|e| io(&root, e))?;
                }
                std::fs::create_dir_all(&root).map_err(|e| io(&root, e))?;
                (
                    std::fs::canonicalize(&root).map_err(|e| io(&root, e))?,
                    false,
                )
            }
            None => {
                let tmp = std::env::temp_dir();
                let tmp = std::fs::canonicalize(&tmp).map_err(|e| io(&tmp, e))?;
                (tmp.join(format!("wray-working-dirs-{}", suffix())), true)
            }
        };
        Ok(Arc::new(WorkingDirs {
            root,
            temporary,
            made: Mutex::new(false),
            max_package,
            max_total,
            state: Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }))
    }

    /// The most bytes one package may have here.
    pub fn max_package(&self) -> u64 {
        self.max_package
    }

    /// Package `id`, if kept here.
    pub fn info(&self, id: PackageId) -> Option<KeptPackage> {
        self.state.lock().packages.get(&id).map(|k| k.info)
    }

    /// Packages kept, and their bytes in all (packages and what they
    /// unpacked to).
    pub fn usage(&self) -> (usize, u64) {
        let state = self.state.lock();
        (state.packages.len(), state.total)
    }

    /// Checks that a package of `bytes` bytes may be kept here.
    fn check_size(&self, bytes: u64) -> Result<(), WorkingDirError> {
        if bytes > self.max_package {
            return Err(WorkingDirError::TooLarge(format!(
                "the package has {bytes} bytes, the most this node keeps is {} \
                 (wray start --max-working-dir-mib)",
                self.max_package
            )));
        }
        Ok(())
    }

    /// Keeps package `bytes` (checked, unpacked) unless kept already: its
    /// info, and whether it was kept now (not before). Blocking (it hashes
    /// and writes files): call it off an async runtime.
    ///
    /// # Errors
    /// [`WorkingDirError::TooLarge`] past the bounds;
    /// [`WorkingDirError::Refused`] for an archive a package may not be;
    /// [`WorkingDirError::Io`].
    pub fn store(self: &Arc<Self>, bytes: &[u8]) -> Result<(KeptPackage, bool), WorkingDirError> {
        self.check_size(bytes.len() as u64)?;
        let id = PackageId::of(bytes);
        if let Some(kept) = self.info(id) {
            return Ok((kept, false));
        }
        let mut incoming = self.incoming(id, bytes.len() as u64)?;
        incoming.write(bytes)?;
        Ok((self.finish(incoming)?, true))
    }

    /// A temporary file for package `id` of `size` bytes, arriving.
    ///
    /// # Errors
    /// Past the bound on a package; when the file cannot be made.
    pub fn incoming(&self, id: PackageId, size: u64) -> Result<Incoming, WorkingDirError> {
        self.check_size(size)?;
        self.make_root()?;
        let path = self.root.join(format!(".in-{}-{}", id.hex(), suffix()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| WorkingDirError::Io(format!("{}: {e}", path.display())))?;
        Ok(Incoming {
            id,
            size,
            written: 0,
            file,
            path,
            hasher: sha2::Sha256::new(),
        })
    }

    /// Checks a package that arrived whole against its id, unpacks it,
    /// makes room for it and lists it. Blocking.
    ///
    /// # Errors
    /// [`WorkingDirError::Refused`] when it is short or its bytes are not
    /// its id's; as [`WorkingDirs::store`].
    pub fn finish(self: &Arc<Self>, incoming: Incoming) -> Result<KeptPackage, WorkingDirError> {
        let id = incoming.id;
        if incoming.left() != 0 {
            return Err(WorkingDirError::Refused(format!(
                "package {id} arrived with {} of its {} bytes",
                incoming.written, incoming.size
            )));
        }
        let got = PackageId(incoming.hasher.clone().finalize().into());
        if got != id {
            return Err(WorkingDirError::Refused(format!(
                "package {id} arrived as bytes whose SHA-256 is {got}: refused"
            )));
        }
        if let Some(kept) = self.info(id) {
            return Ok(kept);
        }
        let io = |p: &Path, e: std::io::Error| WorkingDirError::Io(format!("{}: {e}", p.display()));
        let unpacking = self.root.join(format!(".unpack-{}-{}", id.hex(), suffix()));
        std::fs::create_dir(&unpacking).map_err(|e| io(&unpacking, e))?;
        let remove = |dir: &Path| {
            let _ = std::fs::remove_dir_all(dir);
        };
        let archive = std::fs::File::open(&incoming.path).map_err(|e| io(&incoming.path, e))?;
        // A plain tar holds its files' bytes: they are at most its size.
        let unpacked = match unpack(std::io::BufReader::new(archive), &unpacking, incoming.size) {
            Ok(u) => u,
            Err(e) => {
                remove(&unpacking);
                return Err(e);
            }
        };
        let info = KeptPackage {
            id,
            bytes: incoming.size,
            unpacked: unpacked.bytes,
            entries: unpacked.entries,
        };
        let mut state = self.state.lock();
        if let Some(k) = state.packages.get(&id) {
            // Kept meanwhile (another upload of the same bytes).
            let kept = k.info;
            drop(state);
            remove(&unpacking);
            return Ok(kept);
        }
        let evicted = match self.make_room(&mut state, info.footprint()) {
            Ok(evicted) => evicted,
            Err(e) => {
                drop(state);
                remove(&unpacking);
                return Err(e);
            }
        };
        let (tar, dir) = self.paths(id);
        let placed =
            std::fs::rename(&incoming.path, &tar).and_then(|()| std::fs::rename(&unpacking, &dir));
        if let Err(e) = placed {
            drop(state);
            remove(&unpacking);
            let _ = std::fs::remove_file(&tar);
            return Err(io(&dir, e));
        }
        state.total = state.total.saturating_add(info.footprint());
        state.packages.insert(
            id,
            Kept {
                info,
                users: 0,
                used: 0,
            },
        );
        drop(state);
        for gone in evicted {
            self.remove_files(gone);
        }
        Ok(info)
    }

    /// Unlists the least recently used packages no job holds until `more`
    /// bytes fit; the ids unlisted (their files are the caller's to
    /// remove).
    fn make_room(&self, state: &mut State, more: u64) -> Result<Vec<PackageId>, WorkingDirError> {
        let mut evicted = Vec::new();
        while state.total.saturating_add(more) > self.max_total {
            let oldest = state
                .packages
                .iter()
                .filter(|(_, k)| k.users == 0)
                .min_by_key(|(_, k)| k.used)
                .map(|(id, _)| *id);
            let Some(id) = oldest else {
                return Err(WorkingDirError::TooLarge(format!(
                    "this node's working-dir cache keeps {} bytes, and the packages running \
                     jobs hold take {} of them: {more} more do not fit \
                     (wray start --working-dir-cache-mib)",
                    self.max_total, state.total
                )));
            };
            if let Some(k) = state.packages.remove(&id) {
                state.total = state.total.saturating_sub(k.info.footprint());
            }
            evicted.push(id);
        }
        Ok(evicted)
    }

    /// Makes the temporary root (owner only), once.
    ///
    /// # Errors
    /// [`WorkingDirError::Io`] when it cannot be made.
    fn make_root(&self) -> Result<(), WorkingDirError> {
        if !self.temporary {
            return Ok(());
        }
        let mut made = self.made.lock();
        if *made {
            return Ok(());
        }
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&self.root)
            .map_err(|e| {
                WorkingDirError::Io(format!("working-dir cache {}: {e}", self.root.display()))
            })?;
        *made = true;
        Ok(())
    }

    /// The package's file and the directory it unpacked to.
    fn paths(&self, id: PackageId) -> (PathBuf, PathBuf) {
        let hex = id.hex();
        (self.root.join(format!("{hex}.tar")), self.root.join(hex))
    }

    fn remove_files(&self, id: PackageId) {
        let (tar, dir) = self.paths(id);
        let _ = std::fs::remove_file(tar);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Holds package `id` for a job: it stays until the [`Pinned`] goes.
    ///
    /// # Errors
    /// [`WorkingDirError::NotFound`] when it is not kept here.
    pub fn pin(self: &Arc<Self>, id: PackageId) -> Result<Pinned, WorkingDirError> {
        let mut state = self.state.lock();
        state.tick += 1;
        let tick = state.tick;
        let kept = state
            .packages
            .get_mut(&id)
            .ok_or(WorkingDirError::NotFound(id))?;
        kept.users += 1;
        kept.used = tick;
        drop(state);
        Ok(Pinned {
            dirs: self.clone(),
            id,
            path: self.paths(id).1,
        })
    }

    /// `len` bytes of package `id` from `offset` (a peer fetching it).
    /// Blocking.
    ///
    /// # Errors
    /// [`WorkingDirError::NotFound`]; [`WorkingDirError::Refused`] past
    /// its end; [`WorkingDirError::Io`].
    pub fn read(&self, id: PackageId, offset: u64, len: usize) -> Result<Vec<u8>, WorkingDirError> {
        let size = self.info(id).ok_or(WorkingDirError::NotFound(id))?.bytes;
        if offset.checked_add(len as u64).is_none_or(|end| end > size) {
            return Err(WorkingDirError::Refused(format!(
                "bytes {offset}+{len} are past package {id}'s {size}"
            )));
        }
        let (tar, _) = self.paths(id);
        let io = |e: std::io::Error| WorkingDirError::Io(format!("{}: {e}", tar.display()));
        let mut file = std::fs::File::open(&tar).map_err(io)?;
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut out = vec![0u8; len];
        file.read_exact(&mut out).map_err(io)?;
        Ok(out)
    }

    /// Waits for the right to fetch a package from a peer (one fetch at
    /// a time).
    ///
    /// # Cancel safety
    /// Dropping the future gives up the wait.
    pub async fn fetch_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.fetching.lock().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::working_dir::{pack, PackOptions};

    fn packed(dir: &Path, files: &[(&str, usize)]) -> Vec<u8> {
        for (name, size) in files {
            std::fs::write(dir.join(name), vec![b'w'; *size]).unwrap();
        }
        pack(
            dir,
            &PackOptions {
                excludes: Vec::new(),
                max_bytes: 1 << 20,
            },
        )
        .unwrap()
        .bytes
    }

    #[test]
    fn a_package_is_kept_once_checked_and_served_by_range() {
        let src = tempfile::tempdir().unwrap();
        let bytes = packed(src.path(), &[("a", 10), ("b", 20)]);
        let dirs = WorkingDirs::new(None, 1 << 20, 4 << 20).unwrap();
        let (kept, new) = dirs.store(&bytes).unwrap();
        assert!(new);
        assert_eq!((kept.bytes, kept.unpacked), (bytes.len() as u64, 30));
        assert_eq!(dirs.store(&bytes).unwrap(), (kept, false), "kept once");
        let pinned = dirs.pin(kept.id).unwrap();
        assert_eq!(std::fs::read(pinned.path().join("b")).unwrap().len(), 20);
        assert_eq!(dirs.read(kept.id, 0, 16).unwrap(), bytes[..16]);
        assert!(dirs.read(kept.id, bytes.len() as u64 - 1, 2).is_err());

        // Arriving from a peer: short, or not its id's bytes, refused.
        let id = PackageId::of(&bytes);
        let mut short = dirs.incoming(id, bytes.len() as u64).unwrap();
        short.write(&bytes[..10]).unwrap();
        assert!(dirs
            .finish(short)
            .unwrap_err()
            .to_string()
            .contains("arrived with"));
        let other = PackageId::of(b"other");
        let mut wrong = dirs.incoming(other, bytes.len() as u64).unwrap();
        wrong.write(&bytes).unwrap();
        assert!(wrong.write(b"x").is_err(), "past the size announced");
        let err = dirs.finish(wrong).unwrap_err().to_string();
        assert!(err.contains("SHA-256"), "{err}");
        let unknown = PackageId::of(b"unknown");
        assert!(matches!(
            dirs.pin(unknown),
            Err(WorkingDirError::NotFound(_))
        ));
    }

    #[test]
    fn the_least_recently_used_package_no_job_holds_makes_room() {
        let dirs = WorkingDirs::new(None, 64 << 10, 100 << 10).unwrap();
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        let three = tempfile::tempdir().unwrap();
        // Each about 20 KiB packed + 18 KiB unpacked.
        let (a, _) = dirs.store(&packed(one.path(), &[("a", 18 << 10)])).unwrap();
        let (b, _) = dirs.store(&packed(two.path(), &[("b", 18 << 10)])).unwrap();
        let held = dirs.pin(a.id).unwrap();
        let (c, _) = dirs
            .store(&packed(three.path(), &[("c", 18 << 10)]))
            .unwrap();
        assert!(dirs.info(a.id).is_some(), "held: kept");
        assert!(
            dirs.info(b.id).is_none(),
            "the least recently used unheld one went"
        );
        assert!(dirs.info(c.id).is_some());
        assert!(!dirs.root.join(b.id.hex()).exists());
        let pin_c = dirs.pin(c.id).unwrap();
        // Both held: a fourth does not fit, and says why.
        let four = tempfile::tempdir().unwrap();
        let err = dirs
            .store(&packed(four.path(), &[("d", 18 << 10)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--working-dir-cache-mib"), "{err}");
        drop((held, pin_c));
        dirs.store(&packed(four.path(), &[])).unwrap();
        let err = dirs.store(&vec![0u8; 65 << 10]).unwrap_err().to_string();
        assert!(err.contains("--max-working-dir-mib"), "{err}");
    }
}
