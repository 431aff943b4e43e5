//! What a server does with requests: the [`PeerHandler`] the host crate
//! implements, the [`PeerIdentity`] of the authenticated caller, the
//! [`Blob`] a read answers with, and [`UnknownMethods`], the one answer to
//! a call of a method the handler does not have.

use std::fmt;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::error::RemoteError;

/// The authenticated peer a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    /// The node id it gave in its hello (1 to
    /// [`MAX_NODE_ID`](crate::MAX_NODE_ID) bytes of UTF-8), known only
    /// once the client proved the token over a transcript that holds it
    /// (so the connection is bound to that id). Every holder of the
    /// cluster token can still claim any id: it names, it does not prove.
    pub node_id: String,
    /// The address the connection comes from.
    pub addr: SocketAddr,
}

/// The bytes a read answers with, written to the socket from where they
/// are (a shared-memory slice, a `Bytes`, a `Vec`): no copy.
pub struct Blob(Box<dyn AsRef<[u8]> + Send + Sync>);

impl Blob {
    /// A blob of `bytes` (a type that holds them, such as a guard over an
    /// mmap slice that keeps the mapping alive while they are written).
    pub fn new(bytes: impl AsRef<[u8]> + Send + Sync + 'static) -> Self {
        Blob(Box::new(bytes))
    }
}

impl Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blob({} bytes)", self.len())
    }
}

impl From<Bytes> for Blob {
    fn from(b: Bytes) -> Self {
        Blob::new(b)
    }
}

impl From<Vec<u8>> for Blob {
    fn from(b: Vec<u8>) -> Self {
        Blob::new(b)
    }
}

/// The code of the answer to a call of a method the handler does not
/// have (a newer node's method, or a hostile peer's): 501, as HTTP's Not
/// Implemented.
pub const UNKNOWN_METHOD: u16 = 501;

/// A handler's calls of methods it does not have: each counted, logged
/// (at debug level: a peer could flood the log) and answered with
/// [`UNKNOWN_METHOD`] naming the methods the handler has; the connection
/// is kept.
#[derive(Debug, Default)]
pub struct UnknownMethods(AtomicU64);

impl UnknownMethods {
    /// Counts and logs the call of `method` by `peer`, which no method of
    /// node `node` has, and answers it: a [`RemoteError`] with code
    /// [`UNKNOWN_METHOD`] naming `known`, the node's methods (id and name
    /// each, in order).
    pub fn answer<'a>(
        &self,
        peer: &PeerIdentity,
        method: u16,
        node: &str,
        known: impl IntoIterator<Item = (u16, &'a str)>,
    ) -> RemoteError {
        self.0.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            method,
            by = peer.node_id,
            "a call of an unknown peer method"
        );
        let known: Vec<String> = known
            .into_iter()
            .map(|(id, name)| format!("{id} {name}"))
            .collect();
        RemoteError::new(
            UNKNOWN_METHOD,
            format!(
                "node {node} has no peer method {method} (it has {})",
                known.join(", ")
            ),
        )
    }

    /// How many calls [`UnknownMethods::answer`] answered (the
    /// `wray_peer_unknown_methods_total` metric).
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A server's answers to requests; the host crate implements it (typed
/// serde messages inside `body`, its object store behind `read`).
///
/// The server calls it on tasks of the runtime it was bound on, one
/// request at a time per connection; blocking work belongs in
/// `spawn_blocking`.
#[async_trait::async_trait]
pub trait PeerHandler: Send + Sync + 'static {
    /// Answers the call of `method` with `body` (at most
    /// [`PeerConfig::max_body`](crate::PeerConfig::max_body) bytes) from
    /// `peer`.
    ///
    /// # Errors
    /// A [`RemoteError`] the client receives as
    /// [`PeerError::Remote`](crate::PeerError::Remote).
    async fn call(
        &self,
        peer: &PeerIdentity,
        method: u16,
        body: Bytes,
    ) -> Result<Bytes, RemoteError>;

    /// The `len` bytes at `offset` of the blob `key` (at most
    /// [`MAX_KEY`](crate::MAX_KEY) bytes; `offset + len` is checked not to
    /// overflow and `len` to be within
    /// [`PeerConfig::max_chunk`](crate::PeerConfig::max_chunk)).
    /// A blob shorter than `len` reaches the client as
    /// [`PeerError::Truncated`](crate::PeerError::Truncated); only the first
    /// `len` bytes of a longer one are sent.
    ///
    /// # Errors
    /// A [`RemoteError`] (no such key, a range past its end).
    async fn read(
        &self,
        peer: &PeerIdentity,
        key: &[u8],
        offset: u64,
        len: u32,
    ) -> Result<Blob, RemoteError>;
}
