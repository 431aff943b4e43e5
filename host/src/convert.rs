//! Conversions between the generated WIT types and the host's own types.

use wray_control_plane::{Declared, ObjectId, TaskId};

use crate::bindings::types;
use crate::error::{ErrorKind, TaskError};
use crate::object_store::Codec;

impl From<TaskId> for types::TaskId {
    fn from(id: TaskId) -> Self {
        let (hi, lo) = id.to_parts();
        types::TaskId { hi, lo }
    }
}

impl From<types::TaskId> for TaskId {
    fn from(id: types::TaskId) -> Self {
        TaskId::from_parts(id.hi, id.lo)
    }
}

impl From<ObjectId> for types::ObjectId {
    fn from(id: ObjectId) -> Self {
        types::ObjectId {
            task: id.task.into(),
            index: id.index,
        }
    }
}

impl From<types::ObjectId> for ObjectId {
    fn from(id: types::ObjectId) -> Self {
        ObjectId {
            task: id.task.into(),
            index: id.index,
        }
    }
}

impl From<types::Codec> for Codec {
    fn from(c: types::Codec) -> Self {
        match c {
            types::Codec::Rkyv => Codec::Rkyv,
            types::Codec::Json => Codec::Json,
            types::Codec::Raw => Codec::Raw,
        }
    }
}

impl From<Codec> for types::Codec {
    fn from(c: Codec) -> Self {
        match c {
            Codec::Rkyv => types::Codec::Rkyv,
            Codec::Json => types::Codec::Json,
            Codec::Raw => types::Codec::Raw,
        }
    }
}

impl From<types::ErrorKind> for ErrorKind {
    fn from(k: types::ErrorKind) -> Self {
        match k {
            types::ErrorKind::Application => ErrorKind::Application,
            types::ErrorKind::Panic => ErrorKind::Panic,
            types::ErrorKind::Trap => ErrorKind::Trap,
            types::ErrorKind::OutOfMemory => ErrorKind::OutOfMemory,
            types::ErrorKind::Timeout => ErrorKind::Timeout,
            types::ErrorKind::InvalidArgument => ErrorKind::InvalidArgument,
            types::ErrorKind::NotFound => ErrorKind::NotFound,
            types::ErrorKind::ActorDied => ErrorKind::ActorDied,
            types::ErrorKind::System => ErrorKind::System,
            types::ErrorKind::Infeasible => ErrorKind::Infeasible,
            types::ErrorKind::Cancelled => ErrorKind::Cancelled,
        }
    }
}

impl From<ErrorKind> for types::ErrorKind {
    fn from(k: ErrorKind) -> Self {
        match k {
            ErrorKind::Application => types::ErrorKind::Application,
            ErrorKind::Panic => types::ErrorKind::Panic,
            ErrorKind::Trap => types::ErrorKind::Trap,
            ErrorKind::OutOfMemory => types::ErrorKind::OutOfMemory,
            ErrorKind::Timeout => types::ErrorKind::Timeout,
            ErrorKind::InvalidArgument => types::ErrorKind::InvalidArgument,
            ErrorKind::NotFound => types::ErrorKind::NotFound,
            ErrorKind::ActorDied => types::ErrorKind::ActorDied,
            ErrorKind::System => types::ErrorKind::System,
            ErrorKind::Infeasible => types::ErrorKind::Infeasible,
            ErrorKind::Cancelled => types::ErrorKind::Cancelled,
        }
    }
}

impl From<types::TaskError> for TaskError {
    fn from(e: types::TaskError) -> Self {
        TaskError {
            kind: e.kind.into(),
            function: e.function,
            task: e.task.into(),
            message: e.message,
        }
    }
}

impl From<TaskError> for types::TaskError {
    fn from(e: TaskError) -> Self {
        types::TaskError {
            kind: e.kind.into(),
            function: e.function,
            task: e.task.into(),
            message: e.message,
        }
    }
}

/// A function's declared resources, as a request to resolve.
pub(crate) fn declared_request(d: &Declared) -> types::ResourceRequest {
    types::ResourceRequest {
        num_cpus: d.num_cpus,
        num_gpus: d.num_gpus,
        memory: d.memory,
        custom: d.resources.clone(),
    }
}

/// A function's declared limits.
pub(crate) fn declared_limits(d: &Declared) -> types::Limits {
    types::Limits {
        max_memory: d.max_memory,
        timeout_ms: d.timeout_ms,
        fuel: d.fuel,
    }
}
