//! A node that fails under its owner's feet (issue 38): a peer whose
//! replies stall behind a relay is given up within seconds and its tasks
//! run elsewhere; a node just SIGKILLed gets no actor and its tasks are
//! placed again without spending a retry or a restart; a node with a wrong
//! token is quarantined and its work goes to the good nodes; a node record
//! written into etcd without a lease is no live node, and one with a lease
//! that never answers a handshake gets no work; a result holding 20,000
//! refs comes back from another node, and one past the bound says the task
//! ran and why its answer could not come back.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::harness::{
    job, job_log, start_job, wait_job_end, wait_within, write_token, Cluster, ACCELERATED,
};

/// The `ran NODE COUNT` lines of a `cluster_on` log, summed by node.
fn ran(log: &str) -> std::collections::BTreeMap<String, u64> {
    log.lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix("ran ")?.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.parse().ok()?))
        })
        .collect()
}

/// A TCP relay in front of a node's peer port: it forwards both ways until
/// told to stall, then stops forwarding the node's replies (it holds them,
/// as a link that stalls). Its threads end when it is dropped.
struct Relay {
    port: u16,
    target: Arc<Mutex<Option<String>>>,
    stall: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// Listens on a port of its own (held from now on); forwards to the
    /// target once it is set.
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the relay");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let port = listener.local_addr().expect("its address").port();
        let relay = Relay {
            port,
            target: Arc::default(),
            stall: Arc::default(),
            stop: Arc::default(),
        };
        let (target, stall, stop) = (
            relay.target.clone(),
            relay.stall.clone(),
            relay.stop.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let (target, stall, stop) = (target.clone(), stall.clone(), stop.clone());
                        std::thread::spawn(move || relay_one(client, &target, &stall, &stop));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        relay
    }

    /// Forwards to `addr` from now on.
    fn forward_to(&self, addr: &str) {
        *self.target.lock().expect("the relay target") = Some(addr.to_string());
    }

    /// Stops forwarding replies.
    fn stall(&self) {
        self.stall.store(true, Ordering::Relaxed);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Relays one connection: client to node always, node to client until
/// `stall`.
fn relay_one(
    client: TcpStream,
    target: &Mutex<Option<String>>,
    stall: &AtomicBool,
    stop: &AtomicBool,
) {
    let mut waited = 0;
    let addr = loop {
        if let Some(addr) = target.lock().expect("the relay target").clone() {
            break addr;
        }
        waited += 1;
        if waited > 3000 || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let Ok(node) = TcpStream::connect(&addr) else {
        return;
    };
    let tick = Some(Duration::from_millis(100));
    for s in [&client, &node] {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(tick);
    }
    let (Ok(client_in), Ok(node_out)) = (client.try_clone(), node.try_clone()) else {
        return;
    };
    let never = Arc::new(AtomicBool::new(false));
    let up_stop = never.clone();
    let upstream = std::thread::spawn(move || pump(client_in, node_out, &up_stop, &never));
    pump(node, client, stall, stop);
    let _ = upstream.join();
}

/// Copies `from` to `to` until either closes or `stop`, holding what comes
/// while `hold` is set.
fn pump(mut from: TcpStream, mut to: TcpStream, hold: &AtomicBool, stop: &AtomicBool) {
    let mut buf = [0u8; 16 << 10];
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if hold.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(std::net::Shutdown::Write);
                return;
            }
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// Node `i`'s own peer listening address, as its log says it.
fn listening(cluster: &Cluster, i: usize) -> String {
    let log = cluster.node(i).dir.join("node.log");
    let mut found = None;
    wait_within(
        "the node to log its channel",
        Duration::from_secs(10),
        || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            found = text
                .lines()
                .filter(|l| l.contains("the node-to-node channel listens"))
                .find_map(|l| l.split("peer=").nth(1)?.split_whitespace().next())
                .map(str::to_string);
            found.is_some()
        },
    );
    found.expect("a peer address")
}

/// Node `i`'s `busy` tasks in `state`.
fn busy(cluster: &Cluster, i: usize, state: &str) -> usize {
    super::harness::count(cluster.node(i), &["busy"], state)
}

#[test]
fn a_peer_whose_replies_stall_is_given_up_and_its_tasks_run_elsewhere() {
    let relay = Relay::start();
    let port = relay.port.to_string();
    // Node 2 is reached only through the relay; node 1 owns the tasks,
    // limited to 5 s each.
    let cluster = Cluster::start(
        3,
        &[
            &["--task-timeout", "5"],
            &["--num-cpus", "2", "--advertise-peer-port", &port],
        ],
    );
    relay.forward_to(&listening(&cluster, 2));
    cluster.wait_all_alive(Duration::from_secs(30));
    super::harness::deploy_api(cluster.node(1));
    let ids = cluster.node_ids();
    // Two 3 s tasks bound (softly) to node 2: they run there, then its
    // replies stall.
    let id = start_job(
        cluster.node(1),
        &["cluster_on", &ids[1], "2", "3000", "soft"],
    );
    wait_within("node 2 to run both tasks", Duration::from_secs(30), || {
        busy(&cluster, 2, "RUNNING") == 2
    });
    relay.stall();
    // Without a deadline and a liveness check the job stays RUNNING for
    // good: it must end, the tasks run again elsewhere.
    let status = wait_job_end(cluster.node(1), &id, Duration::from_secs(60));
    let log = job_log(cluster.node(1), &id);
    eprintln!("{status}\n{log}");
    assert!(status.contains("SUCCEEDED"), "{status}\n{log}");
    assert!(!log.contains("failed"), "{log}");
    let counts = ran(&log);
    assert_eq!(counts.values().sum::<u64>(), 2, "{log}");
    assert!(!counts.contains_key(&ids[1]), "{log}");
    assert_eq!(
        cluster.unusable_seen_by(1, &ids[1]).as_deref(),
        Some("stalled"),
        "{}",
        cluster.views()
    );
    // A task bound to node 2 alone fails at once, naming it and why.
    let log = job(cluster.node(1), &["cluster_on", &ids[1], "1", "100"]);
    assert!(
        log.contains("failed 0") && log.contains(&ids[1]) && log.contains("stalled"),
        "{log}"
    );
}

#[test]
fn a_node_just_killed_gets_no_actor_and_its_tasks_spend_no_retry() {
    // Node 2's lease outlives the test: the others see it ALIVE after
    // its SIGKILL, as in the 4 s before a lease lapses.
    let cluster = Cluster::with_api(
        3,
        &[
            &[],
            &[
                ACCELERATED[0],
                ACCELERATED[1],
                "--lease-ttl",
                "120",
                "--heartbeat-ms",
                "1000",
            ],
            &ACCELERATED,
        ],
    );
    let ids = cluster.node_ids();
    let first = cluster.node(1);
    cluster.kill(2);
    // An actor with one restart asked on node 2: made on node 3, its
    // restart kept.
    let log = job(first, &["cluster_actor_on", &ids[1]]);
    eprintln!("{log}");
    assert!(log.contains(&format!("actor_node {}", ids[2])), "{log}");
    assert!(log.contains("total 101"), "{log}");
    let restarted = first.metric("wray_cluster_actors_restarted_total");
    assert_eq!(restarted, Some(0.0), "a restart was spent: {log}");
    // Tasks asked on node 2: placed elsewhere, none counted as a retry.
    let log = job(first, &["cluster_on", &ids[1], "3", "100", "soft"]);
    eprintln!("{log}");
    assert_eq!(ran(&log).values().sum::<u64>(), 3, "{log}");
    let retried = first.metric("wray_cluster_tasks_retried_total");
    assert_eq!(retried, Some(0.0), "{log}");
    let resent = first.metric("wray_cluster_tasks_resent_total");
    assert!(resent.is_some_and(|r| r >= 1.0), "resent {resent:?}");
    // Node 2 is not used meanwhile, and one bound to it alone says why.
    assert_eq!(
        cluster.unusable_seen_by(1, &ids[1]).as_deref(),
        Some("unreachable"),
        "{}",
        cluster.views()
    );
    let log = job(first, &["cluster_on", &ids[1], "1", "100"]);
    assert!(
        log.contains("failed 0") && log.contains("unreachable") && log.contains(&ids[1]),
        "{log}"
    );
}

#[test]
fn a_node_with_a_wrong_token_is_quarantined_and_its_work_goes_elsewhere() {
    let dir = tempfile::tempdir().expect("a directory");
    let wrong = dir.path().join("wrong-token");
    write_token(&wrong);
    let wrong = wrong.to_str().expect("UTF-8").to_string();
    // Node 3 alone has an accelerator, and the wrong token.
    let cluster = Cluster::with_api(
        3,
        &[
            &[],
            &[],
            &[
                ACCELERATED[0],
                ACCELERATED[1],
                "--cluster-token-file",
                &wrong,
            ],
        ],
    );
    let ids = cluster.node_ids();
    let first = cluster.node(1);
    // Tasks asked on node 3 (softly) all run on the good nodes.
    let log = job(first, &["cluster_on", &ids[2], "4", "100", "soft"]);
    eprintln!("{log}");
    let counts = ran(&log);
    assert_eq!(counts.values().sum::<u64>(), 4, "{log}");
    assert!(!counts.contains_key(&ids[2]), "{log}");
    assert_eq!(
        cluster.unusable_seen_by(1, &ids[2]).as_deref(),
        Some("quarantined"),
        "{}",
        cluster.views()
    );
    // A task only node 3 could run fails at once, naming it and why (not
    // a lack of resources).
    let log = job(first, &["cluster_many_refs", "10"]);
    eprintln!("{log}");
    assert!(
        log.contains("refs_failed") && log.contains(&ids[2]) && log.contains("quarantined"),
        "{log}"
    );
}

#[test]
fn a_fake_node_record_gets_no_work() {
    let cluster = Cluster::with_api(2, &[]);
    let first = cluster.node(1);
    // A peer port that accepts and never answers a hello.
    let hole = TcpListener::bind("127.0.0.1:0").expect("a port");
    let hole_addr = hole.local_addr().expect("its address").to_string();
    let record = |id: &str| {
        serde_json::json!({
            "id": id, "cluster": "wray-test", "peer_address": hole_addr,
            "resources_total": {"CPU": 64.0}, "resources_available": {"CPU": 64.0},
            "start_time_ms": 0, "version": "0"
        })
        .to_string()
    };
    let unleased = "node-00000000000000fa";
    let leased = "node-00000000000000fb";
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let mut etcd = cluster.etcd().client().await;
        let key = |id: &str| format!("/wray/wray-test/nodes/{id}");
        etcd.put(key(unleased), record(unleased), None)
            .await
            .expect("a put");
        // Then one under a lease (60 s): seen after the first.
        let lease = etcd.lease_grant(60, None).await.expect("a lease").id();
        let with = etcd_client::PutOptions::new().with_lease(lease);
        etcd.put(key(leased), record(leased), Some(with))
            .await
            .expect("a put");
    });
    wait_within(
        "node 1 to list the leased record",
        Duration::from_secs(10),
        || {
            cluster
                .try_states_seen_by(1)
                .is_ok_and(|s| s.get(leased).is_some_and(|s| s == "ALIVE"))
        },
    );
    let states = cluster.try_states_seen_by(1).expect("a listing");
    assert!(!states.contains_key(unleased), "{states:?}");
    // The leased one never answers a handshake: no work goes there.
    wait_within("node 1 to probe it", Duration::from_secs(10), || {
        cluster.unusable_seen_by(1, leased).as_deref() == Some("unreachable")
    });
    let log = job(first, &["cluster_on", leased, "3", "100", "soft"]);
    eprintln!("{log}");
    let counts = ran(&log);
    assert_eq!(counts.values().sum::<u64>(), 3, "{log}");
    assert!(!counts.contains_key(leased), "{log}");
    // Not even tried there (each try would wait for its handshake).
    let resent = first.metric("wray_cluster_tasks_resent_total");
    assert_eq!(resent, Some(0.0), "{log}");
    drop(hole);
}

#[test]
fn a_result_of_many_refs_comes_back_and_one_past_the_bound_says_the_task_ran() {
    let cluster = Cluster::with_api(2, &[&[], &ACCELERATED]);
    let first = cluster.node(1);
    let log = job(first, &["cluster_many_refs", "20000"]);
    assert!(log.contains("refs 20000 sum 199990000"), "{log}");
    let log = job(first, &["cluster_many_refs", "120000"]);
    eprintln!("{log}");
    let ids = cluster.node_ids();
    assert!(
        log.contains("refs_failed")
            && log.contains(&format!("the task ran on node {}", ids[1]))
            && log.contains("100000 objects")
            && !log.contains("refused"),
        "{log}"
    );
}
