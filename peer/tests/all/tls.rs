//! TLS round trip with a self-signed certificate made here (rcgen), and
//! clients that do not trust it or do not speak TLS.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use wray_peer::{PeerConfig, PeerError, PeerTls};

use crate::common::*;

/// Writes a self-signed certificate for 127.0.0.1 and its key into `dir`
/// as `{name}-cert.pem` and `{name}-key.pem`.
fn self_signed(dir: &Path, name: &str) -> PeerTls {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let cert = dir.join(format!("{name}-cert.pem"));
    let key = dir.join(format!("{name}-key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    PeerTls {
        cert: Some(cert.clone()),
        key: Some(key),
        trust: cert,
        server_name: None,
    }
}

fn with_tls(tls: PeerTls) -> PeerConfig {
    let mut c = config();
    c.tls = Some(tls);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_and_a_pull_round_trip_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let tls = self_signed(dir.path(), "node");
    let data = pattern(8 << 20, 11);
    let mut h = TestHandler::default();
    h.blobs.insert(b"obj".to_vec(), Bytes::from(data.clone()));
    let (_s, addr) = server(with_tls(tls.clone()), Arc::new(h)).await;

    // The client trusts the node's own certificate.
    let client_tls = PeerTls {
        cert: None,
        key: None,
        ..tls
    };
    let c = client(with_tls(client_tls));
    let got = c
        .call(&addr, ECHO, Bytes::from_static(b"tls"))
        .await
        .unwrap();
    assert_eq!(got, Bytes::from_static(b"client-node:tls"));
    let mut dest = vec![0u8; data.len()];
    c.pull(&addr, b"obj", data.len() as u64, &mut dest, 1 << 20)
        .await
        .unwrap();
    assert!(dest == data);

    // A client trusting another certificate fails its handshake.
    let other = self_signed(dir.path(), "other");
    let e = client(with_tls(other))
        .call(&addr, ECHO, Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::Tls { .. }), "{e}");
    assert!(!e.is_retryable());

    // A plain client gets no answer to its hello.
    let e = client(config())
        .call(&addr, ECHO, Bytes::new())
        .await
        .unwrap_err();
    assert!(!matches!(e, PeerError::Remote { .. }), "{e}");
    // And the server still serves its TLS clients.
    assert!(c.call(&addr, ECHO, Bytes::new()).await.is_ok());
}

#[tokio::test]
async fn a_server_without_a_key_or_with_a_missing_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut tls = self_signed(dir.path(), "node");
    tls.key = None;
    let e = wray_peer::PeerServer::bind(
        "127.0.0.1:0",
        with_tls(tls.clone()),
        Arc::new(TestHandler::default()),
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(e, PeerError::Config(_)), "{e}");
    tls.trust = dir.path().join("missing.pem");
    let e = wray_peer::PeerClient::new(with_tls(tls), "n")
        .err()
        .unwrap();
    assert!(e.to_string().contains("missing.pem"), "{e}");
}
