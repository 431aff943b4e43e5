//! Each peer message to its protobuf form (`wire`) and back, checked: an
//! id of the wrong length, a codec or status out of range, a field that
//! must be there and is not, is a [`BadMessage`].

use wray_control_plane::JobId;

use super::codec::{
    object_id, object_id_bytes, pack_objects, pack_tasks, task_id, unpack_objects, unpack_tasks,
    BadMessage, Message,
};
use super::task::{codec_from_wire, codec_to_wire, limits_from_wire, limits_to_wire};
use super::{
    wire, ActorRef, ActorWhere, CancelTask, HoldActor, JobEnded, JobOutput, KillActor, Ping, Relay,
    RelayDone, Relayed, Release, Rest, RunTask, Shipment, Shipped, TaskDone, WireError,
};
use crate::job_env::{PortableEnv, WorkingDirRef};
use crate::working_dir::PackageId;

impl Message for RunTask {
    type Wire = wire::RunTask;

    fn into_wire(self) -> wire::RunTask {
        wire::RunTask {
            task: Some(self.spec.into()),
            component_name: self.component_name,
            objects: self.objects.into_iter().map(shipped_to_wire).collect(),
            actors: self.actors.into_iter().map(actor_to_wire).collect(),
            detached: self.detached,
            env: self.env.map(env_to_wire),
        }
    }

    fn from_wire(w: wire::RunTask) -> Result<Self, BadMessage> {
        Ok(RunTask {
            spec: w.task.ok_or(BadMessage::Missing("task"))?.try_into()?,
            component_name: w.component_name,
            objects: w
                .objects
                .into_iter()
                .map(shipped_from_wire)
                .collect::<Result<_, _>>()?,
            actors: w
                .actors
                .into_iter()
                .map(actor_from_wire)
                .collect::<Result<_, _>>()?,
            detached: w.detached,
            env: w.env.map(env_from_wire).transpose()?,
        })
    }
}

impl Message for TaskDone {
    type Wire = wire::TaskDone;

    fn into_wire(self) -> wire::TaskDone {
        wire::TaskDone {
            objects: self.objects.into_iter().map(shipped_to_wire).collect(),
            actors: self.actors.into_iter().map(actor_to_wire).collect(),
            actor_died: self.actor_died.map(error_to_wire),
            available: self.available.map(|amounts| wire::Available { amounts }),
            nothing_kept: self.nothing_kept,
        }
    }

    fn from_wire(w: wire::TaskDone) -> Result<Self, BadMessage> {
        Ok(TaskDone {
            objects: w
                .objects
                .into_iter()
                .map(shipped_from_wire)
                .collect::<Result<_, _>>()?,
            actors: w
                .actors
                .into_iter()
                .map(actor_from_wire)
                .collect::<Result<_, _>>()?,
            actor_died: w.actor_died.map(error_from_wire).transpose()?,
            available: w.available.map(|a| a.amounts),
            nothing_kept: w.nothing_kept,
        })
    }
}

fn shipped_to_wire(s: Shipped) -> wire::Shipped {
    wire::Shipped {
        id: object_id_bytes(&s.id).to_vec(),
        value: Some(match s.value {
            Shipment::Inline { codec, data, refs } => wire::Shipment::Inline(wire::Payload {
                codec: codec_to_wire(codec),
                data,
                refs: pack_objects(&refs),
            }),
            Shipment::Pull {
                codec,
                size,
                crc,
                refs,
            } => wire::Shipment::Pull(wire::Pull {
                codec: codec_to_wire(codec),
                size,
                crc,
                refs: pack_objects(&refs),
            }),
            Shipment::Error(e) => wire::Shipment::Error(error_to_wire(e)),
        }),
    }
}

fn shipped_from_wire(s: wire::Shipped) -> Result<Shipped, BadMessage> {
    let value = match s.value.ok_or(BadMessage::Missing("objects.value"))? {
        wire::Shipment::Inline(p) => Shipment::Inline {
            codec: codec_from_wire("objects.codec", p.codec)?,
            refs: unpack_objects("objects.refs", &p.refs)?,
            data: p.data,
        },
        wire::Shipment::Pull(p) => Shipment::Pull {
            codec: codec_from_wire("objects.codec", p.codec)?,
            size: p.size,
            crc: p.crc,
            refs: unpack_objects("objects.refs", &p.refs)?,
        },
        wire::Shipment::Error(e) => Shipment::Error(error_from_wire(e)?),
    };
    Ok(Shipped {
        id: object_id("objects.id", &s.id)?,
        value,
    })
}

fn error_to_wire(e: WireError) -> wire::ErrorChain {
    wire::ErrorChain {
        links: e
            .chain
            .into_iter()
            .map(|(kind, function, task, message)| wire::ErrorLink {
                kind,
                function,
                task: task.0.to_vec(),
                message,
            })
            .collect(),
    }
}

fn error_from_wire(e: wire::ErrorChain) -> Result<WireError, BadMessage> {
    let chain = e
        .links
        .into_iter()
        .map(|l| {
            Ok((
                l.kind,
                l.function,
                task_id("error.task", &l.task)?,
                l.message,
            ))
        })
        .collect::<Result<_, BadMessage>>()?;
    Ok(WireError { chain })
}

fn actor_to_wire(a: ActorRef) -> wire::ActorRef {
    wire::ActorRef {
        actor: a.actor.0.to_vec(),
        node: a.node,
        owner: a.owner,
        class: a.class,
        component: a.component,
        limits: Some(limits_to_wire(a.limits)),
        max_restarts: a.max_restarts,
        max_task_retries: a.max_task_retries,
    }
}

fn actor_from_wire(a: wire::ActorRef) -> Result<ActorRef, BadMessage> {
    Ok(ActorRef {
        actor: task_id("actors.actor", &a.actor)?,
        node: a.node,
        owner: a.owner,
        class: a.class,
        component: a.component,
        limits: limits_from_wire(a.limits.ok_or(BadMessage::Missing("actors.limits"))?),
        max_restarts: a.max_restarts,
        max_task_retries: a.max_task_retries,
    })
}

fn pairs_to_wire(pairs: Vec<(String, String)>) -> Vec<wire::Pair> {
    pairs
        .into_iter()
        .map(|(key, value)| wire::Pair { key, value })
        .collect()
}

fn pairs_from_wire(pairs: Vec<wire::Pair>) -> Vec<(String, String)> {
    pairs.into_iter().map(|p| (p.key, p.value)).collect()
}

fn env_to_wire(e: PortableEnv) -> wire::PortableEnv {
    wire::PortableEnv {
        vars: pairs_to_wire(e.vars),
        dirs: pairs_to_wire(e.dirs),
        working_dir: e.working_dir.map(|w| wire::WorkingDir {
            package: w.package.0.to_vec(),
            bytes: w.bytes,
            guest: w.guest,
        }),
        log_node: e.log_node,
    }
}

/// A job's environment from the wire (its bounds are checked on arrival,
/// `PortableEnv::check`).
fn env_from_wire(e: wire::PortableEnv) -> Result<PortableEnv, BadMessage> {
    let working_dir = match e.working_dir {
        None => None,
        Some(w) => {
            let package =
                <[u8; 32]>::try_from(w.package.as_slice()).map_err(|_| BadMessage::IdLength {
                    field: "env.working_dir.package",
                    len: w.package.len(),
                    size: 32,
                })?;
            Some(WorkingDirRef {
                package: PackageId(package),
                bytes: w.bytes,
                guest: w.guest,
            })
        }
    };
    Ok(PortableEnv {
        vars: pairs_from_wire(e.vars),
        dirs: pairs_from_wire(e.dirs),
        working_dir,
        log_node: e.log_node,
    })
}

impl Message for Release {
    type Wire = wire::TaskNamed;
    fn into_wire(self) -> wire::TaskNamed {
        wire::TaskNamed {
            task: self.task.0.to_vec(),
        }
    }
    fn from_wire(w: wire::TaskNamed) -> Result<Self, BadMessage> {
        Ok(Release {
            task: task_id("task", &w.task)?,
        })
    }
}

impl Message for CancelTask {
    type Wire = wire::TaskNamed;
    fn into_wire(self) -> wire::TaskNamed {
        wire::TaskNamed {
            task: self.task.0.to_vec(),
        }
    }
    fn from_wire(w: wire::TaskNamed) -> Result<Self, BadMessage> {
        Ok(CancelTask {
            task: task_id("task", &w.task)?,
        })
    }
}

impl Message for KillActor {
    type Wire = wire::KillActor;
    fn into_wire(self) -> wire::KillActor {
        wire::KillActor {
            actor: self.actor.0.to_vec(),
            why: self.why,
        }
    }
    fn from_wire(w: wire::KillActor) -> Result<Self, BadMessage> {
        Ok(KillActor {
            actor: task_id("actor", &w.actor)?,
            why: w.why,
        })
    }
}

impl Message for ActorWhere {
    type Wire = wire::ActorNamed;
    fn into_wire(self) -> wire::ActorNamed {
        wire::ActorNamed {
            actor: self.actor.0.to_vec(),
            held: false,
        }
    }
    fn from_wire(w: wire::ActorNamed) -> Result<Self, BadMessage> {
        Ok(ActorWhere {
            actor: task_id("actor", &w.actor)?,
        })
    }
}

impl Message for HoldActor {
    type Wire = wire::ActorNamed;
    fn into_wire(self) -> wire::ActorNamed {
        wire::ActorNamed {
            actor: self.actor.0.to_vec(),
            held: self.held,
        }
    }
    fn from_wire(w: wire::ActorNamed) -> Result<Self, BadMessage> {
        Ok(HoldActor {
            actor: task_id("actor", &w.actor)?,
            held: w.held,
        })
    }
}

impl Message for JobEnded {
    type Wire = wire::JobNamed;
    fn into_wire(self) -> wire::JobNamed {
        wire::JobNamed { job: self.job.0 }
    }
    fn from_wire(w: wire::JobNamed) -> Result<Self, BadMessage> {
        Ok(JobEnded { job: JobId(w.job) })
    }
}

impl Message for JobOutput {
    type Wire = wire::JobOutput;
    fn into_wire(self) -> wire::JobOutput {
        wire::JobOutput {
            job: self.job.0,
            bytes: self.bytes,
            dropped: self.dropped,
        }
    }
    fn from_wire(w: wire::JobOutput) -> Result<Self, BadMessage> {
        Ok(JobOutput {
            job: JobId(w.job),
            bytes: w.bytes,
            dropped: w.dropped,
        })
    }
}

impl Message for Ping {
    type Wire = wire::Ping;
    fn into_wire(self) -> wire::Ping {
        wire::Ping {
            tasks: pack_tasks(&self.tasks),
        }
    }
    fn from_wire(w: wire::Ping) -> Result<Self, BadMessage> {
        Ok(Ping {
            tasks: unpack_tasks("tasks", &w.tasks)?,
        })
    }
}

impl Message for Relay {
    type Wire = wire::Relay;
    fn into_wire(self) -> wire::Relay {
        wire::Relay {
            method: self.method,
            path: self.path,
            accept: self.accept,
            body: self.body,
        }
    }
    fn from_wire(w: wire::Relay) -> Result<Self, BadMessage> {
        Ok(Relay {
            method: w.method,
            path: w.path,
            accept: w.accept,
            body: w.body,
        })
    }
}

/// A parked answer's token from `field`.
fn token(field: &'static str, bytes: &[u8]) -> Result<[u8; 16], BadMessage> {
    <[u8; 16]>::try_from(bytes).map_err(|_| BadMessage::IdLength {
        field,
        len: bytes.len(),
        size: 16,
    })
}

impl Message for Relayed {
    type Wire = wire::Relayed;
    fn into_wire(self) -> wire::Relayed {
        wire::Relayed {
            status: u32::from(self.status),
            headers: pairs_to_wire(self.headers),
            body: self.body,
            rest: self.rest.map(|r| wire::Parked {
                token: r.token.to_vec(),
                size: r.size,
                delivered: false,
            }),
        }
    }
    fn from_wire(w: wire::Relayed) -> Result<Self, BadMessage> {
        let status = u16::try_from(w.status)
            .ok()
            .filter(|s| (100..=999).contains(s))
            .ok_or_else(|| {
                BadMessage::invalid("status", format!("{} is no HTTP status", w.status))
            })?;
        let rest = match w.rest {
            None => None,
            Some(r) => Some(Rest {
                token: token("rest.token", &r.token)?,
                size: r.size,
            }),
        };
        Ok(Relayed {
            status,
            headers: pairs_from_wire(w.headers),
            body: w.body,
            rest,
        })
    }
}

impl Message for RelayDone {
    type Wire = wire::Parked;
    fn into_wire(self) -> wire::Parked {
        wire::Parked {
            token: self.token.to_vec(),
            size: 0,
            delivered: self.delivered,
        }
    }
    fn from_wire(w: wire::Parked) -> Result<Self, BadMessage> {
        Ok(RelayDone {
            token: token("token", &w.token)?,
            delivered: w.delivered,
        })
    }
}

#[cfg(test)]
mod tests {
    use prost::encoding::{encode_key, encode_varint, WireType};
    use wray_control_plane::{ObjectId, TaskId};

    use super::*;
    use crate::proto::{Codec, Limits};
    use crate::protocol::codec::{decode, encode};
    use crate::protocol::{Ack, Pong};

    fn oid(n: u8, index: u32) -> ObjectId {
        ObjectId {
            task: TaskId([n; 16]),
            index,
        }
    }

    fn run_task() -> RunTask {
        RunTask {
            spec: crate::protocol::task::tests::spec(),
            component_name: Some("counter".into()),
            objects: vec![
                Shipped {
                    id: oid(1, 1),
                    value: Shipment::Inline {
                        codec: Codec::Raw,
                        data: vec![0, 1, 2, 255],
                        refs: vec![oid(2, 3)],
                    },
                },
                Shipped {
                    id: oid(2, 3),
                    value: Shipment::Pull {
                        codec: Codec::Rkyv,
                        size: 5 << 20,
                        crc: 0xDEAD_BEEF,
                        refs: Vec::new(),
                    },
                },
                Shipped {
                    id: oid(3, 1),
                    value: Shipment::Error(WireError {
                        chain: vec![
                            ("user".into(), "f".into(), TaskId([3; 16]), "boom".into()),
                            ("system".into(), "g".into(), TaskId([4; 16]), "cause".into()),
                        ],
                    }),
                },
            ],
            actors: vec![ActorRef {
                actor: TaskId([9; 16]),
                node: "node-0000000000000001".into(),
                owner: true,
                class: "Counter".into(),
                component: "sha256:abc".into(),
                limits: Limits {
                    max_memory: 1 << 20,
                    timeout: None,
                    fuel: Some(3),
                },
                max_restarts: 2,
                max_task_retries: 1,
            }],
            detached: true,
            env: Some(PortableEnv {
                vars: vec![("A".into(), "1".into())],
                dirs: vec![("/data".into(), "/in".into())],
                working_dir: Some(WorkingDirRef {
                    package: PackageId([5; 32]),
                    bytes: 42,
                    guest: "/work".into(),
                }),
                log_node: Some("node-0000000000000002".into()),
            }),
        }
    }

    /// `message` encoded, decoded and encoded again: the same bytes.
    fn round_trips<T: Message>(message: T) -> T {
        let bytes = encode(message);
        let back: T = decode(&bytes).expect("it decodes");
        let again = encode(back);
        assert_eq!(bytes, again, "a round trip changed the bytes");
        decode(&again).expect("it decodes")
    }

    /// `bytes` with a field of tag 99 appended, as a newer node may send.
    fn with_unknown_field(mut bytes: Vec<u8>) -> Vec<u8> {
        prost::encoding::string::encode(99, &"from a newer node".to_string(), &mut bytes);
        prost::encoding::uint64::encode(100, &7, &mut bytes);
        bytes
    }

    #[test]
    fn every_message_round_trips() {
        let back = round_trips(run_task());
        assert_eq!(back.spec, run_task().spec);
        assert_eq!(back.env, run_task().env);
        assert_eq!(back.objects.len(), 3);
        let done = round_trips(TaskDone {
            objects: run_task().objects,
            actors: run_task().actors,
            actor_died: Some(WireError {
                chain: vec![(
                    "actor-died".into(),
                    "C.new".into(),
                    TaskId([1; 16]),
                    "x".into(),
                )],
            }),
            available: Some([("CPU".to_string(), 1.5)].into()),
            nothing_kept: true,
        });
        assert!(done.nothing_kept);
        assert_eq!(done.available, Some([("CPU".to_string(), 1.5)].into()));
        assert!(done.actor_died.is_some());
        let empty = round_trips(TaskDone {
            objects: Vec::new(),
            actors: Vec::new(),
            actor_died: None,
            available: None,
            nothing_kept: false,
        });
        assert!(empty.available.is_none() && empty.actor_died.is_none() && !empty.nothing_kept);
        assert_eq!(
            round_trips(Release {
                task: TaskId([1; 16])
            })
            .task,
            TaskId([1; 16])
        );
        assert_eq!(
            round_trips(CancelTask {
                task: TaskId([2; 16])
            })
            .task,
            TaskId([2; 16])
        );
        let kill = round_trips(KillActor {
            actor: TaskId([3; 16]),
            why: "because".into(),
        });
        assert_eq!(
            (kill.actor, kill.why.as_str()),
            (TaskId([3; 16]), "because")
        );
        assert_eq!(
            round_trips(ActorWhere {
                actor: TaskId([4; 16])
            })
            .actor,
            TaskId([4; 16])
        );
        let hold = round_trips(HoldActor {
            actor: TaskId([5; 16]),
            held: true,
        });
        assert!(hold.held);
        assert_eq!(
            round_trips(JobEnded {
                job: JobId(u64::MAX)
            })
            .job,
            JobId(u64::MAX)
        );
        let out = round_trips(JobOutput {
            job: JobId(7),
            bytes: b"line\n".to_vec(),
            dropped: 3,
        });
        assert_eq!((out.bytes.as_slice(), out.dropped), (&b"line\n"[..], 3));
        let ping = round_trips(Ping {
            tasks: vec![TaskId([1; 16]), TaskId([2; 16])],
        });
        assert_eq!(ping.tasks, vec![TaskId([1; 16]), TaskId([2; 16])]);
        assert_eq!(
            round_trips(Pong {
                held: vec![true, false]
            })
            .held,
            vec![true, false]
        );
        round_trips(Ack {});
        let relay = round_trips(Relay {
            method: "GET".into(),
            path: "/v1/jobs".into(),
            accept: Some("text/plain".into()),
            body: vec![1, 2],
        });
        assert_eq!(relay.accept.as_deref(), Some("text/plain"));
        let relayed = round_trips(Relayed {
            status: 404,
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{}".to_vec(),
            rest: Some(Rest {
                token: [8; 16],
                size: 1 << 30,
            }),
        });
        assert_eq!(relayed.status, 404);
        assert_eq!(
            relayed.rest.map(|r| (r.token, r.size)),
            Some(([8; 16], 1 << 30))
        );
        let done = round_trips(RelayDone {
            token: [9; 16],
            delivered: true,
        });
        assert!(done.delivered && done.token == [9; 16]);
    }

    #[test]
    fn a_field_from_a_newer_node_is_skipped() {
        // At the top of a request and of an answer.
        let body = with_unknown_field(encode(run_task()).to_vec());
        let back: RunTask = decode(&body).expect("a newer node's request decodes");
        assert_eq!(back.spec, run_task().spec);
        let answer = with_unknown_field(encode(Pong { held: vec![true] }).to_vec());
        assert_eq!(decode::<Pong>(&answer).unwrap().held, vec![true]);
        let ack = with_unknown_field(encode(Ack {}).to_vec());
        decode::<Ack>(&ack).expect("an answer with more fields decodes");
        // Inside the task message, nested in the request.
        let task = with_unknown_field(prost::Message::encode_to_vec(&wire::Task::from(
            run_task().spec,
        )));
        let mut body = Vec::new();
        encode_key(1, WireType::LengthDelimited, &mut body);
        encode_varint(task.len() as u64, &mut body);
        body.extend_from_slice(&task);
        let back: RunTask = decode(&body).expect("a newer node's task decodes");
        assert_eq!(back.spec, run_task().spec);
        assert!(back.objects.is_empty() && back.env.is_none());
    }

    #[test]
    fn hostile_messages_are_errors() {
        let check = |result: Result<(), BadMessage>, says: &str| {
            let err = result.expect_err(says).to_string();
            assert!(err.contains(says), "{err} (wanted {says})");
        };
        let run = |w: wire::RunTask| RunTask::from_wire(w).map(drop);
        let good = || run_task().into_wire();
        // Not protobuf at all, and a message cut short.
        check(
            decode::<RunTask>(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff").map(drop),
            "well-formed",
        );
        let whole = encode(run_task());
        check(
            decode::<RunTask>(&whole[..whole.len() - 3]).map(drop),
            "well-formed",
        );
        check(decode::<RunTask>(b"").map(drop), "task is missing");
        check(decode::<RunTask>(b"[]").map(drop), "well-formed");
        let mut w = good();
        w.objects[0].id.pop();
        check(run(w), "objects.id is 19 bytes");
        let mut w = good();
        w.objects[1].value = Some(wire::Shipment::Pull(wire::Pull {
            codec: 9,
            ..wire::Pull::default()
        }));
        check(run(w), "no codec is numbered 9");
        let mut w = good();
        w.objects[0].value = None;
        check(run(w), "objects.value is missing");
        let mut w = good();
        if let Some(wire::Shipment::Inline(p)) = &mut w.objects[0].value {
            p.refs.push(0);
        }
        check(run(w), "objects.refs is 21 bytes");
        let mut w = good();
        w.actors[0].limits = None;
        check(run(w), "actors.limits is missing");
        let mut w = good();
        if let Some(env) = &mut w.env {
            env.working_dir = Some(wire::WorkingDir {
                package: vec![1; 31],
                ..wire::WorkingDir::default()
            });
        }
        check(run(w), "env.working_dir.package is 31 bytes");
        let mut w = good();
        if let Some(t) = &mut w.task {
            t.version = 99;
        }
        check(run(w), "a task message of version 99");
        check(
            Relayed::from_wire(wire::Relayed {
                status: 70_000,
                ..wire::Relayed::default()
            })
            .map(drop),
            "70000 is no HTTP status",
        );
        check(
            RelayDone::from_wire(wire::Parked {
                token: vec![1; 15],
                ..wire::Parked::default()
            })
            .map(drop),
            "token is 15 bytes",
        );
        check(
            Ping::from_wire(wire::Ping { tasks: vec![0; 17] }).map(drop),
            "tasks is 17 bytes",
        );
        check(
            Release::from_wire(wire::TaskNamed::default()).map(drop),
            "task is 0 bytes",
        );
    }
}
