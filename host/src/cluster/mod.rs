//! The cluster: every node started on the same etcd and cluster name is
//! one cluster. The control plane (`wray-control-plane`) holds who is in
//! it: each node registers itself under a lease, republishes what it has
//! free (`membership`), and watches the others ([`NodeView`]). The
//! node-to-node channel (`wray-peer`, authenticated by the cluster token)
//! carries tasks and object bytes:
//!
//! - `protocol`: the messages, one serde type each;
//! - `forward`: the owner's side: the scheduler's [`Remote`] (placement
//!   across nodes, forwarding a task once its arguments are sealed,
//!   retrying it elsewhere when its node is lost);
//! - `serve`: the other side: running a forwarded task, answering reads
//!   of object bytes;
//! - `transfer`: objects shipped inline or pulled in chunks straight into
//!   the shared-memory store, checked before they are sealed;
//! - `membership`: this node's record, published as it changes.
//!
//! Per-task and per-object metadata never go through etcd: a task's
//! results go back to the node that owns them (Ray's ownership design).
//!
//! [`Remote`]: crate::scheduler::remote::Remote

mod forward;
mod membership;
mod protocol;
mod serve;
mod transfer;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use wray_control_plane::{NodeInfo, NodeRegistry, NodeView, Registration, RegistryOptions};
use wray_peer::{PeerClient, PeerConfig, PeerServer, PeerTls, Token};

use crate::error::{Error, Result};
use crate::node::Node;

pub use forward::MAX_RETRIES;

/// How a node joins a cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The cluster's name (`--cluster`, default `default`).
    pub name: String,
    /// The cluster token every node was given (`--cluster-token-file`).
    pub token: Token,
    /// Where the node-to-node channel listens (`--bind`, `--peer-port`).
    pub peer_bind: SocketAddr,
    /// The host other nodes reach this one at (default: the bind
    /// address; loopback when that is unspecified).
    pub advertise_host: Option<String>,
    /// The URL of this node's HTTP API, published for the others.
    pub http_address: Option<String>,
    /// Lease, heartbeat and publishing intervals.
    pub registry: RegistryOptions,
    /// Labels published with the node.
    pub labels: BTreeMap<String, String>,
    /// TLS for the channel (the node's certificate), if any.
    pub tls: Option<PeerTls>,
}

/// A node's membership of its cluster: what it runs for the cluster.
pub(crate) struct Cluster {
    name: String,
    view: NodeView,
    forwarder: Arc<forward::Forwarder>,
    server: Mutex<Option<PeerServer>>,
    registration: Arc<Mutex<Option<Registration>>>,
    publisher: tokio::task::JoinHandle<()>,
    peer_address: String,
}

/// Counters of a node's cluster work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterStats {
    /// Tasks run again because the node running them died or could not
    /// be reached.
    pub retried: u64,
}

impl Node {
    /// Joins the cluster `config` names, with `registry` as its membership
    /// (etcd, or embedded for a cluster of one): starts the node-to-node
    /// channel, registers this node, and from then on places tasks on the
    /// other nodes too. Runs its work on the calling tokio runtime (which
    /// must outlive the node's membership: [`Node::leave_cluster`]).
    /// Returns the channel's address.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the node joined a cluster already or
    /// the channel cannot listen; [`Error::ControlPlane`] when the
    /// registry refuses.
    pub async fn join_cluster(
        self: &Arc<Self>,
        config: ClusterConfig,
        registry: Arc<dyn NodeRegistry>,
    ) -> Result<SocketAddr> {
        if self.cluster.get().is_some() {
            return Err(Error::InvalidConfig(
                "the node is in a cluster already".into(),
            ));
        }
        let runtime = tokio::runtime::Handle::current();
        let invalid = |what: &str, e: &dyn std::fmt::Display| {
            Error::InvalidConfig(format!("the node-to-node channel: {what}: {e}"))
        };
        let mut peer = PeerConfig::new(config.token.clone());
        peer.tls = config.tls.clone();
        let client = PeerClient::new(peer.clone(), self.id()).map_err(|e| invalid("client", &e))?;
        let mut long = peer.clone();
        long.request_timeout = Duration::from_secs(7 * 24 * 3600);
        long.max_connections_per_peer = 64;
        let tasks = PeerClient::new(long, self.id()).map_err(|e| invalid("client", &e))?;
        let view = registry.watch_nodes(&config.name).await?;
        let forwarder = Arc::new_cyclic(|this| forward::Forwarder {
            sched: Arc::downgrade(&self.sched),
            node_id: self.id().to_string(),
            cluster: config.name.clone(),
            view: view.clone(),
            tasks,
            client: client.clone(),
            runtime: runtime.clone(),
            retried: Default::default(),
            sent: Default::default(),
            this: this.clone(),
        });
        let service = serve::Service::new(
            Arc::downgrade(self),
            Arc::downgrade(&self.sched),
            client,
            view.clone(),
        );
        let server = PeerServer::bind(&config.peer_bind.to_string(), peer, service.clone())
            .await
            .map_err(|e| invalid(&format!("listening on {}", config.peer_bind), &e))?;
        let port = server.local_addr().port();
        let host = config.advertise_host.clone().unwrap_or_else(|| {
            let ip = config.peer_bind.ip();
            if ip.is_unspecified() {
                "127.0.0.1".to_string()
            } else {
                ip.to_string()
            }
        });
        let peer_address = format!("{host}:{port}");
        let record = membership::record(self, &config, &peer_address);
        let registration = registry.register(record, config.registry).await?;
        let remote: Arc<dyn crate::scheduler::remote::Remote> = forwarder.clone();
        self.sched.connect_remote(Arc::downgrade(&remote));
        let registration = Arc::new(Mutex::new(Some(registration)));
        let publisher = runtime.spawn(membership::publish(
            Arc::downgrade(self),
            config.clone(),
            peer_address.clone(),
            registration.clone(),
            service,
        ));
        let cluster = Cluster {
            name: config.name.clone(),
            view,
            forwarder,
            server: Mutex::new(Some(server)),
            registration,
            publisher,
            peer_address,
        };
        // Keeps the `Remote` alive as long as the cluster.
        let _ = self.remote_keep.set(remote);
        self.cluster
            .set(Arc::new(cluster))
            .map_err(|_| Error::InvalidConfig("the node is in a cluster already".into()))?;
        tracing::info!(
            node = self.id(),
            cluster = config.name,
            "joined the cluster"
        );
        Ok(SocketAddr::new(config.peer_bind.ip(), port))
    }

    /// Leaves the cluster: the node's lease is revoked (the others see it
    /// dead at once) and its channel stops, letting requests in flight end
    /// within `grace`.
    pub async fn leave_cluster(&self, grace: Duration) {
        let Some(cluster) = self.cluster.get() else {
            return;
        };
        cluster.publisher.abort();
        let registration = cluster.registration.lock().take();
        if let Some(r) = registration {
            if let Err(e) = r.shutdown().await {
                tracing::warn!("leaving the cluster: {e}");
            }
        }
        let server = cluster.server.lock().take();
        if let Some(s) = server {
            s.shutdown(grace).await;
        }
    }

    /// Every node of this node's cluster that it knows, alive and
    /// recently dead (`None` when it is in no cluster).
    pub fn cluster_nodes(&self) -> Option<Vec<NodeInfo>> {
        let cluster = self.cluster.get()?;
        let mut all = cluster.view.snapshot();
        all.sort_by(|a, b| a.record.id.cmp(&b.record.id));
        Some(all)
    }

    /// The cluster's name and this node's channel address, in a cluster.
    pub fn cluster_name(&self) -> Option<(&str, &str)> {
        self.cluster
            .get()
            .map(|c| (c.name.as_str(), c.peer_address.as_str()))
    }

    /// Counters of the node's cluster work.
    pub fn cluster_stats(&self) -> ClusterStats {
        ClusterStats {
            retried: self
                .cluster
                .get()
                .map_or(0, |c| c.forwarder.retried.load(Ordering::Relaxed)),
        }
    }
}
