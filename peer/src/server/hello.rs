//! The server's side of the handshake (`docs/peer-protocol.md`,
//! "Handshake"): the client's hello, the version agreed on (or an
//! `Incompatible` answer naming both sides' versions), the challenge with
//! this server's nonce and proof, the client's proof checked, and the
//! welcome once the connection holds an authenticated slot.
//!
//! Before the proof is checked the only frames sent are the challenge and
//! the refusals (`AuthFailed`, `Incompatible`), at most [`MAX_HELLO`]
//! body bytes of a hello are read and exactly [`PROOF_LEN`] of a proof.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::connection::within;
use super::refusals::Refusal;
use super::Shared;
use crate::frame::{Header, Kind};
use crate::handshake::{
    agree, mismatch, nonce, prove, verify, Challenge, Decoded, Hello, Incompatible, Side, Versions,
    MAX_HELLO, PROOF_LEN,
};
use crate::wire::{read_body, read_raw_header, write_frame, BoxStream};

/// What the handshake refused, and why.
type Refused = (Refusal, String);

/// Runs the handshake on `io` up to the client's proof, checked: the
/// client's node id and the version agreed on. A refusal has been sent
/// (where one can be) and the connection shut down.
pub(super) async fn handshake(
    io: &mut BoxStream,
    shared: &Shared,
) -> Result<(String, u16), Refused> {
    let cfg = &shared.config;
    let header = match read_raw_header(io).await {
        Ok(Some(raw)) => Header::decode(&raw),
        Ok(None) => return Err((Refusal::NoHello, "closed before its hello".into())),
        Err(e) => return Err((Refusal::NoHello, format!("reading the hello: {e}"))),
    };
    let header = match header {
        Ok(h) if h.kind == Kind::Hello && h.len <= MAX_HELLO => h,
        Ok(h) if h.kind == Kind::Hello => {
            let why = format!("hello of {} bytes (at most {MAX_HELLO})", h.len);
            return Err(refuse(io, Refusal::BadHello, why).await);
        }
        Ok(h) => {
            let why = format!("{:?} frame before the hello", h.kind);
            return Err(refuse(io, Refusal::BadHello, why).await);
        }
        Err(why) => return Err(refuse(io, Refusal::BadHello, why).await),
    };
    let hello_body = read_body(io, header.len)
        .await
        .map_err(|e| (Refusal::NoHello, format!("reading the hello: {e}")))?;
    let ours = Versions::of(&cfg.protocol_versions);
    let hello = match Hello::decode(&hello_body) {
        Ok(Decoded::Hello(h)) => h,
        Ok(Decoded::Legacy { node_id }) => {
            let why = format!(
                "node {} speaks protocol 1 (a wray release before the versioned handshake); \
                 this node speaks {ours} (wray {}): upgrade it",
                node_id.map_or_else(|| "?".to_string(), |id| format!("{id:?}")),
                cfg.wray_version
            );
            return Err(refuse(io, Refusal::Version, why).await);
        }
        Err(why) => return Err(refuse(io, Refusal::BadHello, why).await),
    };
    let Some(version) = agree(ours, hello.versions) else {
        let why = mismatch(
            &format!("{:?}", hello.node_id),
            hello.versions,
            hello.wray_version,
            ours,
            &cfg.wray_version,
        );
        let body = Incompatible {
            versions: ours,
            wray_version: &cfg.wray_version,
            node_id: &shared.node_id,
        }
        .encode();
        let _ = write_frame(io, Kind::Incompatible, 0, &[&body]).await;
        let _ = io.shutdown().await;
        return Err((Refusal::Version, why));
    };
    let our_nonce = nonce().map_err(|e| (Refusal::NoHello, e.to_string()))?;
    let fields = Challenge {
        version,
        versions: ours,
        node_id: &shared.node_id,
        wray_version: &cfg.wray_version,
        nonce: our_nonce,
    }
    .encode_fields();
    let token = cfg.token();
    let our_proof =
        prove(token, Side::Server, &hello_body, &fields).map_err(|e| (Refusal::NoHello, e))?;
    write_frame(io, Kind::Challenge, 0, &[&fields, &our_proof])
        .await
        .map_err(|e| (Refusal::NoHello, format!("sending the challenge: {e}")))?;
    let header = match read_raw_header(io).await {
        Ok(Some(raw)) => Header::decode(&raw),
        Ok(None) => return Err((Refusal::NoHello, "closed before its proof".into())),
        Err(e) => return Err((Refusal::NoHello, format!("reading the proof: {e}"))),
    };
    match header {
        Ok(h) if h.kind == Kind::Proof && h.len as usize == PROOF_LEN => {}
        Ok(h) => {
            let why = format!("a {:?} frame of {} bytes for the proof", h.kind, h.len);
            return Err(refuse(io, Refusal::BadHello, why).await);
        }
        Err(why) => return Err(refuse(io, Refusal::BadHello, why).await),
    }
    let their_proof = read_body(io, PROOF_LEN as u32)
        .await
        .map_err(|e| (Refusal::NoHello, format!("reading the proof: {e}")))?;
    if !verify(token, Side::Client, &hello_body, &fields, &their_proof) {
        let why = format!("node {:?} failed to prove the cluster token", hello.node_id);
        return Err(refuse(io, Refusal::Unauthenticated, why).await);
    }
    Ok((hello.node_id.to_owned(), version))
}

/// Tells the client its proof is accepted (`HelloOk` with the version),
/// within `limit`.
///
/// # Errors
/// The I/O error, `TimedOut` past `limit`.
pub(super) async fn welcome(
    io: &mut BoxStream,
    version: u16,
    limit: Duration,
) -> std::io::Result<()> {
    within(
        limit,
        write_frame(io, Kind::HelloOk, 0, &[&version.to_be_bytes()]),
    )
    .await
}

/// Sends `AuthFailed` with `why` and shuts the connection down; returns
/// the refusal.
async fn refuse(io: &mut BoxStream, reason: Refusal, why: String) -> Refused {
    let _ = write_frame(
        io,
        Kind::AuthFailed,
        0,
        &[crate::frame::clip(&why).as_bytes()],
    )
    .await;
    let _ = io.shutdown().await;
    (reason, why)
}
