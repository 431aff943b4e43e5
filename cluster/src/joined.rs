//! [`Cluster`]: this node as a member of its cluster, how it joins
//! ([`ClusterConfig`]), leaves and drains, what it reports
//! ([`ClusterStats`]), and the deaths it reacts to.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use wray_control_plane::{ClusterMember, NodeRegistry, NodeView, Registration, RegistryOptions};
use wray_peer::{PeerClient, PeerConfig, PeerServer, PeerTls, Token};

use crate::error::{Error, Result};
use crate::scheduler::Scheduler;
use crate::{forward, health, membership, serve, spill, transfer};
use crate::{JobState, NodeAnswers, RelayRequest, RelayResponse, RelaySlot};

/// Forwarded tasks in flight to one node at once (each holds a
/// connection of the task client until its answer).
const TASK_CONNECTIONS_PER_PEER: usize = 64;

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
    /// The port other nodes reach the channel at (`--advertise-peer-port`:
    /// a port forwarded to it, behind a NAT or a proxy); default: the
    /// port it listens on.
    pub advertise_port: Option<u16>,
    /// The URL of this node's HTTP API, published for the others.
    pub http_address: Option<String>,
    /// Lease, heartbeat and publishing intervals.
    pub registry: RegistryOptions,
    /// Labels published with the node.
    pub labels: BTreeMap<String, String>,
    /// How long a dead node stays listed (`/v1/nodes`, `wray status`)
    /// before it is forgotten ([`DEAD_NODE_KEEP`] by default).
    pub dead_node_keep: Duration,
    /// TLS for the channel (the node's certificate), if any.
    pub tls: Option<PeerTls>,
    /// The hybrid placement's threshold (`--spread-threshold`, Ray's
    /// `scheduler_spread_threshold`): a task stays on its submitting node
    /// while the share in use of that node's busiest resource the task
    /// asks for is under it, and goes to the least used node with room
    /// past it. 0 to 1; [`DEFAULT_SPREAD_THRESHOLD`] by default.
    pub spread_threshold: f64,
    /// The channel's protocol versions this node claims to speak
    /// (`wray start --peer-protocol`, hidden): for tests of rolling
    /// upgrades only; `None` for the versions this release speaks.
    pub protocol_versions: Option<std::ops::RangeInclusive<u16>>,
}

/// Ray's default `scheduler_spread_threshold`: 0.5.
pub const DEFAULT_SPREAD_THRESHOLD: f64 = 0.5;
/// How long a dead node stays listed by default: 5 minutes (the window
/// issue 37 asks for, after Ray's).
pub const DEAD_NODE_KEEP: Duration = Duration::from_secs(300);

/// A node's membership of its cluster: what it runs for the cluster.
pub struct Cluster {
    name: String,
    view: NodeView,
    forwarder: Arc<forward::Forwarder>,
    server: Mutex<Option<PeerServer>>,
    /// What this node answers its peers (its drain included).
    service: Arc<serve::Service>,
    registration: Arc<Mutex<Option<Registration>>>,
    publisher: tokio::task::JoinHandle<()>,
    /// Forgets a node seen dead among the holders of the actors here.
    deaths: tokio::task::JoinHandle<()>,
    /// Moves tasks waiting here to nodes with room (`spill`).
    spill: tokio::task::JoinHandle<()>,
    /// Probes the nodes that are suspect or waited on (`health`).
    prober: tokio::task::JoinHandle<()>,
    peer_address: String,
}

/// Loads component `name` on the node (a forwarded task's component the
/// node has not followed yet): given by the node, which this layer does
/// not name.
pub type Loader = Arc<dyn Fn(String) -> BoxFuture<'static, ()> + Send + Sync>;

impl Cluster {
    /// Joins the cluster `config` names for the node of `sched` (started
    /// at `started_ms`), with `registry` as its membership: starts the
    /// node-to-node channel, registers the node, and connects the
    /// scheduler to the other nodes. Its work runs on the calling tokio
    /// runtime. The channel's address.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the channel cannot listen;
    /// [`Error::ControlPlane`] when the registry refuses.
    pub async fn join(
        sched: &Arc<Scheduler>,
        started_ms: u64,
        loader: Loader,
        jobs: JobState,
        config: ClusterConfig,
        registry: Arc<dyn NodeRegistry>,
        relay: RelaySlot,
    ) -> Result<(Self, SocketAddr)> {
        let node_id = sched.node_id().to_owned();
        let runtime = tokio::runtime::Handle::current();
        let invalid = |what: &str, e: &dyn std::fmt::Display| {
            Error::InvalidConfig(format!("the node-to-node channel: {what}: {e}"))
        };
        let mut peer = PeerConfig::new(config.token.clone());
        peer.tls = config.tls.clone();
        peer.node_id = Some(node_id.clone());
        peer.wray_version = env!("CARGO_PKG_VERSION").to_owned();
        if let Some(versions) = &config.protocol_versions {
            peer.protocol_versions = versions.clone();
        }
        let client =
            PeerClient::new(peer.clone(), node_id.clone()).map_err(|e| invalid("client", &e))?;
        let mut long = peer.clone();
        long.request_timeout = Duration::from_secs(7 * 24 * 3600);
        // Up to 64 tasks in flight to one node; at most
        // `max_idle_per_peer` (8) of their connections kept once idle (so
        // a burst of short tasks opens a connection, and does the token's
        // handshake, for most of its tasks: issue 40 measured it; keeping
        // 64 idle made a two-driver test fail, see docs/benchmarks.md).
        long.max_connections_per_peer = TASK_CONNECTIONS_PER_PEER;
        let tasks = PeerClient::new(long, node_id.clone()).map_err(|e| invalid("client", &e))?;
        let probes =
            health::probe_client(peer.clone(), &node_id).map_err(|e| invalid("client", &e))?;
        let view = registry.watch_nodes(&config.name).await?;
        view.forget_dead_after(config.dead_node_keep);
        let traffic = Arc::new(transfer::Traffic::default());
        let kick: Arc<tokio::sync::Notify> = Default::default();
        let node_health = Arc::new(health::Health::new(kick.clone()));
        let forwarder = Arc::new_cyclic(|this| forward::Forwarder {
            sched: Arc::downgrade(sched),
            node_id: node_id.clone(),
            cluster: config.name.clone(),
            view: view.clone(),
            tasks,
            client: client.clone(),
            probes: probes.clone(),
            health: node_health.clone(),
            runtime: runtime.clone(),
            retried: Default::default(),
            resent: Default::default(),
            preempted: Default::default(),
            moved: Default::default(),
            actors_restarted: Default::default(),
            forwarded: Default::default(),
            kept: Default::default(),
            loads: Default::default(),
            spread_threshold: config.spread_threshold,
            kick,
            parked: Default::default(),
            job_nodes: Default::default(),
            this: this.clone(),
            traffic: traffic.clone(),
            jobs: jobs.clone(),
        });
        let service = serve::Service::new(
            loader,
            sched,
            client,
            view.clone(),
            relay,
            traffic.clone(),
            jobs,
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
        let peer_address = format!("{host}:{}", config.advertise_port.unwrap_or(port));
        let record = membership::record(sched, started_ms, &config, &peer_address, &traffic, false);
        let registration = registry.register(record, config.registry).await?;
        if !sched.join_cluster(forwarder.clone()) {
            return Err(Error::InvalidConfig(
                "the node is in a cluster already".into(),
            ));
        }
        let registration = Arc::new(Mutex::new(Some(registration)));
        let deaths = runtime.spawn(on_deaths(
            Arc::downgrade(&service),
            Arc::downgrade(&forwarder),
            view.subscribe(),
        ));
        let prober = runtime.spawn(health::watch(
            Arc::downgrade(&node_health),
            view.clone(),
            probes,
            node_id.clone(),
        ));
        let spill = runtime.spawn(spill::spill_loop(
            Arc::downgrade(&forwarder),
            forwarder.kick.clone(),
            view.subscribe(),
        ));
        let publisher = runtime.spawn(membership::publish(
            Arc::downgrade(sched),
            started_ms,
            config.clone(),
            peer_address.clone(),
            registration.clone(),
            service.clone(),
        ));
        let cluster = Cluster {
            name: config.name.clone(),
            view,
            forwarder,
            server: Mutex::new(Some(server)),
            service,
            registration,
            publisher,
            deaths,
            spill,
            prober,
            peer_address,
        };
        Ok((cluster, SocketAddr::new(config.peer_bind.ip(), port)))
    }

    /// Drains the node (`drain`): published as draining, its queued
    /// forwarded tasks handed back to their owners, its running ones
    /// given `grace` to end (then stopped, to run elsewhere). Returns
    /// once none runs; the node then leaves ([`Cluster::leave`]).
    pub async fn drain(&self, grace: Duration) {
        self.service.drain(grace).await;
    }

    /// Leaves the cluster: the lease revoked (the others see the node dead
    /// at once), the channel stopped after requests in flight end within
    /// `grace`.
    pub async fn leave(&self, grace: Duration) {
        self.publisher.abort();
        self.deaths.abort();
        self.spill.abort();
        self.prober.abort();
        let registration = self.registration.lock().take();
        if let Some(r) = registration {
            if let Err(e) = r.shutdown().await {
                tracing::warn!("leaving the cluster: {e}");
            }
        }
        let server = self.server.lock().take();
        if let Some(s) = server {
            s.shutdown(grace).await;
        }
    }

    /// `request` answered by another live node of the cluster (the first
    /// that does not answer 404), with that node's id.
    pub async fn relay(&self, request: RelayRequest) -> Option<(String, RelayResponse)> {
        self.forwarder.relay(request).await
    }

    /// `request` sent to every other live node (see
    /// [`forward::Forwarder::relay_each`]).
    pub fn relay_each(
        &self,
        request: RelayRequest,
        only: Option<&str>,
        deadline: Duration,
    ) -> NodeAnswers {
        self.forwarder.relay_each(request, only, deadline)
    }

    /// Whether node `id` is alive, as the view says.
    pub fn is_alive(&self, id: &str) -> bool {
        self.forwarder.is_alive(id)
    }

    /// The live nodes' records.
    pub fn alive(&self) -> Vec<wray_control_plane::NodeRecord> {
        self.view.alive()
    }

    /// Every node known, alive and recently dead, by id.
    pub fn nodes(&self) -> Vec<ClusterMember> {
        let mut all = self.view.snapshot();
        all.sort_by(|a, b| a.record.id.cmp(&b.record.id));
        all
    }

    /// The live nodes this node does not place work on now, by id: why
    /// (`unprobed`, `unreachable`, `stalled`, `quarantined`) and what
    /// showed it.
    pub fn suspects(&self) -> BTreeMap<String, (String, String)> {
        self.forwarder
            .health
            .suspects()
            .into_iter()
            .map(|(id, why, seen)| (id, (why.as_str().to_string(), seen)))
            .collect()
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This node's channel address, as the others reach it.
    pub fn peer_address(&self) -> &str {
        &self.peer_address
    }

    /// Counters of the cluster work.
    pub fn stats(&self) -> ClusterStats {
        let (object_bytes_sent, object_bytes_received) = self.forwarder.traffic.totals();
        ClusterStats {
            retried: self.forwarder.retried.load(Ordering::Relaxed),
            resent: self.forwarder.resent.load(Ordering::Relaxed),
            preempted: self.forwarder.preempted.load(Ordering::Relaxed),
            moved: self.forwarder.moved.load(Ordering::Relaxed),
            actors_restarted: self.forwarder.actors_restarted.load(Ordering::Relaxed),
            forwarded: self.forwarder.forwarded.load(Ordering::Relaxed),
            taken: self.service.taken.load(Ordering::Relaxed),
            cancelled_owner_died: self.service.cancelled_owner_died.load(Ordering::Relaxed),
            peer_unknown_methods: self.service.unknown_methods.count(),
            object_bytes_sent,
            object_bytes_received,
            peer_refused: self
                .server
                .lock()
                .as_ref()
                .map(|s| s.stats().refused)
                .unwrap_or_default(),
        }
    }
}

/// On each node `events` says died, until the node leaves: lets what it
/// owned here go (`fate`), forgets it among the holders of the actors
/// here (`serve`; one no node holds any more exits), and restarts the
/// actors this node owns that lived there and have restarts left
/// (`actors`).
async fn on_deaths(
    service: std::sync::Weak<serve::Service>,
    forwarder: std::sync::Weak<forward::Forwarder>,
    mut events: tokio::sync::broadcast::Receiver<wray_control_plane::NodeEvent>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let event = events.recv().await;
        let (Some(service), Some(forwarder)) = (service.upgrade(), forwarder.upgrade()) else {
            return;
        };
        match event {
            Ok(wray_control_plane::NodeEvent::Died(node)) => {
                // What it owned here goes with it (`fate`), the jobs
                // whose log was there included.
                service.owner_died(&node);
                service.holders_gone(Some(&node));
                forwarder.restart_idle(Some(&node));
            }
            // Deaths may have been missed: check every holder and actor.
            Err(RecvError::Lagged(_)) => {
                service.owners_gone();
                service.holders_gone(None);
                forwarder.restart_idle(None);
            }
            Ok(_) => {}
            Err(RecvError::Closed) => return,
        }
    }
}

/// Counters of a node's cluster work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterStats {
    /// Tasks run again because the node running them died or could not
    /// be reached.
    pub retried: u64,
    /// Tasks and actor constructors placed again because the node they
    /// were sent to could not be reached before it took them (refused,
    /// failed its handshake or authentication): not retries, they never
    /// ran there.
    pub resent: u64,
    /// Tasks run again because the draining node running them stopped
    /// them at its grace (`CUT`): not retries, as Ray's preempted nodes.
    pub preempted: u64,
    /// Tasks moved to a node with room while they waited for resources
    /// (spillback): sent on from this node's queue, handed back to their
    /// owner from it, or placed again after the node they were sent to
    /// handed them back.
    pub moved: u64,
    /// Actors this node owns restarted on another node after theirs died.
    pub actors_restarted: u64,
    /// Tasks (functions, actor constructors and calls) this node sent to
    /// other nodes to run, each attempt counted.
    pub forwarded: u64,
    /// Tasks (functions and actor calls) other nodes sent here that ran
    /// here, their results answered (not those handed back or cut by a
    /// drain): tasks whose owner is another node.
    pub taken: u64,
    /// Tasks other nodes sent here cancelled because the node that sent
    /// them (their owner) died (`fate`).
    pub cancelled_owner_died: u64,
    /// Calls of a peer method this node does not know (a newer node's,
    /// or a hostile peer's), answered `UNKNOWN_METHOD`.
    pub peer_unknown_methods: u64,
    /// Bytes of object values sent to other nodes (inline in messages,
    /// and served to their pulls).
    pub object_bytes_sent: u64,
    /// Bytes of object values received from other nodes.
    pub object_bytes_received: u64,
    /// Connections this node's channel refused, by reason (a bad or
    /// silent hello, a failed proof of the token, another protocol
    /// version, a budget full).
    pub peer_refused: wray_peer::RefusalCounts,
}
