//! The etcd table's watch: a background task that watches the head keys,
//! turns their changes into [`FunctionEvent`]s, and when the stream breaks
//! reconnects with backoff, resuming after the last revision it saw (etcd
//! replays what happened meanwhile, unless compacted: then it says
//! [`FunctionEvent::Resync`]).

use std::time::Duration;

use etcd_client::{Client, Event, WatchOptions, WatchResponse};
use tokio::sync::mpsc;

use super::jitter;
use super::keys::{Head, Keys};
use crate::function_table::FunctionEvent;

/// Pause before the first reconnection; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// Longest pause between reconnections.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The largest watch response accepted (events carry head values).
const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// What the watch task needs.
pub(super) struct Watcher {
    pub client: Client,
    pub keys: Keys,
    /// `etcd at <endpoints>`.
    pub label: String,
    /// How long opening the watch stream may take.
    pub timeout: Duration,
}

/// Why one watch stream ended.
enum End {
    /// The consumer dropped its [`FunctionWatch`](crate::FunctionWatch).
    Closed,
    /// The stream failed or ended; reconnect after a pause.
    Broken,
}

impl Watcher {
    /// Watches from revision `start` (none: from whenever it connects,
    /// then says Resync) until `events` closes.
    pub(super) async fn run(self, start: Option<i64>, events: mpsc::Sender<FunctionEvent>) {
        let mut next = start;
        let mut pause = FIRST_BACKOFF;
        loop {
            let seen = next;
            if let End::Closed = self.stream(&mut next, &events).await {
                return;
            }
            // Progress resets the pause; a stream that broke at once doubles it.
            pause = if next != seen {
                FIRST_BACKOFF
            } else {
                (pause * 2).min(MAX_BACKOFF)
            };
            tokio::select! {
                () = tokio::time::sleep(jitter(pause)) => {}
                () = events.closed() => return,
            }
        }
    }

    /// One watch stream, from `next` (advanced as events arrive).
    async fn stream(&self, next: &mut Option<i64>, events: &mpsc::Sender<FunctionEvent>) -> End {
        let mut options = WatchOptions::new().with_prefix();
        if let Some(revision) = *next {
            options = options.with_start_revision(revision);
        }
        let mut client = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES);
        let open = client.watch(self.keys.heads(), Some(options));
        let mut stream = match tokio::time::timeout(self.timeout, open).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(_)) | Err(_) => return End::Broken,
        };
        loop {
            let message = tokio::select! {
                message = stream.message() => message,
                () = events.closed() => return End::Closed,
            };
            let Ok(Some(response)) = message else {
                return End::Broken;
            };
            for event in self.events(&response, next) {
                if events.send(event).await.is_err() {
                    return End::Closed;
                }
            }
            if response.canceled() {
                return End::Broken;
            }
        }
    }

    /// The events one response gives, advancing `next` past it.
    fn events(&self, response: &WatchResponse, next: &mut Option<i64>) -> Vec<FunctionEvent> {
        let mut out = Vec::new();
        let compacted = response.compact_revision();
        if compacted > 0 {
            // What we asked for is gone: resume from the oldest revision
            // etcd still has, and have the consumer read the table again.
            *next = Some(compacted);
            out.push(FunctionEvent::Resync);
            return out;
        }
        if response.created() && next.is_none() {
            // Watching from "now", and nobody knows what came before.
            *next = response
                .header()
                .and_then(|h| h.revision().checked_add(1))
                .filter(|r| *r > 1);
            out.push(FunctionEvent::Resync);
        }
        for event in response.events() {
            let Some(kv) = event.kv() else { continue };
            // Untrusted: only ever move forward.
            if let Some(after) = kv.mod_revision().checked_add(1) {
                if next.is_none_or(|n| after > n) {
                    *next = Some(after);
                }
            }
            if let Some(change) = self.change(event) {
                out.push(change);
            }
        }
        out
    }

    /// The change one event of a head key means. A deleted key has version
    /// 0 (read so rather than through the event's type, whose accessor
    /// panics on a type it does not know).
    fn change(&self, event: &Event) -> Option<FunctionEvent> {
        let kv = event.kv()?;
        let name = self.keys.name_of_head(kv.key())?;
        if kv.version() == 0 {
            return Some(FunctionEvent::Undeployed {
                name: name.to_string(),
            });
        }
        let key = String::from_utf8_lossy(kv.key());
        match Head::decode(&key, name, kv.value()) {
            Ok(head) => Some(FunctionEvent::Deployed {
                name: name.to_string(),
                version: head.current.version,
                hash: head.current.record.hash,
            }),
            // A head this crate did not write: the consumer's reread will
            // meet the error where it can report it.
            Err(_) => Some(FunctionEvent::Resync),
        }
    }
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}
