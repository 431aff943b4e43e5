//! The hyper server: accepts connections (at most `max_connections`),
//! serves HTTP/1.1 with keep-alive, gives a client `header_timeout` to send
//! its headers, and on shutdown closes its listening socket (new clients
//! are refused at once), lets requests in flight finish and closes idle
//! connections. With TLS ([`HttpConfig::tls`]),
//! each connection's task first does the handshake, within
//! `header_timeout`; a failed one closes that connection only.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use wray_host::Node;

use crate::config::HttpConfig;
use crate::handlers::handle;
use crate::state::State;
use crate::tls::TlsError;

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No token on an address other machines can reach.
    #[error("refusing to serve {0} without a token: --no-auth is only for a loopback address (127.0.0.1, ::1)")]
    NoAuthOffLoopback(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The TLS certificate or key cannot be used; the error names the file.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// A bound server; [`Server::serve`] runs it.
pub struct Server {
    listener: TcpListener,
    state: Arc<State>,
    /// The handshake of every connection, when serving https.
    tls: Option<TlsAcceptor>,
}

impl Server {
    /// Binds `config.bind` for `node` (which lives as long as the process:
    /// `wray start` leaks it).
    ///
    /// # Errors
    /// [`ServeError::NoAuthOffLoopback`] without a token on a non-loopback
    /// address; [`ServeError::Tls`] when [`HttpConfig::tls`] names a
    /// certificate or key that cannot be read or used (checked before
    /// binding); [`ServeError::Bind`] when the address cannot be bound.
    pub async fn bind(node: Arc<Node>, config: HttpConfig) -> Result<Self, ServeError> {
        if config.token.is_none() && !config.bind.ip().is_loopback() {
            return Err(ServeError::NoAuthOffLoopback(config.bind));
        }
        let tls = match &config.tls {
            Some(files) => Some(TlsAcceptor::from(files.load()?)),
            None => None,
        };
        let addr = config.bind;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let state = Arc::new(State::new(node, config));
        // Other nodes of its cluster reach its jobs, objects and actors.
        state
            .node
            .serve_relayed(crate::relay::handler(Arc::downgrade(&state)));
        Ok(Server {
            listener,
            state,
            tls,
        })
    }

    /// The address it listens on (the port chosen when bound to port 0).
    ///
    /// # Errors
    /// The OS error, if the socket has none.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes; then stops listening (new
    /// connections are refused, logged as `stopped listening`), waits for
    /// the requests in flight and the running jobs, and ends the kept jobs
    /// (async results not read, actors created over HTTP). Handshakes under
    /// way when it stops are dropped. The caller bounds the wait (`wray
    /// start --grace`).
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let Server {
            listener,
            state,
            tls,
        } = self;
        let connections = Arc::new(Semaphore::new(state.config.max_connections));
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of file descriptors, say: the listener is
                        // still good; try again shortly.
                        tracing::warn!("accept: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let Ok(permit) = connections.clone().try_acquire_owned() else {
                drop(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let state = state.clone();
            let tls = tls.clone();
            let mut stop = stop_rx.clone();
            tasks.spawn(async move {
                match tls {
                    None => serve_connection(stream, state, stop).await,
                    Some(tls) => {
                        let timeout = state.config.header_timeout;
                        if let Some(stream) =
                            handshake(&tls, stream, peer, timeout, &mut stop).await
                        {
                            serve_connection(stream, state, stop).await;
                        }
                    }
                }
                drop(permit);
            });
            // Reap finished connections as we go.
            while tasks.try_join_next().is_some() {}
        }
        // Stop listening first: a client connecting from now on is refused
        // at once instead of waiting in the kernel's backlog for an accept
        // that never comes.
        let addr = listener.local_addr().ok();
        drop(listener);
        match addr {
            Some(addr) => tracing::info!("stopped listening on {addr}; draining"),
            None => tracing::info!("stopped listening; draining"),
        }
        let _ = stop_tx.send(true);
        // Running jobs finish (their logs' followers with them) while the
        // requests in flight do; the caller bounds the whole drain.
        let connections = async { while tasks.join_next().await.is_some() {} };
        tokio::join!(connections, state.jobs.drain(std::time::Duration::MAX));
        // Joining the drivers' threads blocks: on a thread of the runtime's
        // blocking pool, not one that serves its tasks.
        let joining = state.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || joining.jobs.stop_all()).await {
            tracing::warn!("stopping the jobs failed: {e}");
        }
        state.kept.clear();
    }
}

/// Serves HTTP/1.1 on one connection (plain or after its handshake) until
/// the client closes it or the server stops (then gracefully: the request
/// in flight finishes).
async fn serve_connection<I>(io: I, state: Arc<State>, mut stop: watch::Receiver<bool>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let header_timeout = state.config.header_timeout;
    let service = service_fn(move |req| {
        let state = state.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(state, req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Some(header_timeout))
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// The TLS handshake of the connection from `peer`, within `timeout`;
/// `None` (the connection is closed, logged at debug) when it fails, takes
/// longer, or the server stops first.
async fn handshake(
    tls: &TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    timeout: Duration,
    stop: &mut watch::Receiver<bool>,
) -> Option<TlsStream<TcpStream>> {
    tokio::select! {
        done = tokio::time::timeout(timeout, tls.accept(stream)) => match done {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::debug!("tls handshake with {peer} failed: {e}");
                None
            }
            Err(_) => {
                tracing::debug!(
                    "tls handshake with {peer}: not done within {} ms",
                    timeout.as_millis()
                );
                None
            }
        },
        _ = stop.changed() => None,
    }
}
