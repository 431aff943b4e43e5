//! TLS for the HTTP API: the certificate chain and private key a node
//! serves https with, read from PEM files into a rustls [`ServerConfig`]
//! on the `ring` provider that offers ALPN `http/1.1`.
//!
//! The server does each connection's handshake in that connection's task,
//! within [`HttpConfig::header_timeout`](crate::HttpConfig::header_timeout);
//! a failed handshake closes that connection only.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{InconsistentKeys, ServerConfig};

/// The largest PEM file read, in bytes: 1 MiB (a chain of a few
/// certificates takes a few KiB).
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// The ALPN protocol the server offers: HTTP/1.1 only (hyper's `http1`).
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// Where the certificate and key of a node serving https are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, PEM: the node's certificate first, then any
    /// intermediates. Clients check the node's address against its subject
    /// alternative names (`IP:127.0.0.1`, `DNS:localhost`, ...).
    pub cert: PathBuf,
    /// The private key of the certificate, PEM (PKCS#8, SEC1 or PKCS#1),
    /// not encrypted.
    pub key: PathBuf,
}

/// Why the certificate or key cannot be used; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file cannot be opened or read (missing, no permission).
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_PEM_BYTES`].
    #[error("{} is larger than {max} bytes, the most a PEM file may be", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound, in bytes.
        max: u64,
    },
    /// A PEM section of the file is malformed (bad base64, no end line).
    #[error("{} is not valid PEM: {source}", .path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What the PEM parser said.
        source: pem::Error,
    },
    /// The certificate file holds no `CERTIFICATE` section.
    #[error("{} holds no certificate (no `-----BEGIN CERTIFICATE-----` section)", .path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no private key section (`PRIVATE KEY`,
    /// `EC PRIVATE KEY` or `RSA PRIVATE KEY`).
    #[error("{} holds no private key (no `-----BEGIN PRIVATE KEY-----` section, nor its EC or RSA form)", .path.display())]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// The key is not the certificate's.
    #[error("the private key {} does not match the certificate {}", .key.display(), .cert.display())]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refuses the pair (a key type it does not support, say).
    #[error("cannot serve TLS with the certificate {} and the key {}: {source}", .cert.display(), .key.display())]
    Refused {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
}

impl TlsFiles {
    /// Reads the certificate chain and the key: the server configuration
    /// every connection's handshake uses (TLS 1.2 and 1.3, ALPN
    /// `http/1.1`, no client certificates).
    ///
    /// # Errors
    /// A [`TlsError`] naming the file that cannot be read, is larger than
    /// [`MAX_PEM_BYTES`], is not PEM, holds no certificate or no key, or
    /// whose key does not match the certificate.
    pub fn load(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let chain = read_certificates(&self.cert)?;
        let key = read_key(&self.key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
            .map_err(|e| self.refused(e))?;
        config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
        Ok(Arc::new(config))
    }

    /// The error for rustls refusing the pair.
    fn refused(&self, source: rustls::Error) -> TlsError {
        let (cert, key) = (self.cert.clone(), self.key.clone());
        match source {
            rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => {
                TlsError::KeyMismatch { cert, key }
            }
            source => TlsError::Refused { cert, key, source },
        }
    }
}

/// The certificates in the PEM file at `path`, in order.
///
/// # Errors
/// The file cannot be read or is too large ([`read_pem`]), a section is
/// malformed ([`TlsError::Pem`]), or there is no certificate
/// ([`TlsError::NoCertificate`]).
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read_pem(path)?;
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            path: path.to_owned(),
            source,
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(chain)
}

/// The first private key in the PEM file at `path`.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read_pem(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        pem::Error::NoItemsFound => TlsError::NoKey {
            path: path.to_owned(),
        },
        source => TlsError::Pem {
            path: path.to_owned(),
            source,
        },
    })
}

/// The bytes of the file at `path`, at most [`MAX_PEM_BYTES`] of them.
///
/// # Errors
/// [`TlsError::Read`] when it cannot be read, [`TlsError::TooLarge`] past
/// the bound (checked on the size the file reports, then on the bytes
/// read, for files that report none).
pub fn read_pem(path: &Path) -> Result<Vec<u8>, TlsError> {
    let read_error = |source| TlsError::Read {
        path: path.to_owned(),
        source,
    };
    let too_large = || TlsError::TooLarge {
        path: path.to_owned(),
        max: MAX_PEM_BYTES,
    };
    let file = File::open(path).map_err(read_error)?;
    if file.metadata().map_err(read_error)?.len() > MAX_PEM_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if u64::try_from(bytes.len()).map_or(true, |n| n > MAX_PEM_BYTES) {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name)
    }

    #[test]
    fn the_test_certificate_and_its_key_load_offering_http1() {
        let files = TlsFiles {
            cert: fixture("cert.pem"),
            key: fixture("key.pem"),
        };
        let config = files.load().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[test]
    fn a_file_past_the_bound_is_too_large_before_it_is_parsed() {
        let dir = std::env::temp_dir().join(format!("wray-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.pem");
        std::fs::write(&big, vec![b'A'; (MAX_PEM_BYTES + 1) as usize]).unwrap();
        let e = read_pem(&big).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            matches!(e, TlsError::TooLarge { ref path, .. } if *path == big),
            "{e}"
        );
    }
}
