//! Opening an authenticated connection: TCP, TLS (if configured), the
//! hello and its answer, all within the handshake timeout.

use std::time::Instant;

use tokio::net::TcpStream;
use tokio::time::timeout;

use super::Inner;
use crate::error::{PeerError, Result};
use crate::frame::{decode_error, Header, Hello, Kind, MAX_ERROR_BODY, VERSION};
use crate::tls;
use crate::wire::{read_body, read_raw_header, write_frame, BoxStream};

/// An authenticated connection to a peer.
pub(crate) struct Conn {
    pub io: BoxStream,
    /// The id of the next request (ids start at 1; 0 is the hello's).
    next_id: u64,
    /// When it was last returned to its pool.
    pub idle_since: Instant,
}

impl Conn {
    /// A fresh request id.
    pub fn next_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.next_id
    }
}

/// Connects to `addr` and says hello, within the handshake timeout.
///
/// # Errors
/// [`PeerError::Connect`], [`PeerError::Tls`], [`PeerError::Auth`],
/// [`PeerError::Protocol`], or [`PeerError::Timeout`] (`handshake`).
pub(crate) async fn connect(inner: &Inner, addr: &str) -> Result<Conn> {
    let bound = inner.config.handshake_timeout;
    timeout(bound, connect_unbounded(inner, addr))
        .await
        .map_err(|_| PeerError::Timeout {
            addr: addr.to_owned(),
            what: "handshake",
            after: bound,
        })?
}

async fn connect_unbounded(inner: &Inner, addr: &str) -> Result<Conn> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|source| PeerError::Connect {
            addr: addr.to_owned(),
            source,
        })?;
    let _ = stream.set_nodelay(true);
    let mut io: BoxStream =
        match &inner.tls {
            None => Box::new(stream),
            Some(t) => {
                let name = tls::server_name(t.server_name.as_deref(), addr).map_err(|message| {
                    PeerError::Tls {
                        addr: addr.to_owned(),
                        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, message),
                    }
                })?;
                Box::new(t.connector.connect(name, stream).await.map_err(|source| {
                    PeerError::Tls {
                        addr: addr.to_owned(),
                        source,
                    }
                })?)
            }
        };
    let hello = Hello {
        version: VERSION,
        node_id: &inner.node_id,
        token: inner.config.token().as_bytes(),
    }
    .encode();
    let io_error = |source| PeerError::Io {
        addr: addr.to_owned(),
        source,
    };
    write_frame(&mut io, Kind::Hello, 0, &[&hello])
        .await
        .map_err(io_error)?;
    let protocol = |message: String| PeerError::Protocol {
        addr: addr.to_owned(),
        message,
    };
    let raw = read_raw_header(&mut io)
        .await
        .map_err(io_error)?
        .ok_or_else(|| PeerError::Connect {
            addr: addr.to_owned(),
            // A server at its connection bound closes at accept.
            source: std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "closed without answering the hello (the peer may be at its connection bound)",
            ),
        })?;
    let header = Header::decode(&raw).map_err(protocol)?;
    if header.len > MAX_ERROR_BODY {
        return Err(protocol(format!(
            "answer to the hello of {} bytes",
            header.len
        )));
    }
    let body = read_body(&mut io, header.len).await.map_err(io_error)?;
    let text = || String::from_utf8_lossy(&body).into_owned();
    match header.kind {
        Kind::HelloOk => Ok(Conn {
            io,
            next_id: 0,
            idle_since: Instant::now(),
        }),
        Kind::AuthFailed => Err(PeerError::Auth {
            addr: addr.to_owned(),
            message: text(),
        }),
        Kind::ProtocolError => Err(protocol(format!("the peer says: {}", text()))),
        Kind::RemoteError => {
            let (code, message) = decode_error(&body).map_err(protocol)?;
            Err(protocol(format!(
                "error {code} in answer to the hello: {message}"
            )))
        }
        other => Err(protocol(format!("{other:?} frame in answer to the hello"))),
    }
}
