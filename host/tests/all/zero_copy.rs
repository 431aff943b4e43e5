//! Zero-copy objects: mapped into guests, private to a guest that writes,
//! and never left mapped once a task ends.

use crate::support::{Setup, TestNode};

/// Lines of /proc/self/maps that map the node's object-store file.
fn arena_mappings(node: &TestNode) -> usize {
    let path = node
        .node
        .object_store_path()
        .expect("a shared-memory store");
    // A memfd (huge pages) shows in the maps under its link's target.
    let path = std::fs::read_link(&path).unwrap_or(path);
    let path = path.to_string_lossy().into_owned();
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    maps.lines().filter(|l| l.ends_with(&path)).count()
}

const ZERO_COPY: &str = "mapped 8388608 true\nremapped true\nget true\nscribbled true\nprivate true\nin place true true\nresult 16777216 3\nstreamed 204800 7\nfloats 20000 30000\n";

#[test]
fn objects_are_mapped_into_guests_and_writes_stay_private() {
    let node = TestNode::start(Setup::default());
    let (result, stdout) = node.run("api", &["zero_copy"]);
    assert_eq!(result, Ok(()), "{stdout}");
    assert_eq!(stdout, ZERO_COPY);
    // Every window was unmapped when its task ended: only the host's own
    // mapping of the store file is left.
    assert_eq!(arena_mappings(&node), 1);
}

/// The same on a store asking for huge pages: on 2 MiB pages where the
/// kernel has them reserved (`/proc/sys/vm/nr_hugepages`), else on 4 KiB
/// pages after a log line; the guest sees no difference either way.
#[test]
fn huge_pages_or_their_fallback_keep_every_guarantee() {
    let node = TestNode::start_with(Setup::default(), |c| {
        c.object_store_memory = Some(256 << 20);
        c.huge_pages = true;
    });
    let (result, stdout) = node.run("api", &["zero_copy"]);
    assert_eq!(result, Ok(()), "{stdout}");
    assert_eq!(stdout, ZERO_COPY);
    assert_eq!(arena_mappings(&node), 1);
    let (result, stdout) = node.run("api", &["window_leak"]);
    assert_eq!(result, Ok(()));
    assert!(stdout.ends_with("fresh pages zero true\n"), "{stdout}");
    assert_eq!(arena_mappings(&node), 1);
}

#[test]
fn a_new_instance_never_sees_an_earlier_object() {
    let node = TestNode::start(Setup {
        num_cpus: 1,
        ..Setup::default()
    });
    let (result, stdout) = node.run("api", &["window_leak"]);
    assert_eq!(result, Ok(()));
    assert_eq!(stdout, "fresh pages zero true\n");
    assert_eq!(arena_mappings(&node), 1);
}

#[test]
fn a_mapped_object_is_the_store_s_own_pages_not_a_copy() {
    let node = std::sync::Arc::new(TestNode::start(Setup::default()));
    let runner = {
        let node = node.clone();
        std::thread::spawn(move || node.run("api", &["hold_mapped"]))
    };
    // While the guest holds the mapping, the store file is mapped twice: by
    // the host and over the guest's window.
    let start = std::time::Instant::now();
    let mut seen = 1;
    while start.elapsed() < std::time::Duration::from_secs(20) && !runner.is_finished() {
        seen = seen.max(arena_mappings(&node));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let (result, stdout) = runner.join().unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(stdout, "held 1048576\n");
    assert!(seen >= 2, "the guest's window never mapped the store file");
    assert_eq!(arena_mappings(&node), 1);
}

/// `wray::ZeroPages` over `mapping.zero`: zeroed allocations of 1 to 33 MiB
/// made over memory just written are all zero (by writing below 2 MiB, by
/// the host's zero pages above), and the fresh instances after them in the
/// same slot see nothing of them.
#[test]
fn a_zeroed_allocation_is_zero_over_dirty_memory_and_leaves_nothing_behind() {
    let node = TestNode::start(Setup {
        num_cpus: 1,
        ..Setup::default()
    });
    let (result, stdout) = node.run("api", &["zeroed"]);
    assert_eq!(result, Ok(()), "{stdout}");
    let expected: String = [1, 2, 3, 8, 33]
        .iter()
        .map(|mib| format!("zeroed {mib} MiB: 0 bytes not zero\n"))
        .chain(["fresh pages zero true\n".to_string()])
        .collect();
    assert_eq!(stdout, expected);
    assert_eq!(arena_mappings(&node), 1);
}
