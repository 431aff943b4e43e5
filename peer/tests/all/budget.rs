//! Connections that never prove the token cannot starve those that do:
//! they hold a small budget of their own (per source address too) for
//! the hello timeout at most, and a real peer still gets in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use wray_peer::{PeerConfig, Refusal, DEFAULT_HELLO_TIMEOUT};

use crate::common::*;
use crate::raw::*;

/// A server config that holds a silent connection for 30 s: long enough
/// that a real call is seen to get in while they are all held.
fn holding() -> PeerConfig {
    let mut c = config();
    c.hello_timeout = Duration::from_secs(30);
    c
}

/// A client that waits for its handshake as long as a node's does (5 s).
async fn real_call(addr: &str) {
    let mut c = config();
    c.handshake_timeout = wray_peer::DEFAULT_HANDSHAKE_TIMEOUT;
    let got = client(c)
        .call(addr, ECHO, Bytes::from_static(b"real"))
        .await;
    assert_eq!(got.unwrap(), "client-node:real");
}

/// Waits until the server closes `s` (an end or a reset), before
/// `deadline`.
async fn closed_by(s: &mut TcpStream, deadline: Instant) {
    let mut buf = [0u8; 64];
    match tokio::time::timeout_at(deadline.into(), s.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => {}
        Ok(Ok(n)) => panic!("the server sent {n} bytes to a silent connection"),
        Err(_) => panic!("a silent connection still open at the deadline"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_cannot_starve_a_real_peer() {
    let (s, addr) = server(holding(), Arc::new(TestHandler::default())).await;
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(connect_from([127, 0, 0, 2], &addr).await);
    }
    wait_for(
        "every silent connection admitted or refused",
        Duration::from_secs(10),
        || {
            let st = s.stats();
            st.unauthenticated + st.refused.get(Refusal::SourceBudget) as usize == 300
        },
    )
    .await;
    // While they are held, a peer from another address gets in.
    real_call(&addr).await;
    let stats = s.stats();
    assert_eq!(stats.unauthenticated, 8, "{stats:?}");
    assert_eq!(stats.refused.get(Refusal::SourceBudget), 292, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_are_closed_within_the_hello_timeout() {
    let mut cfg = config();
    cfg.hello_timeout = DEFAULT_HELLO_TIMEOUT;
    let (s, addr) = server(cfg, Arc::new(TestHandler::default())).await;
    let opened = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(TcpStream::connect(&addr).await.unwrap());
    }
    // 1 s, with room for a loaded machine.
    assert_eq!(DEFAULT_HELLO_TIMEOUT, Duration::from_secs(1));
    let deadline = opened + Duration::from_secs(3);
    for c in &mut silent {
        closed_by(c, deadline).await;
    }
    wait_for("each refusal counted", Duration::from_secs(5), || {
        s.stats().refused.get(Refusal::NoHello) == 8
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_budget_from_many_sources_makes_room_for_a_real_peer() {
    let mut cfg = holding();
    cfg.max_unauthenticated = 16;
    cfg.max_unauthenticated_per_source = 4;
    let (s, addr) = server(cfg, Arc::new(TestHandler::default())).await;
    let mut silent = Vec::new();
    for source in 2..42u8 {
        for _ in 0..4 {
            silent.push(connect_from([127, 0, 0, source], &addr).await);
        }
    }
    real_call(&addr).await;
    let stats = s.stats();
    assert!(stats.unauthenticated <= 16, "{stats:?}");
    assert!(stats.refused.get(Refusal::Evicted) > 0, "{stats:?}");
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proved_connections_leave_the_unauthenticated_budget() {
    let mut cfg = holding();
    cfg.max_unauthenticated = 2;
    cfg.max_unauthenticated_per_source = 2;
    let (s, addr) = server(cfg, Arc::new(TestHandler::default())).await;
    let mut held = Vec::new();
    for _ in 0..10 {
        held.push(authenticated(&addr).await);
    }
    wait_for(
        "10 authenticated connections",
        Duration::from_secs(5),
        || {
            let st = s.stats();
            (st.authenticated, st.unauthenticated) == (10, 0)
        },
    )
    .await;
    real_call(&addr).await;
}
