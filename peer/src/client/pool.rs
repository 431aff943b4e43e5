//! The client's connections: per address, at most
//! `max_connections_per_peer` open at once (a request past it waits for
//! one) and at most `max_idle_per_peer` kept idle for reuse (one returned
//! past it is closed). An idle connection is reused only while younger
//! than half the idle timeout and still open: one the server closed (its
//! idle timeout, a restart) is dropped, never sent a request. A reaper
//! task drops such connections every [`REAP_EVERY`] at most, so none sits
//! in `CLOSE-WAIT` after its server closed it. A connection is returned
//! only after a request that left it in step. The table of addresses is
//! bounded by [`MAX_PEERS`].

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::connect::{connect, Conn};
use super::Inner;
use crate::error::{PeerError, Result};

/// The most addresses a client keeps pools for; when full, pools nobody
/// is using are dropped first.
pub const MAX_PEERS: usize = 4096;

/// How often the reaper looks for idle connections too old or closed by
/// their server: every second (or every half of the idle age, if
/// shorter).
pub(crate) const REAP_EVERY: Duration = Duration::from_secs(1);

/// The pools by address.
type Table = Mutex<HashMap<String, Arc<Pool>>>;

/// The pools of one client, by address. Dropping it ends its reaper.
#[derive(Default)]
pub(crate) struct Pools {
    by_addr: Arc<Table>,
    /// The reaper, started by a checkout on the caller's runtime (again
    /// by a later one if that runtime has ended).
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// The connections to one address.
struct Pool {
    idle: Mutex<Vec<Conn>>,
    permits: Arc<Semaphore>,
}

/// A connection taken from a pool; [`Lease::release`] returns it, and
/// dropping it (an error, a cancel) closes it.
pub(crate) struct Lease {
    conn: Conn,
    pool: Arc<Pool>,
    max_idle: usize,
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    /// The connection.
    pub fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    /// Returns the connection to its pool for reuse (before the permit is
    /// released, so the next request finds it), or closes it when the
    /// pool holds `max_idle_per_peer` idle ones already.
    pub fn release(self) {
        let Lease {
            mut conn,
            pool,
            max_idle,
            _permit,
        } = self;
        conn.idle_since = Instant::now();
        let extra = {
            let mut idle = pool.idle.lock();
            if idle.len() < max_idle {
                idle.push(conn);
                None
            } else {
                Some(conn)
            }
        };
        drop(extra);
        drop(_permit);
    }
}

impl Drop for Pools {
    fn drop(&mut self) {
        if let Some(r) = self.reaper.lock().take() {
            r.abort();
        }
    }
}

impl Pools {
    /// The pool of `addr`, made if new.
    fn pool(&self, addr: &str, per_peer: usize) -> Result<Arc<Pool>> {
        let mut map = self.by_addr.lock();
        if let Some(p) = map.get(addr) {
            return Ok(p.clone());
        }
        if map.len() >= MAX_PEERS {
            // Pools with no lease out (only the map holds them).
            map.retain(|_, p| Arc::strong_count(p) > 1);
        }
        if map.len() >= MAX_PEERS {
            return Err(PeerError::TooLarge {
                what: "the client's table of peer addresses",
                size: map.len() as u64,
                max: MAX_PEERS as u64,
            });
        }
        let p = Arc::new(Pool {
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(per_peer)),
        });
        map.insert(addr.to_owned(), p.clone());
        Ok(p)
    }

    /// Starts the reaper on the current runtime unless it runs.
    fn reap(&self, max_age: Duration) {
        let mut running = self.reaper.lock();
        if running.as_ref().is_some_and(|r| !r.is_finished()) {
            return;
        }
        let every = REAP_EVERY.min(max_age / 2).max(Duration::from_millis(10));
        *running = Some(tokio::spawn(reaper(
            Arc::downgrade(&self.by_addr),
            every,
            max_age,
        )));
    }
}

/// Every `every`, drops idle connections older than `max_age` or closed
/// by their server, and pools nobody uses; ends with the client.
async fn reaper(table: Weak<Table>, every: Duration, max_age: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(table) = table.upgrade() else {
            return;
        };
        let pools: Vec<Arc<Pool>> = table.lock().values().cloned().collect();
        for pool in &pools {
            let mut stale = Vec::new();
            {
                let mut idle = pool.idle.lock();
                for mut c in std::mem::take(&mut *idle) {
                    if usable(&mut c, max_age) {
                        idle.push(c);
                    } else {
                        stale.push(c);
                    }
                }
            }
            drop(stale);
        }
        drop(pools);
        // Pools with no lease out and nothing idle.
        table
            .lock()
            .retain(|_, p| Arc::strong_count(p) > 1 || !p.idle.lock().is_empty());
    }
}

/// Whether an idle connection may take a request: younger than `max_age`
/// and still open: reading it now would wait (no end of stream, no
/// error, no byte the server sent unasked). Polls once with a no-op
/// waker; a byte it reads is lost, but such a connection is dropped.
fn usable(conn: &mut Conn, max_age: Duration) -> bool {
    if conn.idle_since.elapsed() >= max_age {
        return false;
    }
    let mut cx = Context::from_waker(Waker::noop());
    let mut byte = [0u8; 1];
    let mut buf = ReadBuf::new(&mut byte);
    matches!(
        Pin::new(&mut conn.io).poll_read(&mut cx, &mut buf),
        Poll::Pending
    )
}

/// A connection to `addr`: an idle one young enough and still open, else
/// a new one. Waits while `max_connections_per_peer` are in use.
///
/// # Errors
/// Those of [`connect`]; [`PeerError::TooLarge`] when the address table
/// is full of pools in use.
///
/// # Cancel safety
/// Cancel safe: nothing is held until it returns.
pub(crate) async fn checkout(inner: &Inner, addr: &str) -> Result<Lease> {
    let max_age = inner.config.idle_timeout / 2;
    inner.pools.reap(max_age);
    let pool = inner
        .pools
        .pool(addr, inner.config.max_connections_per_peer)?;
    let Ok(permit) = pool.permits.clone().acquire_owned().await else {
        // The semaphore is never closed.
        return Err(PeerError::Protocol {
            addr: addr.to_owned(),
            message: "connection pool closed".into(),
        });
    };
    let reused = loop {
        let Some(mut c) = pool.idle.lock().pop() else {
            break None;
        };
        if usable(&mut c, max_age) {
            break Some(c);
        }
    };
    let conn = match reused {
        Some(c) => c,
        None => connect(inner, addr).await?,
    };
    Ok(Lease {
        conn,
        pool,
        max_idle: inner.config.max_idle_per_peer,
        _permit: permit,
    })
}
