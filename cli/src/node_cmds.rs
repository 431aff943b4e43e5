//! `wray start` and `wray stop`: a long-running node serving the HTTP API
//! (`wray-http`) until `wray stop` or SIGTERM.
//!
//! `wray start` runs the node in the background (itself again, with
//! `--foreground`, in a process group of its own, its output in the node
//! directory's `node.log`) and returns once it answers. The node directory
//! is `<tmp>/wray/node-<pid>`, linked from `<tmp>/wray/node_latest`; it
//! holds `node.json` (process id, URL), `token` (the bearer token, mode
//! 0600, made at start), with `--tls-cert` `cert.pem` (a copy of the
//! certificate, which the clients trust), `node.log`, and the session files
//! `wray status`, `tasks`, `errors` and `timeline` read (`session_latest`
//! points at it while it runs). SIGTERM (or SIGINT) drains: no new
//! connections, the requests in flight finish (up to `--grace` seconds),
//! then the node shuts down and removes `node.json`, `token` and
//! `cert.pem`.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio as ProcessStdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use wray_control_plane::{EtcdConfig, EtcdFunctionTable};
use wray_host::Node;
use wray_http::{HttpConfig, Server, TlsFiles};

use crate::node_args::NodeArgs;

/// Root of node and session directories.
fn root() -> PathBuf {
    std::env::temp_dir().join("wray")
}

/// The directory of the node started last.
pub fn latest() -> PathBuf {
    root().join("node_latest")
}

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
    /// Keep the function table in etcd at this URL (e.g.
    /// `http://127.0.0.1:2379`) instead of in this process.
    #[arg(long, value_name = "URL")]
    etcd: Option<String>,
    /// Seconds the requests in flight get to finish after SIGTERM.
    #[arg(long, default_value_t = 30)]
    grace: u64,
    /// Largest answer of a synchronous call, in MiB (1 to 4,096): a larger
    /// result is answered 507 `result_too_large`, to be fetched with
    /// `?async=true` and `GET /v1/objects/{id}` (which sends a value of
    /// any size without copying it).
    #[arg(long, value_name = "MIB", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    max_response_mib: u32,
    /// Serve https with this certificate chain (PEM, the node's own
    /// certificate first); needs `--tls-key`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Run in this process instead of in the background.
    #[arg(long)]
    foreground: bool,
}

/// The node directory's description of a running node.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct NodeFile {
    /// Process id of the node.
    pub pid: u32,
    /// Base URL of its HTTP API: `http://` or `https://`, and the
    /// loopback address when it listens on every address.
    pub url: String,
    /// Whether requests need the token.
    pub auth: bool,
    /// Over https: the certificate the clients trust (the node directory's
    /// copy of `--tls-cert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
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
/// The node cannot start (configuration, port in use), or did not answer
/// within a minute.
pub fn start(args: StartArgs) -> anyhow::Result<ExitCode> {
    if args.foreground {
        return foreground(&args);
    }
    let exe = std::env::current_exe().context("finding the wray executable")?;
    std::fs::create_dir_all(root()).with_context(|| format!("creating {}", root().display()))?;
    let log_path = root().join(format!("node-start-{}.log", std::process::id()));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    // The node process takes this command's own flags, unchanged.
    let mut cmd = Command::new(exe);
    cmd.arg("start")
        .arg("--foreground")
        .args(std::env::args_os().skip(2));
    let mut child = cmd
        .stdin(ProcessStdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the node process")?;
    let dir = root().join(format!("node-{}", child.id()));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(node) = read_node_file(&dir) {
            let _ = std::fs::remove_file(&log_path);
            println!("wray node started: {} (process {})", node.url, node.pid);
            if node.auth {
                println!("token: {}", dir.join("token").display());
            }
            if let Some(cert) = &node.cacert {
                println!("certificate: {}", cert.display());
            }
            println!("log: {}", dir.join("node.log").display());
            println!("stop it with `wray stop`");
            return Ok(ExitCode::SUCCESS);
        }
        if let Some(status) = child.try_wait()? {
            let said = std::fs::read_to_string(&log_path).unwrap_or_default();
            bail!(
                "the node exited ({status}) before it answered:\n{}",
                said.trim_end()
            );
        }
        if Instant::now() > deadline {
            bail!(
                "the node did not answer within 60 s; see {}",
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The node, in this process.
fn foreground(args: &StartArgs) -> anyhow::Result<ExitCode> {
    let dir = root().join(format!("node-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let token = (!args.no_auth).then(new_token).transpose()?;
    let config = args.node.config()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // One name per thread: the HTTP API's calls run their tasks on
        // these threads, which the timeline draws as a row each.
        .thread_name_fn(|| {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            format!("wray-http-{}", NEXT.fetch_add(1, Ordering::Relaxed))
        })
        .build()?;
    let node = match &args.etcd {
        None => Node::start(config)?,
        Some(url) => {
            let table = runtime
                .block_on(EtcdFunctionTable::connect(EtcdConfig::new([url.as_str()])))
                .with_context(|| format!("connecting to etcd at {url}"))?;
            Node::with_function_table(config, Arc::new(table))?
        }
    };
    let node: &'static Node = Box::leak(Box::new(node));
    let session = crate::session::Session::start(node);
    let http = HttpConfig {
        bind: SocketAddr::new(args.bind, args.port),
        token: token.clone(),
        tls: tls_files(args),
        max_response: usize::try_from(u64::from(args.max_response_mib) << 20).unwrap_or(usize::MAX),
        ..HttpConfig::default()
    };
    let server = runtime.block_on(Server::bind(node, http))?;
    let addr = server.local_addr()?;
    if let Some(token) = &token {
        write_private(&dir.join("token"), token)?;
    }
    let file = describe(&dir, addr, token.is_some(), tls_files(args).as_ref())?;
    write_private(&dir.join("node.json"), &serde_json::to_string(&file)?)?;
    let link = latest();
    let _ = std::fs::remove_file(&link);
    let _ = std::os::unix::fs::symlink(&dir, &link);
    eprintln!("wray node {} serving {}", node.id(), file.url);

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<i32>();
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let signal_handle = signals.handle();
    std::thread::Builder::new()
        .name("wray-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let _ = stop_tx.send(signal);
            }
        })?;
    let grace = Duration::from_secs(args.grace);
    runtime.block_on(async {
        let (drained_tx, drained_rx) = tokio::sync::oneshot::channel::<()>();
        let serve = tokio::spawn(server.serve(async move {
            if let Ok(signal) = stop_rx.await {
                eprintln!(
                    "wray: signal {signal}: draining (up to {} s)",
                    grace.as_secs()
                );
            }
            let _ = drained_tx.send(());
        }));
        let _ = drained_rx.await;
        if tokio::time::timeout(grace, serve).await.is_err() {
            eprintln!(
                "wray: requests still running after {} s: stopping them",
                grace.as_secs()
            );
        }
    });
    signal_handle.close();
    for name in ["node.json", "token", "cert.pem"] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    if let Some(s) = session {
        s.finish();
    }
    node.shutdown();
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(ExitCode::SUCCESS)
}

/// The `node.json` of this process serving on `addr`, with the token if
/// `auth`; over https (`tls`), the certificate copied into `dir` for the
/// clients to trust.
fn describe(
    dir: &Path,
    addr: SocketAddr,
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
        pid: std::process::id(),
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

/// The running node described in `dir`.
///
/// # Errors
/// No `node.json` there (no node running), or it is unreadable.
pub fn read_node_file(dir: &Path) -> anyhow::Result<NodeFile> {
    let path = dir.join("node.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "no node is running ({} is missing: `wray start` one)",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
}

/// Arguments of `wray stop`.
#[derive(Args)]
pub struct StopArgs {
    /// Seconds to wait for the node to exit.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

/// `wray stop`: SIGTERM to the latest node, then waits for it to exit.
///
/// # Errors
/// No node is running, or it did not exit in time.
pub fn stop(args: StopArgs) -> anyhow::Result<ExitCode> {
    let dir = latest();
    let node = read_node_file(&dir)?;
    let pid = libc::pid_t::try_from(node.pid).context("process id out of range")?;
    // SAFETY: kill(2) with a plain signal number has no memory effects.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        bail!(
            "cannot signal process {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    // SAFETY: signal 0 only checks that the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        if Instant::now() > deadline {
            bail!("node process {pid} did not exit within {} s", args.timeout);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("wray node {} stopped", node.url);
    Ok(ExitCode::SUCCESS)
}
