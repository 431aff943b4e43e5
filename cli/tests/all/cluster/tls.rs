//! The node-to-node channel over TLS: nodes started with `--tls-cert`
//! forward tasks to each other over TLS with that certificate, and a peer
//! speaking plain TCP, even with the cluster's token, gets nothing.

use std::time::Duration;

use super::harness::{wait_within, Cluster};
use crate::node::tls_fixture;
use crate::support::{component, success_stdout};

#[test]
fn nodes_with_a_certificate_talk_over_tls_and_refuse_plain_peers() {
    let (cert, key) = (tls_fixture("cert.pem"), tls_fixture("key.pem"));
    let tls = ["--tls-cert", cert.as_str(), "--tls-key", key.as_str()];
    let node2 = [
        "--tls-cert",
        cert.as_str(),
        "--tls-key",
        key.as_str(),
        "--resources",
        r#"{"accelerator": 2}"#,
    ];
    let cluster = Cluster::start(2, &[&tls, &node2]);
    success_stdout(
        &cluster
            .node(1)
            .run(&["deploy", component("api").to_str().expect("UTF-8")]),
    );
    // Until node 1 sees node 2 (the only one with an accelerator), the
    // job's task is infeasible; then it runs there, over TLS.
    let mut log = String::new();
    wait_within(
        "a job to run across the TLS channel",
        Duration::from_secs(60),
        || {
            let out = cluster
                .node(1)
                .run(&["job", "submit", "api", "--", "cluster_bytes", "16"]);
            let said = String::from_utf8_lossy(&out.stdout).to_string();
            let Some(id) = said
                .split_whitespace()
                .find(|w| w.len() == 16 && w.chars().all(|c| c.is_ascii_hexdigit()))
            else {
                return false;
            };
            log = success_stdout(&cluster.node(1).run(&["job", "logs", id]));
            log.contains("cluster_bytes 16777216 match")
        },
    );

    // Node 2's channel, as its log says where it listens.
    let node_log = std::fs::read_to_string(cluster.node(2).dir.join("node.log")).expect("a log");
    let address = node_log
        .split_whitespace()
        .find_map(|w| w.strip_prefix("peer="))
        .unwrap_or_else(|| panic!("no channel address in node 2's log: {node_log}"))
        .to_string();
    let token = std::fs::read(cluster.token_file()).expect("the token");
    let token = wray_peer::Token::new(token).expect("a token");
    let plain =
        wray_peer::PeerClient::new(wray_peer::PeerConfig::new(token), "node-00000000deadbeef")
            .expect("a client");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let answer = runtime.block_on(plain.call(&address, 2, bytes::Bytes::new()));
    assert!(answer.is_err(), "a plain peer was answered: {answer:?}");
}
