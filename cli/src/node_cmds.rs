//! `wray start` and `wray stop`: a long-running node serving the HTTP API
//! (`wray-http`) until `wray stop` or SIGTERM.
//!
//! `wray start` runs the node in the background (itself again, with
//! `--foreground`, in a process group of its own) and returns once it
//! serves, or reports why it could not start: the node process's stderr is
//! a pipe to `wray start` until it serves, then `/dev/null` (everything it
//! says afterwards goes to its log). Its node directory (`node_dir`) holds
//! `node.json`, `token`, `cert.pem` while it runs, and its rotated
//! `node.log` and session files for good; `node_latest` and
//! `session_latest` are pointed at it only once it serves. A node that
//! does not start removes the directory it made. SIGTERM (or SIGINT)
//! drains: the listening socket is closed (new clients are refused), the
//! requests in flight finish (up to `--grace` seconds), then the node
//! shuts down and removes its running files.
//!
//! Guests of plain calls write into the node's task outputs
//! ([`wray_host::task_output`]): each call's first 64 KiB, in the log and
//! by task id (`wray logs TASK_ID`).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio as ProcessStdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use wray_control_plane::{
    EtcdActorDirectory, EtcdClient, EtcdConfig, EtcdFunctionTable, EtcdNodeRegistry,
    RegistryOptions,
};
use wray_host::{Node, Stdio};
use wray_http::{HttpConfig, Server, TlsFiles};

use crate::client::NodeArg;
use crate::node_args::NodeArgs;
use crate::node_dir::{self, NodeFile};
use crate::node_log::{self, LogArgs};
use crate::process::ProcessRef;

/// How long `wray start` waits for the node to serve.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of the node's start-up messages `wray start` shows.
const START_MESSAGES: u64 = 64 << 10;

/// Arguments of `wray start`.
#[derive(Args)]
pub struct StartArgs {
    /// Port of the HTTP API (0: any free port).
    #[arg(long, default_value_t = 8265)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Serve without a token (only on a loopback address).
    #[arg(long)]
    no_auth: bool,
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    log: LogArgs,
    /// Keep the function table in etcd at this URL (`http://HOST:PORT` or
    /// `https://HOST:PORT`) instead of in this process.
    #[arg(long, value_name = "URL", value_parser = parse_etcd_url)]
    etcd: Option<String>,
    /// The cluster this node joins (with `--etcd`): every node started on
    /// the same etcd with the same name is one cluster.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "default",
        requires = "etcd"
    )]
    cluster: String,
    /// The cluster token (a file only its owner may read, 0600), given to
    /// every node of the cluster: the node-to-node channel refuses a peer
    /// without it. Needed with `--etcd`.
    #[arg(long, value_name = "FILE", requires = "etcd")]
    cluster_token_file: Option<std::path::PathBuf>,
    /// The certificates (PEM) this node trusts for the other nodes' channel,
    /// when it has `--tls-cert`: the cluster's CA, or the certificate every
    /// node shares (default: `--tls-cert` itself). With `--tls-cert`, the
    /// node-to-node channel is TLS too, presenting that certificate.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    cluster_ca: Option<std::path::PathBuf>,
    /// Port of the node-to-node channel (0: any free port), on `--bind`.
    #[arg(long, default_value_t = 0, requires = "etcd")]
    peer_port: u16,
    /// The host other nodes reach this one at (default: `--bind`, or
    /// 127.0.0.1 when that is 0.0.0.0).
    #[arg(long, value_name = "HOST", requires = "etcd")]
    advertise_host: Option<String>,
    /// The port other nodes reach the node-to-node channel at, when it is
    /// not `--peer-port` (a port forwarded to it, behind a NAT or a
    /// proxy; default: the port it listens on).
    #[arg(long, value_name = "PORT", requires = "etcd", value_parser = clap::value_parser!(u16).range(1..))]
    advertise_peer_port: Option<u16>,
    /// Seconds the node's lease in etcd lives without a heartbeat: the
    /// others see it dead that long after its last one (2 to 3600).
    #[arg(long, value_name = "SECS", default_value_t = 4, value_parser = clap::value_parser!(u64).range(2..=3600))]
    lease_ttl: u64,
    /// Milliseconds between heartbeats (under half the lease).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=1_800_000))]
    heartbeat_ms: u64,
    /// Hybrid placement's threshold, 0 to 1 (Ray's
    /// `scheduler_spread_threshold`): a task stays on the node it was
    /// submitted to while that node's busiest resource the task asks for
    /// is used under this share, and goes to the least used node with
    /// room past it (0: always the least used, as SPREAD; 1: pack here
    /// until full).
    #[arg(long, value_name = "SHARE", default_value_t = wray_host::DEFAULT_SPREAD_THRESHOLD, value_parser = spread_threshold, requires = "etcd")]
    spread_threshold: f64,
    /// Seconds a dead node stays listed (`wray status`, `/v1/nodes`) after
    /// it died, then it is forgotten (0 to 86400).
    #[arg(long, value_name = "SECS", default_value_t = wray_host::DEAD_NODE_KEEP.as_secs(), value_parser = clap::value_parser!(u64).range(0..=86_400), requires = "etcd")]
    dead_node_keep: u64,
    /// For tests of rolling upgrades only (hidden): the node-to-node
    /// protocol versions this node claims to speak, `MIN..MAX` (as
    /// `wray_peer::PeerConfig::protocol_versions`).
    #[arg(long, value_name = "MIN..MAX", value_parser = parse_protocols, requires = "etcd", hide = true)]
    peer_protocol: Option<std::ops::RangeInclusive<u16>>,
    /// Seconds the node drains after SIGTERM (`wray stop`): the HTTP
    /// requests in flight and the tasks other nodes sent it that run get
    /// that long to finish (their results sent back); those it queued are
    /// handed back to their owners at once. Past it, what still runs is
    /// stopped, and its owners run it elsewhere.
    #[arg(long, default_value_t = 30)]
    grace: u64,
    /// Largest answer of a synchronous call, in MiB (1 to 4,096): a larger
    /// result is answered 507 `result_too_large`, to be fetched with
    /// `?async=true` and `GET /v1/objects/{id}` (which sends a value of
    /// any size without copying it).
    #[arg(long, value_name = "MIB", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    max_response_mib: u32,
    /// With --no-auth: a name clients reach the node by (a DNS name of
    /// this machine), as a request's `Host` may give it (repeatable). An
    /// address, `localhost` and the machine's host name are always taken;
    /// any other name is refused (421), so that another site's name
    /// rebound to this address reaches nothing.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// Serve https with this certificate chain (PEM, the node's own
    /// certificate first); needs `--tls-key`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Run in this process instead of in the background (it still logs
    /// to node.log).
    #[arg(long)]
    foreground: bool,
    /// Set by `wray start` for its node process: once it serves, its
    /// stdin, stdout and stderr become /dev/null.
    #[arg(long, hide = true, requires = "foreground")]
    detach_when_started: bool,
}

impl StartArgs {
    /// Whether this process is to be the node (rather than start it).
    pub fn foreground(&self) -> bool {
        self.foreground
    }
}

/// Checks `--etcd`: `http://HOST:PORT` or `https://HOST:PORT`.
/// `MIN..MAX` (or `MIN..=MAX`, or one version): a range of protocol
/// versions, each 2 or more.
fn parse_protocols(text: &str) -> Result<std::ops::RangeInclusive<u16>, String> {
    let (min, max) = match text.split_once("..") {
        Some((min, max)) => (min, max.trim_start_matches('=')),
        None => (text, text),
    };
    let number = |t: &str| {
        t.trim()
            .parse::<u16>()
            .map_err(|e| format!("`{t}` is not a protocol version: {e}"))
    };
    let (min, max) = (number(min)?, number(max)?);
    if min < 2 || min > max {
        return Err(format!("{min}..{max} is not a range of versions from 2"));
    }
    Ok(min..=max)
}

fn parse_etcd_url(text: &str) -> Result<String, String> {
    let expected = "expected http://HOST:PORT or https://HOST:PORT (e.g. http://127.0.0.1:2379)";
    let url = url::Url::parse(text).map_err(|e| format!("{e}: {expected}"))?;
    // The port as written (`Url::port` hides a scheme's default one).
    let authority = text
        .split_once("://")
        .and_then(|(_, rest)| rest.split('/').next())
        .unwrap_or("");
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let fine = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|h| !h.is_empty())
        && has_port
        && url.path().trim_end_matches('/').is_empty()
        && url.query().is_none()
        && url.username().is_empty();
    if !fine {
        return Err(expected.to_string());
    }
    Ok(text.trim_end_matches('/').to_string())
}

/// The files under `--tls-cert` and `--tls-key`, when both are given.
fn tls_files(args: &StartArgs) -> Option<TlsFiles> {
    Some(TlsFiles {
        cert: args.tls_cert.clone()?,
        key: args.tls_key.clone()?,
    })
}

/// `wray start`.
///
/// # Errors
/// The node cannot start (configuration, port in use: what it said is
/// shown first), or did not serve within a minute.
pub fn start(args: StartArgs) -> anyhow::Result<ExitCode> {
    if args.foreground {
        return foreground(&args);
    }
    let exe = std::env::current_exe().context("finding the wray executable")?;
    let root = node_dir::root();
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    // The node process takes this command's own flags, unchanged.
    let mut child = Command::new(exe)
        .arg("start")
        .arg("--foreground")
        .arg("--detach-when-started")
        .args(std::env::args_os().skip(2))
        .stdin(ProcessStdio::null())
        .stdout(ProcessStdio::null())
        .stderr(ProcessStdio::piped())
        .process_group(0)
        .spawn()
        .context("starting the node process")?;
    let dir = node_dir::node_dir(child.id());
    // Its stderr ends when it serves (it detaches) or exits.
    let (said_tx, said_rx) = std::sync::mpsc::channel();
    if let Some(stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut said = Vec::new();
            let mut stderr = stderr;
            let _ = (&mut stderr).take(START_MESSAGES).read_to_end(&mut said);
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            let _ = said_tx.send(said);
        });
    }
    let Ok(said) = said_rx.recv_timeout(START_TIMEOUT) else {
        // Nothing points at it yet: end it rather than leave a node
        // behind that nobody was told of.
        let _ = child.kill();
        let _ = child.wait();
        bail!(
            "the node (process {}) did not serve within {} s, and was killed; see {}",
            child.id(),
            START_TIMEOUT.as_secs(),
            node_log::log_path(&dir).display()
        );
    };
    // `node.json` is written last before it detaches: there, and the
    // process alive, it serves.
    if let Ok(node) = node_dir::running_node(&dir) {
        println!(
            "wray node started: {} (process {})",
            node.url, node.process.pid
        );
        if node.auth {
            println!("token: {}", dir.join("token").display());
        }
        if let Some(cert) = &node.cacert {
            println!("certificate: {}", cert.display());
        }
        println!("log: {}", node_log::log_path(&dir).display());
        println!(
            "stop it with `wray stop` (or `wray stop --node {}`)",
            node.process.pid
        );
        return Ok(ExitCode::SUCCESS);
    }
    let status = child.wait().context("waiting for the node process")?;
    let said = String::from_utf8_lossy(&said);
    eprint!("{said}");
    if !said.is_empty() && !said.ends_with('\n') {
        eprintln!();
    }
    bail!("the node did not start (its process ended with {status})")
}

/// The node, in this process: serves until SIGTERM or SIGINT.
fn foreground(args: &StartArgs) -> anyhow::Result<ExitCode> {
    let dir = node_dir::node_dir(std::process::id());
    let made = !dir.exists();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // A node before with this process id was killed: its files are stale.
    node_dir::remove_running_files(&dir);
    // Watched before the node says it serves: a SIGTERM sent as soon as
    // `wray start` returns drains the node rather than killing it.
    let signals = Signals::new([SIGINT, SIGTERM]);
    let started = node_log::init(&dir, &args.log).and_then(|()| serve(args, &dir));
    let started = match started {
        Ok(started) => started,
        Err(e) => {
            // Nothing points here yet: remove what this start made.
            if made {
                let _ = std::fs::remove_dir_all(&dir);
            } else {
                node_dir::remove_running_files(&dir);
            }
            return Err(e);
        }
    };
    if args.detach_when_started {
        detach();
    }
    started.run(&dir, Duration::from_secs(args.grace), signals);
    Ok(ExitCode::SUCCESS)
}

/// A node that serves: what [`Started::run`] needs until it stops.
struct Started {
    runtime: tokio::runtime::Runtime,
    node: Arc<Node>,
    server: Server,
    session: Option<crate::session::Session>,
}

/// The numbers of the runtime's threads (`wray-io-N`).
static IO_THREADS: ThreadNumbers = ThreadNumbers::new();

/// Numbers for a runtime's thread names: the lowest one not in use.
struct ThreadNumbers {
    /// Numbers given back, and the next never given.
    free: std::sync::Mutex<(std::collections::BTreeSet<usize>, usize)>,
}

impl ThreadNumbers {
    const fn new() -> Self {
        Self {
            free: std::sync::Mutex::new((std::collections::BTreeSet::new(), 0)),
        }
    }

    /// The lowest number not in use.
    fn take(&self) -> usize {
        let Ok(mut free) = self.free.lock() else {
            return 0;
        };
        let (given_back, next) = &mut *free;
        if let Some(n) = given_back.pop_first() {
            return n;
        }
        *next = next.saturating_add(1);
        *next - 1
    }

    /// `n` is not in use any more.
    fn give_back(&self, n: usize) {
        if let Ok(mut free) = self.free.lock() {
            if n < free.1 {
                free.0.insert(n);
            }
        }
    }
}

/// Starts the node and its server in `dir`: bound, `node.json` written,
/// `node_latest` and `session_latest` pointing at `dir`.
fn serve(args: &StartArgs, dir: &Path) -> anyhow::Result<Started> {
    let token = (!args.no_auth).then(new_token).transpose()?;
    let mut config = args.node.config()?;
    config.stdio = Stdio::capture();
    // Jobs' working directories, kept while the node runs (emptied when
    // it starts).
    config.working_dir_cache = Some(dir.join("working_dirs"));
    // The process's one runtime: the HTTP API, the cluster, the control
    // plane's client and the node's own I/O (guests' timers and WASI I/O)
    // all run as its tasks.
    // At least two threads, as the HTTP API's runtime and the node's own
    // `wray-io` had between them on one core: a thread serving an HTTP
    // call's guest leaves another to drive guests' timers.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        // One name per thread: the HTTP API's calls run their tasks on
        // these threads, which the timeline draws as a row each. A name is
        // given back when its thread ends (the runtime's blocking threads
        // come and go), so the rows are as many as the threads at once.
        .thread_name_fn(|| format!("wray-io-{}", IO_THREADS.take()))
        .on_thread_stop(|| {
            let name = std::thread::current().name().map(str::to_string);
            if let Some(n) = name.and_then(|n| n.strip_prefix("wray-io-")?.parse().ok()) {
                IO_THREADS.give_back(n);
            }
        })
        .build()?;
    let io = runtime.handle().clone();
    let (node, etcd) = match &args.etcd {
        None => (Node::start_on(config, io)?, None),
        Some(url) => {
            let client = runtime
                .block_on(EtcdClient::connect(EtcdConfig::new([url.as_str()])))
                .with_context(|| format!("connecting to etcd at {url}"))?;
            let table = EtcdFunctionTable::new(client.clone());
            (
                Node::with_function_table_on(config, Arc::new(table), io)?,
                Some(client),
            )
        }
    };
    let http = HttpConfig {
        bind: SocketAddr::new(args.bind, args.port),
        token: token.clone(),
        tls: tls_files(args),
        max_response: usize::try_from(u64::from(args.max_response_mib) << 20).unwrap_or(usize::MAX),
        node_log: Some(node_log::log_path(dir)),
        allowed_hosts: args.allow_hosts.clone(),
        ..HttpConfig::default()
    };
    let server = match runtime.block_on(Server::bind(node.clone(), http)) {
        Ok(server) => server,
        Err(e) => {
            node.shutdown();
            return Err(e.into());
        }
    };
    let addr = server.local_addr()?;
    if let Some(client) = etcd {
        let scheme = if tls_files(args).is_some() {
            "https"
        } else {
            "http"
        };
        let joined = runtime.block_on(join(args, &node, client, format!("{scheme}://{addr}")));
        if let Err(e) = joined {
            node.shutdown();
            return Err(e);
        }
    }
    if let Some(token) = &token {
        write_private(&dir.join("token"), token)?;
    }
    let file = describe(dir, addr, &node, token.is_some(), tls_files(args).as_ref())?;
    write_private(&dir.join("node.json"), &serde_json::to_string(&file)?)?;
    // It serves: from here on nothing fails, and the links may point here.
    let session = crate::session::Session::start(&node, dir.to_path_buf());
    let link = node_dir::latest();
    let _ = std::fs::remove_file(&link);
    if let Err(e) = std::os::unix::fs::symlink(dir, &link) {
        tracing::warn!("cannot link {}: {e}", link.display());
    }
    tracing::info!("wray node {} serving {}", node.id(), file.url);
    eprintln!("wray node {} serving {}", node.id(), file.url);
    Ok(Started {
        runtime,
        node,
        server,
        session,
    })
}

/// Parses `--spread-threshold`: a share from 0 to 1.
fn spread_threshold(text: &str) -> Result<f64, String> {
    let share: f64 = text
        .parse()
        .map_err(|e| format!("`{text}` is not a number: {e}"))?;
    if (0.0..=1.0).contains(&share) {
        Ok(share)
    } else {
        Err(format!("{share} is not a share from 0 to 1"))
    }
}

/// Joins the cluster `args` name on etcd (`client`): the token read from
/// `--cluster-token-file`, the channel on `--bind`:`--peer-port`.
async fn join(
    args: &StartArgs,
    node: &Arc<Node>,
    client: EtcdClient,
    http_address: String,
) -> anyhow::Result<()> {
    let Some(token_file) = &args.cluster_token_file else {
        anyhow::bail!(
            "--etcd makes this node a member of cluster `{}`: give it the cluster's token \
             with --cluster-token-file FILE (the same file, mode 0600, on every node)",
            args.cluster
        );
    };
    wray_control_plane::check_cluster(&args.cluster)?;
    let token = wray_peer::PeerConfig::token_from_file(token_file)?;
    let registry = RegistryOptions {
        lease_ttl: Duration::from_secs(args.lease_ttl),
        heartbeat: Duration::from_millis(args.heartbeat_ms),
        ..RegistryOptions::default()
    };
    registry.check()?;
    let config = wray_host::ClusterConfig {
        name: args.cluster.clone(),
        token,
        peer_bind: SocketAddr::new(args.bind, args.peer_port),
        advertise_host: args.advertise_host.clone(),
        advertise_port: args.advertise_peer_port,
        http_address: Some(http_address),
        registry,
        labels: Default::default(),
        spread_threshold: args.spread_threshold,
        protocol_versions: args.peer_protocol.clone(),
        dead_node_keep: Duration::from_secs(args.dead_node_keep),
        tls: tls_files(args).map(|files| wray_peer::PeerTls {
            trust: args
                .cluster_ca
                .clone()
                .unwrap_or_else(|| files.cert.clone()),
            cert: Some(files.cert),
            key: Some(files.key),
            server_name: None,
        }),
    };
    let peer = node
        .join_cluster(
            config,
            Arc::new(EtcdNodeRegistry::new(client.clone())),
            Arc::new(EtcdActorDirectory::new(client, &args.cluster)?),
        )
        .await
        .context("joining the cluster")?;
    tracing::info!(%peer, cluster = args.cluster, "the node-to-node channel listens");
    Ok(())
}

/// How long the node-to-node channel lets its last answers go once the
/// node drained and left its cluster: 2 s (its peers' work here has ended
/// by then, or was cut at the grace).
const LEAVE_GRACE: Duration = Duration::from_secs(2);

impl Started {
    /// Serves until SIGTERM or SIGINT (`signals`, registered before the
    /// node said it serves), drains (up to `grace`), removes the running
    /// files of `dir` and shuts the node down.
    fn run(self, dir: &Path, grace: Duration, signals: std::io::Result<Signals>) {
        let Started {
            runtime,
            node,
            server,
            session,
        } = self;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<i32>();
        let signal_handle = match signals {
            Ok(mut signals) => {
                let handle = signals.handle();
                let watcher = std::thread::Builder::new()
                    .name("wray-signals".into())
                    .spawn(move || {
                        if let Some(signal) = signals.forever().next() {
                            let _ = stop_tx.send(signal);
                        }
                    });
                if let Err(e) = watcher {
                    tracing::error!("no signal thread ({e}): the node stops only when killed");
                }
                Some(handle)
            }
            Err(e) => {
                tracing::error!("cannot watch SIGTERM ({e}): the node stops only when killed");
                None
            }
        };
        runtime.block_on(async {
            let (drained_tx, drained_rx) = tokio::sync::oneshot::channel::<()>();
            let serve = tokio::spawn(server.serve(async move {
                if let Ok(signal) = stop_rx.await {
                    tracing::info!("signal {signal}: draining (up to {} s)", grace.as_secs());
                }
                let _ = drained_tx.send(());
            }));
            let _ = drained_rx.await;
            // The HTTP requests in flight and the cluster's work here
            // (`Node::drain_cluster`) drain together, within the grace.
            let http = async {
                if tokio::time::timeout(grace, serve).await.is_err() {
                    tracing::warn!(
                        "requests still running after {} s: stopping them",
                        grace.as_secs()
                    );
                }
            };
            tokio::join!(http, node.drain_cluster(grace));
        });
        if let Some(handle) = signal_handle {
            handle.close();
        }
        runtime.block_on(node.leave_cluster(LEAVE_GRACE));
        node_dir::remove_running_files(dir);
        if let Some(s) = session {
            s.finish();
        }
        // The node before the runtime it runs on: its workers' guest calls
        // use the runtime's timers until they have stopped.
        node.shutdown();
        runtime.shutdown_timeout(Duration::from_secs(1));
        tracing::info!("wray node {} stopped", node.id());
    }
}

/// Points this process's stdin, stdout and stderr at /dev/null: `wray
/// start` stopped reading them (a write there would fail), and the log
/// has what the node says from now on.
fn detach() {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        Ok(null) => {
            use std::os::fd::AsRawFd;
            for fd in 0..=2 {
                // SAFETY: dup2 onto the standard descriptors, from an open
                // file; it touches no memory.
                if unsafe { libc::dup2(null.as_raw_fd(), fd) } < 0 {
                    tracing::warn!(
                        "cannot point descriptor {fd} at /dev/null: {}",
                        std::io::Error::last_os_error()
                    );
                }
            }
        }
        Err(e) => tracing::warn!("cannot open /dev/null: {e}"),
    }
}

/// The `node.json` of this process's `node` serving on `addr`, with the
/// token if `auth`; over https (`tls`), the certificate copied into `dir`
/// for the clients to trust.
fn describe(
    dir: &Path,
    addr: SocketAddr,
    node: &Node,
    auth: bool,
    tls: Option<&TlsFiles>,
) -> anyhow::Result<NodeFile> {
    let (scheme, cacert) = match tls {
        None => ("http", None),
        Some(files) => {
            let copy = dir.join("cert.pem");
            std::fs::copy(&files.cert, &copy).with_context(|| {
                format!("copying {} to {}", files.cert.display(), copy.display())
            })?;
            ("https", Some(copy))
        }
    };
    Ok(NodeFile {
        process: ProcessRef::current(),
        node_id: node.id().to_string(),
        url: format!("{scheme}://{}", reachable(addr)),
        auth,
        cacert,
    })
}

/// `addr`, or the loopback address of its family when it is every address
/// (`0.0.0.0`, `::`): where a client on this machine reaches it, and a
/// name its certificate can carry.
fn reachable(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

/// 32 random bytes as 64 hex digits.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for the token: {e}"))?;
    Ok(hex::encode(bytes))
}

/// Writes `text` to `path`, readable by this user only (mode 0600).
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Arguments of `wray stop`.
#[derive(Args)]
pub struct StopArgs {
    /// Seconds to wait for the node to exit.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    #[command(flatten)]
    node: NodeArg,
}

/// `wray stop`: SIGTERM to the selected node (by default the latest), if
/// its process is still the one that started it; then waits for it to exit.
///
/// # Errors
/// No node is running there (a dead one's stale files are removed, and the
/// error says so), or it did not exit in time.
pub fn stop(args: StopArgs) -> anyhow::Result<ExitCode> {
    let dir = args.node.local_dir()?;
    let node = node_dir::read_node_file(&dir)?;
    if !node.process.is_alive() {
        let message = node_dir::dead_message(&dir, &node);
        node_dir::remove_running_files(&dir);
        bail!("{message}; its running files are removed now");
    }
    node.process.signal(libc::SIGTERM)?;
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    while node.process.is_alive() {
        if Instant::now() > deadline {
            bail!(
                "node process {} did not exit within {} s",
                node.process.pid,
                args.timeout
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("wray node {} stopped", node.url);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etcd_urls_are_http_or_https_host_and_port() {
        for good in [
            "http://127.0.0.1:2379",
            "https://etcd.example:2379/",
            "http://[::1]:2379",
            "http://127.0.0.1:80",
        ] {
            assert!(parse_etcd_url(good).is_ok(), "{good}");
        }
        for bad in [
            "notaurl",
            "127.0.0.1:2379",
            "http://127.0.0.1",
            "http://[::1]",
            "ftp://127.0.0.1:2379",
            "http://127.0.0.1:2379/path",
            "http://user@127.0.0.1:2379",
        ] {
            let err = parse_etcd_url(bad).unwrap_err();
            assert!(err.contains("http://HOST:PORT"), "{bad}: {err}");
        }
    }
}
