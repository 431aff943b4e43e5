//! Sizes and offsets past the store, counts that sized allocations, windows
//! past the kernel's mapping limit, a store larger than its file system.

use std::path::Path;
use std::process::Command;

use wray_host::{Node, NodeConfig};

use crate::support::{attack, serial};

#[test]
fn sizes_past_the_store_are_refused_and_corrupt_nothing() {
    let out = attack(|_| {}, &["reserve_sizes"]);
    out.expect(
        "reserve_sizes: ok:",
        &[
            "reserves refused 4/4",
            "writes refused 3/3",
            "seals refused 2/2",
            "sealed object intact true",
        ],
    );
    out.expect("other object intact: ok: true", &[]);
}

#[test]
fn a_task_cannot_write_or_seal_what_another_is_making() {
    let out = attack(|_| {}, &["foreign_writes"]);
    out.expect(
        "foreign_writes: ok: write: invalid-argument:",
        &[
            "is not being created by this task",
            "seal: invalid-argument",
        ],
    );
    out.expect("own object: [9, 9, 9, 9]", &[]);
}

#[test]
fn return_counts_are_bounded_before_anything_is_allocated() {
    let out = attack(|_| {}, &["num_returns"]);
    out.expect(
        "num_returns 4294967295: 1 ids: invalid-argument:",
        &["a task returns 1 to 16384 objects"],
    );
    out.expect("num_returns 16385: 1 ids: invalid-argument:", &[]);
    out.expect("num_returns 0: 1 ids: ok: 42", &[]);
}

#[test]
fn windows_are_capped_per_instance_and_unmapped() {
    let out = attack(|_| {}, &["windows", "32000"]);
    out.expect(
        "windows: ok: mapped 1024, first byte 3 then 0, then: invalid-argument:",
        &["1024 windows mapped, the most one instance may have"],
    );
}

#[test]
fn mapping_over_one_buffer_again_and_again_replaces_the_window() {
    let out = attack(|_| {}, &["remap", "5000"]);
    out.expect("remap: ok: mapped 5000 of 5000, last byte 4 then 0", &[]);
}

#[test]
fn a_value_larger_than_the_store_spills_and_a_larger_block_is_refused() {
    let out = attack(|_| {}, &["bigger_than_store", "80"]);
    out.expect("bigger_than_store: ok: read back true", &[]);
    out.expect("reserve past the store: system", &[]);
}

#[test]
fn a_store_larger_than_its_file_system_is_refused_naming_both_sizes() {
    let _serial = serial();
    let config = NodeConfig {
        object_store_memory: Some(15 << 40),
        ..NodeConfig::default()
    };
    let err = Node::start(config).err().expect("refused").to_string();
    assert!(err.contains("does not fit in"), "{err}");
    assert!(err.contains("bytes free"), "{err}");
    assert!(err.contains("--object-store-memory"), "{err}");
}

/// A tmpfs of `mib` MiB mounted at a fresh directory (unmounted when
/// dropped), or `None` where this process may not mount.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(mib: u64) -> Option<Self> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!(
                "cannot mount a tmpfs here (not root?): skipping the small file system checks"
            );
        }
        ok.then_some(Tmpfs(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_file_system_that_fills_up_makes_objects_spill_not_kill_the_node() {
    {
        let _serial = serial();
        let Some(small) = Tmpfs::mount(16) else {
            return;
        };
        // 64 MiB on 16 MiB: refused at once, naming both sizes.
        let config = NodeConfig {
            object_store_memory: Some(64 << 20),
            object_store_dir: small.path().to_path_buf(),
            ..NodeConfig::default()
        };
        let err = Node::start(config).err().expect("refused").to_string();
        assert!(err.contains("67108864 bytes does not fit"), "{err}");
        assert!(
            err.contains("16777216 bytes free") || err.contains("bytes free"),
            "{err}"
        );
    }
    // 24 MiB on 32 MiB, then another file takes 16 MiB of it: the store's
    // pages are allocated before a block is used, so a 20 MiB object
    // spills instead of raising SIGBUS.
    let Some(shm) = Tmpfs::mount(32) else {
        return;
    };
    let filler = shm.path().join("filler");
    let out = crate::support::run_on_node(
        |c| {
            c.object_store_memory = Some(24 << 20);
            c.object_store_dir = shm.path().to_path_buf();
        },
        |node| {
            std::fs::write(&filler, vec![0u8; 16 << 20]).expect("fill the tmpfs");
            let args = vec!["bigger_than_store".to_string(), "20".to_string()];
            let outcome = node.run_main_blocking("hostile", &args).expect("main runs");
            assert_eq!(outcome.result, Ok(()));
        },
        &["bigger_than_store", "20 on a full tmpfs"],
    );
    out.expect("bigger_than_store: ok: read back true", &[]);
    std::fs::remove_file(filler).ok();
    out.expect("next: ok: 42", &[]);
}
