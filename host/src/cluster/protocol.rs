//! The messages of the node-to-node channel (`wray-peer` carries their
//! bytes): one serde type per request and answer, encoded with postcard.
//! Both sides are this module's, so a renamed field cannot drift.
//!
//! Every message comes from a peer: it is decoded from a body the channel
//! already bounded (16 MiB), and each count and size in it is checked
//! before it sizes anything ([`MAX_OBJECTS`], [`INLINE_SHIP_MAX`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use wray_control_plane::{ActorId, JobId, ObjectId, TaskId};

use crate::error::{ErrorKind, TaskError};
use crate::job_env::PortableEnv;
use crate::proto::{Codec, Limits, TaskSpec};
use crate::working_dir::PackageId;

/// `call` method: run a task here and answer its results ([`RunTask`] ->
/// [`TaskDone`]).
pub(crate) const RUN_TASK: u16 = 1;
/// `call` method: the owner has what a [`TaskDone`] shipped; the objects
/// kept for it may go ([`Release`] -> empty).
pub(crate) const RELEASE: u16 = 2;

/// `call` method: kill an actor living here ([`KillActor`] -> empty).
pub(crate) const KILL_ACTOR: u16 = 3;
/// `call` method: cancel a task the sender forwarded here, and what it
/// submitted ([`CancelTask`] -> empty).
pub(crate) const CANCEL_TASK: u16 = 4;
/// `call` method: answer a request of this node's HTTP API (`relay`'s
/// `Relay` -> `Relayed`).
pub(crate) const HTTP_RELAY: u16 = 5;
/// `call` method: the sender is done pulling a relayed answer parked
/// here, its client got all of it or not (`relay_stream`'s `RelayDone`
/// -> empty).
pub(crate) const RELAY_DONE: u16 = 16;
/// `call` method: whether an actor lives here, alive and constructed
/// ([`ActorWhere`] -> one byte, 1 or 0): how a node holding a handle
/// finds an actor its owner restarted elsewhere.
pub(crate) const ACTOR_WHERE: u16 = 6;
/// `call` method: the sender holds a handle of an actor living here, or
/// let go of it ([`HoldActor`] -> one byte, 1 when the actor is alive
/// here): an actor lives on while any node holds it.
pub(crate) const HOLD_ACTOR: u16 = 7;
/// `call` method: a job the sender sent tasks of here ended ([`JobEnded`]
/// -> empty): it ends here too.
pub(crate) const JOB_ENDED: u16 = 8;
/// `call` method: what a job's guests on the sender wrote, for the job's
/// log here ([`JobOutput`] -> one byte: 1 when written, 0 when the job
/// has no log here, and the sender stops sending its output).
pub(crate) const JOB_OUTPUT: u16 = 9;
/// `call` method: a liveness probe, and which of the sender's forwarded
/// tasks this node still holds ([`Ping`] -> [`Pong`]; `health`). A node
/// of an older release answers it `BAD_REQUEST`, which still proves it
/// answers.
pub(crate) const PING: u16 = 10;

/// Error codes of a refused call (`RemoteError::code`).
pub(crate) mod code {
    /// The body is not the message the method takes, or breaks a bound.
    pub const BAD_REQUEST: u16 = 400;
    /// The component or object named is not on this node.
    pub const NOT_FOUND: u16 = 404;
    /// This node cannot take the task (resources, store room, shutdown).
    pub const UNAVAILABLE: u16 = 503;
    /// `RUN_TASK`: the task ran here, but its answer could not be made or
    /// sent (its results name too many objects, say): the message says
    /// why. Not a refusal: the task is not run again.
    pub const ANSWER_FAILED: u16 = 502;
    /// `RUN_TASK`: the task waited here for resources and another node has
    /// room first: it is handed back to its owner, never having run here;
    /// the message is the id of the node with room (spillback), or empty
    /// when the node is draining and takes no new work (the owner places
    /// it again by what it knows).
    pub const MOVED: u16 = 307;
    /// `RUN_TASK`: the node is draining, and its `--grace` ended while the
    /// task ran: the task was stopped there (it may have run in part) and
    /// is run again elsewhere, as after the node's death.
    pub const CUT: u16 = 410;
}

/// The most objects one message ships (the task's arguments and what
/// their values refer to, or its results and theirs): 100,000, so that a
/// result holding tens of thousands of refs travels (Ray has no such
/// bound), while the store entries a peer's message can make stay
/// bounded (each object takes at least 20 bytes of a message: 2 MB of
/// the 16 MiB a body may carry).
pub(crate) const MAX_OBJECTS: usize = 100_000;

/// Values up to this size travel inside the message (1 MiB); larger ones
/// are pulled in chunks ([`Shipment::Pull`]).
pub(crate) const INLINE_SHIP_MAX: usize = 1 << 20;

/// The most bytes of values one message carries inline (8 MiB, half the
/// channel's bound on a body); past it, values are pulled.
pub(crate) const INLINE_MESSAGE_MAX: usize = 8 << 20;

/// How long a node keeps the objects it shipped for an owner that never
/// says it has them (the owner died, say): 5 minutes.
pub(crate) const SHIPPED_KEEP: std::time::Duration = std::time::Duration::from_secs(300);

/// One object as it travels.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Shipped {
    /// Its id (the same on every node).
    pub id: ObjectId,
    /// Its value, or how to fetch it.
    pub value: Shipment,
}

/// An object's value in a message.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Shipment {
    /// The bytes, here.
    Inline {
        /// Their codec.
        codec: Codec,
        /// The bytes.
        #[serde(with = "serde_bytes_vec")]
        data: Vec<u8>,
        /// The refs inside them.
        refs: Vec<ObjectId>,
    },
    /// `size` bytes to pull from the sender (key: the id), whose CRC-32 is
    /// `crc`.
    Pull {
        /// Their codec.
        codec: Codec,
        /// How many bytes.
        size: u64,
        /// CRC-32 (IEEE) of the bytes, checked once they arrived.
        crc: u32,
        /// The refs inside them.
        refs: Vec<ObjectId>,
    },
    /// The object is an error.
    Error(WireError),
}

/// A [`TaskError`] on the wire: the chain flattened, nearest first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WireError {
    /// Each error of the chain: kind (its WIT name), function, task,
    /// message.
    pub chain: Vec<(String, String, TaskId, String)>,
}

impl From<&TaskError> for WireError {
    fn from(e: &TaskError) -> Self {
        let mut chain = Vec::new();
        let mut next = Some(e);
        while let Some(e) = next.take() {
            chain.push((
                e.kind.to_string(),
                e.function.clone(),
                e.task,
                e.message.clone(),
            ));
            next = e.cause.as_deref();
        }
        WireError { chain }
    }
}

impl WireError {
    /// The error it carries, at most `MAX_CAUSES` deep; an unknown kind
    /// reads as `system`.
    pub fn into_error(self) -> Option<TaskError> {
        let mut out: Option<TaskError> = None;
        for (kind, function, task, message) in
            self.chain.into_iter().take(crate::bounds::MAX_CAUSES).rev()
        {
            let kind = ErrorKind::from_name(&kind).unwrap_or(ErrorKind::System);
            let mut e = TaskError::new(kind, function, task, message);
            e.cause = out.take().map(Arc::new);
            out = Some(e);
        }
        out
    }
}

/// Run this task here (the sender owns its results).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunTask {
    /// The task.
    pub spec: TaskSpec,
    /// The name its component is deployed under on the sender: a node
    /// that does not know the component's hash yet (a deploy it has not
    /// followed yet) loads that name from the function table.
    pub component_name: Option<String>,
    /// Every object its arguments name, and what their values name in
    /// turn.
    pub objects: Vec<Shipped>,
    /// Where the actors whose handles travel in `objects` live.
    pub actors: Vec<ActorRef>,
    /// An actor constructor's: the actor was created detached (it outlives
    /// its owner node).
    pub detached: bool,
    /// The environment of the task's job (variables, directories, working
    /// directory, the node of its log), checked on arrival
    /// (`PortableEnv::check`) and held there until the job ends there
    /// (`JOB_ENDED`); `None` when the job has none.
    pub env: Option<PortableEnv>,
}

/// Lines a job's guests wrote on the sender, for the job's log here.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JobOutput {
    /// The job.
    pub job: JobId,
    /// Whole lines, at most [`MAX_OUTPUT_BYTES`].
    #[serde(with = "serde_bytes_vec")]
    pub bytes: Vec<u8>,
    /// Bytes the sender dropped before them (its queue was full).
    pub dropped: u64,
}

/// The most bytes of lines one [`JobOutput`] carries (a batch, and the
/// marker of a task past its bound).
pub(crate) const MAX_OUTPUT_BYTES: usize = crate::job_outbox::MAX_BATCH + (64 << 10);

/// The first bytes of a read key naming a working-directory package
/// (the 32 bytes of its id follow): longer than any object's key.
pub(crate) const PACKAGE_KEY: &[u8] = b"wray-package/";

/// The read key of package `id`.
pub(crate) fn package_key(id: &PackageId) -> Vec<u8> {
    let mut key = PACKAGE_KEY.to_vec();
    key.extend_from_slice(&id.0);
    key
}

/// The package a read key names, if it names one.
pub(crate) fn package_of_key(key: &[u8]) -> Option<PackageId> {
    let id: [u8; 32] = key.strip_prefix(PACKAGE_KEY)?.try_into().ok()?;
    Some(PackageId(id))
}

/// An actor whose handle travels in a message: where it lives, and what a
/// node that learns of it needs to send it calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ActorRef {
    /// Its id.
    pub actor: ActorId,
    /// The node its instance lives on.
    pub node: String,
    /// The receiver owns it from now on (see `handles::refs`).
    pub owner: bool,
    /// Its class.
    pub class: String,
    /// The content hash of its component.
    pub component: String,
    /// Its calls' limits.
    pub limits: Limits,
    /// Its `max_restarts`: a node holding its handle looks for it
    /// elsewhere when its node dies.
    pub max_restarts: u32,
    /// Its `max_task_retries`.
    pub max_task_retries: u32,
}

/// Does this actor live here?
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ActorWhere {
    /// The actor.
    pub actor: ActorId,
}

/// The sender keeps a stub of this actor, which lives here (`held`), or
/// its stub went.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HoldActor {
    /// The actor.
    pub actor: ActorId,
    /// Whether the sender holds it from now on (else it let go).
    pub held: bool,
}

/// This job ended (its driver returned).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JobEnded {
    /// The job.
    pub job: JobId,
}

/// Kill this actor, which lives here.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct KillActor {
    /// The actor.
    pub actor: ActorId,
    /// Why (said in its later calls' errors), cut to
    /// [`MAX_KILL_REASON`] bytes when read.
    pub why: String,
}

/// Cancel this task (forwarded here by the sender), recursively.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CancelTask {
    /// The task.
    pub task: TaskId,
}

/// The most bytes of a [`KillActor`]'s reason kept.
pub(crate) const MAX_KILL_REASON: usize = 1024;

/// How a forwarded task ended.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TaskDone {
    /// Its return objects, in order, then every object their values name
    /// (made on the node that ran it).
    pub objects: Vec<Shipped>,
    /// Where the actors whose handles travel in `objects` live.
    pub actors: Vec<ActorRef>,
    /// An actor's task: the actor is dead there, of this.
    pub actor_died: Option<WireError>,
    /// What the node that ran it had free as it answered (amounts by
    /// resource name, at most [`MAX_RESOURCE_NAMES`]; a larger map is
    /// ignored): fresher than its record, for placement (`load`).
    pub available: Option<std::collections::BTreeMap<String, f64>>,
}

/// The most resource names a [`TaskDone::available`] is taken with (a
/// node record's bound, `check_node_record`'s).
pub(crate) const MAX_RESOURCE_NAMES: usize = 64;

/// The owner has what was shipped for `task`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Release {
    /// The task whose shipment may go.
    pub task: TaskId,
}

/// A liveness probe ([`PING`]): which of `tasks`, forwarded here by the
/// sender, this node still holds (at most [`MAX_PING_TASKS`] are looked
/// at).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Ping {
    /// Tasks the sender forwarded here and waits for.
    pub tasks: Vec<TaskId>,
}

/// The answer to a [`Ping`]: for each task asked, in order, whether this
/// node holds it (receiving its arguments, queued or running, not yet
/// answered).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Pong {
    /// One per task of the ping.
    pub held: Vec<bool>,
}

/// The most tasks one [`Ping`] asks about.
pub(crate) const MAX_PING_TASKS: usize = 1024;

/// Encodes a message.
pub(crate) fn encode<T: Serialize>(message: &T) -> Result<bytes::Bytes, String> {
    postcard::to_stdvec(message)
        .map(bytes::Bytes::from)
        .map_err(|e| format!("cannot encode a peer message: {e}"))
}

/// Decodes a message from a peer.
///
/// # Errors
/// A message naming what was expected.
pub(crate) fn decode<'a, T: Deserialize<'a>>(what: &str, body: &'a [u8]) -> Result<T, String> {
    postcard::from_bytes(body).map_err(|e| format!("the body is not a {what} message: {e}"))
}

/// `Vec<u8>` as one byte string (postcard's length and bytes) rather than
/// a sequence of numbers.
mod serde_bytes_vec {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let bytes: &[u8] = <&[u8]>::deserialize(d)?;
        Ok(bytes.to_vec())
    }
}
