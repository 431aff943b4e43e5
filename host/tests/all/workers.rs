//! The worker threads follow the node's CPUs: many tiny tasks leave the
//! pool at its CPU count, and a chain of tasks each blocked on its child,
//! deeper than the CPUs, still completes on replacement threads.

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
    assert!(stats.peak > 1, "blocked workers were replaced: {stats:?}");
    assert!(
        stats.peak <= 1 + 30,
        "one replacement per blocked task: {stats:?}"
    );
    assert_eq!(stats.blocked, 0, "{stats:?}");
}
