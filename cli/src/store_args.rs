//! Object-store flags shared by the commands that start a node.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use wray_host::bounds::{EPOCH_TICK, MAX_OBJECT_STORE, MAX_TIMEOUT};
use wray_host::NodeConfig;

/// A time limit given in seconds on the command line (`None`: 0, no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seconds(pub Option<Duration>);

/// Parses a time limit in seconds: 0 for none, else from the 10 ms epoch
/// tick (a running guest's time is checked once a tick, so a shorter limit
/// could not be kept) up to a year.
///
/// # Errors
/// A message naming the valid range when `text` is not such a number.
pub fn parse_seconds(text: &str) -> Result<Seconds, String> {
    parse_limit(text).map(Seconds)
}

fn parse_limit(text: &str) -> Result<Option<Duration>, String> {
    let range = format!(
        "expected 0 (no limit) or seconds from {} (the {} ms epoch tick at which a running \
         guest's time is checked) to {} (a year)",
        EPOCH_TICK.as_secs_f64(),
        EPOCH_TICK.as_millis(),
        MAX_TIMEOUT.as_secs()
    );
    let secs: f64 = text.parse().map_err(|_| range.clone())?;
    if secs == 0.0 {
        return Ok(None);
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= MAX_TIMEOUT && d >= EPOCH_TICK => Ok(Some(d)),
        _ => Err(range),
    }
}

/// `--object-store-memory`, `--object-store-dir`, `--spill-dir`,
/// `--huge-pages`, `--object-store-keep-freed`.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Capacity of the shared-memory object store in MiB, up to 16 TiB and
    /// the free space of its directory (default: 30% of RAM, as Ray's, or
    /// what the directory has room for; 0: no shared store, values stay on
    /// the heap).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(0..=MAX_OBJECT_STORE >> 20))]
    object_store_memory: Option<u64>,
    /// Directory of the object store's file (default: /dev/shm).
    #[arg(long, value_name = "DIR")]
    object_store_dir: Option<PathBuf>,
    /// Directory objects spill to when the store is full (default: the
    /// temporary directory; spill files have no name there): made if
    /// missing, and refused at start unless this user can write there.
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    /// Put the object store on 2 MiB huge pages (reserve them in
    /// /proc/sys/vm/nr_hugepages); falls back to 4 KiB pages with a log
    /// line where there are too few.
    #[arg(long)]
    huge_pages: bool,
    /// MiB of freed object-store memory kept for reuse (default 128; 0:
    /// give every freed 2 MiB chunk back); freed chunks past it for 1 s
    /// go back to the kernel (not on huge pages, reserved at start).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(0..=MAX_OBJECT_STORE >> 20))]
    object_store_keep_freed: Option<u64>,
}

impl StoreArgs {
    /// Checks the directories the flags name: `--spill-dir` must be a
    /// directory (made if missing) where this user can create a file.
    ///
    /// # Errors
    /// The flag, the directory and the rule it breaks.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(dir) = &self.spill_dir {
            check_spill_dir(dir)?;
        }
        Ok(())
    }

    /// Applies the flags to `config`.
    pub fn apply(&self, config: &mut NodeConfig) {
        if let Some(mib) = self.object_store_memory {
            config.object_store_memory = (mib > 0).then_some(mib.saturating_mul(1 << 20));
        }
        if let Some(dir) = &self.object_store_dir {
            config.object_store_dir = dir.clone();
        }
        if let Some(dir) = &self.spill_dir {
            config.spill_dir = Some(dir.clone());
        }
        config.huge_pages |= self.huge_pages;
        if let Some(mib) = self.object_store_keep_freed {
            config.object_store_keep_freed = mib.saturating_mul(1 << 20);
        }
    }
}

/// Checks that objects can spill to `dir`: a directory (made if missing,
/// as the spill does) where a nameless file can be created.
fn check_spill_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    let shown = dir.display();
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!(
            "--spill-dir {shown}: not a directory (objects spill to nameless files in a \
             directory this user can write)"
        );
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("--spill-dir {shown}: cannot create the directory: {e}"))?;
    tempfile::tempfile_in(dir).map_err(|e| {
        anyhow::anyhow!(
            "--spill-dir {shown}: cannot create a file there ({e}): give a directory this \
             user can write"
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_checked_against_their_range() {
        assert_eq!(parse_seconds("0"), Ok(Seconds(None)));
        assert_eq!(
            parse_seconds("1.5"),
            Ok(Seconds(Some(Duration::from_millis(1500))))
        );
        assert_eq!(
            parse_seconds("0.01"),
            Ok(Seconds(Some(Duration::from_millis(10))))
        );
        for bad in ["1e20", "-1", "nan", "inf", "x", "31536001", "1e-9", "0.009"] {
            let err = parse_seconds(bad).unwrap_err();
            assert!(
                err.contains("a year") && err.contains("10 ms epoch tick"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_spill_dir_must_be_a_writable_directory() {
        let err = check_spill_dir(std::path::Path::new("/etc/passwd")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--spill-dir /etc/passwd: not a directory"),
            "{err}"
        );
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("made/here");
        check_spill_dir(&fresh).unwrap();
        assert!(fresh.is_dir());
        // Read-only (root may write anyway: the mode is checked only
        // when it is enforced).
        let ro = tmp.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
        if std::fs::File::create(ro.join("probe")).is_err() {
            let err = check_spill_dir(&ro).unwrap_err().to_string();
            assert!(err.contains("cannot create a file there"), "{err}");
        }
    }
}
