//! Raw TCP peers that break the protocol, against a real server: each is
//! answered with an error frame or closed, the server still serves a good
//! client after each, and no claimed size is ever allocated.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wray_peer::MAX_CHUNK;

use crate::common::*;
use crate::raw::*;

/// Everything the server sends until it closes (bounded by a safety
/// timeout far longer than the server's own bounds), `None` for a reset.
async fn until_closed(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut got)).await;
    match read.expect("the server never closed the connection") {
        Ok(_) => Some(got),
        Err(_) => None,
    }
}

/// The kind of the first frame in `bytes`, if there is one.
fn first_kind(bytes: &[u8]) -> Option<u8> {
    bytes.get(4).copied()
}

async fn connect(addr: &str) -> TcpStream {
    TcpStream::connect(addr).await.unwrap()
}

/// The answer to a connection that says something and waits: an
/// AuthFailed frame (or a close) before the hello, and nothing else.
async fn refused_before_hello(addr: &str, bytes: &[u8]) {
    let mut s = connect(addr).await;
    let _ = s.write_all(bytes).await;
    if let Some(got) = until_closed(&mut s).await {
        if let Some(kind) = first_kind(&got) {
            assert_eq!(kind, AUTH_FAILED, "{got:?}");
            let len = u32::from_be_bytes([got[0], got[1], got[2], got[3]]) as usize;
            assert_eq!(got.len(), 16 + len, "nothing after the error frame");
        }
    }
    still_serves(addr).await;
}

/// After the hello: the server answers ProtocolError or closes.
async fn refused_after_hello(addr: &str, bytes: &[u8]) {
    let mut s = authenticated(addr).await;
    let _ = s.write_all(bytes).await;
    if let Some(got) = until_closed(&mut s).await {
        if let Some(kind) = first_kind(&got) {
            assert_eq!(kind, PROTOCOL_ERROR, "{got:?}");
        }
    }
    still_serves(addr).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_peers_are_refused_and_the_server_still_serves() {
    let (_s, addr) = server(config(), Arc::new(TestHandler::default())).await;
    still_serves(&addr).await;

    // No hello at all: closed after the handshake timeout, nothing sent.
    let mut s = connect(&addr).await;
    assert_eq!(until_closed(&mut s).await.unwrap_or_default(), b"");
    still_serves(&addr).await;

    // A proof made with a wrong token: AuthFailed, then closed.
    let mut s = connect(&addr).await;
    let (hello_sent, fields, _) = hello(&mut s, "impostor").await;
    let wrong = proof(
        b"wrong-token-wrong-token-wrong",
        false,
        &hello_sent,
        &fields,
    );
    s.write_all(&frame(PROOF, 0, &wrong)).await.unwrap();
    let got = until_closed(&mut s).await.unwrap();
    assert_eq!(first_kind(&got), Some(AUTH_FAILED));
    still_serves(&addr).await;
    // A short proof, a call in place of the proof.
    let mut s = connect(&addr).await;
    hello(&mut s, "impostor").await;
    s.write_all(&frame(PROOF, 0, &[1; 31])).await.unwrap();
    assert_eq!(
        first_kind(&until_closed(&mut s).await.unwrap()),
        Some(AUTH_FAILED)
    );
    let mut s = connect(&addr).await;
    hello(&mut s, "impostor").await;
    s.write_all(&frame(CALL, 1, &[0, 1])).await.unwrap();
    assert_eq!(
        first_kind(&until_closed(&mut s).await.unwrap()),
        Some(AUTH_FAILED)
    );
    // A hello of protocol 1 (it carries a token) is refused unread.
    refused_before_hello(&addr, &hello_v1(TOKEN)).await;

    // Bad magic, a hello over its bound, a call before the hello.
    let mut bad_magic = hello_body(2, 2, "rawbad", [1; 32]);
    bad_magic[0] = b'X';
    refused_before_hello(&addr, &frame(HELLO, 0, &bad_magic)).await;
    let mut big = header(100_000, HELLO, 0);
    big.extend_from_slice(&[0; 4096]);
    refused_before_hello(&addr, &big).await;
    refused_before_hello(&addr, &frame(CALL, 1, &[0, 1, 2])).await;

    // A frame claiming u32::MAX bytes (4 GiB), before and after the hello.
    refused_before_hello(&addr, &header(u32::MAX, HELLO, 0)).await;
    refused_after_hello(&addr, &header(u32::MAX, CALL, 1)).await;
    refused_after_hello(&addr, &header(u32::MAX, READ, 1)).await;

    // An unknown kind; reserved bytes set.
    refused_after_hello(&addr, &frame(77, 1, b"??")).await;
    let mut reserved = header(0, CALL, 1);
    reserved[6] = 1;
    refused_after_hello(&addr, &reserved).await;

    // A truncated frame, then close.
    let mut s = authenticated(&addr).await;
    let mut partial = header(100, CALL, 1);
    partial.extend_from_slice(&[0; 10]);
    s.write_all(&partial).await.unwrap();
    s.shutdown().await.unwrap();
    let got = until_closed(&mut s).await.unwrap_or_default();
    assert!(first_kind(&got).is_none(), "{got:?}");
    still_serves(&addr).await;

    // A read past the chunk bound; an offset + len overflowing u64; a
    // key past its bound.
    let read = |key: &[u8], offset: u64, len: u32| {
        let mut b = (key.len() as u16).to_be_bytes().to_vec();
        b.extend_from_slice(key);
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        frame(READ, 1, &b)
    };
    refused_after_hello(&addr, &read(b"k", 0, MAX_CHUNK + 1)).await;
    refused_after_hello(&addr, &read(b"k", u64::MAX - 5, 10)).await;
    refused_after_hello(&addr, &read(&[b'k'; 300], 0, 10)).await;
    // A read request whose fields overrun its body.
    refused_after_hello(&addr, &frame(READ, 1, &[0, 200, 1, 2])).await;

    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest < 1 << 30,
        "an allocation of {largest} bytes: a claimed size was allocated"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_the_bound_is_closed_and_retryable() {
    let mut cfg = config();
    cfg.max_connections = 1;
    let (_s, addr) = server(cfg, Arc::new(TestHandler::default())).await;
    let held = authenticated(&addr).await;
    let e = client(config())
        .call(&addr, crate::common::ECHO, bytes::Bytes::new())
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e}");
    drop(held);
    // The slot comes back once the held connection's task ends; a client
    // retries a retryable error (bounded here).
    for attempt in 0.. {
        match client(config())
            .call(&addr, crate::common::ECHO, bytes::Bytes::new())
            .await
        {
            Ok(_) => break,
            Err(e) if e.is_retryable() && attempt < 1000 => tokio::task::yield_now().await,
            Err(e) => panic!("{e}"),
        }
    }
}
