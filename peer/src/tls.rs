//! TLS of the channel (rustls on `ring`, as the HTTP API): the server's
//! certificate chain and key, the roots a client trusts, and the name it
//! checks, read from PEM files once (at [`PeerServer::bind`] and
//! [`PeerClient::new`]).
//!
//! [`PeerServer::bind`]: crate::PeerServer::bind
//! [`PeerClient::new`]: crate::PeerClient::new

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::config::{read_bounded, PeerTls};
use crate::error::ConfigError;

/// The ALPN protocol both sides offer.
const ALPN: &[u8] = b"wray-peer/1";

fn read_file(path: &Path) -> Result<Vec<u8>, ConfigError> {
    let file = File::open(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    read_bounded(file, path)
}

fn pem_error(path: &Path, message: impl Into<String>) -> ConfigError {
    ConfigError::Pem {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// The certificates of the PEM file at `path`, at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let bytes = read_file(path)?;
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, format!("not valid PEM: {e}")))?;
    if chain.is_empty() {
        return Err(pem_error(path, "holds no certificate"));
    }
    Ok(chain)
}

/// The provider every configuration uses.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server configuration of `tls`.
///
/// # Errors
/// [`ConfigError::Bound`] without a certificate or key; the file errors of
/// [`ConfigError`]; [`ConfigError::Tls`] when rustls refuses the pair.
pub(crate) fn server_config(tls: &PeerTls) -> Result<Arc<ServerConfig>, ConfigError> {
    let (Some(cert), Some(key)) = (&tls.cert, &tls.key) else {
        return Err(ConfigError::Bound(
            "a TLS server needs PeerTls::cert and PeerTls::key".into(),
        ));
    };
    let chain = certificates(cert)?;
    let key_bytes = read_file(key)?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_bytes)
        .map_err(|e| pem_error(key, format!("holds no usable private key: {e}")))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key_der))
        .map_err(|source| ConfigError::Tls {
            path: cert.clone(),
            source,
        })?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(Arc::new(config))
}

/// The client configuration of `tls`: its trust file's certificates as
/// roots.
///
/// # Errors
/// The file errors of [`ConfigError`]; [`ConfigError::Tls`] when a
/// certificate cannot be a root.
pub(crate) fn client_config(tls: &PeerTls) -> Result<Arc<ClientConfig>, ConfigError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(&tls.trust)? {
        roots.add(cert).map_err(|source| ConfigError::Tls {
            path: tls.trust.clone(),
            source,
        })?;
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| ConfigError::Tls {
            path: tls.trust.clone(),
            source,
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(Arc::new(config))
}

/// The name to check a server at `addr` (`host:port`, `[v6]:port`)
/// against: `server_name` when given, else the host part.
///
/// # Errors
/// A message when the name is neither a DNS name nor an IP address.
pub(crate) fn server_name(
    server_name: Option<&str>,
    addr: &str,
) -> Result<ServerName<'static>, String> {
    let host = match server_name {
        Some(n) => n,
        None => {
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
            host.trim_start_matches('[').trim_end_matches(']')
        }
    };
    ServerName::try_from(host.to_owned()).map_err(|e| format!("bad TLS server name {host:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_the_host_part() {
        assert_eq!(
            server_name(None, "127.0.0.1:9").unwrap(),
            ServerName::try_from("127.0.0.1").unwrap()
        );
        assert_eq!(
            server_name(None, "[::1]:9").unwrap(),
            ServerName::try_from("::1").unwrap()
        );
        assert_eq!(
            server_name(Some("node-a"), "10.0.0.1:9").unwrap(),
            ServerName::try_from("node-a").unwrap()
        );
    }
}
