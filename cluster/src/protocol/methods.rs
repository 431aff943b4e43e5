//! The peer methods, declared once ([`peer_methods!`]): each method's id,
//! request and answer live in one line of the table, from which come its
//! [`PeerMethod`] (what a client calls, `call::<M>`), the server's
//! [`PeerService`] trait (one handler per method: a node that lacks one
//! does not compile) and its [`dispatch`], and [`METHODS`] (the table
//! that `docs/peer-protocol.md` is checked against).

use bytes::Bytes;
use wray_peer::{PeerIdentity, RemoteError};

use super::codec::{decode, encode, Message};
use super::{
    code, Ack, ActorHeld, ActorHere, ActorWhere, CancelTask, HoldActor, JobEnded, JobOutput,
    KillActor, OutputTaken, Ping, Pong, Relay, RelayDone, Relayed, Release, RunTask, TaskDone,
};

/// A method of the peer protocol: its id on the wire and the messages it
/// takes and answers.
pub(crate) trait PeerMethod {
    /// Its id (the `Call` frame's method).
    const ID: u16;
    /// Its name, as errors and logs say it.
    const NAME: &'static str;
    /// What it takes.
    type Request: Message;
    /// What it answers.
    type Answer: Message;
}

/// One row of [`METHODS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MethodInfo {
    /// The method's id.
    pub id: u16,
    /// Its name.
    pub name: &'static str,
    /// The Rust type of its request.
    pub request: &'static str,
    /// The Rust type of its answer.
    pub answer: &'static str,
}

/// Declares every peer method once: `id Name handler: Request -> Answer;`.
macro_rules! peer_methods {
    ($(
        $(#[doc = $doc:literal])*
        $id:literal $name:ident $handler:ident: $request:ident -> $answer:ident;
    )*) => {
        /// The peer methods, one type each (`call::<method::RunTask>`).
        pub(crate) mod method {
            $(
                $(#[doc = $doc])*
                #[derive(Debug, Clone, Copy)]
                pub(crate) struct $name;
            )*
        }

        $(
            impl PeerMethod for method::$name {
                const ID: u16 = $id;
                const NAME: &'static str = stringify!($name);
                type Request = $request;
                type Answer = $answer;
            }
        )*

        /// Every peer method: id, name, request and answer, in the order
        /// declared.
        pub(crate) const METHODS: &[MethodInfo] = &[$(
            MethodInfo {
                id: $id,
                name: stringify!($name),
                request: stringify!($request),
                answer: stringify!($answer),
            },
        )*];

        /// What a node answers its peers: one handler per method, given
        /// the request decoded and checked; its answer is encoded for it.
        #[async_trait::async_trait]
        pub(crate) trait PeerService: Send + Sync {
            $(
                $(#[doc = $doc])*
                ///
                /// # Errors
                /// A refusal the caller receives as `PeerError::Remote`.
                async fn $handler(
                    &self,
                    peer: &PeerIdentity,
                    request: $request,
                ) -> Result<$answer, RemoteError>;
            )*
        }

        /// Runs the handler of method `id` on `body`: its answer encoded
        /// (`ANSWER_FAILED` when that is more than `max_answer` bytes, the
        /// channel's bound on a body), a `BAD_REQUEST` when `body` is not
        /// the method's request; `None` when no method has that id.
        pub(crate) async fn dispatch<S: PeerService + ?Sized>(
            service: &S,
            peer: &PeerIdentity,
            id: u16,
            body: &[u8],
            max_answer: usize,
        ) -> Option<Result<Bytes, RemoteError>> {
            let answer = match id {
                $(
                    $id => match decode::<$request>(body) {
                        Ok(request) => service.$handler(peer, request).await.map(encode),
                        Err(e) => Err(RemoteError::new(
                            code::BAD_REQUEST,
                            format!("a {} request from node {}: {e}", stringify!($name), peer.node_id),
                        )),
                    },
                )*
                _ => return None,
            };
            Some(answer.and_then(|body| within(id, body, max_answer)))
        }
    };
}

/// The methods a node has, id and name each, in order: what the answer
/// to an unknown method names ([`wray_peer::UnknownMethods::answer`]).
pub(crate) fn known_methods() -> impl Iterator<Item = (u16, &'static str)> {
    METHODS.iter().map(|m| (m.id, m.name))
}

/// `answer` to method `id`, or `ANSWER_FAILED` when it is more than
/// `max` bytes.
fn within(id: u16, answer: Bytes, max: usize) -> Result<Bytes, RemoteError> {
    if answer.len() > max {
        return Err(RemoteError::new(
            code::ANSWER_FAILED,
            format!(
                "the answer to method {id} is {} bytes, more than the {max} a peer message may carry",
                answer.len()
            ),
        ));
    }
    Ok(answer)
}

peer_methods! {
    /// Run a task here (a function, an actor's constructor or one of its
    /// calls) and answer its results; the sender owns them.
    1 RunTask run_task: RunTask -> TaskDone;
    /// The owner has what a `TaskDone` shipped: the objects kept for it
    /// may go.
    2 Release release: Release -> Ack;
    /// Kill an actor living here.
    3 KillActor kill_actor: KillActor -> Ack;
    /// Cancel a task the sender forwarded here, and what it submitted.
    4 CancelTask cancel_task: CancelTask -> Ack;
    /// Answer a request of this node's HTTP API (`relay`).
    5 Relay relay: Relay -> Relayed;
    /// Whether an actor lives here, alive and constructed: how a node
    /// holding a handle finds an actor its owner restarted elsewhere.
    6 ActorWhere actor_where: ActorWhere -> ActorHere;
    /// The sender holds a handle of an actor living here, or let go of
    /// it: an actor lives on while any node holds it.
    7 HoldActor hold_actor: HoldActor -> ActorHeld;
    /// A job the sender sent tasks of here ended: it ends here too.
    8 JobEnded job_ended: JobEnded -> Ack;
    /// What a job's guests on the sender wrote, for the job's log here.
    9 JobOutput job_output: JobOutput -> OutputTaken;
    /// A liveness probe, and which of the sender's forwarded tasks this
    /// node still holds (`health`).
    10 Ping ping: Ping -> Pong;
    /// The sender is done pulling a relayed answer parked here, its
    /// client got all of it or not (`relay_stream`).
    16 RelayDone relay_done: RelayDone -> Ack;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The methods table of docs/peer-protocol.md: the rows after its
    /// `peer-methods` marker, as `(id, method, request, answer)`.
    fn documented() -> Vec<(u16, String, String, String)> {
        let doc = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/peer-protocol.md"
        ));
        let table = doc
            .split_once("<!-- peer-methods")
            .expect("docs/peer-protocol.md has the peer-methods table")
            .1;
        table
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with('|'))
            .filter_map(|row| {
                let cells: Vec<&str> = row
                    .trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().trim_matches('`'))
                    .collect();
                let id = cells.first()?.parse().ok()?;
                match cells.as_slice() {
                    [_, name, request, answer] => Some((
                        id,
                        name.to_string(),
                        request.to_string(),
                        answer.to_string(),
                    )),
                    _ => panic!("a row of four cells: {row}"),
                }
            })
            .collect()
    }

    #[test]
    fn the_docs_table_is_the_code_table() {
        let code: Vec<(u16, String, String, String)> = METHODS
            .iter()
            .map(|m| {
                (
                    m.id,
                    m.name.to_string(),
                    m.request.to_string(),
                    m.answer.to_string(),
                )
            })
            .collect();
        assert_eq!(
            documented(),
            code,
            "docs/peer-protocol.md's methods table differs from `peer_methods!`"
        );
    }

    #[test]
    fn method_ids_are_unique() {
        let mut ids: Vec<u16> = METHODS.iter().map(|m| m.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), METHODS.len(), "{METHODS:?}");
        assert_eq!(<method::RunTask as PeerMethod>::ID, 1);
        assert_eq!(<method::RelayDone as PeerMethod>::NAME, "RelayDone");
    }

    /// A service whose every handler answers the smallest answer
    /// (`relay` a large one).
    struct Fake;

    #[async_trait::async_trait]
    impl PeerService for Fake {
        async fn run_task(&self, _: &PeerIdentity, _: RunTask) -> Result<TaskDone, RemoteError> {
            Err(RemoteError::new(code::UNAVAILABLE, "busy"))
        }
        async fn release(&self, _: &PeerIdentity, _: Release) -> Result<Ack, RemoteError> {
            Ok(Ack {})
        }
        async fn kill_actor(&self, _: &PeerIdentity, _: KillActor) -> Result<Ack, RemoteError> {
            Ok(Ack {})
        }
        async fn cancel_task(&self, _: &PeerIdentity, _: CancelTask) -> Result<Ack, RemoteError> {
            Ok(Ack {})
        }
        async fn relay(&self, _: &PeerIdentity, _: Relay) -> Result<Relayed, RemoteError> {
            Ok(Relayed {
                status: 200,
                headers: Vec::new(),
                body: vec![0; 4096],
                rest: None,
            })
        }
        async fn actor_where(
            &self,
            _: &PeerIdentity,
            _: ActorWhere,
        ) -> Result<ActorHere, RemoteError> {
            Ok(ActorHere { here: true })
        }
        async fn hold_actor(
            &self,
            _: &PeerIdentity,
            r: HoldActor,
        ) -> Result<ActorHeld, RemoteError> {
            Ok(ActorHeld { alive: r.held })
        }
        async fn job_ended(&self, _: &PeerIdentity, _: JobEnded) -> Result<Ack, RemoteError> {
            Ok(Ack {})
        }
        async fn job_output(
            &self,
            _: &PeerIdentity,
            _: JobOutput,
        ) -> Result<OutputTaken, RemoteError> {
            Ok(OutputTaken { written: false })
        }
        async fn ping(&self, _: &PeerIdentity, r: Ping) -> Result<Pong, RemoteError> {
            Ok(Pong {
                held: vec![true; r.tasks.len()],
            })
        }
        async fn relay_done(&self, _: &PeerIdentity, _: RelayDone) -> Result<Ack, RemoteError> {
            Ok(Ack {})
        }
    }

    fn peer() -> PeerIdentity {
        PeerIdentity {
            node_id: "node-a".into(),
            addr: ([127, 0, 0, 1], 9).into(),
        }
    }

    async fn dispatched(id: u16, body: &[u8], max: usize) -> Option<Result<Bytes, RemoteError>> {
        dispatch(&Fake, &peer(), id, body, max).await
    }

    #[tokio::test]
    async fn dispatch_decodes_runs_and_encodes() {
        let hold = encode(HoldActor {
            actor: wray_control_plane::TaskId([1; 16]),
            held: true,
        });
        let answer = dispatched(7, &hold, 1 << 20).await.unwrap().unwrap();
        assert!(decode::<ActorHeld>(&answer).unwrap().alive);
        // The handler's refusal passes through.
        let err = dispatched(1, &[], 1 << 20).await.unwrap().unwrap_err();
        assert_eq!(
            err.code,
            code::BAD_REQUEST,
            "an empty task: {}",
            err.message
        );
        assert!(
            err.message.contains("RunTask request from node node-a"),
            "{}",
            err.message
        );
        // A body that is not the method's request.
        let err = dispatched(6, b"\xff\xff", 1 << 20)
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, code::BAD_REQUEST);
        // An answer past the bound on a body.
        let relay = encode(Relay {
            method: "GET".into(),
            path: "/".into(),
            accept: None,
            body: Vec::new(),
        });
        let err = dispatched(5, &relay, 1024).await.unwrap().unwrap_err();
        assert_eq!(err.code, code::ANSWER_FAILED, "{}", err.message);
        // No method 11.
        assert!(dispatched(11, &[], 1 << 20).await.is_none());
    }

    #[test]
    fn an_unknown_method_is_answered_naming_the_known_ones() {
        let unknown = wray_peer::UnknownMethods::default();
        let e = unknown.answer(&peer(), 99, "node-1", known_methods());
        assert_eq!(unknown.count(), 1);
        assert_eq!(e.code, wray_peer::UNKNOWN_METHOD);
        assert!(
            e.message
                .starts_with("node node-1 has no peer method 99 (it has 1 RunTask, 2 Release"),
            "{}",
            e.message
        );
    }
}
