//! The peer messages as they are written: protobuf (prost) structs, one
//! per message and per part of one, apart from the host's own types
//! (`proto::TaskSpec`, `TaskError`, ...). `convert` turns them into those
//! types and back, checking every field that came from a peer.
//!
//! Protobuf because a message must be able to grow: a field a newer node
//! adds (a new tag) is skipped by an older one, and a field an older node
//! leaves out reads as its default (empty, zero, `None`), while each
//! field costs a tag byte rather than its name. Rules for changing a
//! message: never reuse or renumber a tag; a new field's default must
//! mean what the older nodes do; a field an older node must not ignore
//! raises [`TASK_VERSION`](super::TASK_VERSION) (a task) or the
//! protocol version (`wray_peer::PROTOCOL_VERSION`).
//!
//! Ids travel as fixed-size bytes: a task's (or an actor's) 16, an
//! object's 20 (its task's 16, then its index, a big-endian `u32`); a
//! list of object ids is one `bytes` field, 20 bytes each.

use std::collections::BTreeMap;

/// An object's codec (`proto::Codec`); 0 is no codec, refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum Codec {
    /// Not set (a malformed message).
    Unspecified = 0,
    /// rkyv archive.
    Rkyv = 1,
    /// JSON text.
    Json = 2,
    /// Uninterpreted bytes.
    Raw = 3,
}

/// A task (`proto::TaskSpec`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Task {
    /// The version of the task message the sender wrote (1 to
    /// [`TASK_VERSION`](super::TASK_VERSION) are read).
    #[prost(uint32, tag = "1")]
    pub version: u32,
    /// Its id (16 bytes).
    #[prost(bytes = "vec", tag = "2")]
    pub id: Vec<u8>,
    /// What it runs.
    #[prost(oneof = "Target", tags = "3, 4, 5")]
    pub target: Option<Target>,
    /// How errors and logs name it.
    #[prost(string, tag = "6")]
    pub label: String,
    /// Its component's content hash.
    #[prost(string, tag = "7")]
    pub component: String,
    /// Its arguments.
    #[prost(message, repeated, tag = "8")]
    pub args: Vec<Arg>,
    /// Its return objects' ids, packed.
    #[prost(bytes = "vec", tag = "9")]
    pub returns: Vec<u8>,
    /// Its resources.
    #[prost(message, optional, tag = "10")]
    pub request: Option<Request>,
    /// Its limits.
    #[prost(message, optional, tag = "11")]
    pub limits: Option<Limits>,
    /// The task that submitted it (16 bytes), if any.
    #[prost(bytes = "vec", optional, tag = "12")]
    pub parent: Option<Vec<u8>>,
    /// The codec its caller reads results in, if not the callee's own.
    #[prost(enumeration = "Codec", optional, tag = "13")]
    pub result_codec: Option<i32>,
    /// It may run on an instance shared across jobs.
    #[prost(bool, tag = "14")]
    pub shared_reuse: bool,
}

/// What a task runs (`proto::Target`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Target {
    /// A remote function.
    #[prost(message, tag = "3")]
    Function(Function),
    /// An actor's constructor.
    #[prost(message, tag = "4")]
    ActorCreate(ActorCreate),
    /// An actor's method.
    #[prost(message, tag = "5")]
    ActorCall(ActorCall),
}

/// A remote function, by name.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Function {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
}

/// The constructor of an actor.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActorCreate {
    /// The actor (16 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub actor: Vec<u8>,
    /// Its class.
    #[prost(string, tag = "2")]
    pub class: String,
}

/// A method of an actor.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActorCall {
    /// The actor (16 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub actor: Vec<u8>,
    /// The method.
    #[prost(string, tag = "2")]
    pub method: String,
}

/// One argument (`proto::Arg`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Arg {
    /// A value or an object.
    #[prost(oneof = "ArgKind", tags = "1, 2")]
    pub kind: Option<ArgKind>,
}

/// A value or an object.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum ArgKind {
    /// A value, inline.
    #[prost(message, tag = "1")]
    Value(Payload),
    /// An object's id (20 bytes).
    #[prost(bytes = "vec", tag = "2")]
    Object(Vec<u8>),
}

/// A value (`proto::Payload`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Payload {
    /// Its codec.
    #[prost(enumeration = "Codec", tag = "1")]
    pub codec: i32,
    /// Its bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub data: Vec<u8>,
    /// The objects it refers to, packed ids.
    #[prost(bytes = "vec", tag = "3")]
    pub refs: Vec<u8>,
}

/// Resources (`proto::Request`), in fixed-point units of 1/10,000
/// (`proto::quantity::SCALE`); memory in bytes.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Request {
    /// CPU cores.
    #[prost(uint64, tag = "1")]
    pub cpu: u64,
    /// GPUs.
    #[prost(uint64, tag = "2")]
    pub gpu: u64,
    /// Bytes of memory.
    #[prost(uint64, tag = "3")]
    pub memory: u64,
    /// Custom resources by name.
    #[prost(btree_map = "string, uint64", tag = "4")]
    pub custom: BTreeMap<String, u64>,
}

/// Limits (`proto::Limits`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Limits {
    /// Bytes of linear memory.
    #[prost(uint64, tag = "1")]
    pub max_memory: u64,
    /// Wall-clock milliseconds, if limited.
    #[prost(uint64, optional, tag = "2")]
    pub timeout_ms: Option<u64>,
    /// Fuel, if metered.
    #[prost(uint64, optional, tag = "3")]
    pub fuel: Option<u64>,
}

/// A `RunTask` request.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RunTask {
    /// The task.
    #[prost(message, optional, tag = "1")]
    pub task: Option<Task>,
    /// The name its component is deployed under on the sender.
    #[prost(string, optional, tag = "2")]
    pub component_name: Option<String>,
    /// The objects its arguments name.
    #[prost(message, repeated, tag = "3")]
    pub objects: Vec<Shipped>,
    /// Where the actors whose handles travel live.
    #[prost(message, repeated, tag = "4")]
    pub actors: Vec<ActorRef>,
    /// An actor created detached.
    #[prost(bool, tag = "5")]
    pub detached: bool,
    /// The job's environment.
    #[prost(message, optional, tag = "6")]
    pub env: Option<PortableEnv>,
}

/// The answer to a `RunTask`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TaskDone {
    /// Its return objects, then what their values name.
    #[prost(message, repeated, tag = "1")]
    pub objects: Vec<Shipped>,
    /// Where the actors whose handles travel live.
    #[prost(message, repeated, tag = "2")]
    pub actors: Vec<ActorRef>,
    /// An actor's task: the actor died of this.
    #[prost(message, optional, tag = "3")]
    pub actor_died: Option<ErrorChain>,
    /// What the node had free as it answered.
    #[prost(message, optional, tag = "4")]
    pub available: Option<Available>,
    /// It kept nothing to release (absent: it did, as older nodes).
    #[prost(bool, tag = "5")]
    pub nothing_kept: bool,
}

/// Amounts of resources by name.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Available {
    /// Amount by resource name.
    #[prost(btree_map = "string, double", tag = "1")]
    pub amounts: BTreeMap<String, f64>,
}

/// One object as it travels.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Shipped {
    /// Its id (20 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub id: Vec<u8>,
    /// Its value, or how to fetch it.
    #[prost(oneof = "Shipment", tags = "2, 3, 4")]
    pub value: Option<Shipment>,
}

/// An object's value.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Shipment {
    /// The bytes, here.
    #[prost(message, tag = "2")]
    Inline(Payload),
    /// Bytes to pull.
    #[prost(message, tag = "3")]
    Pull(Pull),
    /// The object is an error.
    #[prost(message, tag = "4")]
    Error(ErrorChain),
}

/// A value to pull from the sender (key: the object's id).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Pull {
    /// Its codec.
    #[prost(enumeration = "Codec", tag = "1")]
    pub codec: i32,
    /// How many bytes.
    #[prost(uint64, tag = "2")]
    pub size: u64,
    /// CRC-32 (IEEE) of the bytes.
    #[prost(uint32, tag = "3")]
    pub crc: u32,
    /// The objects they refer to, packed ids.
    #[prost(bytes = "vec", tag = "4")]
    pub refs: Vec<u8>,
}

/// A task's error, its chain flattened nearest first.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ErrorChain {
    /// Each error of the chain.
    #[prost(message, repeated, tag = "1")]
    pub links: Vec<ErrorLink>,
}

/// One error of a chain.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ErrorLink {
    /// Its kind (its WIT name).
    #[prost(string, tag = "1")]
    pub kind: String,
    /// The function that failed.
    #[prost(string, tag = "2")]
    pub function: String,
    /// The task (16 bytes).
    #[prost(bytes = "vec", tag = "3")]
    pub task: Vec<u8>,
    /// What happened.
    #[prost(string, tag = "4")]
    pub message: String,
}

/// An actor whose handle travels.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActorRef {
    /// Its id (16 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub actor: Vec<u8>,
    /// The node its instance lives on.
    #[prost(string, tag = "2")]
    pub node: String,
    /// The receiver owns it from now on.
    #[prost(bool, tag = "3")]
    pub owner: bool,
    /// Its class.
    #[prost(string, tag = "4")]
    pub class: String,
    /// Its component's content hash.
    #[prost(string, tag = "5")]
    pub component: String,
    /// Its calls' limits.
    #[prost(message, optional, tag = "6")]
    pub limits: Option<Limits>,
    /// Its `max_restarts`.
    #[prost(uint32, tag = "7")]
    pub max_restarts: u32,
    /// Its `max_task_retries`.
    #[prost(uint32, tag = "8")]
    pub max_task_retries: u32,
}

/// A job's environment as it travels (`job_env::PortableEnv`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PortableEnv {
    /// Environment variables.
    #[prost(message, repeated, tag = "1")]
    pub vars: Vec<Pair>,
    /// Host directories and where the guests see them.
    #[prost(message, repeated, tag = "2")]
    pub dirs: Vec<Pair>,
    /// The working directory.
    #[prost(message, optional, tag = "3")]
    pub working_dir: Option<WorkingDir>,
    /// The node of the job's log.
    #[prost(string, optional, tag = "4")]
    pub log_node: Option<String>,
}

/// Two strings.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Pair {
    /// The first (a name, a host path).
    #[prost(string, tag = "1")]
    pub key: String,
    /// The second (a value, a guest path).
    #[prost(string, tag = "2")]
    pub value: String,
}

/// A job's working directory.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WorkingDir {
    /// Its package (32 bytes: SHA-256).
    #[prost(bytes = "vec", tag = "1")]
    pub package: Vec<u8>,
    /// Its size, in bytes.
    #[prost(uint64, tag = "2")]
    pub bytes: u64,
    /// Where the guests see it.
    #[prost(string, tag = "3")]
    pub guest: String,
}

/// A message that names one task (`Release`, `CancelTask`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TaskNamed {
    /// The task (16 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub task: Vec<u8>,
}

/// `KillActor`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct KillActor {
    /// The actor (16 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub actor: Vec<u8>,
    /// Why.
    #[prost(string, tag = "2")]
    pub why: String,
}

/// `ActorWhere`, and `HoldActor` (with `held`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActorNamed {
    /// The actor (16 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub actor: Vec<u8>,
    /// `HoldActor`: the sender holds it from now on.
    #[prost(bool, tag = "2")]
    pub held: bool,
}

/// `JobEnded`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct JobNamed {
    /// The job.
    #[prost(fixed64, tag = "1")]
    pub job: u64,
}

/// `JobOutput`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct JobOutput {
    /// The job.
    #[prost(fixed64, tag = "1")]
    pub job: u64,
    /// Whole lines.
    #[prost(bytes = "vec", tag = "2")]
    pub bytes: Vec<u8>,
    /// Bytes dropped before them.
    #[prost(uint64, tag = "3")]
    pub dropped: u64,
}

/// `Ping`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Ping {
    /// Tasks, 16 bytes each, packed.
    #[prost(bytes = "vec", tag = "1")]
    pub tasks: Vec<u8>,
}

/// A relayed HTTP request.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Relay {
    /// `GET`, `POST`, `DELETE`.
    #[prost(string, tag = "1")]
    pub method: String,
    /// Path and query.
    #[prost(string, tag = "2")]
    pub path: String,
    /// Its `Accept` header.
    #[prost(string, optional, tag = "3")]
    pub accept: Option<String>,
    /// Its body.
    #[prost(bytes = "vec", tag = "4")]
    pub body: Vec<u8>,
}

/// A relayed HTTP answer.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Relayed {
    /// Its status (100 to 999).
    #[prost(uint32, tag = "1")]
    pub status: u32,
    /// Its headers.
    #[prost(message, repeated, tag = "2")]
    pub headers: Vec<Pair>,
    /// Its body, or the first part.
    #[prost(bytes = "vec", tag = "3")]
    pub body: Vec<u8>,
    /// How to pull the rest.
    #[prost(message, optional, tag = "4")]
    pub rest: Option<Parked>,
}

/// A parked answer (`RelayDone`, and a `Relayed`'s rest).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Parked {
    /// Its token (16 bytes).
    #[prost(bytes = "vec", tag = "1")]
    pub token: Vec<u8>,
    /// `Relayed`: bytes to pull.
    #[prost(uint64, tag = "2")]
    pub size: u64,
    /// `RelayDone`: the client got every byte.
    #[prost(bool, tag = "3")]
    pub delivered: bool,
}
