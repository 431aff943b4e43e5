//! Following the function table: a node learns what other nodes (or other
//! clients of the same etcd) deploy and undeploy, by a watch on the table
//! and, at start and after a [`FunctionEvent::Resync`], by listing it.
//!
//! A listing brings the node up to date both ways: every listed version
//! the node lacks is loaded ([`follow`]), and every name the node knows
//! that the listing lacks (undeployed while the watch was away) is
//! forgotten ([`forget_unlisted`]), unless it was deployed again since.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use wray_control_plane::{ComponentRecord, FunctionEvent, FunctionTable};

use crate::executor::component;
use crate::executor::WasmExecutor;
use crate::scheduler::functions::Version;
use crate::scheduler::Scheduler;

/// Follows `table`'s changes on `io` until the node (`exec`, `sched`) is
/// gone: a version this node does not have is loaded (its blob fetched
/// and compiled on the node's compile pool, or the compiled artifact taken
/// from the cache by digest) and becomes what its name means here, within
/// the node's bounds (a version past them is not loaded: logged why); an
/// undeployed name is forgotten.
/// Tasks already submitted keep the version they named. At start, and
/// after a `Resync`, the node is brought up to date with a listing
/// ([`resync`]).
pub(super) fn follow_function_table(
    io: &tokio::runtime::Runtime,
    table: &Arc<dyn FunctionTable>,
    exec: &Arc<WasmExecutor>,
    sched: &Arc<Scheduler>,
) {
    let table = table.clone();
    let (exec, sched) = (Arc::downgrade(exec), Arc::downgrade(sched));
    io.spawn(async move {
        let mut watch = match table.watch().await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(
                    "not following the function table ({}): {e}",
                    table.backend()
                );
                return;
            }
        };
        let mut resync_now = true;
        loop {
            if std::mem::take(&mut resync_now) && !resync(&table, &exec, &sched).await {
                return;
            }
            let Some(event) = watch.next().await else {
                return;
            };
            match event {
                FunctionEvent::Deployed { name, .. } => match table.current(&name).await {
                    Ok(v) => {
                        if !follow(&table, &exec, &sched, v.record).await {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!("reading {name} from the function table: {e}"),
                },
                FunctionEvent::Undeployed { name } => {
                    let Some(sched) = sched.upgrade() else {
                        return;
                    };
                    sched.undeploy(&name);
                }
                FunctionEvent::Resync => resync_now = true,
            }
        }
    });
}

/// Lists `table` and brings the node up to date with the listing: loads
/// what it lacks ([`follow`]), then forgets the names the listing lacks
/// ([`forget_unlisted`]). A listing that fails is logged and changes
/// nothing (the next `Resync` tries again). `false` once the node is gone.
async fn resync(
    table: &Arc<dyn FunctionTable>,
    exec: &Weak<WasmExecutor>,
    sched: &Weak<Scheduler>,
) -> bool {
    let all = match table.list().await {
        Ok(all) => all,
        Err(e) => {
            tracing::warn!("listing the function table: {e}");
            return true;
        }
    };
    let listed: HashSet<String> = all.iter().map(|v| v.record.name.clone()).collect();
    for v in all {
        if !follow(table, exec, sched, v.record).await {
            return false;
        }
    }
    forget_unlisted(table, sched, &listed).await
}

/// Forgets (as an `Undeployed` event would) every name the node knows that
/// `listed`, the names of a listing of `table`, lacks: names undeployed
/// while the watch was away. The listing may be older than a name's
/// deploy (through this node, after the listing was taken), so a name is
/// forgotten only when `table` still says it is not deployed, and only
/// if the node's row for it is still the one read before that check
/// ([`Scheduler::undeploy_if_same`]): a deploy that lands in the table
/// after the check records a row of its own, which stays. A check that
/// fails (the table is unreachable) keeps the name. `false` once the node
/// is gone.
async fn forget_unlisted(
    table: &Arc<dyn FunctionTable>,
    sched: &Weak<Scheduler>,
    listed: &HashSet<String>,
) -> bool {
    let Some(known) = sched.upgrade().map(|s| s.named_components()) else {
        return false;
    };
    for record in known.into_iter().filter(|r| !listed.contains(&r.name)) {
        match table.current(&record.name).await {
            Err(wray_control_plane::Error::ComponentNotFound(_)) => {
                let Some(sched) = sched.upgrade() else {
                    return false;
                };
                if sched.undeploy_if_same(&record) {
                    tracing::debug!("{} was undeployed elsewhere: forgotten", record.name);
                }
            }
            // Deployed again since the listing: its own event follows,
            // or this node deployed it.
            Ok(_) => {}
            Err(e) => tracing::warn!(
                "checking whether {} is still deployed (kept for now): {e}",
                record.name
            ),
        }
    }
    true
}

/// Makes `record` (the function table's current version of its name) what
/// its name means on the node of `exec` and `sched`, loading it if the
/// node does not have its hash; `false` once the node is gone. A component
/// that cannot be fetched or loaded is logged and skipped (its name keeps
/// what it meant).
async fn follow(
    table: &Arc<dyn FunctionTable>,
    exec: &Weak<WasmExecutor>,
    sched: &Weak<Scheduler>,
    record: ComponentRecord,
) -> bool {
    let (Some(exec), Some(sched)) = (exec.upgrade(), sched.upgrade()) else {
        return false;
    };
    if sched
        .deployed(&record.name)
        .is_some_and(|r| r.hash == record.hash)
    {
        return true;
    }
    if let Some(loaded) = exec.component(&record.hash) {
        let row = Arc::new(record);
        let fresh = Version::new(row.clone(), loaded.clone(), loaded.compiled);
        if let Err(e) = sched.insert_component(row, fresh) {
            tracing::warn!("not following the function table's deploy: {e}");
        }
        return true;
    }
    // A name this node cannot take, or a version past its bounds, is not
    // fetched (nor compiled): the node stays within them.
    if let Err(e) = sched.check_component(&record, 0) {
        tracing::warn!("not following the function table's deploy: {e}");
        return true;
    }
    let bytes = match table.blob(&record.hash).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("fetching {} ({}): {e}", record.name, record.hash);
            return true;
        }
    };
    // Compiled on the node's compile pool; this task waits for it.
    match component::load(&exec, &record.name, bytes, record.hash.clone()).await {
        Ok(loaded) => {
            if let Err(e) = super::admit(&sched, &loaded) {
                tracing::warn!("not following the function table's deploy: {e}");
            }
        }
        Err(e) => tracing::warn!("loading {}: {e}", record.name),
    }
    true
}
