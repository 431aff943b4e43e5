//! Rolling upgrades of the node-to-node protocol (`docs/peer-protocol.md`,
//! "Versions and upgrades"): a node that speaks a range overlapping the
//! others' (`--peer-protocol`, the hidden flag for such tests) runs its
//! share of a job's tasks with them; a peer that shares no version with a
//! node is refused with a message naming both, and the node counts it.

use std::time::Duration;

use bytes::Bytes;
use wray_peer::{PeerClient, PeerConfig, PeerError};

use super::harness::{job, wait_within, Cluster};
use crate::support::{success_stdout, wray};

/// The peer method that runs a task on the receiving node.
const RUN_TASK: u16 = 1;

/// A client of the cluster's token speaking `versions`, as wray `wray`.
fn client(cluster: &Cluster, versions: std::ops::RangeInclusive<u16>, wray: &str) -> PeerClient {
    let token = PeerConfig::token_from_file(cluster.token_file()).expect("the token");
    let mut config = PeerConfig::new(token);
    config.protocol_versions = versions;
    config.wray_version = wray.into();
    PeerClient::new(config, "node-00000000upgrade0").expect("a client")
}

#[test]
fn a_node_of_an_overlapping_range_works_and_a_disjoint_one_is_refused() {
    // This release speaks 3..=3; node 3 claims 3..=4, as the next release
    // will (it keeps speaking the version before its own).
    let newer: [&str; 2] = ["--peer-protocol", "3..4"];
    let cluster = Cluster::with_api(3, &[&[], &[], &newer]);
    // A burst of tasks from node 1 runs on every node, node 3 included.
    let log = job(cluster.node(1), &["cluster_burst", "12", "500"]);
    for id in cluster.node_ids() {
        assert!(
            log.lines().any(|l| l.starts_with(&format!("ran {id} "))),
            "node {id} ran none of the tasks: {log}"
        );
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (first, third) = (cluster.peer_address(1), cluster.peer_address(3));
    runtime.block_on(async {
        // Protocol 4 only: node 3 (3..=4) speaks it; node 1 (3..=3) not.
        let future = client(&cluster, 4..=4, "9.9.9");
        let err = future
            .call(&third, RUN_TASK, Bytes::from_static(b"[]"))
            .await
            .expect_err("a garbage task is refused");
        assert!(matches!(err, PeerError::Remote { .. }), "{err}");
        let err = future
            .call(&first, RUN_TASK, Bytes::from_static(b"[]"))
            .await
            .expect_err("no version in common");
        eprintln!("a disjoint range: {err}");
        assert!(matches!(err, PeerError::Incompatible { .. }), "{err}");
        let said = err.to_string();
        let wray_version = env!("CARGO_PKG_VERSION");
        let node1 = &cluster.node(1).node_id;
        // A node of the release before (protocol 2: postcard messages)
        // is told so, not sent messages it cannot read.
        let old = client(&cluster, 2..=2, "0.0.9");
        let err = old
            .call(
                &cluster.peer_address(2),
                RUN_TASK,
                Bytes::from_static(b"[]"),
            )
            .await
            .expect_err("protocol 2 is not spoken");
        assert!(matches!(err, PeerError::Incompatible { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("this node speaks 2..=2 (wray 0.0.9)"),
            "{err}"
        );
        assert!(
            said.contains(&format!(
                "node {node1:?} speaks protocol 3..=3 (wray {wray_version}); \
                 this node speaks 4..=4 (wray 9.9.9)"
            )),
            "{said}"
        );
    });
    wait_within(
        "node 1 to count the refusal",
        Duration::from_secs(10),
        || {
            cluster
                .node(1)
                .metric("wray_peer_connections_refused_total{reason=\"version\"}")
                == Some(1.0)
        },
    );
    // The flag is for tests: `--help` does not show it.
    let help = success_stdout(&wray().args(["start", "--help"]).output().expect("wray"));
    assert!(!help.contains("peer-protocol"), "{help}");
}
