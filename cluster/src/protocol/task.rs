//! A [`TaskSpec`] on the wire ([`wire::Task`]) and back: the versioned
//! task message. A receiver reads versions 1 to [`TASK_VERSION`]; a field
//! added that an older node may ignore keeps the version, one it must
//! not ignore raises it (and an older node then refuses the task as a bad
//! request rather than run it wrongly).

use std::time::Duration;

use super::codec::{object_id, object_id_bytes, pack_objects, task_id, unpack_objects, BadMessage};
use super::wire;
use crate::proto::quantity::SCALE;
use crate::proto::{Arg, Codec, Limits, Payload, Quantity, Request, Target, TaskSpec};

/// The version of the task message this node writes, and the newest it
/// reads.
pub(crate) const TASK_VERSION: u32 = 1;

/// The largest quantity of a resource a task may ask for, in whole units
/// (`Quantity::from_f64`'s bound: 1e12).
const MAX_UNITS: u64 = 1_000_000_000_000;

/// The most custom resources one task may ask for (a node record has at
/// most as many: `MAX_RESOURCE_NAMES`).
const MAX_CUSTOM: usize = super::MAX_RESOURCE_NAMES;

impl From<TaskSpec> for wire::Task {
    fn from(spec: TaskSpec) -> Self {
        wire::Task {
            version: TASK_VERSION,
            id: spec.id.0.to_vec(),
            target: Some(match spec.target {
                Target::Function { name } => wire::Target::Function(wire::Function { name }),
                Target::ActorCreate { actor, class } => {
                    wire::Target::ActorCreate(wire::ActorCreate {
                        actor: actor.0.to_vec(),
                        class,
                    })
                }
                Target::ActorCall { actor, method } => wire::Target::ActorCall(wire::ActorCall {
                    actor: actor.0.to_vec(),
                    method,
                }),
            }),
            label: spec.label,
            component: spec.component.to_string(),
            args: spec.args.into_iter().map(arg_to_wire).collect(),
            returns: pack_objects(&spec.returns),
            request: Some(request_to_wire(spec.request)),
            limits: Some(limits_to_wire(spec.limits)),
            parent: spec.parent.map(|p| p.0.to_vec()),
            result_codec: spec.result_codec.map(codec_to_wire),
            shared_reuse: spec.shared_reuse,
        }
    }
}

impl TryFrom<wire::Task> for TaskSpec {
    type Error = BadMessage;

    fn try_from(task: wire::Task) -> Result<Self, BadMessage> {
        if task.version == 0 || task.version > TASK_VERSION {
            return Err(BadMessage::Version {
                got: task.version,
                max: TASK_VERSION,
            });
        }
        let target = match task.target.ok_or(BadMessage::Missing("task.target"))? {
            wire::Target::Function(f) => Target::Function { name: f.name },
            wire::Target::ActorCreate(c) => Target::ActorCreate {
                actor: task_id("task.target.actor", &c.actor)?,
                class: c.class,
            },
            wire::Target::ActorCall(c) => Target::ActorCall {
                actor: task_id("task.target.actor", &c.actor)?,
                method: c.method,
            },
        };
        if task.component.is_empty() {
            return Err(BadMessage::Missing("task.component"));
        }
        Ok(TaskSpec {
            id: task_id("task.id", &task.id)?,
            target,
            label: task.label,
            component: task.component.into(),
            args: task
                .args
                .into_iter()
                .map(arg_from_wire)
                .collect::<Result<_, _>>()?,
            returns: unpack_objects("task.returns", &task.returns)?,
            request: request_from_wire(task.request.ok_or(BadMessage::Missing("task.request"))?)?,
            limits: limits_from_wire(task.limits.ok_or(BadMessage::Missing("task.limits"))?),
            parent: task
                .parent
                .map(|p| task_id("task.parent", &p))
                .transpose()?,
            result_codec: task
                .result_codec
                .map(|c| codec_from_wire("task.result_codec", c))
                .transpose()?,
            shared_reuse: task.shared_reuse,
        })
    }
}

/// A codec's wire number.
pub(crate) fn codec_to_wire(codec: Codec) -> i32 {
    let wire = match codec {
        Codec::Rkyv => wire::Codec::Rkyv,
        Codec::Json => wire::Codec::Json,
        Codec::Raw => wire::Codec::Raw,
    };
    wire as i32
}

/// The codec numbered `n` in `field`.
///
/// # Errors
/// [`BadMessage::Invalid`] for 0 or a number no codec has.
pub(crate) fn codec_from_wire(field: &'static str, n: i32) -> Result<Codec, BadMessage> {
    match wire::Codec::try_from(n) {
        Ok(wire::Codec::Rkyv) => Ok(Codec::Rkyv),
        Ok(wire::Codec::Json) => Ok(Codec::Json),
        Ok(wire::Codec::Raw) => Ok(Codec::Raw),
        Ok(wire::Codec::Unspecified) | Err(_) => Err(BadMessage::invalid(
            field,
            format!("no codec is numbered {n}"),
        )),
    }
}

fn arg_to_wire(arg: Arg) -> wire::Arg {
    wire::Arg {
        kind: Some(match arg {
            Arg::Value(p) => wire::ArgKind::Value(payload_to_wire(p)),
            Arg::Object(id) => wire::ArgKind::Object(object_id_bytes(&id).to_vec()),
        }),
    }
}

fn arg_from_wire(arg: wire::Arg) -> Result<Arg, BadMessage> {
    match arg.kind.ok_or(BadMessage::Missing("task.args.kind"))? {
        wire::ArgKind::Value(p) => Ok(Arg::Value(Payload {
            codec: codec_from_wire("task.args.codec", p.codec)?,
            refs: unpack_objects("task.args.refs", &p.refs)?,
            data: p.data,
        })),
        wire::ArgKind::Object(id) => Ok(Arg::Object(object_id("task.args.object", &id)?)),
    }
}

fn payload_to_wire(p: Payload) -> wire::Payload {
    wire::Payload {
        codec: codec_to_wire(p.codec),
        refs: pack_objects(&p.refs),
        data: p.data,
    }
}

fn request_to_wire(r: Request) -> wire::Request {
    wire::Request {
        cpu: r.cpu.0,
        gpu: r.gpu.0,
        memory: r.memory,
        custom: r.custom.into_iter().map(|(k, q)| (k, q.0)).collect(),
    }
}

/// A quantity of `field` within [`MAX_UNITS`].
fn quantity(field: &'static str, units: u64) -> Result<Quantity, BadMessage> {
    if units > MAX_UNITS.saturating_mul(SCALE) {
        return Err(BadMessage::invalid(
            field,
            format!("{units} is more than {MAX_UNITS} units of {SCALE}"),
        ));
    }
    Ok(Quantity(units))
}

fn request_from_wire(r: wire::Request) -> Result<Request, BadMessage> {
    if r.custom.len() > MAX_CUSTOM {
        return Err(BadMessage::invalid(
            "task.request.custom",
            format!("{} resources, the most is {MAX_CUSTOM}", r.custom.len()),
        ));
    }
    Ok(Request {
        cpu: quantity("task.request.cpu", r.cpu)?,
        gpu: quantity("task.request.gpu", r.gpu)?,
        memory: r.memory,
        custom: r
            .custom
            .into_iter()
            .map(|(k, q)| Ok((k, quantity("task.request.custom", q)?)))
            .collect::<Result<_, BadMessage>>()?,
    })
}

/// Limits on the wire; a time limit in whole milliseconds, rounded up.
pub(crate) fn limits_to_wire(l: Limits) -> wire::Limits {
    let ms = |d: Duration| {
        let whole = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        if d.subsec_nanos() % 1_000_000 == 0 {
            whole
        } else {
            whole.saturating_add(1)
        }
    };
    wire::Limits {
        max_memory: l.max_memory,
        timeout_ms: l.timeout.map(ms),
        fuel: l.fuel,
    }
}

/// Limits from the wire (every value is a limit: the receiving node's
/// own limits are applied on top, `Limits::within`).
pub(crate) fn limits_from_wire(l: wire::Limits) -> Limits {
    Limits {
        max_memory: l.max_memory,
        timeout: l.timeout_ms.map(Duration::from_millis),
        fuel: l.fuel,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use prost::Message as _;
    use wray_control_plane::{ObjectId, TaskId};

    use super::*;

    /// A task with every field set.
    pub(crate) fn spec() -> TaskSpec {
        let id = TaskId([7; 16]);
        TaskSpec {
            id,
            target: Target::ActorCall {
                actor: TaskId([9; 16]),
                method: "add".into(),
            },
            label: "Counter.add".into(),
            component: "sha256:abc".into(),
            args: vec![
                Arg::Value(Payload {
                    codec: Codec::Json,
                    data: b"[1]".to_vec(),
                    refs: vec![ObjectId {
                        task: TaskId([3; 16]),
                        index: 0x8000_0001,
                    }],
                }),
                Arg::Object(ObjectId {
                    task: TaskId([4; 16]),
                    index: 2,
                }),
            ],
            returns: vec![ObjectId { task: id, index: 1 }],
            request: Request {
                cpu: Quantity(5_000),
                gpu: Quantity(0),
                memory: 1 << 20,
                custom: BTreeMap::from([("TPU".to_string(), Quantity(20_000))]),
            },
            limits: Limits {
                max_memory: 1 << 24,
                timeout: Some(Duration::from_millis(1500)),
                fuel: Some(10),
            },
            parent: Some(TaskId([1; 16])),
            result_codec: Some(Codec::Rkyv),
            shared_reuse: true,
        }
    }

    fn round_trip(spec: TaskSpec) -> Result<TaskSpec, BadMessage> {
        let bytes = wire::Task::from(spec).encode_to_vec();
        TaskSpec::try_from(wire::Task::decode(bytes.as_slice())?)
    }

    #[test]
    fn a_task_round_trips() {
        assert_eq!(round_trip(spec()).unwrap(), spec());
        let mut plain = spec();
        plain.target = Target::Function { name: "f".into() };
        plain.parent = None;
        plain.result_codec = None;
        plain.limits.timeout = None;
        plain.limits.fuel = None;
        assert_eq!(round_trip(plain.clone()).unwrap(), plain);
    }

    #[test]
    fn a_time_limit_under_a_millisecond_is_kept_as_one() {
        let mut s = spec();
        s.limits.timeout = Some(Duration::from_micros(10));
        assert_eq!(
            round_trip(s).unwrap().limits.timeout,
            Some(Duration::from_millis(1))
        );
    }

    #[test]
    fn hostile_tasks_are_errors() {
        let wired = || wire::Task::from(spec());
        let check = |task: wire::Task, says: &str| {
            let err = TaskSpec::try_from(task).expect_err(says).to_string();
            assert!(err.contains(says), "{err} (wanted {says})");
        };
        check(
            wire::Task {
                version: 0,
                ..wired()
            },
            "version 0",
        );
        check(
            wire::Task {
                version: 2,
                ..wired()
            },
            "version 2",
        );
        check(
            wire::Task {
                id: vec![1; 15],
                ..wired()
            },
            "task.id is 15 bytes",
        );
        check(
            wire::Task {
                returns: vec![0; 21],
                ..wired()
            },
            "task.returns is 21 bytes",
        );
        check(
            wire::Task {
                target: None,
                ..wired()
            },
            "task.target is missing",
        );
        check(
            wire::Task {
                limits: None,
                ..wired()
            },
            "task.limits is missing",
        );
        check(
            wire::Task {
                component: String::new(),
                ..wired()
            },
            "task.component",
        );
        check(
            wire::Task {
                result_codec: Some(7),
                ..wired()
            },
            "no codec is numbered 7",
        );
        check(
            wire::Task {
                result_codec: Some(0),
                ..wired()
            },
            "no codec is numbered 0",
        );
        let mut huge = wired();
        huge.request = Some(wire::Request {
            cpu: u64::MAX,
            ..wire::Request::default()
        });
        check(huge, "task.request.cpu");
        let mut many = wired();
        many.request = Some(wire::Request {
            custom: (0..65).map(|i| (format!("r{i}"), 1)).collect(),
            ..wire::Request::default()
        });
        check(many, "65 resources");
    }
}
