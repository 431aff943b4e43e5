//! One connection on the server side: TLS (if configured), the hello and
//! proof ([`super::hello`]) within the hello timeout while it holds an
//! unauthenticated slot, then, holding an authenticated one, one request
//! at a time until the client closes, the connection idles past its
//! bound, the client breaks the protocol, or the server stops.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::timeout;

use super::admission::Pending;
use super::hello::{handshake, welcome};
use super::refusals::Refusal;
use super::Shared;
use crate::frame::{encode_error, Header, Kind, ReadRequest, MAX_READ_REQUEST};
use crate::handler::PeerIdentity;
use crate::wire::{read_body, read_raw_header, write_frame, BoxStream};

/// Serves the connection `stream` from `addr`, admitted with `pending`,
/// until it ends.
pub(super) async fn serve(
    stream: TcpStream,
    addr: SocketAddr,
    shared: Arc<Shared>,
    mut pending: Pending,
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
                    .map_err(|e| (Refusal::Tls, format!("tls: {e}")))?,
            ),
        };
        let node_id = handshake(&mut io, &shared).await?;
        Ok::<_, (Refusal, String)>((io, node_id))
    };
    let refused = |reason: Refusal, why: &str| shared.refusals.note(reason, addr, why);
    let (mut io, (node_id, version)) = tokio::select! {
        r = timeout(cfg.hello_timeout, opened) => match r {
            Ok(Ok(opened)) => opened,
            Ok(Err((reason, why))) => return refused(reason, &why),
            Err(_) => {
                let why = format!("no hello and proof within {:?}", cfg.hello_timeout);
                return refused(Refusal::NoHello, &why);
            }
        },
        () = pending.evicted() => {
            let why = format!(
                "no proof yet while {} newer connections came: the oldest is closed",
                cfg.max_unauthenticated
            );
            return refused(Refusal::Evicted, &why);
        }
        _ = closing.wait_for(|c| *c) => return,
    };
    let Some(_permit) = pending.promote() else {
        let why = format!(
            "node {node_id:?} proved the token, but {} authenticated connections are held",
            cfg.max_connections
        );
        return refused(Refusal::ConnectionBound, &why);
    };
    if let Err(e) = welcome(&mut io, version, cfg.request_timeout).await {
        tracing::debug!("peer {node_id} ({addr}): answering its proof: {e}");
        return;
    }
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
pub(super) async fn within<T>(
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
