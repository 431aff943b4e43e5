//! The actor directory: named (and detached) actors, cluster-wide, so that
//! any node can find an actor by name (Ray's `get_actor`).
//!
//! A name is taken by one actor at a time: [`ActorDirectory::register_named`]
//! is a put-if-absent, and an actor's entry is changed or removed only by
//! callers that name that actor's id (a new actor that took the name after
//! the old one died is never removed by the old one's cleanup).

use std::collections::BTreeMap;
use std::ops::Bound;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::function_table::{check_name, is_content_hash};
use crate::nodes::NodeId;
use crate::{Error, Result};

/// The most named actors a cluster holds; a registration past it fails
/// with [`Error::DirectoryFull`]. (On etcd the count is read before the
/// write, so concurrent registrations may overshoot it by their number.)
pub const MAX_NAMED_ACTORS: u64 = 100_000;

/// The most entries one [`ActorDirectory::list`] call returns.
pub const MAX_ACTOR_PAGE: usize = 1_000;

/// The largest encoded [`ActorRecord`], in bytes.
pub const MAX_ACTOR_RECORD_BYTES: usize = 4 * 1024;

/// The longest class name, in bytes.
pub const MAX_CLASS_BYTES: usize = 256;

/// Where a named actor is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ActorState {
    /// Running.
    #[serde(rename = "ALIVE")]
    Alive,
    /// Its node died; it is being restarted elsewhere.
    #[serde(rename = "RESTARTING")]
    Restarting,
    /// Gone for good (its name stays taken until removed).
    #[serde(rename = "DEAD")]
    Dead,
}

/// A named actor's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorRecord {
    /// Its name: the key ([`NAME_RULE`](crate::NAME_RULE)).
    pub name: String,
    /// Its id: 32 lowercase hex digits, as [`ActorId`](crate::ActorId)
    /// displays.
    pub actor_id: String,
    /// The node it runs on (`node-<16 hex>`).
    pub node_id: String,
    /// Its class (the component's actor export).
    pub class: String,
    /// The content hash (SHA-256, hex) of its component.
    pub component: String,
    /// Whether it outlives the job that made it.
    pub detached: bool,
    /// ALIVE, RESTARTING or DEAD.
    pub state: ActorState,
    /// The node that owns it (created it; `node-<16 hex>`), when known:
    /// a non-detached actor dies with its owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_node: Option<String>,
    /// The limits each of its calls runs under, unless the call asks
    /// less.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ActorLimits>,
}

/// The limits an actor's calls run under (see [`ActorRecord::limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorLimits {
    /// Most bytes of linear memory.
    pub max_memory: u64,
    /// Most wall-clock milliseconds per call (`None`: no limit).
    pub timeout_ms: Option<u64>,
    /// Most wasm fuel per call (`None`: unmetered).
    pub fuel: Option<u64>,
}

/// One page of [`ActorDirectory::list`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActorPage {
    /// Entries by name.
    pub actors: Vec<ActorRecord>,
    /// The name to pass as `after` for the next page; `None` on the last.
    pub next: Option<String>,
    /// Entries in this page's range that failed their checks and were
    /// skipped.
    pub malformed: u64,
    /// Those entries, named (their keys and why, the first
    /// [`MAX_SKIPPED`](crate::MAX_SKIPPED)).
    pub skipped: Vec<crate::Skipped>,
}

/// Checks an actor id: 32 lowercase hex digits.
fn is_actor_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Checks `record`: a valid name, actor id, node id and content hash, and
/// a class of 1 to [`MAX_CLASS_BYTES`] bytes without control characters.
///
/// # Errors
/// [`Error::Invalid`] naming the actor and the field.
pub fn check_actor_record(record: &ActorRecord) -> Result<()> {
    let bad = |reason: &str| Error::Invalid {
        what: format!("record of named actor {:?}", record.name),
        reason: reason.to_string(),
    };
    check_name(&record.name).map_err(|e| bad(&e.to_string()))?;
    if !is_actor_id(&record.actor_id) {
        return Err(bad("its actor_id is not 32 lowercase hex digits"));
    }
    NodeId::parse(&record.node_id).map_err(|e| bad(&e.to_string()))?;
    if let Some(owner) = &record.owner_node {
        NodeId::parse(owner).map_err(|e| bad(&format!("its owner: {e}")))?;
    }
    if record.class.is_empty()
        || record.class.len() > MAX_CLASS_BYTES
        || record.class.chars().any(char::is_control)
    {
        return Err(bad(
            "its class is empty, over 256 bytes or has a control character",
        ));
    }
    if !is_content_hash(&record.component) {
        return Err(bad("its component is not a sha-256 content hash"));
    }
    Ok(())
}

/// Checks a node id given to [`ActorDirectory::moved`].
pub(crate) fn check_node(node_id: &str) -> Result<()> {
    NodeId::parse(node_id)
        .map(|_| ())
        .map_err(|e| Error::Invalid {
            what: format!("node id {node_id:?}"),
            reason: e.to_string(),
        })
}

/// Decodes an entry read back under `key` for `name`: at most
/// [`MAX_ACTOR_RECORD_BYTES`], valid, and naming `name`.
///
/// # Errors
/// [`Error::Corrupt`] naming the key and the check.
pub(crate) fn decode_actor_record(key: &str, name: &str, value: &[u8]) -> Result<ActorRecord> {
    let record: ActorRecord = crate::codec::decode_json(key, value, MAX_ACTOR_RECORD_BYTES)?;
    let corrupt = |reason: String| Error::Corrupt {
        key: key.to_string(),
        reason,
    };
    check_actor_record(&record).map_err(|e| corrupt(e.to_string()))?;
    if record.name != name {
        return Err(corrupt("it names another actor".to_string()));
    }
    Ok(record)
}

/// The error of a name held by `holder`.
pub(crate) fn name_taken(name: &str, holder: Option<&ActorRecord>) -> Error {
    Error::AlreadyExists {
        what: "named actor",
        name: name.to_string(),
        holder: holder.map_or_else(String::new, |h| {
            format!(" (held by actor {} on {})", h.actor_id, h.node_id)
        }),
    }
}

/// `limit` checked: 1 to [`MAX_ACTOR_PAGE`].
pub(crate) fn check_limit(limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_ACTOR_PAGE {
        return Err(Error::Invalid {
            what: format!("actor page limit {limit}"),
            reason: format!("it must be 1 to {MAX_ACTOR_PAGE}"),
        });
    }
    Ok(())
}

/// The actor directory, as every control-plane backend provides it (one
/// per cluster).
#[async_trait]
pub trait ActorDirectory: Send + Sync {
    /// Takes `record.name` for `record`'s actor, if no actor holds it.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] naming the holder; [`Error::Invalid`];
    /// [`Error::DirectoryFull`] past [`MAX_NAMED_ACTORS`];
    /// [`Error::Unavailable`].
    async fn register_named(&self, record: ActorRecord) -> Result<()>;

    /// The actor named `name`, if any (a name that breaks the rule names
    /// none).
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a damaged entry; [`Error::Unavailable`].
    async fn get_named(&self, name: &str) -> Result<Option<ActorRecord>>;

    /// Sets the state of the actor named `name`, if it is still actor
    /// `actor_id`; whether it was.
    ///
    /// # Errors
    /// [`Error::Conflict`] when concurrent writers kept changing it;
    /// [`Error::Corrupt`]; [`Error::Unavailable`].
    async fn update_state(&self, name: &str, actor_id: &str, state: ActorState) -> Result<bool>;

    /// Sets the node of the actor named `name` (restarted there) and its
    /// state back to ALIVE, if it is still actor `actor_id`; whether it
    /// was.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a malformed node id; as
    /// [`ActorDirectory::update_state`].
    async fn moved(&self, name: &str, actor_id: &str, node_id: &str) -> Result<bool>;

    /// Frees `name` if it is still held by actor `actor_id`; whether it
    /// was.
    ///
    /// # Errors
    /// [`Error::Unavailable`].
    async fn remove_named(&self, name: &str, actor_id: &str) -> Result<bool>;

    /// Up to `limit` (1 to [`MAX_ACTOR_PAGE`]) entries by name, after name
    /// `after` (none: from the first).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad limit; [`Error::Unavailable`].
    async fn list(&self, limit: usize, after: Option<&str>) -> Result<ActorPage>;
}

/// The in-process actor directory of a single node.
#[derive(Debug, Default)]
pub struct EmbeddedActorDirectory {
    actors: Mutex<BTreeMap<String, ActorRecord>>,
}

impl EmbeddedActorDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl ActorDirectory for EmbeddedActorDirectory {
    async fn register_named(&self, record: ActorRecord) -> Result<()> {
        check_actor_record(&record)?;
        let mut actors = self.actors.lock();
        if let Some(holder) = actors.get(&record.name) {
            return Err(name_taken(&record.name, Some(holder)));
        }
        let held = actors.len() as u64;
        if held >= MAX_NAMED_ACTORS {
            return Err(Error::DirectoryFull {
                what: "actor directory",
                held,
                limit: MAX_NAMED_ACTORS,
            });
        }
        actors.insert(record.name.clone(), record);
        Ok(())
    }

    async fn get_named(&self, name: &str) -> Result<Option<ActorRecord>> {
        Ok(self.actors.lock().get(name).cloned())
    }

    async fn update_state(&self, name: &str, actor_id: &str, state: ActorState) -> Result<bool> {
        let mut actors = self.actors.lock();
        match actors.get_mut(name) {
            Some(record) if record.actor_id == actor_id => {
                record.state = state;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn moved(&self, name: &str, actor_id: &str, node_id: &str) -> Result<bool> {
        check_node(node_id)?;
        let mut actors = self.actors.lock();
        match actors.get_mut(name) {
            Some(record) if record.actor_id == actor_id => {
                record.node_id = node_id.to_string();
                record.state = ActorState::Alive;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn remove_named(&self, name: &str, actor_id: &str) -> Result<bool> {
        let mut actors = self.actors.lock();
        if actors.get(name).is_some_and(|r| r.actor_id == actor_id) {
            actors.remove(name);
            return Ok(true);
        }
        Ok(false)
    }

    async fn list(&self, limit: usize, after: Option<&str>) -> Result<ActorPage> {
        check_limit(limit)?;
        let actors = self.actors.lock();
        let from = after.map_or(Bound::Unbounded, |a| Bound::Excluded(a.to_string()));
        let mut range = actors.range((from, Bound::Unbounded));
        let page: Vec<ActorRecord> = range.by_ref().take(limit).map(|(_, r)| r.clone()).collect();
        let next = if range.next().is_some() {
            page.last().map(|r| r.name.clone())
        } else {
            None
        };
        Ok(ActorPage {
            actors: page,
            next,
            malformed: 0,
            skipped: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests;
