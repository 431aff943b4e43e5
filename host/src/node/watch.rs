//! Following the function table: a node learns what other nodes (or other
//! clients of the same etcd) deploy and undeploy, by a watch on the table
//! and, at start and after a [`FunctionEvent::Resync`], by listing it.
//!
//! A listing brings the node up to date both ways: every listed version
//! the node lacks is loaded, and every name the node knows
//! that the listing lacks (undeployed while the watch was away) is
//! forgotten, unless it was deployed again since: every name is read
//! again from the table under the node's commit lock before it is
//! recorded (see [`follow_function_table`]).

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use wray_control_plane::{FunctionEvent, FunctionTable};

use crate::executor::component::{self, LoadedComponent};
use crate::executor::WasmExecutor;
use crate::scheduler::functions::Version;
use crate::scheduler::Scheduler;

/// The lock the node holds while it changes what a name means (here and
/// in the function table); see `Node::commits`.
type Commits = Arc<tokio::sync::Mutex<()>>;

/// Follows `table`'s changes on `io` until the node (`exec`, `sched`) is
/// gone: a version this node does not have is loaded (its blob fetched
/// and compiled on the node's compile pool, or the compiled artifact taken
/// from the cache by digest) and becomes what its name means here, within
/// the node's bounds (a version past them is not loaded: logged why); an
/// undeployed name is forgotten.
/// Tasks already submitted keep the version they named. At start, and
/// after a `Resync`, the node is brought up to date with a listing
/// ([`resync`]).
///
/// An event only says that a name changed: what the name means is read
/// from the table when the event is handled, under `commits`, and
/// recorded before the lock is let go. So an event handled late (after
/// this node deployed, rolled back or undeployed the name again) records
/// the table's latest word, never the one the event was sent for.
pub(super) fn follow_function_table(
    io: &tokio::runtime::Handle,
    table: &Arc<dyn FunctionTable>,
    exec: &Arc<WasmExecutor>,
    sched: &Arc<Scheduler>,
    commits: &Commits,
) {
    let node = Following {
        table: table.clone(),
        exec: Arc::downgrade(exec),
        sched: Arc::downgrade(sched),
        commits: commits.clone(),
    };
    io.spawn(async move {
        let mut watch = match node.table.watch().await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(
                    "not following the function table ({}): {e}",
                    node.table.backend()
                );
                return;
            }
        };
        let mut resync_now = true;
        loop {
            if std::mem::take(&mut resync_now) && !node.resync().await {
                return;
            }
            let Some(event) = watch.next().await else {
                return;
            };
            let alive = match event {
                FunctionEvent::Deployed { name, .. } | FunctionEvent::Undeployed { name } => {
                    node.follow(&name).await
                }
                FunctionEvent::Resync => {
                    resync_now = true;
                    true
                }
            };
            if !alive {
                return;
            }
        }
    });
}

/// What following the function table needs of the node (held weakly: the
/// follower ends with the node).
struct Following {
    table: Arc<dyn FunctionTable>,
    exec: Weak<WasmExecutor>,
    sched: Weak<Scheduler>,
    commits: Commits,
}

/// How many times [`Following::follow`] loads a name's current version
/// when it keeps changing while being loaded (each load is of the version
/// current when it began; the next event of the name tries again).
const LOAD_TRIES: usize = 3;

impl Following {
    /// Lists the table and brings the node up to date with the listing:
    /// follows every listed name, then forgets the names the listing
    /// lacks ([`Following::forget_unlisted`]). A listing that fails is
    /// logged and changes nothing (the next `Resync` tries again).
    /// `false` once the node is gone.
    async fn resync(&self) -> bool {
        let all = match self.table.list().await {
            Ok(all) => all,
            Err(e) => {
                tracing::warn!("listing the function table: {e}");
                return true;
            }
        };
        let listed: HashSet<String> = all.into_iter().map(|v| v.record.name).collect();
        for name in &listed {
            if !self.follow(name).await {
                return false;
            }
        }
        self.forget_unlisted(&listed).await
    }

    /// Forgets every name the node knows that `listed`, the names of a
    /// listing of the table, lacks: names undeployed while the watch was
    /// away (each checked again under the lock by [`Following::follow`]).
    /// `false` once the node is gone.
    async fn forget_unlisted(&self, listed: &HashSet<String>) -> bool {
        let Some(known) = self.sched.upgrade().map(|s| s.named_components()) else {
            return false;
        };
        for record in known.into_iter().filter(|r| !listed.contains(&r.name)) {
            if !self.follow(&record.name).await {
                return false;
            }
        }
        true
    }

    /// Makes `name` mean here what the table says it means now: its
    /// current version (loaded if the node does not have its hash), or
    /// nothing when the table has no such name. Read and recorded under
    /// the node's `commits` lock; a load (fetch and compile) runs outside
    /// it, and the name is read again once it is done. A component that
    /// cannot be fetched or loaded, or would pass the node's bounds, is
    /// logged and skipped (the name keeps what it meant here); so is a
    /// table that cannot be read. `false` once the node is gone.
    async fn follow(&self, name: &str) -> bool {
        let mut loaded: Option<Arc<LoadedComponent>> = None;
        for _ in 0..LOAD_TRIES {
            let (Some(exec), Some(sched)) = (self.exec.upgrade(), self.sched.upgrade()) else {
                return false;
            };
            let commit = self.commits.lock().await;
            let record = match self.table.current(name).await {
                Ok(v) => v.record,
                Err(wray_control_plane::Error::ComponentNotFound(_)) => {
                    if sched.undeploy(name).is_some() {
                        tracing::debug!("{name} was undeployed in the function table: forgotten");
                    }
                    return true;
                }
                Err(e) => {
                    tracing::warn!("reading {name} from the function table (kept as it is): {e}");
                    return true;
                }
            };
            if sched.deployed(name).is_some_and(|r| r.hash == record.hash) {
                return true;
            }
            let have = exec
                .component(&record.hash)
                .or_else(|| loaded.take().filter(|l| l.record.hash == record.hash));
            if let Some(have) = have {
                let row = Arc::new(record);
                let fresh = Version::new(row.clone(), have.clone(), have.compiled);
                if let Err(e) = sched.insert_component(row, fresh) {
                    tracing::warn!("not following the function table's deploy: {e}");
                }
                return true;
            }
            drop(commit);
            // A name this node cannot take, or a version past its bounds,
            // is not fetched (nor compiled): the node stays within them.
            if let Err(e) = sched.check_component(&record, 0) {
                tracing::warn!("not following the function table's deploy: {e}");
                return true;
            }
            let bytes = match self.table.blob(&record.hash).await {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!("fetching {name} ({}): {e}", record.hash);
                    return true;
                }
            };
            // Compiled on the node's compile pool; this task waits for it.
            match component::load(&exec, name, bytes, record.hash.clone()).await {
                Ok(l) => loaded = Some(l),
                Err(e) => {
                    tracing::warn!("loading {name}: {e}");
                    return true;
                }
            }
        }
        tracing::debug!("{name} kept changing while it was loaded: its next event follows it");
        true
    }
}
