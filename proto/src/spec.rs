//! [`TaskSpec`]: one task as it travels, to a queue here or later to
//! another node: plain data, with no live handles (a function is named by
//! its component's content hash and its name, an actor by its id).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use wray_control_plane::{ActorId, ObjectId, TaskId};

use super::{Limits, Request};

/// How an object's bytes are encoded (the WIT `codec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Codec {
    /// rkyv archive.
    Rkyv,
    /// JSON text.
    Json,
    /// Uninterpreted bytes.
    Raw,
}

/// A value passed by value: encoded bytes and the object refs inside them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    /// Encoding of `data`.
    pub codec: Codec,
    /// The bytes.
    pub data: Vec<u8>,
    /// Object refs serialized inside `data`.
    pub refs: Vec<ObjectId>,
}

/// One argument of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arg {
    /// A value, inline.
    Value(Payload),
    /// An object: the task waits until it is sealed and gets its value.
    Object(ObjectId),
}

/// The object that stands for the handles of actor `actor`: whoever holds
/// a handle holds it (the creator, and each task, value or session the
/// handle travels in), and the actor exits once it is freed and the
/// actor's queue is empty, unless it was created detached (Ray frees an
/// actor when its handles go out of scope). The first return object of
/// the actor's creation task.
pub fn actor_handle_object(actor: ActorId) -> ObjectId {
    ObjectId {
        task: actor,
        index: 1,
    }
}

impl Arg {
    /// The objects the argument names: the object itself, or the refs
    /// inside the value.
    pub fn named(&self) -> &[ObjectId] {
        match self {
            Arg::Object(id) => std::slice::from_ref(id),
            Arg::Value(p) => &p.refs,
        }
    }
}

/// What a task runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// Remote function `name` of the component.
    Function {
        /// The function's name.
        name: String,
    },
    /// The constructor of actor `actor` of class `class` (its first task).
    ActorCreate {
        /// The actor being made.
        actor: ActorId,
        /// Its class.
        class: String,
    },
    /// Method `method` of actor `actor`.
    ActorCall {
        /// The actor.
        actor: ActorId,
        /// The method's name.
        method: String,
    },
}

/// One task: what to run, with which arguments, under which resources and
/// limits, and where its results go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Its id (its job is `id.job()`).
    pub id: TaskId,
    /// What it runs.
    pub target: Target,
    /// `name`, `Class.method` or `Class.new`: how errors and logs name it.
    pub label: String,
    /// Content hash of the component it runs in (its function-table key).
    pub component: Arc<str>,
    /// Its arguments.
    pub args: Vec<Arg>,
    /// The objects it returns, in order (none for a constructor).
    pub returns: Vec<ObjectId>,
    /// The resources it runs with (an actor's: for its lifetime).
    pub request: Request,
    /// Its limits.
    pub limits: Limits,
    /// The task that submitted it (`None`: a session outside any task).
    pub parent: Option<TaskId>,
    /// The codec its caller reads results in (`None`: the callee's own).
    #[serde(default)]
    pub result_codec: Option<Codec>,
    /// A `reuse` function's task may run on an instance shared across jobs
    /// ([`TaskOptions::shared_reuse`](super::TaskOptions::shared_reuse)).
    #[serde(default)]
    pub shared_reuse: bool,
}

impl TaskSpec {
    /// The object ids among the arguments (the task's dependencies).
    pub fn dependencies(&self) -> impl Iterator<Item = ObjectId> + '_ {
        self.args.iter().filter_map(|a| match a {
            Arg::Object(id) => Some(*id),
            Arg::Value(_) => None,
        })
    }

    /// Every object the arguments name: object arguments and the refs
    /// inside value arguments.
    pub fn referenced(&self) -> Vec<ObjectId> {
        self.args.iter().flat_map(Arg::named).copied().collect()
    }
}
