//! The worker threads follow the node's CPUs: many tiny tasks leave the
//! pool at its CPU count, a chain of tasks each blocked on its child,
//! deeper than the CPUs, still completes, and 10,000 tasks blocked in
//! `get` or sleeping at once hold no thread each (their futures are
//! parked: `worker_pool::spawn_task`).

use crate::support::{Setup, TestNode};

#[test]
fn twenty_thousand_tiny_tasks_use_no_more_threads_than_cpus() {
    let node = TestNode::start(Setup::default());
    let (result, stdout) = node.run("microbench", &["throughput", "20000"]);
    assert_eq!(result, Ok(()), "{stdout}");
    let stats = node.node.worker_threads();
    // No task blocks (only the driver, which is no worker): the bound is
    // the CPU slots, plus one thread per slot tearing a finished task's
    // instance down (`worker_pool::lend_slot`).
    assert!(stats.peak >= 1 && stats.peak <= 2 * 2, "{stats:?}");
    assert_eq!(stats.blocked, 0, "{stats:?}");
}

#[test]
fn a_chain_of_blocked_gets_deeper_than_the_cpus_completes() {
    let node = TestNode::start(Setup {
        num_cpus: 1,
        ..Setup::default()
    });
    // `fork 30 1`: 31 tasks, each but the last blocked in `get` on its
    // child, which needs the CPU its parent gave back, and a thread.
    let (result, stdout) = node.run("hostile", &["fork", "30", "1"]);
    assert_eq!(result, Ok(()), "{stdout}");
    assert!(stdout.contains("fork: ok: 1"), "{stdout}");
    let stats = node.node.worker_threads();
    assert!(
        stats.peak <= 2,
        "blocked tasks are parked, not replaced: {stats:?}"
    );
    assert_eq!(stats.blocked, 0, "{stats:?}");
    assert_eq!(stats.suspended, 0, "{stats:?}");
}

/// Tasks at once in the test below: three times what the pool's thread
/// bound let block before (`MAX_BLOCKED_WORKERS`, 1,024: the 1,025th wait
/// was refused). `bench/envelope` runs 10,000 on a node of its own; here
/// the nodes of other tests share the process, and 10,000 live instances
/// take about 61,600 memory mappings of the process's 65,530
/// (`vm.max_map_count`) and a 10,100-slot pool reserves about 80 TiB of
/// its 128 TiB of address space, which failed one run in three.
const AT_ONCE: usize = 3_000;

/// A node of 2 CPUs with room for [`AT_ONCE`] instances and 100 more
/// (each task blocked or sleeping keeps its instance: the `hostile` guest's
/// memory is 2.4 MB, most of it never touched, so the budget of linear
/// memory is raised to fit them).
fn node_for_thousands() -> TestNode {
    TestNode::start_with(
        Setup {
            num_cpus: 2,
            task_memory_limit: 64 << 20,
            ..Setup::default()
        },
        |c| {
            c.max_instances = (AT_ONCE + 100) as u32;
            c.guest_memory = Some((AT_ONCE as u64 + 100) * (4 << 20));
        },
    )
}

/// Pool threads stay far below the tasks waiting at once: the CPU slots,
/// a slot lent per CPU, and the extra threads light tasks share
/// (`MAX_LIGHT_TASK_THREADS`).
const FEW_THREADS: usize = 2 + 2 + 64;

/// One test, one node (see [`AT_ONCE`]).
#[test]
fn thousands_of_tasks_blocked_in_get_or_sleeping_at_once_hold_no_thread_each() {
    let node = node_for_thousands();
    let n = AT_ONCE.to_string();
    // Tasks of one CPU, each blocked in `get` on one gate task that opens
    // once all of them arrived.
    let (result, stdout) = node.run("hostile", &["blocked_at_once", &n]);
    assert_eq!(result, Ok(()), "{stdout}");
    assert!(
        stdout.contains(&format!("blocked_at_once: ok: {n}")),
        "{stdout}"
    );
    let stats = node.node.worker_threads();
    assert!(stats.peak <= FEW_THREADS, "{stats:?}");
    assert!(
        stats.suspended_peak >= AT_ONCE * 9 / 10,
        "parked at once: {stats:?}"
    );
    assert_eq!((stats.suspended, stats.blocked), (0, 0), "{stats:?}");
    // Tasks of 0.0001 CPU (a third of a CPU together), each sleeping 2 s.
    let (result, stdout) = node.run("hostile", &["sleeping_at_once", &n, "2000"]);
    assert_eq!(result, Ok(()), "{stdout}");
    assert!(
        stdout.contains(&format!("sleeping_at_once: ok: {n}")),
        "{stdout}"
    );
    let stats = node.node.worker_threads();
    assert!(stats.peak <= FEW_THREADS, "{stats:?}");
    assert_eq!((stats.suspended, stats.blocked), (0, 0), "{stats:?}");
}
