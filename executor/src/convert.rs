//! Conversions between the generated WIT types and the host's own types.

use wray_control_plane::{ObjectId, TaskId};

use crate::bindings::types;
use crate::error::{ErrorKind, TaskError};
use crate::objects::Codec;
use crate::proto;

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
    /// A guest's claim, without its `causes`: those are checked against the
    /// errors the task saw ([`crate::classify::guest_error`]).
    fn from(e: types::TaskError) -> Self {
        TaskError::new(e.kind.into(), e.function, e.task.into(), e.message)
    }
}

impl From<&TaskError> for types::ErrorCause {
    fn from(e: &TaskError) -> Self {
        types::ErrorCause {
            kind: e.kind.into(),
            function: e.function.clone(),
            task: e.task.into(),
            message: e.message.clone(),
        }
    }
}

impl From<TaskError> for types::TaskError {
    fn from(e: TaskError) -> Self {
        let causes = e.causes().map(Into::into).collect();
        types::TaskError {
            kind: e.kind.into(),
            function: e.function,
            task: e.task.into(),
            message: e.message,
            causes,
        }
    }
}

impl From<proto::Payload> for types::Payload {
    /// Moves the bytes (no copy).
    fn from(p: proto::Payload) -> Self {
        types::Payload {
            codec: p.codec.into(),
            data: p.data,
            refs: p.refs.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<types::Payload> for proto::Payload {
    /// Moves the bytes (no copy).
    fn from(p: types::Payload) -> Self {
        proto::Payload {
            codec: p.codec.into(),
            data: p.data,
            refs: p.refs.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<types::Arg> for proto::Arg {
    fn from(a: types::Arg) -> Self {
        match a {
            types::Arg::Value(p) => proto::Arg::Value(p.into()),
            types::Arg::Object(id) => proto::Arg::Object(id.into()),
        }
    }
}

impl From<types::ResourceRequest> for proto::ResourceOptions {
    fn from(r: types::ResourceRequest) -> Self {
        proto::ResourceOptions {
            num_cpus: r.num_cpus,
            num_gpus: r.num_gpus,
            memory: r.memory,
            custom: r.custom,
        }
    }
}

impl From<types::Limits> for proto::LimitOptions {
    fn from(l: types::Limits) -> Self {
        proto::LimitOptions {
            max_memory: l.max_memory,
            timeout_ms: l.timeout_ms,
            fuel: l.fuel,
        }
    }
}

impl From<types::SchedulingStrategy> for proto::Scheduling {
    fn from(s: types::SchedulingStrategy) -> Self {
        match s {
            types::SchedulingStrategy::Default => proto::Scheduling::Default,
            types::SchedulingStrategy::Spread => proto::Scheduling::Spread,
            types::SchedulingStrategy::NodeAffinity(a) => proto::Scheduling::Node {
                node: a.node_id,
                soft: a.soft,
            },
        }
    }
}

impl From<types::TaskOptions> for proto::TaskOptions {
    fn from(o: types::TaskOptions) -> Self {
        proto::TaskOptions {
            num_returns: o.num_returns,
            resources: o.resources.into(),
            limits: o.limits.into(),
            detached: o.detached,
            name: None,
            max_restarts: 0,
            max_task_retries: 0,
            result_codec: o.result_codec.map(Into::into),
            // Only code outside guests (the HTTP API) shares instances
            // across jobs.
            shared_reuse: false,
            on_caller_runtime: false,
            scheduling: proto::Scheduling::Default,
        }
    }
}
