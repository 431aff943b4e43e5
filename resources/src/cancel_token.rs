//! [`CancelToken`]: a flag that, once set, stays set, and wakes whatever
//! awaits it.
//!
//! Every task carries one (its `cancel`), and the node has one (its
//! shutdown); a task's token is cloned several times on the path of every
//! task (the spec, the task table, the running store, the guard of each
//! guest call). tokio-util's `CancellationToken` takes a mutex on every
//! clone and drop (it keeps a tree of child tokens, which wray does not
//! use); this one is an `Arc` of an atomic flag and a `tokio::sync::Notify`,
//! so a clone is one atomic increment.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

#[derive(Debug, Default)]
struct Inner {
    set: AtomicBool,
    wake: Notify,
}

/// A cancellation flag shared by its clones.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<Inner>);

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: sets the flag (for good) and wakes every
    /// [`cancelled`](Self::cancelled) future.
    pub fn cancel(&self) {
        if !self.0.set.swap(true, Ordering::AcqRel) {
            self.0.wake.notify_waiters();
        }
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.set.load(Ordering::Acquire)
    }

    /// Resolves once the token is cancelled (at once if it is).
    ///
    /// # Cancel safety
    /// Dropping the future loses nothing: the flag stays set.
    pub async fn cancelled(&self) {
        loop {
            let woken = self.0.wake.notified();
            tokio::pin!(woken);
            // Registered before the check: a cancel after it wakes us.
            woken.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            woken.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_wakes_every_waiter_and_stays() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let token = CancelToken::new();
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let t = token.clone();
                rt.spawn(async move { t.cancelled().await })
            })
            .collect();
        rt.block_on(async {
            tokio::task::yield_now().await;
            clone.cancel();
            for w in waiters {
                w.await.unwrap();
            }
        });
        assert!(token.is_cancelled());
        // Already cancelled: resolves at once; a second cancel is harmless.
        token.cancel();
        rt.block_on(token.cancelled());
    }
}
