//! The peer methods a node answers ([`PeerHandler`] for [`Service`]): each
//! `u16` method's body decoded and checked, then handed to the service
//! (`RUN_TASK`, `CANCEL_TASK`, `KILL_ACTOR`, relays, actor holds, job
//! output and ends, `PING`, `RELEASE`), and reads of object bytes.

use super::*;

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
        match method {
            RUN_TASK => self.run_task(peer, &body).await,
            CANCEL_TASK => {
                let CancelTask { task } =
                    decode("cancel-task", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                // Only a task this peer forwarded and that runs here now.
                let sent_by = self.running.lock().get(&task).map(|s| s.by.clone());
                if sent_by.as_deref() == Some(peer.node_id.as_str()) {
                    self.sched()?.cancel(task, true, true);
                }
                Ok(Bytes::new())
            }
            KILL_ACTOR => {
                let KillActor { actor, mut why } =
                    decode("kill-actor", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                let sched = self.sched()?;
                // Only an actor whose instance lives here, not a stub.
                if sched.actors.get(&actor).is_some_and(|a| a.home.is_none()) {
                    let mut cut = why.len().min(MAX_KILL_REASON);
                    while !why.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    why.truncate(cut);
                    sched.kill_actor(actor, &format!("node {} ({why})", peer.node_id));
                }
                Ok(Bytes::new())
            }
            HTTP_RELAY => {
                crate::cluster::relay::answer(&self.relay, &self.parked, &peer.node_id, &body).await
            }
            RELAY_DONE => {
                let RelayDone { token, delivered } =
                    decode("relay-done", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                self.parked.done(&peer.node_id, &token, delivered);
                Ok(Bytes::new())
            }
            ACTOR_WHERE => {
                let ActorWhere { actor } =
                    decode("actor-where", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                let here = self.sched()?.actors.get(&actor).is_some_and(|a| {
                    a.home.is_none()
                        && a.dead().is_none()
                        && *a.life().borrow() == crate::scheduler::actor::Life::Alive
                });
                Ok(Bytes::from_static(if here { &[1] } else { &[0] }))
            }
            HOLD_ACTOR => {
                let HoldActor { actor, held } =
                    decode("hold-actor", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                let alive = self.hold(&peer.node_id, actor, held)?;
                Ok(Bytes::from_static(if alive { &[1] } else { &[0] }))
            }
            JOB_OUTPUT => {
                let written = self.job_output(&peer.node_id, &body)?;
                Ok(Bytes::from_static(if written { &[1] } else { &[0] }))
            }
            JOB_ENDED => {
                let JobEnded { job } =
                    decode("job-ended", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                // Only from a node that sent tasks of the job here.
                if self.job_senders.has(job, &peer.node_id) {
                    self.job_senders.take(job);
                    tracing::debug!(%job, by = peer.node_id, "a job ended on another node");
                    self.sched()?.end_job(job);
                }
                Ok(Bytes::new())
            }
            PING => {
                let Ping { tasks } = if body.is_empty() {
                    Ping::default()
                } else {
                    decode("ping", &body).map_err(|m| refused(code::BAD_REQUEST, m))?
                };
                let running = self.running.lock();
                let held = tasks
                    .iter()
                    .take(MAX_PING_TASKS)
                    .map(|t| running.get(t).is_some_and(|sent| sent.by == peer.node_id))
                    .collect();
                drop(running);
                encode(&Pong { held }).map_err(|m| refused(code::UNAVAILABLE, m))
            }
            RELEASE => {
                let Release { task } =
                    decode("release", &body).map_err(|m| refused(code::BAD_REQUEST, m))?;
                self.release(task);
                Ok(Bytes::new())
            }
            other => Err(refused(
                code::BAD_REQUEST,
                format!("no peer method {other}"),
            )),
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
                format!("object {id} is not on node {}", sched.node_id),
            )
        };
        let object = sched.objects.get(&id).ok_or_else(missing)?;
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
