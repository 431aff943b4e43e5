//! An etcd outage longer than a lease: the nodes keep each other `ALIVE`
//! while etcd is gone (a node's death is only declared by the control
//! plane), and list each other `ALIVE` again once etcd is back, and
//! still after their leases would have ended had they not renewed them.

use std::time::{Duration, Instant};

use super::harness::Cluster;

/// The nodes' lease TTL (`--lease-ttl 4`, the harness's).
const LEASE_TTL: Duration = Duration::from_secs(4);
/// How long etcd stays down: longer than the nodes' lease TTL.
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
    // And they stay so past two lease TTLs: every node renews its lease on
    // the etcd that came back (a lease etcd kept lives one more TTL).
    let back = Instant::now();
    while back.elapsed() < 2 * LEASE_TTL {
        for i in 1..=3 {
            let states = cluster
                .try_states_seen_by(i)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                states.len() == 3 && states.values().all(|s| s == "ALIVE"),
                "{:?} after etcd came back node {i} lists {states:?}",
                back.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
