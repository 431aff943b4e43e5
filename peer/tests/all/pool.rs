//! The client's pool: at most `max_idle_per_peer` connections kept per
//! address after a burst, and none left half-closed (`CLOSE-WAIT`) once
//! the server closes its idle ones.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::common::*;

/// Sockets of this network namespace connected to `port` on 127.0.0.1
/// and in `CLOSE-WAIT` (state 08 of `/proc/net/tcp`).
fn close_wait_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let remote = format!("0100007F:{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(2) == Some(&remote.as_str()) && f.get(3) == Some(&"08")
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_leaves_at_most_the_idle_bound_open() {
    let handler = Arc::new(TestHandler::default());
    let (s, addr) = server(config(), handler.clone()).await;
    let mut cfg = config();
    cfg.max_connections_per_peer = 32;
    let c = client(cfg);
    let calls: Vec<_> = (0..32)
        .map(|_| {
            let (c, addr) = (c.clone(), addr.clone());
            tokio::spawn(async move { c.call(&addr, GATE, Bytes::from_static(b"g")).await })
        })
        .collect();
    wait_for("32 connections open", Duration::from_secs(10), || {
        s.stats().authenticated == 32
    })
    .await;
    handler.open_gate();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), "g");
    }
    wait_for(
        "the 24 past the idle bound closed",
        Duration::from_secs(10),
        || s.stats().authenticated == wray_peer::DEFAULT_MAX_IDLE_PER_PEER,
    )
    .await;
    // Sequential calls reuse what is kept.
    for _ in 0..20 {
        c.call(&addr, ECHO, Bytes::new()).await.unwrap();
    }
    assert_eq!(
        s.stats().authenticated,
        wray_peer::DEFAULT_MAX_IDLE_PER_PEER
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_server_closed_do_not_linger() {
    let mut server_cfg = config();
    server_cfg.idle_timeout = Duration::from_millis(300);
    let handler = Arc::new(TestHandler::default());
    let (s, addr) = server(server_cfg, handler.clone()).await;
    let port = crate::common::socket(&addr).port();
    let c = client(config());
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let (c, addr) = (c.clone(), addr.clone());
            tokio::spawn(async move { c.call(&addr, GATE, Bytes::new()).await })
        })
        .collect();
    wait_for("6 connections open", Duration::from_secs(10), || {
        s.stats().authenticated == 6
    })
    .await;
    handler.open_gate();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    // The server closes them after 300 ms idle; the client drops them.
    wait_for(
        "the server closed its idle connections",
        Duration::from_secs(10),
        || s.stats().authenticated == 0,
    )
    .await;
    wait_for(
        "no socket left in CLOSE-WAIT",
        Duration::from_secs(10),
        || close_wait_to(port) == 0,
    )
    .await;
    // And the next call opens a fresh one.
    c.call(&addr, ECHO, Bytes::new()).await.unwrap();
}
