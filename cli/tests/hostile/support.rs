//! What the process tests share: the built components, one test at a time,
//! and the names in a directory.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

#[path = "../../../host/tests/common/components.rs"]
mod components;
pub use components::component;

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the lock that runs this binary's tests one at a time (they compare
/// `/dev/shm` before and after).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The names in `dir` (none when it cannot be read).
pub fn entries(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
