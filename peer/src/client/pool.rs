//! The client's connections: per address, at most
//! `max_connections_per_peer` at once (a request past it waits for one),
//! idle ones kept for reuse while younger than half the idle timeout, a
//! connection returned only after a request that left it in step.
//! The table of addresses is bounded by [`MAX_PEERS`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::connect::{connect, Conn};
use super::Inner;
use crate::error::{PeerError, Result};

/// The most addresses a client keeps pools for; when full, pools nobody
/// is using are dropped first.
pub const MAX_PEERS: usize = 4096;

/// The pools of one client, by address.
#[derive(Default)]
pub(crate) struct Pools {
    by_addr: Mutex<HashMap<String, Arc<Pool>>>,
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
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    /// The connection.
    pub fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    /// Returns the connection to its pool for reuse (before the permit is
    /// released, so the next request finds it).
    pub fn release(self) {
        let Lease {
            mut conn,
            pool,
            _permit,
        } = self;
        conn.idle_since = Instant::now();
        pool.idle.lock().push(conn);
        drop(_permit);
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
}

/// A connection to `addr`: an idle one young enough, else a new one.
/// Waits while `max_connections_per_peer` are in use.
///
/// # Errors
/// Those of [`connect`]; [`PeerError::TooLarge`] when the address table
/// is full of pools in use.
///
/// # Cancel safety
/// Cancel safe: nothing is held until it returns.
pub(crate) async fn checkout(inner: &Inner, addr: &str) -> Result<Lease> {
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
    let max_idle = inner.config.idle_timeout / 2;
    let reused = {
        let mut idle = pool.idle.lock();
        idle.retain(|c| c.idle_since.elapsed() < max_idle);
        idle.pop()
    };
    let conn = match reused {
        Some(c) => c,
        None => connect(inner, addr).await?,
    };
    Ok(Lease {
        conn,
        pool,
        _permit: permit,
    })
}
