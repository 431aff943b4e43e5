//! Object-store flags shared by the commands that start a node.

use std::path::PathBuf;

use clap::Args;
use wray_host::NodeConfig;

/// `--object-store-memory`, `--object-store-dir`, `--spill-dir`,
/// `--huge-pages`.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Capacity of the shared-memory object store in MiB (default: 30% of
    /// RAM, as Ray's; 0: no shared store, values stay on the heap).
    #[arg(long, value_name = "MIB")]
    object_store_memory: Option<u64>,
    /// Directory of the object store's file (default: /dev/shm).
    #[arg(long, value_name = "DIR")]
    object_store_dir: Option<PathBuf>,
    /// Directory objects spill to when the store is full (default: under
    /// the temporary directory).
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    /// Put the object store on 2 MiB huge pages (reserve them in
    /// /proc/sys/vm/nr_hugepages); falls back to 4 KiB pages with a log
    /// line where there are too few.
    #[arg(long)]
    huge_pages: bool,
}

impl StoreArgs {
    /// Applies the flags to `config`.
    pub fn apply(&self, config: &mut NodeConfig) {
        if let Some(mib) = self.object_store_memory {
            config.object_store_memory = (mib > 0).then(|| mib.saturating_mul(1 << 20));
        }
        if let Some(dir) = &self.object_store_dir {
            config.object_store_dir = dir.clone();
        }
        if let Some(dir) = &self.spill_dir {
            config.spill_dir = Some(dir.clone());
        }
        config.huge_pages |= self.huge_pages;
    }
}
