//! Requests to another node's HTTP API, relayed over the node-to-node
//! channel: a job, an object or an actor made through node A is reachable
//! through node B. B asks every other live node at once (`HTTP_RELAY`)
//! and answers with the first answer that is not a 404; each node runs a
//! relayed request through its own HTTP routes ([`RelayHandler`], set by
//! the HTTP server: the host knows no HTTP), as authenticated: the peer
//! proved the cluster token. The HTTP layer decides which routes may be
//! relayed and which may be asked for.
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
use serde::{Deserialize, Serialize};
use wray_peer::RemoteError;

use crate::cluster::forward::Forwarder;
use crate::cluster::protocol::{code, decode, encode, HTTP_RELAY};

/// The longest path (with its query) a relayed request may have, in bytes.
pub const MAX_RELAY_PATH: usize = 8 << 10;

/// The most headers a relayed answer carries, and the longest of them
/// (name and value), in bytes.
pub const MAX_RELAY_HEADERS: (usize, usize) = (16, 1024);

/// The largest body of a relayed request or answer (8 MiB, half the
/// channel's bound on a message): a larger answer is refused, for the
/// client to ask the node that has it.
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

/// A node's answer to a relayed request.
#[derive(Debug, Clone)]
pub struct RelayResponse {
    /// The HTTP status.
    pub status: u16,
    /// Its headers (`Content-Type` and the API's own), at most
    /// [`MAX_RELAY_HEADERS`].
    pub headers: Vec<(String, String)>,
    /// Its body, at most [`MAX_RELAY_BODY`] bytes.
    pub body: Bytes,
}

/// What runs a relayed request through this node's HTTP routes.
pub type RelayHandler =
    Arc<dyn Fn(RelayRequest) -> BoxFuture<'static, RelayResponse> + Send + Sync>;

/// Where the node's [`RelayHandler`] is kept: set once its HTTP API
/// serves, read by the peer channel.
pub type RelaySlot = Arc<OnceLock<RelayHandler>>;

/// A relayed request as it travels.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Relay {
    method: String,
    path: String,
    accept: Option<String>,
    body: Vec<u8>,
}

/// Its answer as it travels.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Relayed {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
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
        let body = encode(&Relay {
            method: request.method,
            path: request.path,
            accept: request.accept,
            body: request.body.to_vec(),
        })
        .ok()?;
        self.first_answer(HTTP_RELAY, body, None, |answer| {
            let relayed = decode::<Relayed>("http-relayed", answer).ok()?;
            (relayed.status != 404 && relayed.body.len() <= MAX_RELAY_BODY).then(|| RelayResponse {
                status: relayed.status,
                headers: bounded(relayed.headers),
                body: Bytes::from(relayed.body),
            })
        })
        .await
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
    ) -> BoxStream<'static, (String, Result<RelayResponse, String>)> {
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
            let why = format!(
                "a relayed request's path is at most {MAX_RELAY_PATH} bytes and its body \
                 {MAX_RELAY_BODY}"
            );
            return stream::iter(nodes.into_iter().map(move |(id, _)| (id, Err(why.clone()))))
                .boxed();
        }
        let body = match encode(&Relay {
            method: request.method,
            path: request.path,
            accept: request.accept,
            body: request.body.to_vec(),
        }) {
            Ok(body) => body,
            Err(e) => {
                return stream::iter(nodes.into_iter().map(move |(id, _)| (id, Err(e.clone()))))
                    .boxed()
            }
        };
        let client = self.client.clone();
        stream::iter(nodes)
            .map(move |(id, addr)| {
                let (client, body) = (client.clone(), body.clone());
                async move {
                    let call = client.call(&addr, HTTP_RELAY, body);
                    let answer = match tokio::time::timeout(deadline, call).await {
                        Err(_) => Err(format!("no answer within {deadline:?}")),
                        Ok(Err(e)) => Err(e.to_string()),
                        Ok(Ok(answer)) => {
                            decode::<Relayed>("http-relayed", &answer).and_then(|relayed| {
                                if relayed.body.len() > MAX_RELAY_BODY {
                                    return Err(format!(
                                        "an answer of {} bytes, more than {MAX_RELAY_BODY}",
                                        relayed.body.len()
                                    ));
                                }
                                Ok(RelayResponse {
                                    status: relayed.status,
                                    headers: bounded(relayed.headers),
                                    body: Bytes::from(relayed.body),
                                })
                            })
                        }
                    };
                    (id, answer)
                }
            })
            .buffer_unordered(FAN_OUT)
            .boxed()
    }
}

/// Answers a peer's relayed request `body` through `slot`'s handler.
///
/// # Errors
/// A malformed or oversized request; no HTTP API here.
pub(crate) async fn answer(slot: &RelaySlot, body: &[u8]) -> Result<Bytes, RemoteError> {
    let bad = |m: String| RemoteError::new(code::BAD_REQUEST, m);
    let relay: Relay = decode("http-relay", body).map_err(bad)?;
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
    let response = handler(RelayRequest {
        method: relay.method,
        path: relay.path,
        accept: relay.accept,
        body: Bytes::from(relay.body),
    })
    .await;
    // The HTTP layer's handler answers at most MAX_RELAY_BODY bytes (a
    // larger answer is its 507); this only keeps a message within the
    // channel's bound whatever the handler does.
    if response.body.len() > MAX_RELAY_BODY {
        return Err(RemoteError::new(
            code::UNAVAILABLE,
            format!("the answer is larger than a relayed answer may be ({MAX_RELAY_BODY} bytes)"),
        ));
    }
    let relayed = Relayed {
        status: response.status,
        headers: bounded(response.headers),
        body: response.body.to_vec(),
    };
    encode(&relayed).map_err(|m| RemoteError::new(code::BAD_REQUEST, m))
}
