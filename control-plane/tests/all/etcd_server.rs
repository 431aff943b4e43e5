//! A throwaway etcd for tests: Debian's `etcd` on loopback ports of its
//! own, with its own data directory, stopped by PID (kill, then wait) when
//! dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wray_control_plane::{EtcdConfig, EtcdFunctionTable};

/// How long etcd may take to answer its health check after starting.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running etcd.
pub struct EtcdServer {
    child: Option<Child>,
    binary: PathBuf,
    client_port: u16,
    peer_port: u16,
    dir: tempfile::TempDir,
}

impl EtcdServer {
    /// Starts one on free loopback ports and waits until it is healthy.
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
                client_port: free_port(),
                peer_port: free_port(),
                dir: tempfile::tempdir().expect("a temporary directory"),
            };
            // A port taken between probing and binding fails the start:
            // try other ports.
            match server.spawn() {
                Ok(()) => return server,
                Err(e) => last = e,
            }
        }
        panic!("etcd did not start: {last}");
    }

    /// The client URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// A function table on it, under the default prefix.
    pub async fn table(&self) -> EtcdFunctionTable {
        EtcdFunctionTable::connect(EtcdConfig::new([self.endpoint()]))
            .await
            .expect("connect to the test etcd")
    }

    /// A raw client, to write what the table would never write.
    pub async fn client(&self) -> etcd_client::Client {
        etcd_client::Client::connect([self.endpoint()], None)
            .await
            .expect("connect to the test etcd")
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
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
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
            if healthy(self.client_port) {
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

/// A loopback port nothing listens on (just now).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
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
