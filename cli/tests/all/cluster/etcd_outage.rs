//! An etcd outage longer than a lease: the nodes keep each other `ALIVE`
//! while etcd is gone (a node's death is only declared by the control
//! plane), and list each other `ALIVE` again once etcd is back.

use std::time::{Duration, Instant};

use super::harness::Cluster;

/// How long etcd stays down: longer than the nodes' lease TTL (4 s).
const OUTAGE: Duration = Duration::from_secs(5);

#[test]
fn stop_etcd_for_five_seconds() {
    let mut cluster = Cluster::start(3, &[]);
    cluster.wait_all_alive(Duration::from_secs(30));
    cluster.stop_etcd();
    let down = Instant::now();
    let mut answers = [0usize; 3];
    let mut failures = Vec::new();
    while down.elapsed() < OUTAGE {
        for (i, answered) in (1..=3).zip(answers.iter_mut()) {
            match cluster.try_states_seen_by(i) {
                Ok(states) => {
                    *answered += 1;
                    let dead: Vec<_> = states.iter().filter(|(_, s)| *s == "DEAD").collect();
                    assert!(
                        dead.is_empty(),
                        "{:?} into the etcd outage node {i} lists {dead:?} DEAD: {states:?}",
                        down.elapsed()
                    );
                }
                Err(e) => failures.push(format!("{:?}: {e}", down.elapsed())),
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("during the outage: answers by node {answers:?}, failures {failures:?}");
    // Each node still says what it knows of the cluster.
    assert!(answers.iter().all(|&n| n > 0), "{answers:?}: {failures:?}");
    cluster.restart_etcd();
    let took = cluster.wait_all_alive(Duration::from_secs(10));
    eprintln!("all ALIVE again {took:?} after etcd came back");
}
