//! A graceful shutdown: a request in flight finishes, new connections
//! are refused.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use wray_peer::PeerError;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_in_flight_finishes_and_new_ones_are_refused() {
    let handler = Arc::new(TestHandler::default());
    let (s, addr) = server(config(), handler.clone()).await;
    let c = client(config());
    let in_flight = tokio::spawn({
        let (c, addr) = (c.clone(), addr.clone());
        async move { c.call(&addr, BLOCK, Bytes::from_static(b"late")).await }
    });
    handler.entered.notified().await;
    let stopping = tokio::spawn(s.shutdown(Duration::from_secs(30)));
    handler.release.notify_one();
    assert_eq!(
        in_flight.await.unwrap().unwrap(),
        Bytes::from_static(b"late")
    );
    stopping.await.unwrap();
    let e = client(config())
        .call(&addr, ECHO, Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(e, PeerError::Connect { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_grace_is_dropped() {
    let handler = Arc::new(TestHandler::default());
    let (s, addr) = server(config(), handler.clone()).await;
    let c = client(config());
    let in_flight = tokio::spawn({
        let (c, addr) = (c.clone(), addr.clone());
        async move { c.call(&addr, BLOCK, Bytes::new()).await }
    });
    handler.entered.notified().await;
    s.shutdown(Duration::ZERO).await;
    let e = in_flight.await.unwrap().unwrap_err();
    assert!(matches!(e, PeerError::Io { .. }), "{e}");
}
