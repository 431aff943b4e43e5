//! Relayed answers that do not travel in one message: a body larger than
//! [`MAX_RELAY_BODY`](crate::relay::MAX_RELAY_BODY), or one whose
//! delivery matters (a read-once object's: it is marked read only once
//! its bytes reached the client).
//!
//! The answering node parks such a body ([`Parked`], the pieces its HTTP
//! routes made, not copied: a value stays in the object store) under a
//! random token and answers with the body's size. The asking node pulls
//! it a chunk of at most [`RELAY_CHUNK`] bytes at a time
//! ([`RelayedRest`]) with the channel's reads, as its client takes it,
//! and at the end tells the answering node whether every byte reached the
//! client (`RelayDone`): only then does the answer's
//! [`Delivered`] run. A client that goes away midway, a pull that fails,
//! or a parked answer left unread for [`PARKED_IDLE`] leaves it unrun
//! (the object stays readable).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use wray_peer::{Blob, PeerClient, PeerError, RemoteError};

use crate::protocol::{call, code, method, RelayDone, Rest};

/// The most bytes the asking node pulls at once (1 MiB): with one chunk
/// pulled ahead, what a relayed answer holds in its memory.
pub const RELAY_CHUNK: u32 = 1 << 20;

/// The largest relayed answer (1 TiB): a bound on a size a peer states.
pub const MAX_RELAY_STREAM: u64 = 1 << 40;

/// The most answers a node keeps parked at once; past it, a relayed
/// answer that would be parked is refused as busy.
const MAX_PARKED: usize = 256;

/// How long a parked answer waits for its next pull (or its end) before
/// it is dropped, its [`Delivered`] unrun.
pub(crate) const PARKED_IDLE: Duration = Duration::from_secs(120);

/// What runs once a relayed answer's body reached the client whole (on
/// the node whose HTTP routes made it).
pub type Delivered = Box<dyn FnOnce() + Send>;

/// The token of a parked answer (random).
pub(crate) type Token = [u8; 16];

/// How a parked answer's key begins: 13 bytes, then the token (29 in
/// all; an object's key, its id, has 20).
const KEY_TAG: &[u8; 13] = b"wray-relayed/";

/// The channel's key of the parked answer `token`.
pub(crate) fn key(token: &Token) -> Vec<u8> {
    let mut key = KEY_TAG.to_vec();
    key.extend_from_slice(token);
    key
}

/// The token a key names, if it is a parked answer's.
pub(crate) fn token_of_key(key: &[u8]) -> Option<Token> {
    key.strip_prefix(KEY_TAG.as_slice())?.try_into().ok()
}

/// One parked answer.
struct Entry {
    /// The node it was answered to: the only one that may pull it.
    peer: String,
    /// Its body, in pieces.
    frames: Vec<Bytes>,
    /// Bytes of `frames`.
    size: u64,
    delivered: Option<Delivered>,
    /// When it was parked or last pulled.
    touched: Instant,
}

/// The answers this node parked for the nodes that asked (bounded by
/// `MAX_PARKED`; each dropped after [`PARKED_IDLE`] unread).
#[derive(Default)]
pub(crate) struct Parked {
    entries: Mutex<HashMap<Token, Entry>>,
}

impl Parked {
    /// Parks `frames` and `delivered` for node `peer` to pull; their
    /// token and size.
    ///
    /// # Errors
    /// [`ParkError::Full`] when `MAX_PARKED` answers are parked (once
    /// those left idle are dropped); [`ParkError::Token`] when no random
    /// token can be had.
    pub(crate) fn park(
        &self,
        peer: &str,
        frames: Vec<Bytes>,
        delivered: Option<Delivered>,
    ) -> Result<(Token, u64), ParkError> {
        let mut token = [0u8; 16];
        getrandom::fill(&mut token).map_err(ParkError::Token)?;
        let size = frames
            .iter()
            .fold(0u64, |sum, f| sum.saturating_add(f.len() as u64));
        self.expire();
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_PARKED {
            return Err(ParkError::Full);
        }
        entries.insert(
            token,
            Entry {
                peer: peer.to_string(),
                frames,
                size,
                delivered,
                touched: Instant::now(),
            },
        );
        Ok((token, size))
    }

    /// Bytes `offset..offset + len` of parked answer `token`, for `peer`
    /// (the node it was answered to): a slice of one piece (no copy), or
    /// the bytes of several copied into one buffer.
    ///
    /// # Errors
    /// 404 when no such answer is parked for `peer`; 400 for a range past
    /// its end.
    pub(crate) fn read(
        &self,
        peer: &str,
        token: &Token,
        offset: u64,
        len: u32,
    ) -> Result<Blob, RemoteError> {
        let mut entries = self.entries.lock();
        let Some(entry) = entries.get_mut(token).filter(|e| e.peer == peer) else {
            return Err(RemoteError::new(
                code::NOT_FOUND,
                "no relayed answer is parked here under that token (it ended, or was idle too long)",
            ));
        };
        entry.touched = Instant::now();
        let end = offset
            .checked_add(u64::from(len))
            .filter(|e| *e <= entry.size);
        let Some(end) = end else {
            return Err(RemoteError::new(
                code::BAD_REQUEST,
                format!(
                    "bytes {offset}+{len} are past the relayed answer's {}",
                    entry.size
                ),
            ));
        };
        Ok(slice(&entry.frames, offset, end))
    }

    /// Ends parked answer `token` of `peer`: its [`Delivered`] runs when
    /// `delivered`, else it is dropped unrun. Nothing for an answer not
    /// parked for `peer`.
    pub(crate) fn done(&self, peer: &str, token: &Token, delivered: bool) {
        let entry = {
            let mut entries = self.entries.lock();
            match entries.get(token) {
                Some(e) if e.peer == peer => entries.remove(token),
                _ => None,
            }
        };
        // Outside the lock: marking an object read may end a job.
        if let Some(Entry {
            delivered: Some(run),
            ..
        }) = entry
        {
            if delivered {
                run();
            }
        }
    }

    /// Drops the answers not pulled for [`PARKED_IDLE`] (their
    /// [`Delivered`] unrun), outside the lock.
    pub(crate) fn expire(&self) {
        let mut gone = Vec::new();
        {
            let mut entries = self.entries.lock();
            if entries.is_empty() {
                return;
            }
            entries.retain(|_, e| {
                let keep = e.touched.elapsed() < PARKED_IDLE;
                if !keep {
                    gone.push(std::mem::take(&mut e.frames));
                }
                keep
            });
        }
        drop(gone);
    }

    /// How many answers are parked now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

/// Bytes `start..end` of the body `frames` make (`end` within it).
fn slice(frames: &[Bytes], start: u64, end: u64) -> Blob {
    let mut at = 0u64;
    let mut out: Option<Vec<u8>> = None;
    for frame in frames {
        let len = frame.len() as u64;
        let (lo, hi) = (start.max(at), end.min(at.saturating_add(len)));
        if lo < hi {
            // Within this frame: offsets fit in usize (the frame does).
            let (a, b) = ((lo - at) as usize, (hi - at) as usize);
            if out.is_none() && lo == start && hi == end {
                return Blob::new(frame.slice(a..b));
            }
            out.get_or_insert_with(Vec::new)
                .extend_from_slice(&frame[a..b]);
        }
        at = at.saturating_add(len);
        if at >= end {
            break;
        }
    }
    Blob::new(out.unwrap_or_default())
}

/// A relayed answer that cannot be parked for its node to pull (answered
/// 503 `relay_busy`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ParkError {
    /// `MAX_PARKED` answers are parked already.
    #[error("{MAX_PARKED} relayed answers are being pulled from this node already")]
    Full,
    /// The OS gave no random bytes for its token.
    #[error("no random token: {0}")]
    Token(getrandom::Error),
}

/// Pulling the rest of a relayed answer from the node that answered
/// failed.
#[derive(Debug, thiserror::Error)]
#[error("pulling byte {offset} of a relayed answer from node {node}: {source}")]
pub struct RelayError {
    /// The node that answered.
    pub node: String,
    /// Where the pull was.
    pub offset: u64,
    /// What failed.
    #[source]
    pub source: PeerError,
}

/// The rest of a relayed answer's body, still on the node that answered:
/// pulled a chunk at a time ([`RelayedRest::next_chunk`]); then
/// [`RelayedRest::delivered`] tells that node the client has it all.
/// Dropped before, it tells that node the client does not (on the
/// current tokio runtime, best effort), which leaves a read-once object
/// readable.
pub struct RelayedRest {
    client: PeerClient,
    /// The answering node, and its channel address.
    node: String,
    addr: String,
    token: Token,
    size: u64,
    /// Bytes pulled so far.
    pulled: u64,
    /// Whether the answering node was told (or needs not be).
    told: bool,
}

impl std::fmt::Debug for RelayedRest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RelayedRest({} of {} bytes from node {})",
            self.pulled, self.size, self.node
        )
    }
}

impl RelayedRest {
    /// The rest `rest` of an answer of node `node` (channel address
    /// `addr`), pulled with `client`.
    pub(crate) fn new(client: PeerClient, node: String, addr: String, rest: &Rest) -> Self {
        RelayedRest {
            client,
            node,
            addr,
            token: rest.token,
            size: rest.size,
            pulled: 0,
            told: false,
        }
    }

    /// Bytes of the rest, in all.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether the rest has no bytes (only its delivery is to be told).
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The next chunk of the rest (at most [`RELAY_CHUNK`] bytes), or
    /// `None` once every byte was pulled.
    ///
    /// # Errors
    /// A [`RelayError`] when the pull fails (the node died, forgot the
    /// answer, or timed out); the rest is then lost.
    ///
    /// # Cancel safety
    /// Dropped midway, the chunk is pulled again by the next call.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, RelayError> {
        let left = self.size.saturating_sub(self.pulled);
        if left == 0 {
            return Ok(None);
        }
        // At most RELAY_CHUNK: fits in usize.
        let len = left.min(u64::from(RELAY_CHUNK)) as usize;
        let mut buf = vec![0u8; len];
        self.client
            .read(&self.addr, &key(&self.token), self.pulled, &mut buf)
            .await
            .map_err(|source| RelayError {
                node: self.node.clone(),
                offset: self.pulled,
                source,
            })?;
        self.pulled = self.pulled.saturating_add(len as u64);
        Ok(Some(Bytes::from(buf)))
    }

    /// Tells the answering node its answer reached the client whole
    /// (a read-once object is marked read there now).
    ///
    /// # Errors
    /// A [`RelayError`] when the node cannot be told.
    pub async fn delivered(mut self) -> Result<(), RelayError> {
        self.told = true;
        tell(&self.client, &self.addr, self.token, true)
            .await
            .map_err(|source| RelayError {
                node: self.node.clone(),
                offset: self.pulled,
                source,
            })
    }
}

impl Drop for RelayedRest {
    fn drop(&mut self) {
        if self.told {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (client, addr, token) = (self.client.clone(), self.addr.clone(), self.token);
        runtime.spawn(async move {
            if let Err(e) = tell(&client, &addr, token, false).await {
                tracing::debug!("telling {addr} a relayed answer was not delivered: {e}");
            }
        });
    }
}

/// Says `RelayDone` for `token` to the node at `addr`.
async fn tell(
    client: &PeerClient,
    addr: &str,
    token: Token,
    delivered: bool,
) -> Result<(), PeerError> {
    call::<method::RelayDone>(client, addr, RelayDone { token, delivered })
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::*;

    fn frames() -> Vec<Bytes> {
        vec![
            Bytes::from_static(b"abc"),
            Bytes::from_static(b""),
            Bytes::from_static(b"defgh"),
        ]
    }

    fn read(parked: &Parked, peer: &str, token: &Token, offset: u64, len: u32) -> Vec<u8> {
        parked
            .read(peer, token, offset, len)
            .map(|b| b.to_vec())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn keys_of_parked_answers_are_told_from_object_keys() {
        let token = [7u8; 16];
        assert_eq!(token_of_key(&key(&token)), Some(token));
        let object = crate::transfer::key(&wray_control_plane::ObjectId {
            task: wray_control_plane::TaskId([0xff; 16]),
            index: u32::MAX,
        });
        assert!(object.len() < key(&token).len());
        assert_eq!(token_of_key(&object), None);
        assert_eq!(token_of_key(&key(&token)[..20]), None);
    }

    #[test]
    fn a_parked_body_reads_across_its_pieces_and_only_by_its_node() {
        let parked = Parked::default();
        let (token, size) = parked.park("b", frames(), None).unwrap();
        assert_eq!(size, 8);
        assert_eq!(read(&parked, "b", &token, 0, 3), b"abc");
        assert_eq!(read(&parked, "b", &token, 1, 4), b"bcde");
        assert_eq!(read(&parked, "b", &token, 3, 5), b"defgh");
        assert_eq!(read(&parked, "b", &token, 8, 0), b"");
        let past = parked.read("b", &token, 6, 3).unwrap_err();
        assert_eq!(past.code, code::BAD_REQUEST);
        let past = parked.read("b", &token, u64::MAX, 2).unwrap_err();
        assert_eq!(past.code, code::BAD_REQUEST);
        let other = parked.read("c", &token, 0, 1).unwrap_err();
        assert_eq!(other.code, code::NOT_FOUND);
        // Another node cannot end it either.
        parked.done("c", &token, true);
        assert_eq!(parked.len(), 1);
        parked.done("b", &token, false);
        assert_eq!(parked.len(), 0);
        assert_eq!(
            parked.read("b", &token, 0, 1).unwrap_err().code,
            code::NOT_FOUND
        );
    }

    #[test]
    fn delivered_runs_only_when_the_asking_node_says_so() {
        let parked = Parked::default();
        let ran = Arc::new(AtomicBool::new(false));
        let mark = |ran: &Arc<AtomicBool>| -> Option<Delivered> {
            let ran = ran.clone();
            Some(Box::new(move || ran.store(true, Ordering::SeqCst)))
        };
        let (token, _) = parked.park("b", frames(), mark(&ran)).unwrap();
        parked.done("b", &token, false);
        assert!(!ran.load(Ordering::SeqCst), "not delivered: not run");
        let (token, _) = parked.park("b", frames(), mark(&ran)).unwrap();
        parked.done("b", &token, true);
        assert!(ran.load(Ordering::SeqCst));
    }

    #[test]
    fn parked_answers_are_bounded() {
        let parked = Parked::default();
        for _ in 0..MAX_PARKED {
            parked.park("b", Vec::new(), None).unwrap();
        }
        let err = parked.park("b", Vec::new(), None).unwrap_err().to_string();
        assert!(err.contains("256 relayed answers"), "{err}");
    }
}
