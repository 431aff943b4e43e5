//! Named actors (Ray's `name=` and `get_actor`): the node's side of the
//! control plane's actor directory ([`Names`]). A node on its own keeps
//! names in an embedded directory; a node of a cluster in its cluster's
//! etcd directory, so that a name is unique across the cluster and found
//! from any node.
//!
//! An actor created with a name takes it before its creator goes on
//! (put-if-absent, as Ray registers a named actor with its GCS at
//! creation); a name a live actor holds kills the new actor with a cause
//! naming the holder. The name is freed when the actor dies for good,
//! where it lived (`Scheduler::tear_down`), or, when it lived on another
//! node than the one that named it (which alone knows the name), by its
//! owner's stub once that learns so; and moved when the actor restarts
//! on another node. `get` with an empty class finds an actor of any
//! class (the SDKs' `get_actor(name)`). An entry a dead node left behind (the
//! actor's node is no longer alive) is stale: [`Names::get`] reads it as
//! absent and removes it, and a new actor may take its name.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use wray_control_plane::{
    ActorDirectory, ActorId, ActorLimits, ActorRecord, ActorState, EmbeddedActorDirectory,
};

use crate::error::{ErrorKind, TaskError};
use crate::executor::services::ActorFound;
use crate::objects::{Holds, Object};
use crate::proto::{actor_handle_object, Limits};
use crate::scheduler::actor::Restarts;
use crate::scheduler::adopt::Stub;
use crate::scheduler::names::ActorNames;
use crate::scheduler::submit::NotSubmitted;
use crate::scheduler::Scheduler;

/// The most directory entries one look-up of the names of this node's
/// actors reads ([`Names::learn_here`]).
const MAX_NAMES_READ: usize = 10_000;

/// How long that look-up may take.
const NAMES_DEADLINE: Duration = Duration::from_secs(2);

/// The node's named actors, over the actor directory.
pub(crate) struct Names {
    sched: Arc<Scheduler>,
    directory: RwLock<Arc<dyn ActorDirectory>>,
    /// Runs the directory's writes that nobody waits for (a name freed
    /// or moved).
    io: tokio::runtime::Handle,
}

impl Names {
    /// The names of `sched`'s actors, in an embedded directory until
    /// [`Names::use_directory`]; background writes run on `io`.
    pub(crate) fn new(sched: Arc<Scheduler>, io: tokio::runtime::Handle) -> Self {
        Self {
            sched,
            directory: RwLock::new(Arc::new(EmbeddedActorDirectory::new())),
            io,
        }
    }

    /// The scheduler whose actors it names.
    pub(crate) fn sched(&self) -> &Arc<Scheduler> {
        &self.sched
    }

    /// Keeps names in `directory` from now on (the cluster's, when the
    /// node joins one).
    pub(crate) fn use_directory(&self, directory: Arc<dyn ActorDirectory>) {
        *self.directory.write() = directory;
    }

    fn directory(&self) -> Arc<dyn ActorDirectory> {
        self.directory.read().clone()
    }

    /// Whether node `node` is alive, as this node sees it.
    fn alive(&self, node: &str) -> bool {
        node == self.sched.node_id() || self.sched.remote().is_some_and(|r| r.alive(node))
    }

    /// Whether `record` names an actor that no longer lives: one that
    /// lived here and is gone, or one whose node died. (An actor whose
    /// owner died lives on while another node holds its handle; it frees
    /// its name where it lived as it dies.)
    fn stale(&self, record: &ActorRecord) -> bool {
        if record.node_id == self.sched.node_id() {
            let live = record
                .actor_id
                .parse::<ActorId>()
                .ok()
                .and_then(|id| self.sched.actors().get(&id))
                .is_some_and(|a| a.dead().is_none());
            if !live {
                return true;
            }
        }
        !self.alive(&record.node_id)
    }

    /// Names `actor` (created here just now) `name`; an actor that cannot
    /// take the name is killed, its cause saying why.
    pub(crate) async fn name(&self, actor: ActorId, name: &str) {
        let Some(a) = self
            .sched
            .actors()
            .get(&actor)
            .filter(|a| a.dead().is_none())
        else {
            return; // died at creation: its calls say why
        };
        let record = ActorRecord {
            name: name.to_string(),
            actor_id: actor.to_string(),
            node_id: a
                .home
                .as_ref()
                .map_or_else(|| self.sched.node_id().to_owned(), |h| h.node()),
            class: a.class.clone(),
            component: a.component.to_string(),
            detached: a.detached,
            state: ActorState::Alive,
            owner_node: Some(self.sched.node_id().to_owned()),
            limits: Some(ActorLimits {
                max_memory: a.limits.max_memory,
                timeout_ms: a
                    .limits
                    .timeout
                    .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
                fuel: a.limits.fuel,
            }),
        };
        let directory = self.directory();
        let mut taken = directory.register_named(record.clone()).await;
        if let Err(wray_control_plane::Error::AlreadyExists { .. }) = &taken {
            // A holder a dead node left behind gives the name up.
            if let Ok(Some(holder)) = directory.get_named(name).await {
                if self.stale(&holder) {
                    let _ = directory.remove_named(name, &holder.actor_id).await;
                    taken = directory.register_named(record).await;
                }
            }
        }
        match taken {
            Ok(()) => {
                let _ = a.name.set(name.to_string());
                if a.dead().is_some() {
                    // Killed while the name was taken: free it again.
                    let _ = directory.remove_named(name, &actor.to_string()).await;
                }
            }
            Err(e) => {
                let cause = TaskError::new(
                    ErrorKind::ActorDied,
                    format!("{}.new", a.class),
                    actor,
                    format!("it could not take its name: {e}"),
                );
                self.sched.end_actor(&a, cause);
            }
        }
    }

    /// The live actor named `name` of class `class` (of any class when
    /// `class` is empty), its handle object held by `caller` from now on
    /// (a stub kept here when it lives on another node); else why not.
    ///
    /// # Errors
    /// [`NotSubmitted`] when `caller` cannot hold the handle object.
    pub(crate) async fn get(
        &self,
        caller: &mut Holds,
        name: &str,
        class: &str,
    ) -> Result<ActorFound, NotSubmitted> {
        let directory = self.directory();
        let record = match directory.get_named(name).await {
            Ok(Some(record)) => record,
            Ok(None) => {
                let message = format!("no live actor is named `{name}`");
                return Ok(Err((ErrorKind::NotFound, message)));
            }
            Err(e) => {
                let message = format!("the actor directory cannot be read: {e}");
                return Ok(Err((ErrorKind::System, message)));
            }
        };
        if self.stale(&record) {
            let _ = directory.remove_named(name, &record.actor_id).await;
            let message = format!(
                "no live actor is named `{name}` (actor {} was, on node {}, which it died with)",
                record.actor_id, record.node_id
            );
            return Ok(Err((ErrorKind::NotFound, message)));
        }
        if !class.is_empty() && record.class != class {
            let message = format!(
                "the actor named `{name}` is of class `{}`, not `{class}`",
                record.class
            );
            return Ok(Err((ErrorKind::InvalidArgument, message)));
        }
        let Ok(id) = record.actor_id.parse::<ActorId>() else {
            let message = format!("the directory's entry for `{name}` names no actor id");
            return Ok(Err((ErrorKind::System, message)));
        };
        // A stub here whose handles went is followed afresh below.
        self.sched.actors().forget_dead_stub(&id);
        let known = self.sched.actors().get(&id);
        if let Some(cause) = known.as_ref().and_then(|a| a.dead()) {
            let message = format!("the actor named `{name}` is dead: {cause}");
            return Ok(Err((ErrorKind::NotFound, message)));
        }
        let handle = actor_handle_object(id);
        if self.sched.objects().exists(&handle) {
            caller.hold(self.sched.objects(), handle)?;
        } else {
            self.sched.expect_returns(caller, &[handle])?;
            self.sched.objects().seal(handle, Object::empty());
            if let Some(actor) = &known {
                // Keeps it alive here as the first handle did.
                self.sched.handle_returned(actor);
            }
        }
        if known.is_none() {
            // It lives on another node: calls through the handle go there.
            let limits = record.limits.map_or_else(
                || self.sched.config().limits(),
                |l| Limits {
                    max_memory: l.max_memory,
                    timeout: l.timeout_ms.map(Duration::from_millis),
                    fuel: l.fuel,
                },
            );
            let stub = Stub {
                node: record.node_id,
                owner: false,
                class: record.class,
                component: Arc::from(record.component),
                limits,
                // Not in the directory: a restart moves the name, which a
                // later `get_actor` reads.
                restarts: Restarts::default(),
            };
            self.sched.follow_actor(id, stub).await;
            if self.sched.actors().get(&id).is_none() {
                let message = format!(
                    "node {} keeps as many actors of other nodes as it may",
                    self.sched.node_id()
                );
                return Ok(Err((ErrorKind::System, message)));
            }
        }
        Ok(Ok(id))
    }
}

impl Names {
    /// Learns the names the directory gives the live actors living here
    /// that do not know theirs (an actor is named by the node that
    /// created it, which may be another): each kept with its actor from
    /// then on, so that this node lists it by name, alive and dead. Reads
    /// at most [`MAX_NAMES_READ`] entries within [`NAMES_DEADLINE`]; a
    /// directory that cannot be read leaves them unnamed for now.
    pub(crate) async fn learn_here(&self) {
        let unnamed = self
            .sched
            .actors()
            .instances()
            .iter()
            .any(|a| a.name.get().is_none());
        if !unnamed {
            return;
        }
        let (sched, directory) = (self.sched.clone(), self.directory());
        let read = async move {
            let mut after: Option<String> = None;
            let mut read = 0usize;
            loop {
                let page = directory
                    .list(wray_control_plane::MAX_ACTOR_PAGE, after.as_deref())
                    .await?;
                read = read.saturating_add(page.actors.len());
                for record in page.actors {
                    if record.node_id != sched.node_id() {
                        continue;
                    }
                    let here = record
                        .actor_id
                        .parse::<ActorId>()
                        .ok()
                        .and_then(|id| sched.actors().get(&id))
                        .filter(|a| a.home.is_none());
                    if let Some(actor) = here {
                        let _ = actor.name.set(record.name);
                    }
                }
                match page.next {
                    Some(next) if read < MAX_NAMES_READ => after = Some(next),
                    _ => return Ok::<(), wray_control_plane::Error>(()),
                }
            }
        };
        let read = self.io.spawn(tokio::time::timeout(NAMES_DEADLINE, read));
        match read.await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::debug!("reading the names of this node's actors: {e}"),
            Ok(Err(_)) => tracing::debug!(
                "reading the names of this node's actors took more than {NAMES_DEADLINE:?}"
            ),
            Err(e) => tracing::debug!("reading the names of this node's actors: {e}"),
        }
    }
}

impl ActorNames for Names {
    fn released(&self, name: &str, actor: ActorId) {
        let (directory, name) = (self.directory(), name.to_string());
        self.io.spawn(async move {
            if let Err(e) = directory.remove_named(&name, &actor.to_string()).await {
                tracing::warn!(%actor, name, "freeing a dead actor's name: {e}");
            }
        });
    }

    fn moved(&self, name: &str, actor: ActorId, node: &str) {
        let (directory, name, node) = (self.directory(), name.to_string(), node.to_string());
        self.io.spawn(async move {
            if let Err(e) = directory.moved(&name, &actor.to_string(), &node).await {
                tracing::warn!(%actor, name, node, "moving a restarted actor's name: {e}");
            }
        });
    }
}
