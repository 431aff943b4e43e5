//! Opening an authenticated connection: TCP, TLS (if configured), then
//! the handshake (`docs/peer-protocol.md`, "Handshake"): the hello with
//! this node's versions and nonce; the server's challenge, whose proof of
//! the token is checked before this node proves it in turn; the welcome.
//! All within the handshake timeout, trying again (with backoff) a
//! connection the server closed before answering: a server at one of its
//! connection budgets closes a new connection at once, and a real peer's
//! slot comes free in milliseconds.

use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tokio::time::timeout_at;

use super::Inner;
use crate::error::{PeerError, Result};
use crate::frame::{decode_error, Header, Kind, MAX_ERROR_BODY};
use crate::handshake::{
    agree, mismatch, nonce, prove, verify, Challenge, Hello, Incompatible, Side, Versions,
    MAX_CHALLENGE, MAX_INCOMPATIBLE,
};
use crate::tls;
use crate::wire::{read_body, read_raw_header, write_frame, BoxStream};

/// The first wait before trying a turned-away connection again; it
/// doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// The longest wait between tries: 200 ms.
const MAX_BACKOFF: Duration = Duration::from_millis(200);

/// An authenticated connection to a peer.
pub(crate) struct Conn {
    pub io: BoxStream,
    /// The id of the next request (ids start at 1; 0 is the handshake's).
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

/// How one try ended badly.
enum Failed {
    /// The server closed the connection before answering (at a budget):
    /// worth another try.
    TurnedAway(PeerError),
    /// Anything else.
    Error(PeerError),
}

impl From<PeerError> for Failed {
    fn from(e: PeerError) -> Self {
        Failed::Error(e)
    }
}

/// Connects to `addr` and runs the handshake, within the handshake
/// timeout, trying again while the server turns the connection away.
///
/// # Errors
/// [`PeerError::Connect`] (refused, or still turned away at the
/// deadline), [`PeerError::Tls`], [`PeerError::Auth`],
/// [`PeerError::Incompatible`], [`PeerError::Protocol`],
/// [`PeerError::Io`], or [`PeerError::Timeout`] (`handshake`).
pub(crate) async fn connect(inner: &Inner, addr: &str) -> Result<Conn> {
    let bound = inner.config.handshake_timeout;
    let deadline = Instant::now() + bound;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let tried = timeout_at(deadline.into(), attempt(inner, addr)).await;
        let turned_away = match tried {
            Ok(Ok(conn)) => return Ok(conn),
            Ok(Err(Failed::Error(e))) => return Err(e),
            Ok(Err(Failed::TurnedAway(e))) => e,
            Err(_) => {
                return Err(PeerError::Timeout {
                    addr: addr.to_owned(),
                    what: "handshake",
                    after: bound,
                })
            }
        };
        if Instant::now() + backoff >= deadline {
            return Err(turned_away);
        }
        tracing::debug!("{turned_away}; trying again in {backoff:?}");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Whether an I/O error says the server closed the connection.
fn closed(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
    )
}

/// The error of a connection closed before the server answered `what`.
fn turned_away(addr: &str, what: &str) -> Failed {
    Failed::TurnedAway(PeerError::Connect {
        addr: addr.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            format!("closed without answering {what} (the peer may be at a connection bound)"),
        ),
    })
}

/// One try: connect, TLS, handshake.
async fn attempt(inner: &Inner, addr: &str) -> Result<Conn, Failed> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|source| PeerError::Connect {
            addr: addr.to_owned(),
            source,
        })?;
    crate::socket::tune(&stream);
    let io: BoxStream = match &inner.tls {
        None => Box::new(stream),
        Some(t) => {
            let tls_error = |source| PeerError::Tls {
                addr: addr.to_owned(),
                source,
            };
            let name = tls::server_name(t.server_name.as_deref(), addr).map_err(|message| {
                tls_error(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    message,
                ))
            })?;
            match t.connector.connect(name, stream).await {
                Ok(s) => Box::new(s),
                Err(e) if closed(&e) => return Err(turned_away(addr, "the TLS handshake")),
                Err(e) => return Err(tls_error(e).into()),
            }
        }
    };
    handshake(inner, addr, io).await
}

/// The handshake on `io`.
async fn handshake(inner: &Inner, addr: &str, mut io: BoxStream) -> Result<Conn, Failed> {
    let cfg = &inner.config;
    let io_error = |source| PeerError::Io {
        addr: addr.to_owned(),
        source,
    };
    let protocol = |message: String| PeerError::Protocol {
        addr: addr.to_owned(),
        message,
    };
    let ours = Versions::of(&cfg.protocol_versions);
    let hello = Hello {
        versions: ours,
        node_id: &inner.node_id,
        wray_version: &cfg.wray_version,
        nonce: nonce().map_err(io_error)?,
    }
    .encode();
    match write_frame(&mut io, Kind::Hello, 0, &[&hello]).await {
        Ok(()) => {}
        Err(e) if closed(&e) => return Err(turned_away(addr, "the hello")),
        Err(e) => return Err(io_error(e).into()),
    }
    let header = answer(&mut io, addr, "the hello").await?;
    let bound = match header.kind {
        Kind::Challenge => MAX_CHALLENGE,
        Kind::Incompatible => MAX_INCOMPATIBLE,
        _ => MAX_ERROR_BODY,
    };
    if header.len > bound {
        let why = format!("a {:?} frame of {} bytes", header.kind, header.len);
        return Err(protocol(why).into());
    }
    let body = read_body(&mut io, header.len).await.map_err(io_error)?;
    let text = || String::from_utf8_lossy(&body).into_owned();
    let fields = match header.kind {
        Kind::Challenge => body.as_slice(),
        Kind::Incompatible => {
            let theirs = Incompatible::decode(&body).map_err(protocol)?;
            let message = mismatch(
                &format!("{:?}", theirs.node_id),
                theirs.versions,
                theirs.wray_version,
                ours,
                &cfg.wray_version,
            );
            return Err(incompatible(addr, message));
        }
        // A server of protocol 1 refuses our version so; a later one our
        // hello only if it is malformed.
        Kind::AuthFailed => {
            return Err(incompatible(
                addr,
                format!("it refused the hello: {}", text()),
            ));
        }
        other => return Err(unexpected(addr, other, &body, "the hello").into()),
    };
    let (challenge, fields, their_proof) = Challenge::decode(fields).map_err(protocol)?;
    let expected = agree(ours, challenge.versions);
    if expected != Some(challenge.version) {
        let why = format!(
            "it chose protocol {} with its versions {} and ours {ours}",
            challenge.version, challenge.versions
        );
        return Err(protocol(why).into());
    }
    let token = cfg.token();
    if !verify(token, Side::Server, &hello, fields, &their_proof) {
        return Err(PeerError::Auth {
            addr: addr.to_owned(),
            message: "failed to prove the cluster token".into(),
        }
        .into());
    }
    let our_proof = prove(token, Side::Client, &hello, fields).map_err(protocol)?;
    match write_frame(&mut io, Kind::Proof, 0, &[&our_proof]).await {
        Ok(()) => {}
        Err(e) if closed(&e) => return Err(turned_away(addr, "the proof")),
        Err(e) => return Err(io_error(e).into()),
    }
    let header = answer(&mut io, addr, "the proof").await?;
    if header.len > MAX_ERROR_BODY {
        let why = format!("a {:?} frame of {} bytes", header.kind, header.len);
        return Err(protocol(why).into());
    }
    let body = read_body(&mut io, header.len).await.map_err(io_error)?;
    match header.kind {
        Kind::HelloOk => Ok(Conn {
            io,
            next_id: 0,
            idle_since: Instant::now(),
        }),
        Kind::AuthFailed => Err(PeerError::Auth {
            addr: addr.to_owned(),
            message: "refused this node's proof of the cluster token (the nodes hold different \
                      tokens)"
                .into(),
        }
        .into()),
        other => Err(unexpected(addr, other, &body, "the proof").into()),
    }
}

/// The header of the answer to `what`; a close before it is a turn-away.
async fn answer(io: &mut BoxStream, addr: &str, what: &str) -> Result<Header, Failed> {
    let raw = match read_raw_header(io).await {
        Ok(Some(raw)) => raw,
        Ok(None) => return Err(turned_away(addr, what)),
        Err(e) if closed(&e) => return Err(turned_away(addr, what)),
        Err(e) => {
            return Err(PeerError::Io {
                addr: addr.to_owned(),
                source: e,
            }
            .into())
        }
    };
    Header::decode(&raw).map_err(|message| {
        PeerError::Protocol {
            addr: addr.to_owned(),
            message,
        }
        .into()
    })
}

fn incompatible(addr: &str, message: String) -> Failed {
    Failed::Error(PeerError::Incompatible {
        addr: addr.to_owned(),
        message,
    })
}

/// The error for a frame of `kind` (body `body`) answering `what`.
fn unexpected(addr: &str, kind: Kind, body: &[u8], what: &str) -> PeerError {
    let message = match kind {
        Kind::ProtocolError => format!("the peer says: {}", String::from_utf8_lossy(body)),
        Kind::RemoteError => match decode_error(body) {
            Ok((code, m)) => format!("error {code} in answer to {what}: {m}"),
            Err(m) => m,
        },
        other => format!("{other:?} frame in answer to {what}"),
    };
    PeerError::Protocol {
        addr: addr.to_owned(),
        message,
    }
}
