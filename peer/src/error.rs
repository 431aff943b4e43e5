//! The errors of the channel: [`PeerError`] for a call, a read, a pull or
//! a server that cannot start; [`ConfigError`] for a token or TLS file that
//! cannot be used; [`RemoteError`] for what a server's handler answers.

use std::path::PathBuf;
use std::time::Duration;

/// What a [`PeerHandler`](crate::PeerHandler) answers instead of a body:
/// an application error code (the host crate defines the codes) and a
/// message, sent to the client as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("remote error {code}: {message}")]
pub struct RemoteError {
    /// The handler's code, opaque to this crate.
    pub code: u16,
    /// A lowercase sentence saying what failed; at most
    /// [`MAX_ERROR_MESSAGE`](crate::MAX_ERROR_MESSAGE) bytes of it are sent
    /// (cut at a character boundary).
    pub message: String,
}

impl RemoteError {
    /// An error with `code` and `message`.
    pub fn new(code: u16, message: impl Into<String>) -> Self {
        RemoteError {
            code,
            message: message.into(),
        }
    }
}

/// Why a token file or TLS file cannot be used; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be opened, inspected or read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The token file can be read by its group or by others.
    #[error("refusing the token file {}: its mode is {mode:04o}, readable by group or others (it must be 0600 or stricter: chmod 600)", .path.display())]
    TokenMode {
        /// The file.
        path: PathBuf,
        /// Its permission bits (`st_mode & 0o7777`).
        mode: u32,
    },
    /// The token file cannot be opened, and its name is not shown: a bare
    /// name (no directory) of at least [`MIN_TOKEN`](crate::MIN_TOKEN)
    /// bytes may be the token itself given in place of its file (a node's
    /// HTTP token, say), and no error shows a token.
    #[error("cannot read the cluster token file: its name ({len} bytes, not shown in case it is a token given in place of the file) names no readable file: give the path of a file that holds the token: {source}")]
    TokenPath {
        /// The length of the name, in bytes.
        len: usize,
        /// The OS error.
        source: std::io::Error,
    },
    /// The token file belongs to another user.
    #[error("refusing the token file {}: it is owned by uid {owner}, not by this process's uid {uid}", .path.display())]
    TokenOwner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        uid: u32,
    },
    /// The token is shorter than [`MIN_TOKEN`](crate::MIN_TOKEN) or longer
    /// than [`MAX_TOKEN`](crate::MAX_TOKEN) bytes (after trimming a file's
    /// trailing newline).
    #[error("the cluster token{} is {len} bytes; it must be {min} to {max} bytes", .path.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default())]
    TokenLength {
        /// The file, when read from one.
        path: Option<PathBuf>,
        /// Its length, in bytes.
        len: usize,
        /// The least, in bytes.
        min: usize,
        /// The most, in bytes.
        max: usize,
    },
    /// The node id is empty or longer than
    /// [`MAX_NODE_ID`](crate::MAX_NODE_ID) bytes.
    #[error("node id {id:?} is {len} bytes; it must be 1 to {max} bytes")]
    NodeId {
        /// The id (cut to its first 80 bytes' worth of characters).
        id: String,
        /// Its length, in bytes.
        len: usize,
        /// The most, in bytes.
        max: usize,
    },
    /// A bound of the configuration is out of its range.
    #[error("peer config: {0}")]
    Bound(String),
    /// A PEM file is larger than [`MAX_PEM_BYTES`](crate::MAX_PEM_BYTES),
    /// malformed, or holds no certificate or no key.
    #[error("{}: {message}", .path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// rustls refuses the certificate, key or roots.
    #[error("cannot use TLS with {}: {source}", .path.display())]
    Tls {
        /// The certificate (or trust) file.
        path: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
}

/// Why a call, read or pull failed, or a server cannot start.
///
/// `addr` is the peer's address as the caller gave it (`host:port`).
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The configuration or a file it names cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The server's address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// No connection could be made to the peer (refused, unreachable, a
    /// name that does not resolve, the server at its connection bound).
    #[error("cannot connect to peer {addr}: {source}")]
    Connect {
        /// The peer.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The TLS handshake failed (an untrusted certificate, a name that
    /// does not match, a plain server on the port).
    #[error("tls handshake with peer {addr} failed: {source}")]
    Tls {
        /// The peer.
        addr: String,
        /// What rustls said, as an I/O error.
        source: std::io::Error,
    },
    /// The handshake proved that the node at `addr` does not hold this
    /// node's cluster token: it failed to prove it (an impostor, a stale
    /// node record pointing at another listener, a node given another
    /// token), or it refused this node's proof. Not retryable on that
    /// node: it will fail the same way until it is restarted with the
    /// right token, so a caller should stop placing work there
    /// (quarantine it) and send it elsewhere. The token never crossed
    /// the wire.
    #[error("peer at {addr} {message}")]
    Auth {
        /// The peer.
        addr: String,
        /// What failed, a phrase completing "peer at ADDR …":
        /// `failed to prove the cluster token`, `refused this node's
        /// proof of the cluster token (the nodes hold different tokens)`.
        message: String,
    },
    /// The node at `addr` speaks no protocol version this node speaks
    /// (another wray release, across an upgrade that broke
    /// compatibility), or refused this node's hello as malformed. Not
    /// retryable on that node until one of the two is upgraded.
    #[error("peer at {addr} speaks another protocol: {message}")]
    Incompatible {
        /// The peer.
        addr: String,
        /// Both sides' versions: `node n3 speaks protocol 3..=3 (wray
        /// 0.9.0); this node speaks 2..=2 (wray 0.8.0)`, or what the peer
        /// said.
        message: String,
    },
    /// The connection broke during a request (reset, closed by the peer).
    #[error("connection to peer {addr} broke: {source}")]
    Io {
        /// The peer.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A connect, handshake or request took longer than its bound.
    #[error("{what} with peer {addr} timed out after {after:?}")]
    Timeout {
        /// The peer.
        addr: String,
        /// Which step: `connect`, `handshake`, `request`.
        what: &'static str,
        /// The bound that passed.
        after: Duration,
    },
    /// The peer broke the protocol (an unknown frame kind, a wrong request
    /// id, an oversize length) or said that we did; the connection is
    /// closed.
    #[error("protocol error with peer {addr}: {message}")]
    Protocol {
        /// The peer.
        addr: String,
        /// What was wrong.
        message: String,
    },
    /// The peer's handler answered an error.
    #[error("peer {addr} answered error {code}: {message}")]
    Remote {
        /// The peer.
        addr: String,
        /// The handler's code.
        code: u16,
        /// The handler's message.
        message: String,
    },
    /// A read answered fewer bytes than asked, or the connection ended in
    /// the middle of them: the destination slice holds partial data and
    /// must be discarded (or read again) by the caller.
    #[error("read from peer {addr} truncated: {got} of {expected} bytes")]
    Truncated {
        /// The peer.
        addr: String,
        /// Bytes asked for.
        expected: u64,
        /// Bytes received before the answer ended.
        got: u64,
    },
    /// A size is past its bound (a body, a key, a chunk, an offset plus a
    /// length overflowing `u64`, a destination of the wrong length).
    #[error("{what} is {size} bytes, more than the {max} allowed")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size, in bytes (`u64::MAX` for an overflow).
        size: u64,
        /// The bound, in bytes.
        max: u64,
    },
    /// A caller's argument does not fit the request (a destination
    /// slice whose length is not the blob's, a chunk of 0 bytes).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl PeerError {
    /// Whether trying again (on a new connection) can succeed: true for a
    /// failed connect, a broken connection, a timeout and a truncated read;
    /// false for a failed authentication, another protocol version, bad
    /// TLS, a protocol violation, a remote handler's error and a size past
    /// its bound.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            PeerError::Connect { .. }
                | PeerError::Io { .. }
                | PeerError::Timeout { .. }
                | PeerError::Truncated { .. }
        )
    }

    /// Whether the handshake showed that the node at this address cannot
    /// be used as it is ([`PeerError::Auth`], [`PeerError::Incompatible`]):
    /// a caller should not place work there until it changes (a restart
    /// with the right token or release), and should send it elsewhere.
    pub fn is_unusable_peer(&self) -> bool {
        matches!(
            self,
            PeerError::Auth { .. } | PeerError::Incompatible { .. }
        )
    }
}

/// The result of this crate's fallible functions.
pub type Result<T, E = PeerError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_are_the_transient_ones() {
        let addr = String::from("n1:1");
        let io = || std::io::Error::other("x");
        assert!(PeerError::Io {
            addr: addr.clone(),
            source: io()
        }
        .is_retryable());
        let auth = PeerError::Auth {
            addr: addr.clone(),
            message: "failed to prove the cluster token".into(),
        };
        assert!(!auth.is_retryable() && auth.is_unusable_peer());
        assert_eq!(
            auth.to_string(),
            "peer at n1:1 failed to prove the cluster token"
        );
        assert!(!PeerError::Remote {
            addr,
            code: 4,
            message: "no".into()
        }
        .is_retryable());
    }

    #[test]
    fn a_mode_is_printed_in_octal() {
        let e = ConfigError::TokenMode {
            path: "/t".into(),
            mode: 0o644,
        };
        assert!(e.to_string().contains("0644"), "{e}");
    }
}
