//! The handshake: the token never crosses the wire, each side proves it
//! holds it (a fake server learns nothing and is named), a proof holds
//! for one connection and one direction, and the two sides agree on the
//! highest protocol version both speak or refuse each other naming both.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wray_peer::{PeerError, Refusal};

use crate::common::*;
use crate::raw::*;

/// A listener that answers a hello with a challenge it cannot prove (it
/// has no token) and records everything the client sends.
async fn fake_server() -> (String, tokio::task::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let mut h = [0u8; 16];
        s.read_exact(&mut h).await.unwrap();
        got.extend_from_slice(&h);
        let mut body = vec![0u8; u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize];
        s.read_exact(&mut body).await.unwrap();
        got.extend_from_slice(&body);
        // The version this release speaks, and its range.
        let v = wray_peer::PROTOCOL_VERSION.to_be_bytes();
        let mut fields = v.to_vec();
        fields.extend_from_slice(&[v[0], v[1], v[0], v[1]]);
        fields.push(4);
        fields.extend_from_slice(b"fake");
        fields.push(5);
        fields.extend_from_slice(b"0.0.0");
        fields.extend_from_slice(&[9; 32]);
        let guess = proof(b"a-guess-at-the-cluster-token", true, &body, &fields);
        fields.extend_from_slice(&guess);
        s.write_all(&frame(CHALLENGE, 0, &fields)).await.unwrap();
        let rest = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut got)).await;
        assert!(rest.is_ok(), "the client never closed");
        got
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_server_learns_nothing_and_is_named() {
    let (addr, fake) = fake_server().await;
    let e = client(config())
        .call(&addr, ECHO, Bytes::from_static(b"a task"))
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::Auth { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!("peer at {addr} failed to prove the cluster token")
    );
    assert!(!e.is_retryable() && e.is_unusable_peer());
    let sent = fake.await.unwrap();
    // The hello only: no token, no proof, no call.
    assert!(
        !sent.windows(TOKEN.len()).any(|w| w == TOKEN),
        "the token was sent"
    );
    let len = u32::from_be_bytes([sent[0], sent[1], sent[2], sent[3]]) as usize;
    assert_eq!((sent[4], sent.len()), (HELLO, 16 + len), "{sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_holds_for_one_connection_and_one_direction() {
    let (s, addr) = server(config(), Arc::new(TestHandler::default())).await;
    // The server's own proof sent back as the client's.
    let mut c = TcpStream::connect(&addr).await.unwrap();
    let (_, _, theirs) = hello(&mut c, "reflector").await;
    c.write_all(&frame(PROOF, 0, &theirs)).await.unwrap();
    assert_eq!(read_frame(&mut c).await.map(|f| f.0), Some(AUTH_FAILED));
    // A good proof of one connection replayed on another with the same
    // hello (the server's nonce differs).
    let mut first = TcpStream::connect(&addr).await.unwrap();
    let (body, fields, _) = hello(&mut first, "replayer").await;
    let good = proof(TOKEN, false, &body, &fields);
    let mut second = TcpStream::connect(&addr).await.unwrap();
    let (_, fields2, _) = hello(&mut second, "replayer").await;
    assert_ne!(fields, fields2, "the server's nonce repeats");
    second.write_all(&frame(PROOF, 0, &good)).await.unwrap();
    assert_eq!(
        read_frame(&mut second).await.map(|f| f.0),
        Some(AUTH_FAILED)
    );
    // On its own connection the proof is good.
    first.write_all(&frame(PROOF, 0, &good)).await.unwrap();
    assert_eq!(read_frame(&mut first).await.map(|f| f.0), Some(HELLO_OK));
    wait_for("two refusals counted", Duration::from_secs(5), || {
        s.stats().refused.get(Refusal::Unauthenticated) == 2
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_versions_agree_on_the_highest() {
    let mut server_cfg = config();
    server_cfg.protocol_versions = 2..=3;
    let (_s, addr) = server(server_cfg, Arc::new(TestHandler::default())).await;
    for client_versions in [3..=4, 2..=2, 2..=9] {
        let mut c = config();
        c.protocol_versions = client_versions.clone();
        let got = client(c).call(&addr, ECHO, Bytes::from_static(b"v")).await;
        assert_eq!(got.unwrap(), "client-node:v", "{client_versions:?}");
    }
    // The challenge names the version agreed on: the highest in common.
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(&frame(HELLO, 0, &hello_body(2, 5, "raw", [1; 32])))
        .await
        .unwrap();
    let (kind, body) = read_frame(&mut s).await.unwrap();
    assert_eq!((kind, &body[..6]), (CHALLENGE, &[0, 3, 0, 2, 0, 3][..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disjoint_versions_are_refused_naming_both() {
    let mut new = config();
    new.protocol_versions = 3..=3;
    new.wray_version = "0.9.0".into();
    new.node_id = Some("node-new".into());
    let (s, addr) = server(new, Arc::new(TestHandler::default())).await;
    let mut old = config();
    old.protocol_versions = 2..=2;
    old.wray_version = "0.8.0".into();
    let e = client(old)
        .call(&addr, ECHO, Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::Incompatible { .. }), "{e}");
    assert!(!e.is_retryable() && e.is_unusable_peer());
    assert_eq!(
        e.to_string(),
        format!(
            "peer at {addr} speaks another protocol: node \"node-new\" speaks protocol 3..=3 \
             (wray 0.9.0); this node speaks 2..=2 (wray 0.8.0)"
        )
    );
    // On the wire: an Incompatible frame with the server's versions.
    let mut raw = TcpStream::connect(&addr).await.unwrap();
    raw.write_all(&frame(HELLO, 0, &hello_body(9, 9, "future", [1; 32])))
        .await
        .unwrap();
    let (kind, body) = read_frame(&mut raw).await.unwrap();
    assert_eq!((kind, &body[..4]), (INCOMPATIBLE, &[0, 3, 0, 3][..]));
    wait_for("the refusals counted", Duration::from_secs(5), || {
        s.stats().refused.get(Refusal::Version) == 2
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_1_node_is_told_to_upgrade() {
    let (_s, addr) = server(config(), Arc::new(TestHandler::default())).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(&hello_v1(TOKEN)).await.unwrap();
    let (kind, body) = read_frame(&mut s).await.unwrap();
    let said = String::from_utf8_lossy(&body);
    assert_eq!(kind, AUTH_FAILED);
    assert!(
        said.contains("node \"old-v1\" speaks protocol 1")
            && said.contains(&format!(
                "{}..={}",
                wray_peer::MIN_PROTOCOL_VERSION,
                wray_peer::PROTOCOL_VERSION
            )),
        "{said}"
    );
}
