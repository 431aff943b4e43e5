//! Requests to another node's HTTP API, relayed over the node-to-node
//! channel: a job, an object or an actor made through node A is reachable
//! through node B. B asks every other live node at once (`Relay`)
//! and answers with the first answer that is not a 404; each node runs a
//! relayed request through its own HTTP routes ([`RelayHandler`], set by
//! the HTTP server: the host knows no HTTP), as authenticated: the peer
//! proved the cluster token. The HTTP layer decides which routes may be
//! relayed and which may be asked for.
//!
//! An answer of at most [`MAX_RELAY_BODY`] bytes travels whole in the
//! answer's message; a larger one, or one whose delivery matters (a
//! read-once object's), is parked on the answering node and pulled from
//! there a chunk at a time (`relay_stream`): a relayed answer has no
//! bound on its size but [`MAX_RELAY_STREAM`], and is held in no node's
//! memory whole.
//!
//! A listing of the whole cluster asks every live node instead
//! ([`Forwarder::relay_each`]): at most [`FAN_OUT`] at once, each answer
//! waited for a deadline at most, every node's answer (or why it has
//! none) handed on as it comes, so that the asker merges them within its
//! own bounds and names the nodes that did not answer.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use wray_peer::{PeerError, RemoteError};

use crate::forward::Forwarder;
use crate::protocol::{code, method, send, Encoded, Relay, Relayed, Rest};
use crate::relay_stream::{Delivered, ParkError, Parked, RelayedRest, MAX_RELAY_STREAM};

/// The longest path (with its query) a relayed request may have, in bytes.
pub(crate) const MAX_RELAY_PATH: usize = 8 << 10;

/// The most headers a relayed answer carries, and the longest of them
/// (name and value), in bytes.
pub(crate) const MAX_RELAY_HEADERS: (usize, usize) = (16, 1024);

/// The largest body of a relayed request, and of an answer that travels
/// in its message (8 MiB, half the channel's bound on a message): a
/// larger answer is pulled in chunks instead.
pub const MAX_RELAY_BODY: usize = 8 << 20;

/// The most nodes [`Forwarder::relay_each`] asks at once.
pub const FAN_OUT: usize = 16;

/// A request for another node's HTTP API.
#[derive(Debug, Clone)]
pub struct RelayRequest {
    /// `GET`, `POST`, `DELETE`.
    pub method: String,
    /// The path and query (`/v1/jobs/0123456789abcdef/logs?offset=0`).
    pub path: String,
    /// Its `Accept` header, if any.
    pub accept: Option<String>,
    /// The request's body.
    pub body: Bytes,
}

/// A node's answer to a relayed request, as the asking node gets it.
#[derive(Debug)]
pub struct RelayResponse {
    /// The HTTP status.
    pub status: u16,
    /// Its headers (`Content-Type` and the API's own), at most
    /// [`MAX_RELAY_HEADERS`].
    pub headers: Vec<(String, String)>,
    /// Its body (at most [`MAX_RELAY_BODY`] bytes), or, when `rest`
    /// follows, its first part.
    pub body: Bytes,
    /// The rest of the body, still on the node that answered, to be
    /// pulled a chunk at a time; then that node is told whether the
    /// client got it all (a read-once object is marked read only then).
    pub rest: Option<RelayedRest>,
}

/// A relayed request's answer, as this node's HTTP routes made it.
pub struct RelayAnswer {
    /// The HTTP status.
    pub status: u16,
    /// Its headers (`Content-Type` and the API's own).
    pub headers: Vec<(String, String)>,
    /// Its body, in the pieces the route made (a value from the object
    /// store is not copied: it is sent from where it is).
    pub body: Vec<Bytes>,
    /// What runs once the asking node's client got the whole body (a
    /// read-once object's read); never run when it did not.
    pub delivered: Option<Delivered>,
}

/// What runs a relayed request through this node's HTTP routes.
pub type RelayHandler = Arc<dyn Fn(RelayRequest) -> BoxFuture<'static, RelayAnswer> + Send + Sync>;

/// Where the node's [`RelayHandler`] is kept: set once its HTTP API
/// serves, read by the peer channel.
pub type RelaySlot = Arc<OnceLock<RelayHandler>>;

/// Each node's answer to a request sent to several (its id, then the
/// answer or why it has none), as they come ([`Forwarder::relay_each`]).
pub type NodeAnswers = BoxStream<'static, (String, Result<RelayResponse, RelayFailure>)>;

/// Why a node has no answer to a relayed request.
#[derive(Debug, thiserror::Error)]
pub enum RelayFailure {
    /// The request is past what a relay carries (it went to no node).
    #[error(
        "a relayed request's path is at most {MAX_RELAY_PATH} bytes and its body {MAX_RELAY_BODY}"
    )]
    RequestTooLarge,
    /// The node did not answer within the deadline.
    #[error("no answer within {0:?}")]
    NoAnswer(Duration),
    /// The call failed (connection, handshake, the node's own refusal).
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// The answer has more bytes than [`MAX_RELAY_BODY`] (its size).
    #[error("an answer of {0} bytes, more than {MAX_RELAY_BODY}")]
    AnswerTooLarge(u64),
}

/// `headers` within [`MAX_RELAY_HEADERS`]: the first ones, each short
/// enough.
fn bounded(headers: Vec<(String, String)>) -> Vec<(String, String)> {
    let (count, longest) = MAX_RELAY_HEADERS;
    headers
        .into_iter()
        .filter(|(k, v)| k.len().saturating_add(v.len()) <= longest)
        .take(count)
        .collect()
}

impl Forwarder {
    /// `request` answered by the first other live node that does not
    /// answer 404, with that node's id; `None` when every node answered
    /// 404 or could not be asked.
    pub(crate) async fn relay(&self, request: RelayRequest) -> Option<(String, RelayResponse)> {
        let accept_len = request.accept.as_ref().map_or(0, String::len);
        if request.path.len() > MAX_RELAY_PATH
            || accept_len > MAX_RELAY_HEADERS.1
            || request.body.len() > MAX_RELAY_BODY
        {
            return None;
        }
        let body = Encoded::<method::Relay>::new(Relay {
            method: request.method,
            path: request.path,
            accept: request.accept,
            body: request.body.to_vec(),
        });
        let (node, relayed) = self
            .first_answer(&body, None, |relayed| {
                let sized = relayed
                    .rest
                    .as_ref()
                    .is_none_or(|r| r.size <= MAX_RELAY_STREAM);
                (relayed.status != 404 && relayed.body.len() <= MAX_RELAY_BODY && sized)
                    .then_some(relayed)
            })
            .await?;
        let rest = match relayed.rest {
            None => None,
            Some(rest) => {
                let Some(addr) = self.view.get(&node).map(|n| n.record.peer_address) else {
                    // Gone from the view since it answered: its answer
                    // cannot be pulled (the rest, dropped, is not told).
                    return None;
                };
                Some(RelayedRest::new(
                    self.client.clone(),
                    node.clone(),
                    addr,
                    &rest,
                ))
            }
        };
        Some((
            node,
            RelayResponse {
                status: relayed.status,
                headers: bounded(relayed.headers),
                body: Bytes::from(relayed.body),
                rest,
            },
        ))
    }
}

impl Forwarder {
    /// `request` sent to every other live node (`only`: to that one
    /// alone, when it is a live other node), [`FAN_OUT`] at a time, each
    /// answer waited for `deadline` at most: `(node, answer or why none)`
    /// as they come.
    pub(crate) fn relay_each(
        &self,
        request: RelayRequest,
        only: Option<&str>,
        deadline: Duration,
    ) -> NodeAnswers {
        use futures_util::stream::{self, StreamExt};
        let nodes: Vec<(String, String)> = self
            .view
            .alive()
            .into_iter()
            .filter(|n| n.id != self.node_id && only.is_none_or(|o| o == n.id))
            .map(|n| (n.id, n.peer_address))
            .collect();
        let accept_len = request.accept.as_ref().map_or(0, String::len);
        if request.path.len() > MAX_RELAY_PATH
            || accept_len > MAX_RELAY_HEADERS.1
            || request.body.len() > MAX_RELAY_BODY
        {
            return stream::iter(
                nodes
                    .into_iter()
                    .map(|(id, _)| (id, Err(RelayFailure::RequestTooLarge))),
            )
            .boxed();
        }
        let body = Encoded::<method::Relay>::new(Relay {
            method: request.method,
            path: request.path,
            accept: request.accept,
            body: request.body.to_vec(),
        });
        let client = self.client.clone();
        stream::iter(nodes)
            .map(move |(id, addr)| {
                let (client, body) = (client.clone(), body.clone());
                async move {
                    let call = send(&client, &addr, &body);
                    let answer = match tokio::time::timeout(deadline, call).await {
                        Err(_) => Err(RelayFailure::NoAnswer(deadline)),
                        Ok(Err(e)) => Err(e.into()),
                        Ok(Ok(relayed)) => {
                            if let Some(rest) = &relayed.rest {
                                // Not pulled: dropped, the node is told
                                // so and lets its answer go.
                                let (client, id) = (client.clone(), id.clone());
                                drop(RelayedRest::new(client, id, addr.clone(), rest));
                            }
                            whole(relayed)
                        }
                    };
                    (id, answer)
                }
            })
            .buffer_unordered(FAN_OUT)
            .boxed()
    }
}

/// `relayed` as an answer whole in its message: an error naming its size
/// when it is larger than [`MAX_RELAY_BODY`] or has a rest to pull.
fn whole(relayed: Relayed) -> Result<RelayResponse, RelayFailure> {
    let size = relayed.rest.as_ref().map_or(0, |r| r.size);
    if relayed.body.len() > MAX_RELAY_BODY || size > 0 {
        return Err(RelayFailure::AnswerTooLarge(
            size.max(relayed.body.len() as u64),
        ));
    }
    Ok(RelayResponse {
        status: relayed.status,
        headers: bounded(relayed.headers),
        body: Bytes::from(relayed.body),
        rest: None,
    })
}

/// Answers node `peer`'s relayed request `relay` through `slot`'s
/// handler: the answer whole in the message when it is at most
/// [`MAX_RELAY_BODY`] bytes and nothing waits for its delivery; else
/// parked in `parked` for `peer` to pull (a 503 when too many are).
///
/// # Errors
/// A malformed or oversized request; no HTTP API here.
pub(crate) async fn answer(
    slot: &RelaySlot,
    parked: &Parked,
    peer: &str,
    relay: Relay,
) -> Result<Relayed, RemoteError> {
    let bad = |m: String| RemoteError::new(code::BAD_REQUEST, m);
    let accept_len = relay.accept.as_ref().map_or(0, String::len);
    if relay.path.len() > MAX_RELAY_PATH
        || accept_len > MAX_RELAY_HEADERS.1
        || relay.body.len() > MAX_RELAY_BODY
    {
        return Err(bad(format!(
            "a relayed request's path is at most {MAX_RELAY_PATH} bytes, its Accept {} and \
             its body {MAX_RELAY_BODY}",
            MAX_RELAY_HEADERS.1
        )));
    }
    let Some(handler) = slot.get().cloned() else {
        return Err(RemoteError::new(
            code::NOT_FOUND,
            "this node serves no HTTP API".to_string(),
        ));
    };
    let answer = handler(RelayRequest {
        method: relay.method,
        path: relay.path,
        accept: relay.accept,
        body: Bytes::from(relay.body),
    })
    .await;
    let size = answer
        .body
        .iter()
        .fold(0u64, |sum, b| sum.saturating_add(b.len() as u64));
    let whole = size <= MAX_RELAY_BODY as u64;
    let relayed = if whole && answer.delivered.is_none() {
        Relayed {
            status: answer.status,
            headers: bounded(answer.headers),
            body: answer.body.concat(),
            rest: None,
        }
    } else {
        // Sent whole but told delivered, or pulled in chunks.
        let (body, parked_frames) = match whole {
            true => (answer.body.concat(), Vec::new()),
            false => (Vec::new(), answer.body),
        };
        match parked.park(peer, parked_frames, answer.delivered) {
            Ok((token, size)) => Relayed {
                status: answer.status,
                headers: bounded(answer.headers),
                body,
                rest: Some(Rest { token, size }),
            },
            Err(why) => busy(&why),
        }
    };
    Ok(relayed)
}

/// A 503 `relay_busy` answer saying `why`, as the HTTP API's errors read.
fn busy(why: &ParkError) -> Relayed {
    let body = serde_json::json!({
        "error": {"code": "relay_busy", "message": format!("the node that has it is busy: {why}")}
    });
    Relayed {
        status: 503,
        headers: vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("retry-after".to_string(), "1".to_string()),
        ],
        body: serde_json::to_vec(&body).unwrap_or_default(),
        rest: None,
    }
}
