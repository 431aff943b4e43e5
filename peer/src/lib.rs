//! wray's node-to-node channel: the transport nodes of a cluster use to
//! send each other tasks, results and object bytes. It knows nothing of
//! tasks or objects: the host crate puts its typed (serde) messages in the
//! opaque bodies of [`PeerClient::call`] and implements [`PeerHandler`].
//!
//! # Why not gRPC or HTTP/2
//! A length-prefixed binary protocol over TCP (tokio), optionally TLS
//! (rustls on `ring`), so that an object chunk is written to the socket
//! straight from the sender's shared-memory slice ([`Blob`]) and read
//! straight into the receiver's slot ([`PeerClient::read`] takes a
//! `&mut [u8]`), with no intermediate buffer. The wire format is in
//! `docs/peer-protocol.md` (and in `src/frame.rs`).
//!
//! # Concepts
//! - [`PeerConfig`]: the cluster [`Token`] (at least [`MIN_TOKEN`] bytes;
//!   [`PeerConfig::token_from_file`] refuses a file others can read),
//!   optional [`PeerTls`], and every bound with its default constant.
//! - Handshake (`src/handshake.rs`): the token never crosses the wire.
//!   The client's hello carries the protocol versions it speaks
//!   ([`MIN_PROTOCOL_VERSION`]`..=`[`PROTOCOL_VERSION`], or
//!   [`PeerConfig::protocol_versions`]), its node id, its wray version and
//!   a random nonce; the server answers with the highest version both
//!   speak (or refuses, naming both sides' versions), its own nonce and
//!   its proof of the token (HMAC-SHA256 over both nonces, both node ids
//!   and the versions); the client checks it, then proves the token in
//!   turn. A fake server is named ([`PeerError::Auth`]) and has learned
//!   nothing; a connection that has not proved the token gets nothing but
//!   the challenge and refusals.
//! - [`PeerServer`]: bound on the caller's runtime; connections that have
//!   not proved the token hold a small budget of their own
//!   ([`PeerConfig::max_unauthenticated`], per source address too) for
//!   [`PeerConfig::hello_timeout`] at most, proved ones
//!   [`PeerConfig::max_connections`]; one request at a time on each; what
//!   it refused counted by [`Refusal`] ([`PeerServer::stats`]) and logged
//!   as counts; a graceful [`PeerServer::shutdown`].
//! - [`PeerClient`]: pooled authenticated connections per address
//!   (`host:port`), at most [`PeerConfig::max_idle_per_peer`] kept idle,
//!   none kept once its server closed it; [`call`](PeerClient::call),
//!   [`read`](PeerClient::read) and a pipelined [`pull`](PeerClient::pull)
//!   returning [`PullStats`]. Every socket has TCP keepalive.
//! - Errors: [`PeerError`] with [`PeerError::is_retryable`] and
//!   [`PeerError::is_unusable_peer`] (a node to stop placing work on);
//!   [`RemoteError`] is a handler's own error, delivered typed;
//!   [`UnknownMethods`] answers (and counts) a call of a method the
//!   handler does not have, with [`UNKNOWN_METHOD`].
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use wray_peer::*;
//!
//! struct Echo;
//! #[async_trait::async_trait]
//! impl PeerHandler for Echo {
//!     async fn call(&self, _: &PeerIdentity, _method: u16, body: Bytes)
//!         -> Result<Bytes, RemoteError> { Ok(body) }
//!     async fn read(&self, _: &PeerIdentity, _key: &[u8], _offset: u64, len: u32)
//!         -> Result<Blob, RemoteError> { Ok(Blob::from(vec![7u8; len as usize])) }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = PeerConfig::new(Token::new(b"a-cluster-token-of-16+-bytes".to_vec())?);
//! let server = PeerServer::bind("127.0.0.1:0", config.clone(), Arc::new(Echo)).await?;
//! let addr = server.local_addr().to_string();
//!
//! let client = PeerClient::new(config, "node-a")?;
//! assert_eq!(client.call(&addr, 1, Bytes::from_static(b"hi")).await?, "hi");
//! let mut slot = vec![0u8; 4096]; // e.g. a slice of an mmap
//! client.read(&addr, b"object-id", 0, &mut slot).await?;
//! let stats = client.pull(&addr, b"object-id", 4096, &mut slot, DEFAULT_CHUNK).await?;
//! assert_eq!(stats.bytes, 4096);
//! server.shutdown(std::time::Duration::from_secs(1)).await;
//! # Ok(()) }
//! ```
//!
//! # Threading
//! Everything runs on the caller's tokio runtime: the server spawns one
//! task for its accept loop and one per connection; a client's requests
//! run in the caller's task (a pull polls its reads concurrently there).

mod client;
mod config;
mod error;
mod frame;
mod handler;
mod handshake;
mod server;
mod socket;
mod tls;
mod wire;

pub use client::{PeerClient, PullStats, MAX_PEERS};
pub use config::{
    PeerConfig, PeerTls, Token, DEFAULT_CHUNK, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_HELLO_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_MAX_IDLE_PER_PEER, DEFAULT_MAX_UNAUTHENTICATED,
    DEFAULT_MAX_UNAUTHENTICATED_PER_SOURCE, DEFAULT_PULL_IN_FLIGHT, DEFAULT_REQUEST_TIMEOUT,
    KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_RETRIES, MAX_CHUNK, MAX_ERROR_MESSAGE, MAX_KEY,
    MAX_NODE_ID, MAX_PEM_BYTES, MAX_TOKEN, MAX_WRAY_VERSION, MIN_PROTOCOL_VERSION, MIN_TOKEN,
    PROTOCOL_VERSION,
};
pub use error::{ConfigError, PeerError, RemoteError, Result};
pub use handler::{Blob, PeerHandler, PeerIdentity, UnknownMethods, UNKNOWN_METHOD};
pub use server::refusals::{Refusal, RefusalCounts, REPORT_EVERY};
pub use server::{PeerServer, PeerServerStats};
