//! The options of every peer socket, both sides: `TCP_NODELAY` (one
//! request at a time: no waiting for Nagle), and TCP keepalive
//! ([`KEEPALIVE_IDLE`], [`KEEPALIVE_INTERVAL`], [`KEEPALIVE_RETRIES`]) so
//! that a peer that died or vanished behind a network fault is noticed on
//! an idle connection too.

use socket2::{SockRef, TcpKeepalive};
use tokio::net::TcpStream;

use crate::config::{KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_RETRIES};

/// Sets the options on `stream`. A refused option is logged, not fatal:
/// the connection works without it.
pub(crate) fn tune(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("peer socket: TCP_NODELAY: {e}");
    }
    let keepalive = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    if let Err(e) = SockRef::from(stream).set_tcp_keepalive(&keepalive) {
        tracing::debug!("peer socket: TCP keepalive: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keepalive_is_on_with_its_timings() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        tune(&stream);
        let s = SockRef::from(&stream);
        assert!(s.keepalive().unwrap());
        assert_eq!(s.tcp_keepalive_time().unwrap(), KEEPALIVE_IDLE);
        assert_eq!(s.tcp_keepalive_interval().unwrap(), KEEPALIVE_INTERVAL);
        assert_eq!(s.tcp_keepalive_retries().unwrap(), KEEPALIVE_RETRIES);
        assert!(stream.nodelay().unwrap());
    }
}
