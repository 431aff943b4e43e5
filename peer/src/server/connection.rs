//! One connection on the server side: TLS (if configured), the hello
//! within the handshake timeout, then one request at a time until the
//! client closes, the connection idles past its bound, the client breaks
//! the protocol, or the server stops.
//!
//! Before the hello is accepted the only frame sent is `AuthFailed`, and
//! at most [`MAX_HELLO`] body bytes are read.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use subtle::ConstantTimeEq;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::timeout;

use super::Shared;
use crate::frame::{
    encode_error, Header, Hello, Kind, ReadRequest, MAX_HELLO, MAX_READ_REQUEST, VERSION,
};
use crate::handler::PeerIdentity;
use crate::wire::{read_body, read_raw_header, write_frame, BoxStream};

/// Serves the connection `stream` from `addr` until it ends.
pub(super) async fn serve(
    stream: TcpStream,
    addr: SocketAddr,
    shared: Arc<Shared>,
    mut closing: watch::Receiver<bool>,
) {
    let cfg = &shared.config;
    let opened = async {
        let mut io: BoxStream = match &shared.tls {
            None => Box::new(stream),
            Some(acceptor) => Box::new(
                acceptor
                    .accept(stream)
                    .await
                    .map_err(|e| format!("tls: {e}"))?,
            ),
        };
        let node_id = hello(&mut io, &shared).await?;
        Ok::<_, String>((io, node_id))
    };
    let (mut io, node_id) = tokio::select! {
        r = timeout(cfg.handshake_timeout, opened) => match r {
            Ok(Ok(opened)) => opened,
            Ok(Err(why)) => {
                tracing::warn!("peer connection from {addr} refused: {why}");
                return;
            }
            Err(_) => {
                tracing::debug!("peer connection from {addr}: no hello within {:?}", cfg.handshake_timeout);
                return;
            }
        },
        _ = closing.wait_for(|c| *c) => return,
    };
    let peer = PeerIdentity { node_id, addr };
    tracing::debug!("peer {} connected from {addr}", peer.node_id);
    loop {
        let raw = tokio::select! {
            r = timeout(cfg.idle_timeout, read_raw_header(&mut io)) => match r {
                Ok(Ok(Some(raw))) => raw,
                Ok(Ok(None)) => return,
                Ok(Err(e)) => {
                    tracing::debug!("peer {} ({addr}): {e}", peer.node_id);
                    return;
                }
                Err(_) => {
                    tracing::debug!("peer {} ({addr}) idle for {:?}: closing", peer.node_id, cfg.idle_timeout);
                    return;
                }
            },
            _ = closing.wait_for(|c| *c) => return,
        };
        // A started request finishes even if the server stops meanwhile;
        // the server's grace bounds the wait. Its body and its answer each
        // get the request timeout; the handler takes as long as it takes
        // (a forwarded task runs for as long as its own limit).
        if let Err(why) = request(&mut io, &shared, &peer, raw).await {
            tracing::warn!("peer {} ({addr}): {why}; closing", peer.node_id);
            return;
        }
    }
}

/// Reads and checks the hello; answers `HelloOk` and returns the node id,
/// or answers `AuthFailed`, shuts the connection down and says why.
async fn hello(io: &mut BoxStream, shared: &Shared) -> Result<String, String> {
    let raw = match read_raw_header(io).await {
        Ok(Some(raw)) => raw,
        Ok(None) => return Err("closed before its hello".into()),
        Err(e) => return Err(format!("reading the hello: {e}")),
    };
    let checked = match Header::decode(&raw) {
        Ok(h) if h.kind == Kind::Hello && h.len <= MAX_HELLO => Ok(h),
        Ok(h) if h.kind == Kind::Hello => {
            Err(format!("hello of {} bytes (at most {MAX_HELLO})", h.len))
        }
        Ok(h) => Err(format!("{:?} frame before the hello", h.kind)),
        Err(e) => Err(e),
    };
    let header = match checked {
        Ok(h) => h,
        Err(why) => return Err(refuse(io, why).await),
    };
    let body = read_body(io, header.len)
        .await
        .map_err(|e| format!("reading the hello: {e}"))?;
    let hello = match Hello::decode(&body) {
        Ok(h) => h,
        Err(why) => return Err(refuse(io, why).await),
    };
    if hello.version != VERSION {
        let why = format!(
            "protocol version {} is not supported (this node speaks {VERSION})",
            hello.version
        );
        return Err(refuse(io, why).await);
    }
    let good: bool = hello.token.ct_eq(shared.config.token().as_bytes()).into();
    if !good {
        let why = format!("node {:?} presented a wrong cluster token", hello.node_id);
        return Err(refuse(io, why).await);
    }
    let node_id = hello.node_id.to_owned();
    write_frame(io, Kind::HelloOk, 0, &[&VERSION.to_be_bytes()])
        .await
        .map_err(|e| format!("answering the hello: {e}"))?;
    Ok(node_id)
}

/// Sends `AuthFailed` with `why` and shuts the connection down; returns
/// `why`.
async fn refuse(io: &mut BoxStream, why: String) -> String {
    let _ = write_frame(
        io,
        Kind::AuthFailed,
        0,
        &[crate::frame::clip(&why).as_bytes()],
    )
    .await;
    let _ = io.shutdown().await;
    why
}

/// Serves the request whose header is `raw`. `Err` (after a
/// `ProtocolError` frame where one can be sent) closes the connection.
async fn request(
    io: &mut BoxStream,
    shared: &Shared,
    peer: &PeerIdentity,
    raw: [u8; crate::frame::HEADER_LEN],
) -> Result<(), String> {
    let cfg = &shared.config;
    let header = match Header::decode(&raw) {
        Ok(h) => h,
        Err(why) => return Err(protocol_error(io, 0, why).await),
    };
    let bound = match header.kind {
        Kind::Call => cfg.max_body.saturating_add(2),
        Kind::Read => MAX_READ_REQUEST,
        other => {
            let why = format!("unexpected {other:?} frame from a client");
            return Err(protocol_error(io, header.id, why).await);
        }
    };
    if header.len > bound {
        let why = format!(
            "{:?} frame of {} bytes (at most {bound})",
            header.kind, header.len
        );
        return Err(protocol_error(io, header.id, why).await);
    }
    let body = within(cfg.request_timeout, read_body(io, header.len))
        .await
        .map_err(|e| format!("reading a {:?} body: {e}", header.kind))?;
    let id = header.id;
    let handler = &shared.handler;
    let written = if header.kind == Kind::Call {
        let Some(method) = body.first_chunk::<2>() else {
            return Err(protocol_error(io, id, "call without a method".into()).await);
        };
        let method = u16::from_be_bytes(*method);
        let rest = Bytes::from(body).slice(2..);
        match handler.call(peer, method, rest).await {
            Ok(answer) if answer.len() > cfg.max_body as usize => {
                let why = format!(
                    "the handler's answer to method {method} is {} bytes (at most {})",
                    answer.len(),
                    cfg.max_body
                );
                return Err(protocol_error(io, id, why).await);
            }
            Ok(answer) => {
                within(
                    cfg.request_timeout,
                    write_frame(io, Kind::CallOk, id, &[&answer]),
                )
                .await
            }
            Err(e) => remote_error(io, id, &e, cfg.request_timeout).await,
        }
    } else {
        let r = match ReadRequest::decode(&body) {
            Ok(r) => r,
            Err(why) => return Err(protocol_error(io, id, why).await),
        };
        if r.len > cfg.max_chunk {
            let why = format!("read of {} bytes (at most {})", r.len, cfg.max_chunk);
            return Err(protocol_error(io, id, why).await);
        }
        if r.offset.checked_add(u64::from(r.len)).is_none() {
            let why = format!("read of {} bytes at offset {} overflows", r.len, r.offset);
            return Err(protocol_error(io, id, why).await);
        }
        match handler.read(peer, r.key, r.offset, r.len).await {
            Ok(blob) => {
                let n = blob.len().min(r.len as usize);
                if n < r.len as usize {
                    tracing::warn!(
                        "peer read for {}: the handler has {n} of {} bytes",
                        peer.node_id,
                        r.len
                    );
                }
                // Straight from the handler's slice to the socket.
                within(
                    cfg.request_timeout,
                    write_frame(io, Kind::ReadData, id, &[&blob[..n]]),
                )
                .await
            }
            Err(e) => remote_error(io, id, &e, cfg.request_timeout).await,
        }
    };
    written.map_err(|e| format!("writing an answer: {e}"))
}

/// `io` bounded by `limit`: past it, a `TimedOut` error.
async fn within<T>(
    limit: std::time::Duration,
    io: impl std::future::Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    match timeout(limit, io).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("took longer than {limit:?}"),
        )),
    }
}

/// Answers request `id` with the handler's error `e`, within `limit`.
async fn remote_error(
    io: &mut BoxStream,
    id: u64,
    e: &crate::RemoteError,
    limit: std::time::Duration,
) -> std::io::Result<()> {
    let body = encode_error(e.code, &e.message);
    within(limit, write_frame(io, Kind::RemoteError, id, &[&body])).await
}

/// Sends a `ProtocolError` frame with `why` (best effort) and shuts the
/// connection down; returns `why`.
async fn protocol_error(io: &mut BoxStream, id: u64, why: String) -> String {
    let _ = timeout(
        crate::config::DEFAULT_REQUEST_TIMEOUT,
        write_frame(
            io,
            Kind::ProtocolError,
            id,
            &[crate::frame::clip(&why).as_bytes()],
        ),
    )
    .await;
    let _ = io.shutdown().await;
    why
}
