//! The peer methods a node answers: [`PeerHandler`] for [`Service`] hands
//! each call to `protocol::dispatch` (the method's request decoded and
//! checked, its answer encoded; an unknown method answered
//! `UNKNOWN_METHOD` and counted), which calls the method's handler here
//! ([`PeerService`]: tasks, cancels, kills, relays, actor holds, job
//! output and ends, pings, releases); and reads of object bytes.

use super::*;
use crate::protocol::{
    dispatch, known_methods, Ack, ActorHeld, ActorHere, OutputTaken, PeerService, Relay, RelayDone,
    Relayed,
};

/// A range of a sealed value's bytes, kept alive while it is sent.
struct ValueRange {
    object: Arc<Object>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for ValueRange {
    fn as_ref(&self) -> &[u8] {
        match &*self.object {
            Object::Value { data, .. } => data.bytes().get(self.start..self.end).unwrap_or(&[]),
            Object::Error(_) => &[],
        }
    }
}

#[async_trait::async_trait]
impl PeerHandler for Service {
    async fn call(
        &self,
        peer: &PeerIdentity,
        method: u16,
        body: Bytes,
    ) -> Result<Bytes, RemoteError> {
        let max_answer = self.client.config().max_body as usize;
        match dispatch(self, peer, method, &body, max_answer).await {
            Some(answer) => answer,
            None => {
                let node = self.sched.upgrade().map(|s| s.node_id().to_owned());
                let node = node.as_deref().unwrap_or("?");
                Err(self
                    .unknown_methods
                    .answer(peer, method, node, known_methods()))
            }
        }
    }

    async fn read(
        &self,
        peer: &PeerIdentity,
        key: &[u8],
        offset: u64,
        len: u32,
    ) -> Result<Blob, RemoteError> {
        if let Some(token) = token_of_key(key) {
            let blob = self.parked.read(&peer.node_id, &token, offset, len)?;
            self.traffic.served(blob.len());
            return Ok(blob);
        }
        let sched = self.sched()?;
        if let Some(package) = package_of_key(key) {
            // A job's working directory, fetched by a node its tasks reach.
            let dirs = self.jobs.working_dirs.clone();
            let read =
                tokio::task::spawn_blocking(move || dirs.read(package, offset, len as usize))
                    .await
                    .map_err(|e| {
                        refused(code::UNAVAILABLE, format!("reading package {package}: {e}"))
                    })?;
            return match read {
                Ok(bytes) => Ok(Blob::new(bytes)),
                Err(e @ crate::working_dir::WorkingDirError::NotFound(_)) => {
                    Err(refused(code::NOT_FOUND, e.to_string()))
                }
                Err(e) => Err(refused(code::BAD_REQUEST, e.to_string())),
            };
        }
        let id = id_of_key(key)
            .ok_or_else(|| refused(code::BAD_REQUEST, "the key is not an object id"))?;
        let missing = || {
            refused(
                code::NOT_FOUND,
                format!("object {id} is not on node {}", sched.node_id()),
            )
        };
        let object = sched.objects().get(&id).ok_or_else(missing)?;
        let size = match &*object {
            Object::Value { data, .. } => data.bytes().len(),
            Object::Error(_) => return Err(missing()),
        };
        let start = usize::try_from(offset).ok();
        let end = start.and_then(|s| s.checked_add(len as usize));
        match (start, end) {
            (Some(start), Some(end)) if end <= size => {
                self.traffic.served(end - start);
                Ok(Blob::new(ValueRange { object, start, end }))
            }
            _ => Err(refused(
                code::BAD_REQUEST,
                format!("bytes {offset}+{len} are past object {id}'s {size}"),
            )),
        }
    }
}

/// Each peer method's handler (`protocol::method`'s table).
#[async_trait::async_trait]
impl PeerService for Service {
    async fn run_task(
        &self,
        peer: &PeerIdentity,
        request: RunTask,
    ) -> Result<TaskDone, RemoteError> {
        self.run(peer, request).await
    }

    async fn release(&self, _: &PeerIdentity, request: Release) -> Result<Ack, RemoteError> {
        Service::release(self, request.task);
        Ok(Ack {})
    }

    async fn kill_actor(
        &self,
        peer: &PeerIdentity,
        request: KillActor,
    ) -> Result<Ack, RemoteError> {
        let KillActor { actor, mut why } = request;
        let sched = self.sched()?;
        // Only an actor whose instance lives here, not a stub.
        if sched.actors().get(&actor).is_some_and(|a| a.home.is_none()) {
            let mut cut = why.len().min(MAX_KILL_REASON);
            while !why.is_char_boundary(cut) {
                cut -= 1;
            }
            why.truncate(cut);
            sched.kill_actor(actor, &format!("node {} ({why})", peer.node_id));
        }
        Ok(Ack {})
    }

    async fn cancel_task(
        &self,
        peer: &PeerIdentity,
        request: CancelTask,
    ) -> Result<Ack, RemoteError> {
        let task = request.task;
        // Only a task this peer forwarded and that runs here now.
        let sent_by = self.running.lock().get(&task).map(|s| s.by.clone());
        if sent_by.as_deref() == Some(peer.node_id.as_str()) {
            self.sched()?.cancel(task, true, true);
        }
        Ok(Ack {})
    }

    async fn relay(&self, peer: &PeerIdentity, request: Relay) -> Result<Relayed, RemoteError> {
        crate::relay::answer(&self.relay, &self.parked, &peer.node_id, request).await
    }

    async fn actor_where(
        &self,
        _: &PeerIdentity,
        request: ActorWhere,
    ) -> Result<ActorHere, RemoteError> {
        let here = self.sched()?.actors().get(&request.actor).is_some_and(|a| {
            a.home.is_none()
                && a.dead().is_none()
                && *a.life().borrow() == crate::scheduler::actor::Life::Alive
        });
        Ok(ActorHere { here })
    }

    async fn hold_actor(
        &self,
        peer: &PeerIdentity,
        request: HoldActor,
    ) -> Result<ActorHeld, RemoteError> {
        let alive = self.hold(&peer.node_id, request.actor, request.held)?;
        Ok(ActorHeld { alive })
    }

    async fn job_ended(&self, peer: &PeerIdentity, request: JobEnded) -> Result<Ack, RemoteError> {
        let job = request.job;
        // Only from a node that sent tasks of the job here.
        if self.job_senders.has(job, &peer.node_id) {
            self.job_senders.take(job);
            tracing::debug!(%job, by = peer.node_id, "a job ended on another node");
            self.sched()?.end_job(job);
        }
        Ok(Ack {})
    }

    async fn job_output(
        &self,
        peer: &PeerIdentity,
        request: JobOutput,
    ) -> Result<OutputTaken, RemoteError> {
        let written = self.write_output(&peer.node_id, request)?;
        Ok(OutputTaken { written })
    }

    async fn ping(&self, peer: &PeerIdentity, request: Ping) -> Result<Pong, RemoteError> {
        let running = self.running.lock();
        let held = request
            .tasks
            .iter()
            .take(MAX_PING_TASKS)
            .map(|t| running.get(t).is_some_and(|sent| sent.by == peer.node_id))
            .collect();
        Ok(Pong { held })
    }

    async fn relay_done(
        &self,
        peer: &PeerIdentity,
        request: RelayDone,
    ) -> Result<Ack, RemoteError> {
        self.parked
            .done(&peer.node_id, &request.token, request.delivered);
        Ok(Ack {})
    }
}
