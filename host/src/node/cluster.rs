//! A node's cluster membership ([`Node::join_cluster`]): the node side of
//! `crate::cluster`, which does not name the node.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use wray_control_plane::{ActorDirectory, NodeRegistry};

use crate::cluster::{
    Cluster, ClusterConfig, ClusterStats, Loader, NodeAnswers, RelayHandler, RelayRequest,
    RelayResponse,
};
use crate::error::{Error, Result};
use crate::node::Node;

impl Node {
    /// Joins the cluster `config` names, with `registry` as its membership
    /// (etcd, or embedded for a cluster of one) and `directory` as its
    /// actor directory (named actors): starts the node-to-node
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
        directory: Arc<dyn ActorDirectory>,
    ) -> Result<SocketAddr> {
        if self.cluster.get().is_some() {
            return Err(Error::InvalidConfig(
                "the node is in a cluster already".into(),
            ));
        }
        let node = Arc::downgrade(self);
        let loader: Loader = Arc::new(move |name: String| {
            let node = node.clone();
            Box::pin(async move {
                if let Some(node) = node.upgrade() {
                    if let Err(e) = node.loaded_async(&name).await {
                        tracing::debug!(
                            component = name,
                            "loading a forwarded task's component: {e}"
                        );
                    }
                }
            })
        });
        let name = config.name.clone();
        let jobs = crate::cluster::JobState {
            envs: self.exec.job_envs.clone(),
            logs: self.exec.job_logs.clone(),
            working_dirs: self.working_dirs.clone(),
        };
        let (cluster, addr) = Cluster::join(
            &self.sched,
            self.started_ms(),
            loader,
            jobs,
            config,
            registry,
            self.relay.clone(),
        )
        .await?;
        self.cluster
            .set(Arc::new(cluster))
            .map_err(|_| Error::InvalidConfig("the node is in a cluster already".into()))?;
        self.names.use_directory(directory);
        tracing::info!(node = self.id(), cluster = name, "joined the cluster");
        Ok(addr)
    }

    /// Drains the node before it leaves its cluster (`wray stop`, SIGTERM;
    /// Ray's node drain): it publishes that it is draining (the other
    /// nodes place nothing new here), hands the tasks other nodes sent it
    /// that have not started back to their owners, and lets those running
    /// end within `grace`, their results sent back (then stops them, and
    /// their owners run them elsewhere). Returns once none of them runs;
    /// then [`Node::leave_cluster`]. Nothing outside a cluster.
    ///
    /// # Cancel safety
    /// Dropped, the drain stops where it is; the node stays draining.
    pub async fn drain_cluster(&self, grace: Duration) {
        if let Some(cluster) = self.cluster.get() {
            cluster.drain(grace).await;
        }
    }

    /// Leaves the cluster: the node's lease is revoked (the others see it
    /// dead at once) and its channel stops, letting requests in flight end
    /// within `grace`.
    pub async fn leave_cluster(&self, grace: Duration) {
        if let Some(cluster) = self.cluster.get() {
            cluster.leave(grace).await;
        }
    }

    /// Serves the requests other nodes relay to this node's HTTP API
    /// through `handler` (once; later calls are ignored).
    pub fn serve_relayed(&self, handler: RelayHandler) {
        let _ = self.relay.set(handler);
    }

    /// `request`, for the HTTP API, answered by another live node of this
    /// node's cluster (the first that does not answer 404), with that
    /// node's id; `None` outside a cluster or when no node has what it
    /// names.
    pub async fn relay_http(&self, request: RelayRequest) -> Option<(String, RelayResponse)> {
        self.cluster.get()?.relay(request).await
    }

    /// The nodes (Ray's `ray.nodes()`), as `GET /v1/nodes` lists them:
    /// every node of this node's cluster that it knows, alive and
    /// recently dead, by id, each live one this node does not place work
    /// on marked `unusable` (see [`Node::cluster_suspects`]); this node
    /// alone outside a cluster. GPUs are listed for this node only.
    pub fn nodes(&self) -> Vec<wray_api::NodeInfo> {
        let mut me =
            super::state::own_node(&self.sched, self.gpus.iter().map(Into::into).collect());
        let cluster_stats = self.cluster_stats();
        me.address = self.cluster_name().map(|(_, a)| a.to_string());
        me.object_bytes_sent = cluster_stats.object_bytes_sent;
        me.object_bytes_received = cluster_stats.object_bytes_received;
        let Some(cluster) = self.cluster.get() else {
            return vec![me];
        };
        let suspects = cluster.suspects();
        cluster
            .nodes()
            .iter()
            .map(|m| {
                let mut info = super::state::member(m);
                if let Some((why, seen)) = suspects.get(&info.node_id).filter(|_| info.alive) {
                    info.unusable = Some(why.clone());
                    info.unusable_reason = Some(seen.clone());
                }
                if info.node_id == me.node_id {
                    // Its own GPUs, which the registry does not list.
                    info.gpus = std::mem::take(&mut me.gpus);
                }
                info
            })
            .collect()
    }

    /// The live nodes of this node's cluster that it does not place work
    /// on now, by id: why (`unprobed`: not yet probed; `unreachable`: a
    /// connection failed; `stalled`: it stopped answering while it held a
    /// task; `quarantined`: it failed authentication) and what showed it.
    /// Empty outside a cluster.
    pub fn cluster_suspects(&self) -> std::collections::BTreeMap<String, (String, String)> {
        self.cluster.get().map(|c| c.suspects()).unwrap_or_default()
    }

    /// Whether node `id` is alive: this node, or a live member of its
    /// cluster as its view says.
    pub fn node_alive(&self, id: &str) -> bool {
        id == self.id() || self.cluster.get().is_some_and(|c| c.is_alive(id))
    }

    /// `request`, for the HTTP API, sent to every other live node of the
    /// cluster (`only`: to that one alone, when it is a live other node),
    /// at most [`FAN_OUT`] at once, each answer waited for `deadline` at
    /// most: each node's answer, or why it has none, as they come. Empty
    /// outside a cluster.
    ///
    /// [`FAN_OUT`]: crate::cluster::FAN_OUT
    pub fn relay_each(
        &self,
        request: RelayRequest,
        only: Option<&str>,
        deadline: Duration,
    ) -> NodeAnswers {
        match self.cluster.get() {
            Some(c) => c.relay_each(request, only, deadline),
            None => Box::pin(futures_util::stream::empty()),
        }
    }

    /// The cluster's name and this node's channel address, in a cluster.
    pub fn cluster_name(&self) -> Option<(&str, &str)> {
        self.cluster.get().map(|c| (c.name(), c.peer_address()))
    }

    /// When this node is in a cluster whose other live nodes all lack one
    /// of host directories `dirs` (their records do not allow it): the
    /// cluster's name and those nodes. `None` when some other node has
    /// them all, or there is no other node.
    pub(crate) fn nodes_lacking_dirs(&self, dirs: &[String]) -> Option<(String, Vec<String>)> {
        if dirs.is_empty() {
            return None;
        }
        let cluster = self.cluster.get()?;
        let (lacking, others) = crate::cluster::nodes_lacking(&cluster.alive(), self.id(), dirs);
        (others > 0 && lacking.len() == others).then(|| (cluster.name().to_string(), lacking))
    }

    /// Counters of the node's cluster work.
    pub fn cluster_stats(&self) -> ClusterStats {
        self.cluster.get().map(|c| c.stats()).unwrap_or_default()
    }
}
