//! Calls, reads and a 64 MiB pull, byte-identical.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use wray_peer::{PeerError, DEFAULT_CHUNK, UNKNOWN_METHOD};

use crate::common::*;

fn handler_with(key: &[u8], data: Vec<u8>) -> Arc<TestHandler> {
    let mut h = TestHandler::default();
    h.blobs.insert(key.to_vec(), Bytes::from(data));
    Arc::new(h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_returns_the_handlers_answer_and_its_error_typed() {
    let (_s, addr) = server(config(), Arc::new(TestHandler::default())).await;
    let c = client(config());
    for _ in 0..3 {
        let got = c
            .call(&addr, ECHO, Bytes::from_static(b"hi"))
            .await
            .unwrap();
        assert_eq!(got, Bytes::from_static(b"client-node:hi"));
    }
    match c.call(&addr, FAIL, Bytes::new()).await {
        Err(PeerError::Remote { code, message, .. }) => {
            assert_eq!((code, message.as_str()), (42, "no such thing"))
        }
        other => panic!("{other:?}"),
    }
    // The connection survives a remote error.
    assert!(c.call(&addr, ECHO, Bytes::new()).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_method_is_answered_501_naming_the_known_ones_and_counted() {
    let handler = Arc::new(TestHandler::default());
    let (_s, addr) = server(config(), handler.clone()).await;
    let c = client(config());
    match c.call(&addr, 99, Bytes::new()).await {
        Err(PeerError::Remote { code, message, .. }) => {
            assert_eq!(code, UNKNOWN_METHOD);
            assert_eq!(
                message,
                "node test has no peer method 99 (it has 1 Echo, 2 Fail, 3 Block, 4 Gate)"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(handler.unknown.count(), 1);
    // The connection is kept.
    assert!(c.call(&addr, ECHO, Bytes::new()).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_past_the_bound_is_refused_before_sending() {
    let mut cfg = config();
    cfg.max_body = 1024;
    let (_s, addr) = server(cfg.clone(), Arc::new(TestHandler::default())).await;
    let c = client(cfg);
    let e = c
        .call(&addr, ECHO, Bytes::from(vec![0; 2048]))
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::TooLarge { .. }), "{e}");
    assert!(!e.is_retryable());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_lands_in_the_callers_slice() {
    let data = pattern(1 << 20, 7);
    let (_s, addr) = server(config(), handler_with(b"obj", data.clone())).await;
    let c = client(config());
    let mut dest = vec![0u8; 4096];
    c.read(&addr, b"obj", 1000, &mut dest).await.unwrap();
    assert_eq!(dest, data[1000..5096]);
    let e = c.read(&addr, b"nope", 0, &mut dest).await.unwrap_err();
    assert!(matches!(e, PeerError::Remote { code: 404, .. }), "{e}");
    let e = c.read(&addr, &[0; 257], 0, &mut dest).await.unwrap_err();
    assert!(matches!(e, PeerError::TooLarge { .. }), "{e}");
    let e = c
        .read(&addr, b"obj", u64::MAX - 10, &mut dest)
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::TooLarge { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_with_fewer_bytes_gives_truncated_not_garbage() {
    let data = pattern(1 << 20, 8);
    let (_s, addr) = server(config(), handler_with(b"obj", data)).await;
    let c = client(config());
    let mut dest = vec![0xAAu8; 4096];
    let e = c.read(&addr, b"short/obj", 0, &mut dest).await.unwrap_err();
    assert!(
        matches!(
            e,
            PeerError::Truncated {
                expected: 4096,
                got: 2048,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.is_retryable());
    // The connection stayed in step: the next read on it is whole.
    c.read(&addr, b"obj", 0, &mut dest).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_of_64_mib_arrives_byte_identical_with_chunks_in_flight() {
    let len = 64 << 20;
    let data = pattern(len, 0x5eed);
    let handler = handler_with(b"big", data.clone());
    let (_s, addr) = server(config(), handler.clone()).await;
    let c = client(config());
    let mut dest = vec![0u8; len];
    let stats = c
        .pull(&addr, b"big", len as u64, &mut dest, 1 << 20)
        .await
        .unwrap();
    assert!(dest == data, "pulled bytes differ");
    assert_eq!(
        (stats.bytes, stats.chunks, stats.in_flight),
        (len as u64, 64, 4)
    );
    let connections = handler.read_ports.lock().len();
    assert!((2..=4).contains(&connections), "{connections} connections");
    // A length that is not a whole number of chunks, default chunk.
    let odd = len - 12345;
    let mut dest = vec![0u8; odd];
    let hd = handler_with(b"odd", data[..odd].to_vec());
    let (_s2, addr2) = server(config(), hd).await;
    c.pull(&addr2, b"odd", odd as u64, &mut dest, DEFAULT_CHUNK)
        .await
        .unwrap();
    assert!(dest == data[..odd]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_fails_on_a_short_chunk_and_checks_its_arguments() {
    let (_s, addr) = server(config(), handler_with(b"obj", pattern(1 << 20, 3))).await;
    let c = client(config());
    let mut dest = vec![0u8; 1 << 20];
    let e = c
        .pull(&addr, b"short/obj", 1 << 20, &mut dest, 1 << 16)
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::Truncated { .. }), "{e}");
    let e = c
        .pull(&addr, b"obj", 5, &mut dest, 1 << 16)
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::InvalidArgument(_)), "{e}");
    let e = c
        .pull(&addr, b"obj", 1 << 20, &mut dest, 64 << 20)
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::TooLarge { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_an_auth_error_and_no_server_is_a_connect_error() {
    let (s, addr) = server(config(), Arc::new(TestHandler::default())).await;
    let bad = wray_peer::PeerConfig::new(
        wray_peer::Token::new(b"another-cluster-token-xyz".to_vec()).unwrap(),
    );
    let e = client(bad)
        .call(&addr, ECHO, Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::Auth { .. }), "{e}");
    assert!(!e.is_retryable());
    s.shutdown(std::time::Duration::from_secs(1)).await;
    let e = client(config())
        .call(&addr, ECHO, Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::Connect { .. }), "{e}");
    assert!(e.is_retryable());
}

/// The request timeout bounds a request's body and its answer, not the
/// handler: a call whose handler runs past it (a forwarded task running
/// for minutes) is answered, as long as the client waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_running_past_the_request_timeout_still_answers() {
    let mut server_cfg = config();
    server_cfg.request_timeout = Duration::from_millis(200);
    let handler = Arc::new(TestHandler::default());
    let (_s, addr) = server(server_cfg, handler.clone()).await;
    let c = client(config());
    let call = tokio::spawn(async move { c.call(&addr, BLOCK, Bytes::from_static(b"late")).await });
    handler.entered.notified().await;
    // Held in the handler for three times the server's request timeout.
    tokio::time::sleep(Duration::from_millis(600)).await;
    handler.release.notify_one();
    let got = call.await.unwrap().unwrap();
    assert_eq!(got, Bytes::from_static(b"late"));
}
