//! [`PeerConfig`]: the cluster token, optional TLS, and the bounds of the
//! channel, each with its default as a constant.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::ops::RangeInclusive;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::ConfigError;

/// The least length of the cluster token, in bytes (128 bits).
pub const MIN_TOKEN: usize = 16;
/// The most length of the cluster token, in bytes.
pub const MAX_TOKEN: usize = 256;
/// The most length of a node id, in bytes (UTF-8).
pub const MAX_NODE_ID: usize = 64;
/// The most length of a read's key, in bytes.
pub const MAX_KEY: usize = 256;
/// The most bytes of an error message sent over the wire.
pub const MAX_ERROR_MESSAGE: usize = 1024;
/// The most length of the wray version a hello carries, in bytes.
pub const MAX_WRAY_VERSION: usize = 32;

/// The protocol version this release speaks best: 3, the handshake of
/// nonces and HMAC proofs (version 1 sent the token in its hello) and the
/// host's messages in protobuf, which can gain fields (version 2 wrote
/// them with postcard). A release that changes the protocol raises it and
/// keeps speaking the one before (see [`MIN_PROTOCOL_VERSION`]), so a
/// cluster upgrades node by node.
pub const PROTOCOL_VERSION: u16 = 3;
/// The oldest protocol version this release speaks: 3 (this release
/// cannot join a cluster of releases that speak only version 2 or 1:
/// their messages are another encoding; they are told so by the
/// handshake, `Incompatible`).
pub const MIN_PROTOCOL_VERSION: u16 = 3;

/// Default bound on a call's request or response body, in bytes: 16 MiB.
pub const DEFAULT_MAX_BODY: u32 = 16 << 20;
/// The largest chunk one read may ask for, in bytes: 8 MiB (also the most
/// [`PeerConfig::max_chunk`] may be set to).
pub const MAX_CHUNK: u32 = 8 << 20;
/// Default chunk of a pull, in bytes: 4 MiB (Ray's object manager uses
/// 5 MiB chunks, `object_manager_default_chunk_size`; a power of two keeps
/// chunks page-aligned inside an mmap).
pub const DEFAULT_CHUNK: u32 = 4 << 20;
/// Default bound on connections a server holds at once: 256.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default bound on a client's connections to one address: 8.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 8;
/// Default number of chunks a pull keeps in flight: 4 (with 4 MiB chunks,
/// 16 MiB in flight).
pub const DEFAULT_PULL_IN_FLIGHT: usize = 4;
/// Default bound on a client's connect + TLS + hello + proof: 5 s.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time a server gives a new connection to finish TLS, its hello
/// and its proof: 1 s (a node on the same network does it in
/// milliseconds; a connection that says nothing holds a slot of the
/// unauthenticated budget no longer than this).
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(1);
/// Default bound on connections a server holds that have not yet proved
/// the token: 64 (apart from [`DEFAULT_MAX_CONNECTIONS`]; when full, the
/// oldest of them is closed to admit a new one).
pub const DEFAULT_MAX_UNAUTHENTICATED: usize = 64;
/// Default bound on connections a server holds that have not yet proved
/// the token, from one source IP address: 8 (one past it is closed at
/// accept; a client retries that within its handshake timeout).
pub const DEFAULT_MAX_UNAUTHENTICATED_PER_SOURCE: usize = 8;
/// Default bound on a client's idle connections kept for reuse, per
/// address: 8 (one returned past it is closed).
pub const DEFAULT_MAX_IDLE_PER_PEER: usize = 8;
/// TCP keepalive on every peer socket: the first probe after 10 s without
/// traffic, ...
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// ... then one every 3 s, ...
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(3);
/// ... and the connection is dead after 3 unanswered (a dead peer on an
/// idle connection is noticed within about 19 s).
pub const KEEPALIVE_RETRIES: u32 = 3;
/// Default bound on one request, from taking a connection to the last
/// byte of the answer: 30 s.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a server keeps a connection with no request: 60 s (a
/// client reuses a pooled connection only while it has been idle less
/// than half of its own `idle_timeout`).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest PEM or token file read, in bytes: 1 MiB.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// The shared secret every node of a cluster presents in its hello.
/// Its `Debug` does not show the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Vec<u8>);

impl Token {
    /// A token of `bytes`.
    ///
    /// # Errors
    /// [`ConfigError::TokenLength`] unless it is [`MIN_TOKEN`] to
    /// [`MAX_TOKEN`] bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, ConfigError> {
        Self::checked(bytes.into(), None)
    }

    fn checked(bytes: Vec<u8>, path: Option<&Path>) -> Result<Self, ConfigError> {
        if !(MIN_TOKEN..=MAX_TOKEN).contains(&bytes.len()) {
            return Err(ConfigError::TokenLength {
                path: path.map(Path::to_owned),
                len: bytes.len(),
                min: MIN_TOKEN,
                max: MAX_TOKEN,
            });
        }
        Ok(Token(bytes))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({} bytes)", self.0.len())
    }
}

/// TLS of the channel: every connection is TLS 1.2 or 1.3 (rustls on
/// `ring`) when [`PeerConfig::tls`] is set, on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerTls {
    /// The certificate chain (PEM, the node's own first) a server presents;
    /// `None` on a node that only connects.
    pub cert: Option<PathBuf>,
    /// The private key of `cert` (PEM: PKCS#8, SEC1 or PKCS#1).
    pub key: Option<PathBuf>,
    /// The certificates a client trusts as roots (PEM): the cluster's CA,
    /// or, for a self-signed node certificate (not a CA: `CA:FALSE`), that
    /// same certificate file.
    pub trust: PathBuf,
    /// The name a client checks the server's certificate against; `None`
    /// uses the host part of the address it connects to (an IP address or
    /// a DNS name).
    pub server_name: Option<String>,
}

/// How a node's channel authenticates, encrypts and bounds itself. Build
/// with [`PeerConfig::new`], then set the bounds to change.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    token: Token,
    /// TLS for every connection; `None` for plain TCP (the token is then
    /// sent in clear: only on a trusted network).
    pub tls: Option<PeerTls>,
    /// Bound on a call's request and response body, in bytes
    /// ([`DEFAULT_MAX_BODY`]).
    pub max_body: u32,
    /// Bound on one read's length, in bytes ([`MAX_CHUNK`] and at most
    /// that).
    pub max_chunk: u32,
    /// A server's bound on connections held at once
    /// ([`DEFAULT_MAX_CONNECTIONS`]); one past it is closed at accept.
    pub max_connections: usize,
    /// A server's bound on connections that have not yet proved the token
    /// ([`DEFAULT_MAX_UNAUTHENTICATED`]), apart from `max_connections`;
    /// when full, the oldest of them is closed to admit a new one.
    pub max_unauthenticated: usize,
    /// A server's bound on connections from one source IP address that
    /// have not yet proved the token
    /// ([`DEFAULT_MAX_UNAUTHENTICATED_PER_SOURCE`]); one past it is closed
    /// at accept.
    pub max_unauthenticated_per_source: usize,
    /// A client's bound on connections to one address
    /// ([`DEFAULT_MAX_CONNECTIONS_PER_PEER`]); a request past it waits.
    pub max_connections_per_peer: usize,
    /// A client's bound on idle connections kept per address
    /// ([`DEFAULT_MAX_IDLE_PER_PEER`]); one returned past it is closed.
    pub max_idle_per_peer: usize,
    /// Chunks a pull keeps in flight ([`DEFAULT_PULL_IN_FLIGHT`]; at most
    /// `max_connections_per_peer` are used).
    pub pull_in_flight: usize,
    /// A client's bound on connect, TLS, hello and proof
    /// ([`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub handshake_timeout: Duration,
    /// The time a server gives a new connection for TLS, its hello and
    /// its proof ([`DEFAULT_HELLO_TIMEOUT`]).
    pub hello_timeout: Duration,
    /// Bound on one request ([`DEFAULT_REQUEST_TIMEOUT`]); a server gives
    /// a started request's body as long to arrive, and its answer as long
    /// to be written.
    pub request_timeout: Duration,
    /// Time a server keeps a connection with no request
    /// ([`DEFAULT_IDLE_TIMEOUT`]).
    pub idle_timeout: Duration,
    /// The protocol versions this node speaks
    /// ([`MIN_PROTOCOL_VERSION`]`..=`[`PROTOCOL_VERSION`]). Two nodes use
    /// the highest version both speak and refuse each other without one.
    /// Change it only in tests of that rule (`wray start
    /// --peer-protocol`): a node claiming versions this release does not
    /// implement still speaks this release's protocol under their numbers.
    pub protocol_versions: RangeInclusive<u16>,
    /// The node id a server names itself by in its challenge and its
    /// refusals (1 to [`MAX_NODE_ID`] bytes); `None` for its listening
    /// address. A client says hello with the id given to
    /// [`PeerClient::new`](crate::PeerClient::new).
    pub node_id: Option<String>,
    /// The wray release this node runs (at most [`MAX_WRAY_VERSION`]
    /// bytes), sent in the hello and named in refusals; this crate's
    /// version by default.
    pub wray_version: String,
}

impl PeerConfig {
    /// A plain-TCP configuration with `token` and every default bound.
    pub fn new(token: Token) -> Self {
        PeerConfig {
            token,
            tls: None,
            max_body: DEFAULT_MAX_BODY,
            max_chunk: MAX_CHUNK,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_unauthenticated: DEFAULT_MAX_UNAUTHENTICATED,
            max_unauthenticated_per_source: DEFAULT_MAX_UNAUTHENTICATED_PER_SOURCE,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            max_idle_per_peer: DEFAULT_MAX_IDLE_PER_PEER,
            pull_in_flight: DEFAULT_PULL_IN_FLIGHT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            hello_timeout: DEFAULT_HELLO_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            protocol_versions: MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION,
            node_id: None,
            wray_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// The cluster token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Reads the cluster token from `path`: its bytes less one trailing
    /// newline (`\n` or `\r\n`).
    ///
    /// # Errors
    /// [`ConfigError::TokenMode`] when the group or others may read, write
    /// or run it (mode `0600` or stricter is required);
    /// [`ConfigError::TokenOwner`] when another user owns it;
    /// [`ConfigError::Read`] when it cannot be read or is larger than
    /// [`MAX_PEM_BYTES`]; [`ConfigError::TokenPath`] instead when it
    /// cannot be opened and its name, a bare name of at least
    /// [`MIN_TOKEN`] bytes, may be the token itself (no error shows a
    /// token's bytes); [`ConfigError::TokenLength`] for a token out of
    /// [`MIN_TOKEN`]..=[`MAX_TOKEN`] bytes.
    pub fn token_from_file(path: &Path) -> Result<Token, ConfigError> {
        let read_error = |source| ConfigError::Read {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(|source| {
            let name = path.as_os_str().len();
            if path.components().count() == 1 && name >= MIN_TOKEN {
                ConfigError::TokenPath { len: name, source }
            } else {
                read_error(source)
            }
        })?;
        let meta = file.metadata().map_err(read_error)?;
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(ConfigError::TokenMode {
                path: path.to_owned(),
                mode,
            });
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if meta.uid() != uid {
            return Err(ConfigError::TokenOwner {
                path: path.to_owned(),
                owner: meta.uid(),
                uid,
            });
        }
        let mut bytes = read_bounded(file, path)?;
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
        }
        Token::checked(bytes, Some(path))
    }

    /// Checks the bounds: `max_chunk` in 1..=[`MAX_CHUNK`], `max_body`
    /// at least 1, every count at least 1, `protocol_versions` not empty
    /// and from 2 (version 1's hello is told apart by its first number),
    /// `wray_version` at most [`MAX_WRAY_VERSION`] bytes.
    ///
    /// # Errors
    /// [`ConfigError::Bound`] naming the bound.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |s: String| Err(ConfigError::Bound(s));
        if self.max_chunk == 0 || self.max_chunk > MAX_CHUNK {
            return bad(format!(
                "max_chunk {} is not in 1..={MAX_CHUNK} bytes",
                self.max_chunk
            ));
        }
        if self.max_body == 0 {
            return bad("max_body is 0 bytes".into());
        }
        if self.max_connections == 0
            || self.max_unauthenticated == 0
            || self.max_unauthenticated_per_source == 0
            || self.max_connections_per_peer == 0
            || self.pull_in_flight == 0
        {
            return bad(
                "max_connections, max_unauthenticated, max_unauthenticated_per_source, \
                 max_connections_per_peer and pull_in_flight must be at least 1"
                    .into(),
            );
        }
        let (min, max) = (
            *self.protocol_versions.start(),
            *self.protocol_versions.end(),
        );
        if min < 2 || min > max {
            return bad(format!(
                "protocol versions {min}..={max}: not a range of versions from 2"
            ));
        }
        if let Some(id) = &self.node_id {
            if id.is_empty() || id.len() > MAX_NODE_ID {
                return Err(ConfigError::NodeId {
                    id: id.chars().take(80).collect(),
                    len: id.len(),
                    max: MAX_NODE_ID,
                });
            }
        }
        if self.wray_version.len() > MAX_WRAY_VERSION {
            return bad(format!(
                "the wray version is {} bytes (at most {MAX_WRAY_VERSION})",
                self.wray_version.len()
            ));
        }
        Ok(())
    }
}

/// The bytes of `file` (at `path`), at most [`MAX_PEM_BYTES`] of them.
pub(crate) fn read_bounded(file: File, path: &Path) -> Result<Vec<u8>, ConfigError> {
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
    if u64::try_from(bytes.len()).map_or(true, |n| n > MAX_PEM_BYTES) {
        return Err(ConfigError::Pem {
            path: path.to_owned(),
            message: format!("larger than {MAX_PEM_BYTES} bytes"),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_token_is_refused() {
        assert!(matches!(
            Token::new(b"short".to_vec()),
            Err(ConfigError::TokenLength { len: 5, .. })
        ));
        assert!(Token::new(vec![7; MIN_TOKEN]).is_ok());
    }

    #[test]
    fn debug_hides_the_token() {
        let t = Token::new(b"0123456789abcdefSECRET".to_vec()).unwrap();
        assert!(!format!("{:?}", PeerConfig::new(t)).contains("SECRET"));
    }

    #[test]
    fn a_token_given_in_place_of_its_file_is_not_shown() {
        // The HTTP token of a node (64 hex digits) passed as the file.
        let secret = "3f2a9c0d5e6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b5a6f7e8d9c0b1a2f";
        let e = PeerConfig::token_from_file(Path::new(secret)).unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains(&secret[..16]), "{shown}");
        assert!(shown.contains("64 bytes"), "{shown}");
        // A path with a directory is a path: it is named.
        let e = PeerConfig::token_from_file(Path::new("/no/such/dir/cluster-token")).unwrap_err();
        assert!(e.to_string().contains("/no/such/dir/cluster-token"), "{e}");
    }

    #[test]
    fn protocol_versions_and_the_wray_version_are_checked() {
        let mut c = PeerConfig::new(Token::new(vec![1; 16]).unwrap());
        c.protocol_versions = std::ops::RangeInclusive::new(3, 2);
        assert!(c.validate().is_err());
        c.protocol_versions = 1..=2;
        assert!(c.validate().is_err());
        c.protocol_versions = 2..=9;
        assert!(c.validate().is_ok());
        c.wray_version = "9".repeat(MAX_WRAY_VERSION + 1);
        assert!(c.validate().is_err());
    }

    #[test]
    fn a_chunk_past_the_bound_is_refused() {
        let mut c = PeerConfig::new(Token::new(vec![1; 16]).unwrap());
        assert!(c.validate().is_ok());
        c.max_chunk = MAX_CHUNK + 1;
        assert!(c.validate().is_err());
    }
}
