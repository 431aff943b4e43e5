//! [`PeerServer`]: listens on the caller's tokio runtime, admits new
//! connections within the unauthenticated budgets and moves them to the
//! authenticated bound once they prove the token ([`admission`]), serves
//! each in its own task ([`connection`], [`hello`]), counts and reports
//! what it refused ([`refusals`]) and, on [`PeerServer::shutdown`], stops
//! accepting, lets requests in flight finish within a grace, then drops
//! what is left.

mod admission;
mod connection;
mod hello;
pub(crate) mod refusals;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::config::PeerConfig;
use crate::error::{PeerError, Result};
use crate::handler::PeerHandler;
use crate::tls;
use admission::Admission;
use refusals::{RefusalCounts, Refusals};

/// What every connection task of a server shares.
pub(crate) struct Shared {
    pub config: PeerConfig,
    pub handler: Arc<dyn PeerHandler>,
    pub tls: Option<TlsAcceptor>,
    /// The id it names itself by: `config.node_id`, else its address.
    pub node_id: String,
    pub refusals: Arc<Refusals>,
}

/// A server's connections and refusals, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerServerStats {
    /// Connections that proved the token, held now (at most
    /// [`PeerConfig::max_connections`]).
    pub authenticated: usize,
    /// Connections that have not proved it yet, held now (at most
    /// [`PeerConfig::max_unauthenticated`]).
    pub unauthenticated: usize,
    /// Connections refused since the server started, by reason.
    pub refused: RefusalCounts,
}

/// A running server. Dropping it stops the server at once (no grace);
/// [`PeerServer::shutdown`] stops it gracefully.
pub struct PeerServer {
    local_addr: SocketAddr,
    /// `Some(grace)` once asked to stop.
    stop: watch::Sender<Option<Duration>>,
    task: JoinHandle<()>,
    admission: Arc<Admission>,
    refusals: Arc<Refusals>,
}

impl PeerServer {
    /// Binds `addr` (`host:port`; port 0 picks one) and serves `handler`
    /// on tasks of the current tokio runtime.
    ///
    /// # Errors
    /// [`PeerError::Config`] for bounds out of range or TLS files that
    /// cannot be used (checked before binding); [`PeerError::Bind`] when
    /// the address cannot be bound.
    ///
    /// # Panics
    /// Outside a tokio runtime (as `tokio::spawn`).
    pub async fn bind(
        addr: &str,
        config: PeerConfig,
        handler: Arc<dyn PeerHandler>,
    ) -> Result<PeerServer> {
        config.validate()?;
        let tls = match &config.tls {
            Some(t) => Some(TlsAcceptor::from(tls::server_config(t)?)),
            None => None,
        };
        let bind_error = |source| PeerError::Bind {
            addr: addr.to_owned(),
            source,
        };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        let (stop, stop_rx) = watch::channel(None);
        let admission = Admission::new(&config);
        let refusals = Arc::new(Refusals::default());
        let shared = Arc::new(Shared {
            node_id: config
                .node_id
                .clone()
                .unwrap_or_else(|| local_addr.to_string()),
            config,
            handler,
            tls,
            refusals: refusals.clone(),
        });
        let task = tokio::spawn(accept_loop(listener, shared, admission.clone(), stop_rx));
        tracing::info!("peer server listening on {local_addr}");
        Ok(PeerServer {
            local_addr,
            stop,
            task,
            admission,
            refusals,
        })
    }

    /// The address it listens on (the port chosen when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The connections it holds now and those it refused so far.
    pub fn stats(&self) -> PeerServerStats {
        let (authenticated, unauthenticated) = self.admission.held();
        PeerServerStats {
            authenticated,
            unauthenticated,
            refused: self.refusals.counts(),
        }
    }

    /// Stops accepting (the listening socket is closed: new connections
    /// are refused), closes idle connections, lets requests in flight
    /// finish for up to `grace`, then drops the rest, and returns when
    /// every connection task has ended.
    pub async fn shutdown(self, grace: Duration) {
        let _ = self.stop.send(Some(grace));
        let _ = self.task.await;
    }
}

/// Accepts until asked to stop, then drains within the grace.
async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    admission: Arc<Admission>,
    mut stop: watch::Receiver<Option<Duration>>,
) {
    let (closing_tx, closing) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let grace = loop {
        let (stream, peer) = tokio::select! {
            changed = stop.changed() => match changed {
                Ok(()) => match *stop.borrow() {
                    Some(grace) => break grace,
                    None => continue,
                },
                // The PeerServer was dropped: stop without grace.
                Err(_) => break Duration::ZERO,
            },
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, say: the listener is still
                    // good; try again shortly.
                    tracing::warn!("peer accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        while tasks.try_join_next().is_some() {}
        let pending = match admission.admit(peer.ip()) {
            Ok(p) => p,
            Err(reason) => {
                let why = format!(
                    "{} unauthenticated connections from {} already held",
                    shared.config.max_unauthenticated_per_source,
                    peer.ip()
                );
                shared.refusals.note(reason, peer, &why);
                drop(stream);
                continue;
            }
        };
        crate::socket::tune(&stream);
        let shared = shared.clone();
        let closing = closing.clone();
        tasks.spawn(connection::serve(stream, peer, shared, pending, closing));
    };
    drop(listener);
    let _ = closing_tx.send(true);
    tracing::info!(
        "peer server stopped listening; draining {} connections",
        tasks.len()
    );
    let drained =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(
            "peer server: {} connections still busy after the {grace:?} grace; dropping them",
            tasks.len()
        );
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}
