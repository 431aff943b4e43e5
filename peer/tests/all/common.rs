//! A test handler over in-memory blobs, servers and clients on loopback,
//! a counting allocator and a deterministic random pattern.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;
use wray_peer::{
    Blob, PeerClient, PeerConfig, PeerHandler, PeerIdentity, PeerServer, RemoteError, Token,
    UnknownMethods,
};

/// The largest single allocation so far, in bytes.
pub static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, recording [`LARGEST`].
pub struct Counting;

// SAFETY: every call is passed on unchanged to `System`, which upholds
// `GlobalAlloc`'s contract; only the sizes asked for are recorded.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's `layout` contract is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, that is by `System`,
        // with `layout` (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: as for `dealloc`; `new_size` meets `realloc`'s contract
        // (the caller's).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

pub const TOKEN: &[u8] = b"test-cluster-token-0123456789";

/// Call methods of [`TestHandler`].
pub const ECHO: u16 = 1;
pub const FAIL: u16 = 2;
/// Blocks until [`TestHandler::release`] is notified.
pub const BLOCK: u16 = 3;
/// Blocks until [`TestHandler::open_gate`] (every caller at once).
pub const GATE: u16 = 4;
/// The methods [`TestHandler`] has, as an unknown method's answer names
/// them.
pub const KNOWN: [(u16, &str); 4] = [
    (ECHO, "Echo"),
    (FAIL, "Fail"),
    (BLOCK, "Block"),
    (GATE, "Gate"),
];

/// Blobs by key; `short/...` keys answer half of what is asked.
#[derive(Default)]
pub struct TestHandler {
    pub blobs: HashMap<Vec<u8>, Bytes>,
    /// Ports of the connections reads came from.
    pub read_ports: Mutex<HashSet<u16>>,
    pub entered: Notify,
    pub release: Notify,
    /// Whether [`GATE`] calls may return, and their wake-up.
    pub gate_open: std::sync::atomic::AtomicBool,
    pub gate: Notify,
    /// Calls of methods it does not have.
    pub unknown: UnknownMethods,
}

impl TestHandler {
    /// Lets every [`GATE`] call return, now and later.
    pub fn open_gate(&self) {
        self.gate_open.store(true, Ordering::SeqCst);
        self.gate.notify_waiters();
    }
}

#[async_trait::async_trait]
impl PeerHandler for TestHandler {
    async fn call(
        &self,
        peer: &PeerIdentity,
        method: u16,
        body: Bytes,
    ) -> Result<Bytes, RemoteError> {
        match method {
            ECHO => {
                let mut b = peer.node_id.as_bytes().to_vec();
                b.push(b':');
                b.extend_from_slice(&body);
                Ok(Bytes::from(b))
            }
            FAIL => Err(RemoteError::new(42, "no such thing")),
            BLOCK => {
                self.entered.notify_one();
                self.release.notified().await;
                Ok(body)
            }
            GATE => loop {
                // Made before the check: `notify_waiters` wakes it even
                // before its first poll.
                let opened = self.gate.notified();
                if self.gate_open.load(Ordering::SeqCst) {
                    return Ok(body);
                }
                opened.await;
            },
            m => Err(self.unknown.answer(peer, m, "test", KNOWN)),
        }
    }

    async fn read(
        &self,
        peer: &PeerIdentity,
        key: &[u8],
        offset: u64,
        len: u32,
    ) -> Result<Blob, RemoteError> {
        self.read_ports.lock().insert(peer.addr.port());
        let (short, name) = match key.strip_prefix(b"short/") {
            Some(name) => (true, name),
            None => (false, key),
        };
        let blob = self
            .blobs
            .get(name)
            .ok_or_else(|| RemoteError::new(404, "no such blob"))?;
        let start = usize::try_from(offset).map_err(|_| RemoteError::new(416, "offset"))?;
        let mut end = start + len as usize;
        if end > blob.len() {
            return Err(RemoteError::new(416, "range past the end"));
        }
        if short {
            end = start + len as usize / 2;
        }
        Ok(Blob::from(blob.slice(start..end)))
    }
}

/// A config with the test token and a short handshake timeout (a hostile
/// peer that says nothing is closed within it).
pub fn config() -> PeerConfig {
    let mut c = PeerConfig::new(Token::new(TOKEN.to_vec()).unwrap());
    c.handshake_timeout = Duration::from_millis(500);
    c
}

/// A server on a loopback port with `handler`.
pub async fn server(config: PeerConfig, handler: Arc<TestHandler>) -> (PeerServer, String) {
    let s = PeerServer::bind("127.0.0.1:0", config, handler)
        .await
        .unwrap();
    let addr = s.local_addr().to_string();
    (s, addr)
}

pub fn client(config: PeerConfig) -> PeerClient {
    PeerClient::new(config, "client-node").unwrap()
}

/// `len` bytes of a xorshift pattern from `seed`.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let take = (len - v.len()).min(8);
        v.extend_from_slice(&x.to_le_bytes()[..take]);
    }
    v
}

/// Asserts that a fresh client's echo call to `addr` works.
pub async fn still_serves(addr: &str) {
    let c = client(config());
    let answer = c.call(addr, ECHO, Bytes::from_static(b"ping")).await;
    assert_eq!(answer.unwrap(), Bytes::from_static(b"client-node:ping"));
}

#[allow(dead_code)]
pub fn socket(addr: &str) -> SocketAddr {
    addr.parse().unwrap()
}

/// Waits (up to `within`) until `state` holds; panics naming `what`.
pub async fn wait_for(what: &str, within: Duration, mut state: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !state() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not so after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
