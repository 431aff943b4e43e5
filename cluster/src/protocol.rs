//! The node-to-node protocol of a cluster (`wray-peer` carries its
//! bytes): its methods, declared once with their request and answer
//! (`methods`: [`PeerMethod`], the table `METHODS`, the server's
//! [`PeerService`] and [`dispatch`]), called with one typed [`call()`](call::call), and
//! the messages they carry. The messages here are the host's types; each
//! is written as a protobuf message of `wire` (`codec`, `task`,
//! `convert`), so that a message can gain fields without breaking the
//! nodes that do not know them yet (docs/peer-protocol.md, "Messages").
//!
//! Every message comes from a peer: it is decoded from a body the channel
//! already bounded (16 MiB), and each id, count and size in it is checked
//! before it sizes anything ([`MAX_OBJECTS`], [`INLINE_SHIP_MAX`]); a
//! value out of bounds is a `BadMessage`, never a panic.

mod call;
mod codec;
mod convert;
mod methods;
mod task;
mod wire;

pub(crate) use call::{call, send, Encoded};
pub(crate) use codec::{object_id, object_id_bytes};
pub(crate) use methods::{dispatch, known_methods, method, PeerMethod, PeerService};

use std::sync::Arc;

use wray_control_plane::{ActorId, JobId, ObjectId, TaskId};

use crate::error::{ErrorKind, TaskError};
use crate::job_env::PortableEnv;
use crate::proto::{Codec, Limits, TaskSpec};
use crate::working_dir::PackageId;

/// Error codes of a refused call (`RemoteError::code`).
pub(crate) mod code {
    /// The body is not the message the method takes, or breaks a bound.
    pub(crate) const BAD_REQUEST: u16 = 400;
    /// The component or object named is not on this node.
    pub(crate) const NOT_FOUND: u16 = 404;
    /// This node cannot take the task (resources, store room, shutdown).
    pub(crate) const UNAVAILABLE: u16 = 503;
    /// The call was done, but its answer could not be made or sent (more
    /// bytes than a body may carry; a `RunTask`'s results name too many
    /// objects, say): the message says why. For a `RunTask`, not a
    /// refusal: the task ran and is not run again.
    pub(crate) const ANSWER_FAILED: u16 = 502;
    /// `RunTask`: the task waited here for resources and another node has
    /// room first: it is handed back to its owner, never having run here;
    /// the message is the id of the node with room (spillback), or empty
    /// when the node is draining and takes no new work (the owner places
    /// it again by what it knows).
    pub(crate) const MOVED: u16 = 307;
    /// `RunTask`: the node is draining, and its `--grace` ended while the
    /// task ran: the task was stopped there (it may have run in part) and
    /// is run again elsewhere, as after the node's death.
    pub(crate) const CUT: u16 = 410;
    // 501: no method has the call's id (a newer node's method), answered
    // by `wray_peer::UnknownMethods` with `wray_peer::UNKNOWN_METHOD`.
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
#[derive(Debug)]
pub(crate) struct Shipped {
    /// Its id (the same on every node).
    pub id: ObjectId,
    /// Its value, or how to fetch it.
    pub value: Shipment,
}

/// An object's value in a message.
#[derive(Debug)]
pub(crate) enum Shipment {
    /// The bytes, here.
    Inline {
        /// Their codec.
        codec: Codec,
        /// The bytes.
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
#[derive(Debug, Clone)]
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
    pub(crate) fn into_error(self) -> Option<TaskError> {
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
#[derive(Debug)]
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
    /// (`JobEnded`); `None` when the job has none.
    pub env: Option<PortableEnv>,
}

/// Lines a job's guests wrote on the sender, for the job's log here.
#[derive(Debug)]
pub(crate) struct JobOutput {
    /// The job.
    pub job: JobId,
    /// Whole lines, at most [`MAX_OUTPUT_BYTES`].
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
#[derive(Debug, Clone)]
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
#[derive(Debug)]
pub(crate) struct ActorWhere {
    /// The actor.
    pub actor: ActorId,
}

/// The sender keeps a stub of this actor, which lives here (`held`), or
/// its stub went.
#[derive(Debug)]
pub(crate) struct HoldActor {
    /// The actor.
    pub actor: ActorId,
    /// Whether the sender holds it from now on (else it let go).
    pub held: bool,
}

/// This job ended (its driver returned).
#[derive(Debug)]
pub(crate) struct JobEnded {
    /// The job.
    pub job: JobId,
}

/// Kill this actor, which lives here.
#[derive(Debug)]
pub(crate) struct KillActor {
    /// The actor.
    pub actor: ActorId,
    /// Why (said in its later calls' errors), cut to
    /// [`MAX_KILL_REASON`] bytes when read.
    pub why: String,
}

/// Cancel this task (forwarded here by the sender), recursively.
#[derive(Debug)]
pub(crate) struct CancelTask {
    /// The task.
    pub task: TaskId,
}

/// The most bytes of a [`KillActor`]'s reason kept.
pub(crate) const MAX_KILL_REASON: usize = 1024;

/// How a forwarded task ended.
#[derive(Debug)]
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
    /// The node that ran it kept nothing for the owner to release: every
    /// object came inline and no actor handle travels, so the owner sends
    /// no [`Release`] (one call per task fewer). An older node leaves it
    /// out, read as `false`: its owner releases as before.
    pub nothing_kept: bool,
}

/// The most resource names a [`TaskDone::available`] is taken with (a
/// node record's bound, `check_node_record`'s).
pub(crate) const MAX_RESOURCE_NAMES: usize = 64;

/// The owner has what was shipped for `task`.
#[derive(Debug)]
pub(crate) struct Release {
    /// The task whose shipment may go.
    pub task: TaskId,
}

/// A liveness probe ([`method::Ping`]): which of `tasks`, forwarded here by the
/// sender, this node still holds (at most [`MAX_PING_TASKS`] are looked
/// at).
#[derive(Debug, Default)]
pub(crate) struct Ping {
    /// Tasks the sender forwarded here and waits for.
    pub tasks: Vec<TaskId>,
}

/// The answer to a [`Ping`]: for each task asked, in order, whether this
/// node holds it (receiving its arguments, queued or running, not yet
/// answered).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Pong {
    /// One per task of the ping.
    #[prost(bool, repeated, tag = "1")]
    pub held: Vec<bool>,
}

/// The answer of a method that answers nothing but that it was done.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Ack {}

/// The answer to an [`ActorWhere`].
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActorHere {
    /// The actor lives here, alive and constructed.
    #[prost(bool, tag = "1")]
    pub here: bool,
}

/// The answer to a [`HoldActor`].
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActorHeld {
    /// The actor is alive here (and, when held, counts the sender among
    /// its holders).
    #[prost(bool, tag = "1")]
    pub alive: bool,
}

/// The answer to a [`JobOutput`].
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct OutputTaken {
    /// The lines were written; false when the job has no log here (the
    /// sender stops sending its output).
    #[prost(bool, tag = "1")]
    pub written: bool,
}

codec::own_wire!(Pong, Ack, ActorHere, ActorHeld, OutputTaken);

/// The most tasks one [`Ping`] asks about.
pub(crate) const MAX_PING_TASKS: usize = 1024;

/// A relayed request as it travels (`relay`).
#[derive(Debug)]
pub(crate) struct Relay {
    /// `GET`, `POST`, `DELETE`.
    pub(crate) method: String,
    /// The path and query.
    pub(crate) path: String,
    /// Its `Accept` header, if any.
    pub(crate) accept: Option<String>,
    /// Its body.
    pub(crate) body: Vec<u8>,
}

/// Its answer as it travels: the body whole, or its first part and how
/// to pull the rest.
#[derive(Debug)]
pub(crate) struct Relayed {
    /// Its HTTP status (100 to 999).
    pub(crate) status: u16,
    /// Its headers (at most `relay::MAX_RELAY_HEADERS` are kept).
    pub(crate) headers: Vec<(String, String)>,
    /// Its body, or the first part of it.
    pub(crate) body: Vec<u8>,
    /// How to pull the rest, parked on the answering node.
    pub(crate) rest: Option<Rest>,
}

/// The rest of a relayed answer, as it travels: pull `size` bytes from
/// key `relay_stream::key(token)`, then say `RelayDone`.
#[derive(Debug)]
pub(crate) struct Rest {
    /// The parked answer's token.
    pub token: [u8; 16],
    /// Bytes to pull (0: only its delivery is to be told).
    pub size: u64,
}

/// The asking node is done with a parked answer: every byte reached its
/// client (`delivered`), or not.
#[derive(Debug)]
pub(crate) struct RelayDone {
    /// The parked answer's token.
    pub token: [u8; 16],
    /// Whether the client got every byte.
    pub delivered: bool,
}
