//! Node-wide budgets a guest meets: the host memory each object costs
//! (charged to the store's inline budget, given back when the job ends;
//! what one object takes of the heap is measured beside the store, in
//! `objects/src/tests.rs`) and the guests' linear memory all together
//! (`--guest-memory`).

use wray_host::bounds::OBJECT_OVERHEAD;

use crate::support::{attack, run_on_node};

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
            let outcome = node.run_main_blocking("hostile", &args).expect("main runs");
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
            let outcome = node.run_main_blocking("hostile", &args).expect("main runs");
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
