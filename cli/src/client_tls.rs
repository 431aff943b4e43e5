//! How the node clients (`wray deploy`, `call`, ..., `status`) trust a
//! node served over https: the certificate `wray start --tls-cert` copied
//! into the node directory (its `node.json` names it), or the one given
//! with `--cacert` / `WRAY_CACERT` for `--address`, as the only root; with
//! neither, the public roots (webpki-roots) that ureq trusts by default.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls::{ClientConfig, RootCertStore};

/// A ureq agent builder whose https connections trust `cacert` (a PEM
/// file of one or more certificates) only, or the public roots when it is
/// `None`. Plain http URLs are unaffected.
///
/// # Errors
/// `cacert` cannot be read, is larger than 1 MiB, or holds no certificate
/// that can be a root; the error names the file.
pub fn agent_builder(cacert: Option<&Path>) -> anyhow::Result<ureq::AgentBuilder> {
    let builder = ureq::AgentBuilder::new();
    Ok(match cacert {
        None => builder,
        Some(path) => builder.tls_config(trusting(path)?),
    })
}

/// A rustls client configuration (on the `ring` provider, TLS 1.2 and 1.3)
/// whose roots are the certificates in the PEM file at `path`.
fn trusting(path: &Path) -> anyhow::Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    for cert in wray_http::tls::read_certificates(path)? {
        roots
            .add(cert)
            .with_context(|| format!("{} cannot be a root certificate", path.display()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
