//! [`PeerClient`]: calls and reads to other nodes over pooled,
//! authenticated connections ([`pool`], [`connect`]); [`pull`] reads a
//! whole blob with several chunks in flight.

mod connect;
mod pool;
mod pull;

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio_rustls::TlsConnector;

pub use pool::MAX_PEERS;
pub use pull::PullStats;

use crate::config::{PeerConfig, MAX_KEY, MAX_NODE_ID};
use crate::error::{ConfigError, PeerError, Result};
use crate::frame::{decode_error, Header, Kind, ReadRequest, MAX_ERROR_BODY};
use crate::tls;
use crate::wire::{read_body, read_raw_header, write_frame, BoxStream};

/// A node's client of the channel. Cheap to clone (one `Arc`); clones
/// share the connection pools.
#[derive(Clone)]
pub struct PeerClient {
    inner: Arc<Inner>,
}

/// What the clones of a client share.
pub(crate) struct Inner {
    config: PeerConfig,
    node_id: String,
    tls: Option<ClientTls>,
    pools: pool::Pools,
}

struct ClientTls {
    connector: TlsConnector,
    server_name: Option<String>,
}

impl PeerClient {
    /// A client that says hello as `own_node_id` with `config`'s token.
    ///
    /// # Errors
    /// [`PeerError::Config`]: a node id that is empty or longer than
    /// [`MAX_NODE_ID`] bytes, bounds out of range, a trust file that
    /// cannot be used.
    pub fn new(config: PeerConfig, own_node_id: impl Into<String>) -> Result<PeerClient> {
        let node_id = own_node_id.into();
        if node_id.is_empty() || node_id.len() > MAX_NODE_ID {
            return Err(ConfigError::NodeId {
                id: node_id.chars().take(80).collect(),
                len: node_id.len(),
                max: MAX_NODE_ID,
            }
            .into());
        }
        config.validate()?;
        let tls = match &config.tls {
            Some(t) => Some(ClientTls {
                connector: TlsConnector::from(tls::client_config(t)?),
                server_name: t.server_name.clone(),
            }),
            None => None,
        };
        Ok(PeerClient {
            inner: Arc::new(Inner {
                config,
                node_id,
                tls,
                pools: pool::Pools::default(),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &PeerConfig {
        &self.inner.config
    }

    /// Calls `method` with `body` on the node at `addr` (`host:port`) and
    /// returns its handler's answer.
    ///
    /// # Errors
    /// [`PeerError::TooLarge`] for a body past
    /// [`PeerConfig::max_body`]; [`PeerError::Remote`] with the handler's
    /// code and message; connection, handshake and protocol errors; a
    /// [`PeerError::Timeout`] past [`PeerConfig::request_timeout`].
    ///
    /// # Cancel safety
    /// Dropping the future closes the connection it was using; the server
    /// may or may not have run the call.
    pub async fn call(&self, addr: &str, method: u16, body: Bytes) -> Result<Bytes> {
        let max = self.inner.config.max_body;
        if body.len() > max as usize {
            return Err(PeerError::TooLarge {
                what: "a call's body",
                size: body.len() as u64,
                max: u64::from(max),
            });
        }
        self.bounded(addr, async {
            let mut lease = pool::checkout(&self.inner, addr).await?;
            let conn = lease.conn();
            let id = conn.next_id();
            write_frame(
                &mut conn.io,
                Kind::Call,
                id,
                &[&method.to_be_bytes(), &body],
            )
            .await
            .map_err(|e| io_error(addr, e))?;
            let h = answer_header(&mut conn.io, addr, id).await?;
            match h.kind {
                Kind::CallOk if h.len <= max => {
                    let b = read_body(&mut conn.io, h.len)
                        .await
                        .map_err(|e| io_error(addr, e))?;
                    lease.release();
                    Ok(Bytes::from(b))
                }
                Kind::RemoteError => {
                    let e = remote(&mut conn.io, addr, h).await?;
                    lease.release();
                    Err(e)
                }
                _ => Err(unexpected(&mut conn.io, addr, h).await),
            }
        })
        .await
    }

    /// Reads `dest.len()` bytes (at most [`PeerConfig::max_chunk`]) at
    /// `offset` of the blob `key` (at most [`MAX_KEY`] bytes) on the node
    /// at `addr`, straight from the socket into `dest`.
    ///
    /// # Errors
    /// [`PeerError::Truncated`] when fewer bytes arrive (the server's blob
    /// is shorter, the connection ended): `dest` then holds partial data
    /// and must be discarded or read again. [`PeerError::TooLarge`] for a
    /// key or length past its bound or `offset + len` overflowing `u64`;
    /// [`PeerError::Remote`] with the handler's error; connection,
    /// handshake, protocol and timeout errors as [`PeerClient::call`].
    ///
    /// # Cancel safety
    /// Dropping the future closes the connection; `dest` is then partial.
    pub async fn read(&self, addr: &str, key: &[u8], offset: u64, dest: &mut [u8]) -> Result<()> {
        let len = checked_read(&self.inner.config, key, offset, dest.len())?;
        self.bounded(addr, async {
            let mut lease = pool::checkout(&self.inner, addr).await?;
            let conn = lease.conn();
            let id = conn.next_id();
            let req = ReadRequest { key, offset, len }.encode();
            write_frame(&mut conn.io, Kind::Read, id, &[&req])
                .await
                .map_err(|e| io_error(addr, e))?;
            let h = answer_header(&mut conn.io, addr, id).await?;
            match h.kind {
                Kind::ReadData if h.len <= len => {
                    let n = h.len as usize;
                    read_into(&mut conn.io, &mut dest[..n], addr, len).await?;
                    lease.release();
                    if h.len < len {
                        return Err(PeerError::Truncated {
                            addr: addr.to_owned(),
                            expected: u64::from(len),
                            got: u64::from(h.len),
                        });
                    }
                    Ok(())
                }
                Kind::RemoteError => {
                    let e = remote(&mut conn.io, addr, h).await?;
                    lease.release();
                    Err(e)
                }
                _ => Err(unexpected(&mut conn.io, addr, h).await),
            }
        })
        .await
    }

    /// Runs `request` within the request timeout.
    async fn bounded<T>(&self, addr: &str, request: impl Future<Output = Result<T>>) -> Result<T> {
        let after = self.inner.config.request_timeout;
        tokio::time::timeout(after, request)
            .await
            .map_err(|_| PeerError::Timeout {
                addr: addr.to_owned(),
                what: "request",
                after,
            })?
    }
}

/// The length of a read into `dest_len` bytes, checked.
fn checked_read(config: &PeerConfig, key: &[u8], offset: u64, dest_len: usize) -> Result<u32> {
    if key.len() > MAX_KEY {
        return Err(PeerError::TooLarge {
            what: "a read's key",
            size: key.len() as u64,
            max: MAX_KEY as u64,
        });
    }
    let too_large = || PeerError::TooLarge {
        what: "a read's length",
        size: dest_len as u64,
        max: u64::from(config.max_chunk),
    };
    let len = u32::try_from(dest_len).map_err(|_| too_large())?;
    if len > config.max_chunk {
        return Err(too_large());
    }
    if offset.checked_add(u64::from(len)).is_none() {
        return Err(PeerError::TooLarge {
            what: "a read's offset plus length",
            size: u64::MAX,
            max: u64::MAX,
        });
    }
    Ok(len)
}

fn io_error(addr: &str, source: std::io::Error) -> PeerError {
    PeerError::Io {
        addr: addr.to_owned(),
        source,
    }
}

fn protocol(addr: &str, message: String) -> PeerError {
    PeerError::Protocol {
        addr: addr.to_owned(),
        message,
    }
}

/// The header of the answer to request `id`.
async fn answer_header(io: &mut BoxStream, addr: &str, id: u64) -> Result<Header> {
    let raw = read_raw_header(io)
        .await
        .map_err(|e| io_error(addr, e))?
        .ok_or_else(|| io_error(addr, std::io::ErrorKind::UnexpectedEof.into()))?;
    let h = Header::decode(&raw).map_err(|m| protocol(addr, m))?;
    if h.id != id && h.kind != Kind::ProtocolError {
        return Err(protocol(
            addr,
            format!("answer for request {} to request {id}", h.id),
        ));
    }
    Ok(h)
}

/// The handler's error in a `RemoteError` frame.
async fn remote(io: &mut BoxStream, addr: &str, h: Header) -> Result<PeerError> {
    if h.len > MAX_ERROR_BODY {
        return Err(protocol(addr, format!("error frame of {} bytes", h.len)));
    }
    let body = read_body(io, h.len).await.map_err(|e| io_error(addr, e))?;
    let (code, message) = decode_error(&body).map_err(|m| protocol(addr, m))?;
    Ok(PeerError::Remote {
        addr: addr.to_owned(),
        code,
        message,
    })
}

/// The error for a frame that does not answer the request: the server's
/// `ProtocolError` message, or what was wrong.
async fn unexpected(io: &mut BoxStream, addr: &str, h: Header) -> PeerError {
    if h.kind == Kind::ProtocolError && h.len <= MAX_ERROR_BODY {
        if let Ok(body) = read_body(io, h.len).await {
            let said = String::from_utf8_lossy(&body);
            return protocol(addr, format!("the peer says: {said}"));
        }
    }
    protocol(
        addr,
        format!("unexpected {:?} frame of {} bytes", h.kind, h.len),
    )
}

/// Reads exactly `dest.len()` bytes into `dest`; an early end is
/// [`PeerError::Truncated`] (of `expected` bytes).
async fn read_into(io: &mut BoxStream, dest: &mut [u8], addr: &str, expected: u32) -> Result<()> {
    let mut got = 0;
    while got < dest.len() {
        let end = match io.read(&mut dest[got..]).await {
            Ok(0) => None,
            Ok(n) => {
                got += n;
                continue;
            }
            Err(e) => Some(e),
        };
        if let Some(e) = end {
            tracing::debug!("read from {addr} broke: {e}");
        }
        return Err(PeerError::Truncated {
            addr: addr.to_owned(),
            expected: u64::from(expected),
            got: got as u64,
        });
    }
    Ok(())
}
