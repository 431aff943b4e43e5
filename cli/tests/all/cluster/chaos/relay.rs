//! [`Relay`]: a TCP relay in front of one node's peer port, which the
//! suite makes stall (bytes stop flowing both ways, connections stay
//! open), refuse new connections, or cut every connection it holds.
//!
//! A stall holds only what the node sends back: a peer that takes a task
//! and never answers.
//!
//! The node binds its peer port on `127.0.0.2:P` and advertises
//! `127.0.0.1` (`--bind 127.0.0.2 --advertise-host 127.0.0.1 --peer-port
//! P`); the relay holds `127.0.0.1:P`, so every other node reaches it
//! through the relay.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// What the relay does with bytes and connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Relays.
    Pass,
    /// Holds every byte the node sends back (its answers, its half of a
    /// handshake) until the mode changes; what others send it still
    /// arrives, so it runs what it is sent and no answer comes back.
    Stall,
    /// Closes new connections at once.
    Refuse,
}

/// What the relay's threads share.
struct Shared {
    mode: Mutex<Mode>,
    changed: Condvar,
    /// Each open connection's two sockets, by connection number.
    open: Mutex<BTreeMap<u64, (TcpStream, TcpStream)>>,
    next: AtomicU64,
    stopped: AtomicBool,
    target: SocketAddr,
}

/// A running relay; stops (closing everything) when dropped.
pub struct Relay {
    port: u16,
    shared: Arc<Shared>,
}

impl Relay {
    /// Binds `127.0.0.1:0` and relays what arrives there to the same port
    /// on `127.0.0.2`.
    pub fn start() -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("the relay binds");
        let port = listener.local_addr().expect("its address").port();
        let shared = Arc::new(Shared {
            mode: Mutex::new(Mode::Pass),
            changed: Condvar::new(),
            open: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            target: SocketAddr::from(([127, 0, 0, 2], port)),
        });
        let accepting = shared.clone();
        std::thread::spawn(move || accept(listener, accepting));
        Relay { port, shared }
    }

    /// The port it holds on 127.0.0.1 (and wants the node on 127.0.0.2).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Switches to `mode`.
    pub fn set(&self, mode: Mode) {
        *self.shared.mode.lock().expect("the relay's mode") = mode;
        self.shared.changed.notify_all();
    }

    /// Closes every connection it holds, both ends.
    pub fn cut(&self) {
        let open = std::mem::take(&mut *self.shared.open.lock().expect("the relay's table"));
        for (a, b) in open.values() {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.set(Mode::Pass);
        self.cut();
        // Wakes the accept loop, which then sees `stopped`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Accepts until stopped; each connection gets two pumping threads.
fn accept(listener: TcpListener, shared: Arc<Shared>) {
    for incoming in listener.incoming() {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = incoming else { continue };
        if *shared.mode.lock().expect("the relay's mode") == Mode::Refuse {
            continue;
        }
        let Ok(server) = TcpStream::connect_timeout(&shared.target, Duration::from_secs(2)) else {
            continue;
        };
        let n = shared.next.fetch_add(1, Ordering::SeqCst);
        let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) = (
            client.try_clone(),
            server.try_clone(),
            client.try_clone(),
            server.try_clone(),
        ) else {
            continue;
        };
        shared
            .open
            .lock()
            .expect("the relay's table")
            .insert(n, (c3, s3));
        let up = shared.clone();
        std::thread::spawn(move || pump(client, server, n, false, up));
        let down = shared.clone();
        std::thread::spawn(move || pump(s2, c2, n, true, down));
    }
}

/// Copies `from` to `to`, holding what it read while the relay stalls
/// if `stalls` (the node's side); at the end closes both and forgets
/// connection `n`.
fn pump(mut from: TcpStream, mut to: TcpStream, n: u64, stalls: bool, shared: Arc<Shared>) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let got = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(got) => got,
        };
        {
            let mut mode = shared.mode.lock().expect("the relay's mode");
            while stalls && *mode == Mode::Stall {
                mode = shared.changed.wait(mode).expect("the relay's mode");
            }
        }
        if to.write_all(&buf[..got]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
    shared.open.lock().expect("the relay's table").remove(&n);
}
