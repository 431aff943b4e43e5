//! A throwaway etcd for tests: Debian's `etcd` on loopback ports of its
//! own, with its own data directory, stopped by PID (kill, then wait) when
//! dropped; and [`HeldPort`], a loopback port held for a test's whole life.
//!
//! Every test that needs a port nothing listens on, or a port for a server
//! it starts, takes a [`HeldPort`] and keeps it: a port probed free and let
//! go can be handed to a parallel test's etcd before it is used (a test
//! expecting "connection refused" then got "connection reset" from it).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wray_control_plane::{EtcdClient, EtcdConfig, EtcdFunctionTable};

/// How long etcd may take to answer its health check after starting.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A loopback port (127.0.0.1) held by a socket that is bound and never
/// listens, until dropped.
///
/// What Linux does with it (`net/ipv4/inet_connection_sock.c` since 5.7;
/// tried on 6.18 by `tests/all/held_port.rs`):
/// - a connection to it is refused (`ECONNREFUSED`): nothing listens;
/// - a port-0 bind of any socket, with `SO_REUSEADDR` or without, is never
///   handed it (`inet_csk_find_open_port` skips every port with a socket
///   bound to an overlapping address, unless the sysctl
///   `net.ipv4.ip_autobind_reuse` is on: it is off by default);
/// - an explicit bind of it succeeds only where both the holder and the
///   binder set `SO_REUSEADDR` and the holder does not listen: so
///   [`HeldPort::closed`] keeps every listener off it, while a server a test
///   starts on a [`HeldPort::for_server`] port binds and listens beside the
///   holder (Go's listeners, etcd's among them, set `SO_REUSEADDR`, as do
///   std's and tokio's), and the port stays held while that server is
///   stopped and restarted.
pub struct HeldPort {
    /// Kept open for the port's sake only.
    _socket: socket2::Socket,
    port: u16,
}

impl HeldPort {
    /// A port nothing can listen on while it is held: a connection to it is
    /// refused.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub fn closed() -> Self {
        Self::bind(false)
    }

    /// A port held for a server the test starts on it (etcd), which binds
    /// and listens with `SO_REUSEADDR` while the holder keeps every port-0
    /// bind off it.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub fn for_server() -> Self {
        Self::bind(true)
    }

    /// The port number.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn bind(reuse_address: bool) -> Self {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("a TCP socket");
        socket
            .set_reuse_address(reuse_address)
            .expect("setting SO_REUSEADDR");
        let any_port = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        socket.bind(&any_port.into()).expect("a free loopback port");
        let port = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map(|a| a.port())
            .expect("the port of a bound socket");
        Self {
            _socket: socket,
            port,
        }
    }
}

/// A running etcd.
pub struct EtcdServer {
    child: Option<Child>,
    binary: PathBuf,
    /// Held for the server's life, so that no other test is handed them,
    /// even while etcd is stopped.
    client_port: HeldPort,
    peer_port: HeldPort,
    dir: tempfile::TempDir,
}

impl EtcdServer {
    /// Starts one on loopback ports held for its life and waits until it is
    /// healthy.
    ///
    /// # Panics
    /// When etcd is not installed (saying to run `cargo xtask setup`), or
    /// does not become healthy.
    pub fn start() -> Self {
        let binary = etcd_binary();
        let mut last = String::new();
        for _ in 0..3 {
            let mut server = Self {
                child: None,
                binary: binary.clone(),
                client_port: HeldPort::for_server(),
                peer_port: HeldPort::for_server(),
                dir: tempfile::tempdir().expect("a temporary directory"),
            };
            // Held ports are never handed to another test, but a listener
            // bound to one explicitly would fail the start: try other ports.
            match server.spawn() {
                Ok(()) => return server,
                Err(e) => last = e,
            }
        }
        panic!("etcd did not start: {last}");
    }

    /// The client URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port.port())
    }

    /// The client port (held while this server lives, stopped or not).
    pub fn client_port(&self) -> u16 {
        self.client_port.port()
    }

    /// A function table on it, under the default prefix.
    pub async fn table(&self) -> EtcdFunctionTable {
        EtcdFunctionTable::connect(EtcdConfig::new([self.endpoint()]))
            .await
            .expect("connect to the test etcd")
    }

    /// A control-plane connection to it, under the default prefix.
    pub async fn etcd_client(&self) -> EtcdClient {
        EtcdClient::connect(EtcdConfig::new([self.endpoint()]))
            .await
            .expect("connect to the test etcd")
    }

    /// A raw client, to write what the table would never write.
    pub async fn client(&self) -> etcd_client::Client {
        etcd_client::Client::connect([self.endpoint()], None)
            .await
            .expect("connect to the test etcd")
    }

    /// Its process id while it runs (the cli's chaos suite stops and
    /// continues it with signals; this crate's tests do not).
    #[allow(dead_code)]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops it (kill, wait), keeping its data and ports.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same ports and data.
    ///
    /// # Panics
    /// When it does not become healthy.
    pub fn restart(&mut self) {
        self.stop();
        if let Err(e) = self.spawn() {
            panic!("etcd did not restart: {e}");
        }
    }

    fn spawn(&mut self) -> Result<(), String> {
        let peer = format!("http://127.0.0.1:{}", self.peer_port.port());
        let log = std::fs::File::create(self.dir.path().join("etcd.log"))
            .map_err(|e| format!("cannot create etcd.log: {e}"))?;
        let err_log = log
            .try_clone()
            .map_err(|e| format!("cannot share etcd.log: {e}"))?;
        let child = Command::new(&self.binary)
            .arg("--name=wray-test")
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={}", self.endpoint()))
            .arg(format!("--advertise-client-urls={}", self.endpoint()))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=wray-test={peer}"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        let ready = self.wait_healthy();
        if let Err(e) = &ready {
            self.stop();
            let log = std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
            let tail: String = log.lines().rev().take(20).collect::<Vec<_>>().join("\n");
            return Err(format!("{e}; last lines of its log, newest first:\n{tail}"));
        }
        ready
    }

    /// Polls `GET /health` until etcd says it is healthy.
    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("etcd exited with {status}"));
                }
            }
            if healthy(self.client_port.port()) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("etcd was not healthy within {START_TIMEOUT:?}"))
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether etcd on `port` answers its health check with `"health":"true"`.
fn healthy(port: u16) -> bool {
    let address = ([127, 0, 0, 1], port).into();
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}

/// The etcd binary: `$WRAY_ETCD`, Debian's `/usr/bin/etcd`, or `etcd` on
/// `PATH`.
///
/// # Panics
/// When there is none: these tests must not pass without etcd.
fn etcd_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WRAY_ETCD") {
        return PathBuf::from(path);
    }
    let debian = PathBuf::from("/usr/bin/etcd");
    if debian.is_file() {
        return debian;
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("etcd"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| {
        panic!(
            "etcd is not installed (looked at $WRAY_ETCD, /usr/bin/etcd and PATH); \
             run `cargo xtask setup`, which installs Debian's etcd-server"
        )
    })
}
