//! Reference counting: objects live while something holds them, and are
//! freed when nothing does.

use std::time::{Duration, Instant};

use crate::support::{Setup, TestNode};

/// Waits (up to 10 s) for the node's object store to empty: workers drop
/// their instances just after sealing results.
fn wait_for_empty_store(node: &TestNode) -> wray_host::StoreStats {
    let start = Instant::now();
    loop {
        let stats = node.node.object_store_stats();
        if stats.objects == 0 || start.elapsed() > Duration::from_secs(10) {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn refs_inside_values_outlive_their_task_and_dropped_objects_are_freed() {
    let node = TestNode::start(Setup::default());
    let (result, stdout) = node.run("api", &["refs"]);
    assert_eq!(result, Ok(()));
    assert_eq!(stdout, "contained [1, 2, 3]\nchurned\n");
    let stats = wait_for_empty_store(&node);
    assert_eq!(stats.objects, 0, "{stats:?}");
    assert_eq!(stats.bytes, 0);
    // 64 puts and 16 results of 16 MiB went through; had nothing been
    // freed, the peak would be over 1 GiB.
    assert!(stats.peak_bytes < 4 * (16 << 20) + (1 << 20), "{stats:?}");
}

#[test]
fn every_object_a_driver_made_is_freed_when_it_ends() {
    let node = TestNode::start(Setup::default());
    for scenario in [
        "put_get",
        "num_returns",
        "chain",
        "nested",
        "errors",
        "actors",
    ] {
        let (result, _) = node.run("api", &[scenario]);
        assert_eq!(result, Ok(()), "{scenario}");
    }
    let stats = wait_for_empty_store(&node);
    assert_eq!(stats.objects, 0, "{stats:?}");
    assert!(
        stats.peak_bytes > 1 << 20,
        "put_get stored a 1 MiB value: {stats:?}"
    );
}

#[test]
fn a_full_store_spills_to_disk_and_loses_nothing() {
    let spill = tempfile::tempdir().unwrap();
    let node = TestNode::start_with(Setup::default(), |c| {
        c.object_store_memory = Some(48 << 20);
        c.spill_dir = Some(spill.path().to_path_buf());
    });
    let (result, stdout) = node.run("api", &["spill"]);
    assert_eq!(result, Ok(()));
    assert_eq!(stdout, "spilled and read back true\n");
    let stats = wait_for_empty_store(&node);
    assert_eq!(stats.objects, 0);
    // 96 MiB were alive at once in a 48 MiB store: the rest was spilled.
    assert!(stats.peak_bytes > 48 << 20, "{stats:?}");
    let left = std::fs::read_dir(spill.path()).map_or(0, |d| d.count());
    assert_eq!(left, 0, "spill files are deleted with their objects");
}
