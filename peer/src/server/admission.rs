//! Which connections a server holds, in two budgets: connections that
//! have not yet proved the token ([`PeerConfig::max_unauthenticated`] in
//! all, [`PeerConfig::max_unauthenticated_per_source`] from one IP
//! address) and authenticated ones ([`PeerConfig::max_connections`]). A
//! connection moves from the first to the second once it has proved the
//! token, so peers that never say hello can fill only the first, and
//! they hold a slot of it for the hello timeout at most.
//!
//! When the unauthenticated budget is full, a new connection is admitted
//! and the oldest unauthenticated one closed: a real peer proves the
//! token in milliseconds, so to keep it out an attacker must open the
//! whole budget's worth of connections within that time, not once per
//! hello timeout. A source at its own bound is refused at accept instead
//! (its clients retry within their handshake timeout).
//!
//! [`PeerConfig::max_unauthenticated`]: crate::PeerConfig::max_unauthenticated
//! [`PeerConfig::max_unauthenticated_per_source`]: crate::PeerConfig::max_unauthenticated_per_source
//! [`PeerConfig::max_connections`]: crate::PeerConfig::max_connections

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use super::refusals::Refusal;
use crate::config::PeerConfig;

/// The budgets of one server.
pub(crate) struct Admission {
    max_pending: usize,
    per_source: usize,
    max_connections: usize,
    state: Mutex<State>,
    authenticated: Arc<Semaphore>,
}

/// The unauthenticated connections: at most `max_pending` entries in
/// `pending`, and as many keys in `by_source`.
#[derive(Default)]
struct State {
    next: u64,
    /// By admission order: the source, and the sender that closes it.
    pending: BTreeMap<u64, (IpAddr, oneshot::Sender<()>)>,
    by_source: HashMap<IpAddr, usize>,
}

impl State {
    /// Forgets entry `seq` (if it is still there), with its source's count.
    fn remove(&mut self, seq: u64) -> Option<oneshot::Sender<()>> {
        let (ip, evict) = self.pending.remove(&seq)?;
        if let Some(n) = self.by_source.get_mut(&ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.by_source.remove(&ip);
            }
        }
        Some(evict)
    }
}

/// An unauthenticated connection's slot; dropping it frees the slot.
pub(crate) struct Pending {
    seq: u64,
    admission: Arc<Admission>,
    evicted: oneshot::Receiver<()>,
}

impl Admission {
    pub fn new(config: &PeerConfig) -> Arc<Admission> {
        Arc::new(Admission {
            max_pending: config.max_unauthenticated,
            per_source: config.max_unauthenticated_per_source,
            max_connections: config.max_connections,
            state: Mutex::new(State::default()),
            authenticated: Arc::new(Semaphore::new(config.max_connections)),
        })
    }

    /// A slot for a new connection from `source`, closing the oldest
    /// unauthenticated connection when the budget is full.
    ///
    /// # Errors
    /// [`Refusal::SourceBudget`] when `source` holds its bound already.
    pub fn admit(self: &Arc<Self>, source: IpAddr) -> Result<Pending, Refusal> {
        let mut state = self.state.lock();
        if state.by_source.get(&source).copied().unwrap_or(0) >= self.per_source {
            return Err(Refusal::SourceBudget);
        }
        if state.pending.len() >= self.max_pending {
            let oldest = state.pending.keys().next().copied();
            if let Some(evict) = oldest.and_then(|seq| state.remove(seq)) {
                // Its task may have ended meanwhile: nothing to close.
                let _ = evict.send(());
            }
        }
        let seq = state.next;
        state.next = state.next.wrapping_add(1);
        let (tx, rx) = oneshot::channel();
        state.pending.insert(seq, (source, tx));
        *state.by_source.entry(source).or_insert(0) += 1;
        Ok(Pending {
            seq,
            admission: self.clone(),
            evicted: rx,
        })
    }

    /// (authenticated, unauthenticated) connections held now.
    pub fn held(&self) -> (usize, usize) {
        let authenticated = self
            .max_connections
            .saturating_sub(self.authenticated.available_permits());
        (authenticated, self.state.lock().pending.len())
    }
}

impl Pending {
    /// Resolves when the connection is closed to admit a newer one.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn evicted(&mut self) {
        // The sender goes only with an eviction (sent first) or with this
        // slot: either way, the connection is to close.
        let _ = (&mut self.evicted).await;
    }

    /// Moves the connection to the authenticated budget: its permit, or
    /// `None` when that budget is full. The unauthenticated slot is freed
    /// either way.
    pub fn promote(self) -> Option<OwnedSemaphorePermit> {
        self.admission
            .authenticated
            .clone()
            .try_acquire_owned()
            .ok()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.admission.state.lock().remove(self.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Token;

    fn admission(total: usize, per_source: usize, authenticated: usize) -> Arc<Admission> {
        let mut c = PeerConfig::new(Token::new(vec![1; 16]).unwrap());
        c.max_unauthenticated = total;
        c.max_unauthenticated_per_source = per_source;
        c.max_connections = authenticated;
        Admission::new(&c)
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[tokio::test]
    async fn a_source_past_its_bound_is_refused_and_others_are_not() {
        let a = admission(10, 2, 4);
        let _held: Vec<_> = (0..2).map(|_| a.admit(ip(2)).unwrap()).collect();
        assert!(matches!(a.admit(ip(2)), Err(Refusal::SourceBudget)));
        let other = a.admit(ip(3)).unwrap();
        assert_eq!(a.held(), (0, 3));
        drop(other);
        assert_eq!(a.held(), (0, 2));
    }

    #[tokio::test]
    async fn a_full_budget_closes_its_oldest_to_admit_a_new_one() {
        let a = admission(2, 2, 4);
        let mut oldest = a.admit(ip(2)).unwrap();
        let _second = a.admit(ip(3)).unwrap();
        let _third = a.admit(ip(4)).unwrap();
        oldest.evicted().await;
        assert_eq!(a.held(), (0, 2));
        // Its source's count went with it.
        let _again = a.admit(ip(2)).unwrap();
    }

    #[tokio::test]
    async fn a_proved_connection_moves_to_the_authenticated_budget() {
        let a = admission(4, 4, 1);
        let first = a.admit(ip(2)).unwrap().promote();
        assert!(first.is_some());
        assert_eq!(a.held(), (1, 0));
        assert!(a.admit(ip(2)).unwrap().promote().is_none());
        drop(first);
        assert_eq!(a.held(), (0, 0));
    }
}
