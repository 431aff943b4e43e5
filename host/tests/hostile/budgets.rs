//! Node-wide budgets a guest meets: the host memory each object costs
//! (charged to the store's inline budget, given back when the job ends)
//! and the guests' linear memory all together (`--guest-memory`).

use wray_control_plane::{JobId, TaskId};
use wray_host::objects::{Codec, Holds, ObjectStore, StoreLimits, OBJECT_OVERHEAD};

use crate::support::{attack, run_on_node, serial};

/// Resident memory in KiB, as the kernel counts it now (no trimming first:
/// what the node gave back itself).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// Bytes the allocator has handed out and not taken back (glibc's
/// `mallinfo2`: small blocks and mapped ones).
fn heap_in_use() -> usize {
    // SAFETY: a plain call that fills in a struct.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

/// Set in the child process that measures what objects cost.
const MEASURE: &str = "WRAY_MEASURE_OBJECT_COST";

#[test]
fn small_objects_cost_what_the_store_charges() {
    if std::env::var_os(MEASURE).is_some() {
        return measure_object_cost();
    }
    // Measured in a process of its own: the heap of one that ran other
    // tests holds their freed chunks and allocator state.
    let _serial = serial();
    let test = "budgets::small_objects_cost_what_the_store_charges";
    let out = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(MEASURE, "1")
        .output()
        .expect("the measuring process runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find_map(|l| l.find("object cost:").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("no measurement in:\n{text}"));
    let numbers: Vec<usize> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [per_object, charged] = numbers[..] else {
        panic!("two numbers in `{line}`");
    };
    println!("{line}");
    assert!(
        per_object <= charged,
        "an object takes {per_object} bytes of heap, more than the {charged} charged"
    );
}

/// Holds 229,377 small sealed objects (just past a resize of both hash
/// tables, 7/8 of 2^18 entries plus one: the most each entry costs) and
/// prints what each took of the heap and what the store charged.
fn measure_object_cost() {
    const N: u32 = 229_377;
    let store = ObjectStore::with_limits(None, None, StoreLimits::default());
    let root = TaskId::driver(JobId(7));
    let mut holds = Holds::default();
    // An i64 as the SDK writes it: a 16-byte header and 8 bytes.
    let value = [7u8; 24];
    let before = heap_in_use();
    for i in 0..N {
        let id = root.put_object(i).expect("a put id");
        assert_eq!(store.admit(1), Ok(None));
        store.register_pending(id);
        holds.hold(&store, id).expect("held");
        let object = store
            .value(Codec::Rkyv, &value, Default::default())
            .expect("stored");
        assert!(store.seal(id, object));
    }
    let per_object = (heap_in_use() - before) / N as usize;
    let charged = store.stats().inline_bytes / N as usize;
    assert_eq!(charged, OBJECT_OVERHEAD + value.len());
    println!("object cost: {per_object} bytes of heap each, {charged} charged");
    holds.release_all(&store);
    assert_eq!(store.stats().objects, 0);
    assert_eq!(store.stats().inline_bytes, 0, "everything given back");
}

#[test]
fn small_puts_past_the_store_budget_get_the_store_full_error() {
    // A 16 MiB store: its inline budget is 16 MiB, metadata included.
    let out = attack(
        |c| c.object_store_memory = Some(16 << 20),
        &["small_puts", "1000000"],
    );
    out.expect(
        "small_puts: refused after",
        &["system: object store full: no room for"],
    );
    let line = out.line("small_puts: refused after");
    let puts: u64 = line
        .split_whitespace()
        .nth(3)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count in `{line}`"));
    // 16 MiB at OBJECT_OVERHEAD and 24 bytes each: about 49,000 (fewer:
    // the driver's own objects count too).
    let fit = (16u64 << 20) / (OBJECT_OVERHEAD as u64 + 24);
    assert!(
        puts > fit / 2 && puts <= fit + 8192,
        "{puts} puts, {fit} fit"
    );
}

#[test]
fn a_million_small_puts_give_their_memory_back_when_the_job_ends() {
    let mut grew = (0, 0);
    let out = run_on_node(
        // No shared store: its inline budget is 30% of RAM, room for them.
        |c| c.object_store_memory = None,
        |node| {
            let before = rss_kib();
            let args = ["small_puts".to_string(), "1000000".to_string()];
            let outcome = node.run_main("hostile", &args).expect("main runs");
            assert_eq!(outcome.result, Ok(()));
            let after = rss_kib();
            grew = (before, after);
            assert_eq!(
                node.object_store_stats().objects,
                0,
                "the job's objects are freed"
            );
        },
        &["small_puts", "1000000"],
    );
    out.expect("small_puts: 1000000 puts, all stored", &[]);
    let (before, after) = grew;
    println!("RSS {before} KiB before the job, {after} KiB after");
    // 37 MB here with the table shrunk and the heap trimmed at the job's
    // end; 154 to 284 MB with one step or neither (see GIVE_BACK_AFTER).
    assert!(
        after < before + (100 << 10),
        "RSS {before} KiB -> {after} KiB after a job of 1,000,000 puts"
    );
}

#[test]
fn guest_memory_past_the_node_budget_fails_the_task_that_asks_and_comes_back() {
    let mut held_after = u64::MAX;
    let out = run_on_node(
        |c| c.guest_memory = Some(64 << 20),
        |node| {
            let args = ["guest_memory".to_string(), "16".to_string()];
            let outcome = node.run_main("hostile", &args).expect("main runs");
            assert_eq!(outcome.result, Ok(()));
            // The job's actors are dropped as it ends (one whose last call
            // is still winding down, just after).
            let start = std::time::Instant::now();
            while node.guest_memory().0 != 0 && start.elapsed().as_secs() < 60 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            held_after = node.guest_memory().0;
        },
        &["guest_memory", "16"],
    );
    let live: usize = out
        .line("guest_memory: ")
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a count of hogs");
    assert!(
        (1..16).contains(&live),
        "{live} actors of 16 MiB in a 64 MiB budget"
    );
    let budget = ["guest memory budget of 67108864 bytes (--guest-memory 64 MiB)"];
    out.expect("guest_memory refused hog: actor-died:", &budget);
    out.expect("guest_memory grow task: out-of-memory:", &budget);
    out.expect("guest_memory plain task: ok: 42", &[]);
    out.expect("guest_memory after a kill: ok:", &[]);
    assert_eq!(
        held_after, 0,
        "every instance gave its memory back with the job"
    );
}
