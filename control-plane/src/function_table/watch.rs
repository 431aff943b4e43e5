//! [`FunctionWatch`]: the stream of a function table's changes.

use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

/// One change of a function table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionEvent {
    /// `name` was deployed; `version` is now its current version.
    Deployed {
        /// The component's name.
        name: String,
        /// Its new current version.
        version: u64,
        /// The new version's content hash.
        hash: String,
    },
    /// `name` was undeployed (all its versions removed).
    Undeployed {
        /// The component's name.
        name: String,
    },
    /// Events may have been missed (the consumer fell behind, or the etcd
    /// backend reconnected without knowing where it left off): read the
    /// table again ([`FunctionTable::list`](crate::FunctionTable::list)).
    Resync,
}

/// A stream of [`FunctionEvent`]s from [`FunctionTable::watch`](crate::FunctionTable::watch).
/// Dropping it stops the watch (for etcd, its background task).
pub struct FunctionWatch {
    inner: Inner,
}

enum Inner {
    /// The embedded table's own channel.
    Broadcast(broadcast::Receiver<FunctionEvent>),
    /// A background task's channel (etcd), and that task.
    Task {
        events: mpsc::Receiver<FunctionEvent>,
        task: JoinHandle<()>,
    },
    /// A channel someone else feeds ([`FunctionWatch::from_channel`]).
    Channel(mpsc::Receiver<FunctionEvent>),
}

impl FunctionWatch {
    /// A watch on a broadcast channel: falling behind it reads as
    /// [`FunctionEvent::Resync`].
    pub(crate) fn broadcast(events: broadcast::Receiver<FunctionEvent>) -> Self {
        Self {
            inner: Inner::Broadcast(events),
        }
    }

    /// A watch fed by `task` through `events`; the task is aborted when the
    /// watch is dropped.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn task(events: mpsc::Receiver<FunctionEvent>, task: JoinHandle<()>) -> Self {
        Self {
            inner: Inner::Task { events, task },
        }
    }

    /// A watch fed through `events` by whoever holds its sender: a
    /// backend outside this crate, or a test double of a table that
    /// decides which events its consumer sees (a [`FunctionEvent::Resync`]
    /// after changes it did not report, say). It ends when every sender
    /// is dropped.
    pub fn from_channel(events: mpsc::Receiver<FunctionEvent>) -> Self {
        Self {
            inner: Inner::Channel(events),
        }
    }

    /// The next change; `None` once the table is gone.
    ///
    /// # Cancel safety
    /// Cancel safe: a change not returned because the call was dropped is
    /// returned by the next call.
    pub async fn next(&mut self) -> Option<FunctionEvent> {
        match &mut self.inner {
            Inner::Broadcast(events) => match events.recv().await {
                Ok(event) => Some(event),
                Err(broadcast::error::RecvError::Lagged(_)) => Some(FunctionEvent::Resync),
                Err(broadcast::error::RecvError::Closed) => None,
            },
            Inner::Task { events, .. } | Inner::Channel(events) => events.recv().await,
        }
    }
}

impl Drop for FunctionWatch {
    fn drop(&mut self) {
        if let Inner::Task { task, .. } = &self.inner {
            task.abort();
        }
    }
}

impl std::fmt::Debug for FunctionWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionWatch").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_channel_watch_yields_what_is_sent_then_ends() {
        let (tx, rx) = mpsc::channel(2);
        let mut watch = FunctionWatch::from_channel(rx);
        tx.send(FunctionEvent::Resync).await.expect("open");
        drop(tx);
        assert_eq!(watch.next().await, Some(FunctionEvent::Resync));
        assert_eq!(watch.next().await, None);
    }
}
