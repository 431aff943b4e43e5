//! How large a node's object store is by default, from the machine's
//! memory and the free space where the store's file lives.

use std::path::PathBuf;

/// The default object store capacity: 30% of the machine's memory, as Ray's
/// default `object_store_memory` (at least 64 MiB).
pub fn default_object_store_memory() -> u64 {
    (total_memory() / 10 * 3).max(64 << 20)
}

/// The default capacity of a store in `dir`: [`default_object_store_memory`],
/// or 90% of what the file system under `dir` has free when that is less
/// (a container's `/dev/shm` is often 64 MiB); `None` when less than 1 MiB
/// is free (no shared store then: values stay on the heap).
pub fn fitting_object_store_memory(dir: &std::path::Path) -> Option<u64> {
    let want = default_object_store_memory();
    let free = super::arena::free_space(dir).unwrap_or(want);
    let size = want.min(free / 10 * 9);
    if size < want {
        tracing::info!(
            "object store: {size} bytes, all {} has room for (30% of RAM would be {want}); \
             give --object-store-memory and --object-store-dir to choose",
            dir.display()
        );
    }
    (size >= 1 << 20).then_some(size)
}

/// The machine's memory in bytes (`MemTotal`; 2 GiB when unknown).
pub fn total_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(2 << 30, |kib| kib.saturating_mul(1024))
}

/// `/dev/shm` where it exists, else the temporary directory.
pub fn default_object_store_dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}
