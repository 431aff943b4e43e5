//! The sessions an answer outlives: an async invocation's (until its
//! results, and the objects they refer to, are read, or
//! [`HttpConfig::kept_ttl`](crate::HttpConfig) passes) and an actor's
//! (until it is killed). Each is a job of its own; dropping the session
//! ends the job (its tasks cancelled, its objects freed, its actors
//! killed). At most `max_kept` at once.
//!
//! An async result that holds refs (`{"$object": id}`) keeps its session
//! until those are read too: the session holds the result, and the
//! result holds them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use wray_host::{ActorId, ComponentRecord, JobId, ObjectId, Session};

/// What a kept session is for.
pub(crate) enum Purpose {
    /// An async invocation: the objects not read yet (its results, then
    /// the refs inside those read).
    Results(Vec<ObjectId>),
    /// An actor of `component`'s class `class`.
    Actor(KeptActor),
}

/// An actor created over HTTP, and the component version it was created
/// from: its calls are checked against that record even once the name is
/// undeployed or deployed again.
#[derive(Clone)]
pub(crate) struct KeptActor {
    pub(crate) actor: ActorId,
    pub(crate) component: String,
    pub(crate) class: String,
    pub(crate) record: Arc<ComponentRecord>,
}

/// A kept session.
pub(crate) struct Entry {
    pub(crate) session: Arc<Session>,
    pub(crate) purpose: Purpose,
    /// When an async invocation's unread results are dropped.
    expires: Option<Instant>,
}

/// The kept sessions, by job.
pub(crate) struct Kept {
    entries: Mutex<HashMap<JobId, Entry>>,
    max: usize,
    ttl: Duration,
}

impl Kept {
    pub(crate) fn new(max: usize, ttl: Duration) -> Self {
        Kept {
            entries: Mutex::new(HashMap::new()),
            max,
            ttl,
        }
    }

    /// Keeps `session` for `purpose`; `false` (the session is dropped, its
    /// job ended) when `max` are kept already, after expired ones are
    /// dropped.
    pub(crate) fn keep(&self, session: Session, purpose: Purpose) -> bool {
        let now = Instant::now();
        let expires = matches!(purpose, Purpose::Results(_)).then(|| now + self.ttl);
        let job = session.job();
        let mut expired = Vec::new();
        let kept = {
            let mut entries = self.entries.lock();
            if entries.len() >= self.max {
                entries.retain(|_, e| {
                    let keep = e.expires.is_none_or(|t| t > now);
                    if !keep {
                        expired.push(e.session.clone());
                    }
                    keep
                });
            }
            if entries.len() >= self.max {
                false
            } else {
                entries.insert(
                    job,
                    Entry {
                        session: Arc::new(session),
                        purpose,
                        expires,
                    },
                );
                true
            }
        };
        // Ending a job takes the scheduler's locks: outside ours.
        drop(expired);
        kept
    }

    /// The session of `job`, if kept and not expired.
    pub(crate) fn session(&self, job: JobId) -> Option<Arc<Session>> {
        let entries = self.entries.lock();
        let e = entries.get(&job)?;
        e.expires
            .is_none_or(|t| t > Instant::now())
            .then(|| e.session.clone())
    }

    /// The actor `actor`: its session, and what it was created as.
    pub(crate) fn actor(&self, actor: ActorId) -> Option<(Arc<Session>, KeptActor)> {
        let entries = self.entries.lock();
        match entries.get(&actor.job()) {
            Some(Entry {
                session,
                purpose: Purpose::Actor(kept),
                ..
            }) if kept.actor == actor => Some((session.clone(), kept.clone())),
            _ => None,
        }
    }

    /// Whether `id` is an async call's object not read yet.
    pub(crate) fn unread(&self, id: ObjectId) -> bool {
        let entries = self.entries.lock();
        matches!(
            entries.get(&id.job()),
            Some(Entry { purpose: Purpose::Results(left), .. }) if left.contains(&id)
        )
    }

    /// Marks `id` read, and the refs its value holds (`nested`) to be read
    /// in turn; the session is dropped once all are.
    pub(crate) fn read(&self, id: ObjectId, nested: &[ObjectId]) {
        let done = {
            let mut entries = self.entries.lock();
            let job = id.job();
            let finished = match entries.get_mut(&job) {
                Some(Entry {
                    purpose: Purpose::Results(left),
                    ..
                }) => {
                    left.retain(|o| *o != id);
                    for n in nested {
                        // Of this job (the session may name only those and
                        // what it was handed), each once.
                        if n.job() == job && !left.contains(n) {
                            left.push(*n);
                        }
                    }
                    left.is_empty()
                }
                _ => false,
            };
            if finished {
                entries.remove(&job)
            } else {
                None
            }
        };
        drop(done);
    }

    /// Drops the session of `job` (ending it); whether one was kept.
    pub(crate) fn remove(&self, job: JobId) -> bool {
        let removed = self.entries.lock().remove(&job);
        removed.is_some()
    }

    /// The component name of actor `actor`, if it was created over HTTP
    /// and is kept.
    pub(crate) fn actor_component(&self, actor: ActorId) -> Option<String> {
        let entries = self.entries.lock();
        match entries.get(&actor.job()) {
            Some(Entry {
                purpose: Purpose::Actor(kept),
                ..
            }) if kept.actor == actor => Some(kept.component.clone()),
            _ => None,
        }
    }

    /// How many sessions are kept.
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Drops every kept session (ending their jobs).
    pub(crate) fn clear(&self) {
        let all: Vec<Entry> = self.entries.lock().drain().map(|(_, e)| e).collect();
        drop(all);
    }
}
