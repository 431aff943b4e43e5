//! What the HTTP server accepts.

use std::net::SocketAddr;
use std::time::Duration;

use crate::tls::TlsFiles;

/// The HTTP server's settings; [`HttpConfig::default`] gives the defaults
/// named on each field.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Where to listen (default `127.0.0.1:8265`, Ray's dashboard port).
    pub bind: SocketAddr,
    /// The bearer token every route but `/healthz` requires; `None` (no
    /// auth) is refused unless [`bind`](Self::bind) is a loopback address.
    pub token: Option<String>,
    /// Serve https with this certificate and key (default `None`: plain
    /// http). The files are read by [`Server::bind`](crate::Server::bind);
    /// each connection's handshake must finish within
    /// [`header_timeout`](Self::header_timeout). TLS does not replace the
    /// token: [`token`](Self::token)'s rule holds as without it.
    pub tls: Option<TlsFiles>,
    /// Largest request body of an invocation or actor call, in bytes
    /// (default 16 MiB).
    pub max_body: usize,
    /// Largest component a deploy may upload, in bytes (default 512 MiB).
    pub max_component: usize,
    /// Largest answer of a synchronous call (a function's or an actor
    /// method's results), in bytes (default 64 MiB, `wray start
    /// --max-response-mib`). Past it the call is answered 507
    /// `result_too_large`, saying how to fetch the value instead
    /// (`?async=true`, then `GET /v1/objects/{id}`, which sends an object
    /// of any size from the store without copying it).
    pub max_response: usize,
    /// Time a client has to send a request's headers (default 10 s).
    pub header_timeout: Duration,
    /// Time a client has to send a request's body (default 60 s).
    pub body_timeout: Duration,
    /// Requests served at once; one more is answered 503 with
    /// `Retry-After` (default 1,024).
    pub max_inflight: usize,
    /// Open connections; one more is closed at once (default 4,096).
    pub max_connections: usize,
    /// Async invocations and actors whose sessions the server keeps
    /// (default 10,000); one more is answered 503.
    pub max_kept: usize,
    /// How long an async invocation's results wait to be read before its
    /// job ends (default 10 min).
    pub kept_ttl: Duration,
    /// How long a synchronous invocation waits for its results when the
    /// request names no `timeout` (default 60 s); the most it may name is
    /// [`MAX_TIMEOUT`].
    pub default_timeout: Duration,
    /// Bounds of the jobs submitted over HTTP (default: 64 running, 256
    /// remembered, 1 MiB of log each).
    pub jobs: wray_host::JobsConfig,
    /// The node's log file, whose end `GET /v1/logs` answers (default
    /// `None`: the node keeps no log file of its own).
    pub node_log: Option<std::path::PathBuf>,
    /// Names a request's `Host` may give besides an address, `localhost`
    /// and this machine's host name, on a node without a token (`wray
    /// start --allow-host`; default none): any other is refused, so that a
    /// name rebound to this node's address by another site's DNS reaches
    /// nothing (`browser`).
    pub allowed_hosts: Vec<String>,
}

/// The longest `?timeout=` a request may name: one hour.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 8265)),
            token: None,
            tls: None,
            max_body: 16 << 20,
            max_component: 512 << 20,
            max_response: 64 << 20,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            max_inflight: 1024,
            max_connections: 4096,
            max_kept: 10_000,
            kept_ttl: Duration::from_secs(600),
            default_timeout: Duration::from_secs(60),
            jobs: wray_host::JobsConfig::default(),
            node_log: None,
            allowed_hosts: Vec::new(),
        }
    }
}
