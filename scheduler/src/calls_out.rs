//! A forwarded task's calls on actors living on other nodes, awaited
//! before the task counts as finished ([`CallsOut`]).
//!
//! On one node, a task's call on an actor is in the actor's mailbox as
//! soon as it is made, so a caller that sees the task finish and then
//! calls the actor is served after it. Across nodes the call goes through
//! this node's stub of the actor, one at a time (`cluster/src/actors.rs`),
//! and could still be on its way when the task's result reaches its
//! owner: the owner's own call would then overtake it. So the node that
//! runs a forwarded task answers its owner only once the calls the task
//! made through stubs have ended there: since a stub sends its calls in
//! order, waiting for the last call on each actor is enough. (Ray orders
//! only one caller's calls; this keeps the order one node gives.)
//!
//! Only tasks being watched are tracked ([`CallsOut::watch`]: forwarded
//! tasks, while they run here): at most one entry per such task, each at
//! most one held object per actor it called.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::{ActorId, ObjectId, TaskId};

use crate::id_map::IdMap;
use crate::objects::ObjectStore;

/// The watched tasks' last calls through stubs, by task then actor: the
/// first return object of each (held until the task's wait ends).
pub(crate) struct CallsOut {
    tasks: Mutex<IdMap<TaskId, HashMap<ActorId, ObjectId>>>,
    objects: Arc<ObjectStore>,
}

/// A task watched while it runs; stops watching when dropped (what it
/// held is given back).
pub struct Watch<'a> {
    calls: &'a CallsOut,
    task: TaskId,
}

impl CallsOut {
    /// Tracks nothing yet, holding objects in `objects`.
    pub(crate) fn new(objects: Arc<ObjectStore>) -> Self {
        Self {
            tasks: Mutex::default(),
            objects,
        }
    }

    /// Starts tracking the calls task `task` makes through stubs.
    pub(crate) fn watch(&self, task: TaskId) -> Watch<'_> {
        self.tasks.lock().entry(task).or_default();
        Watch { calls: self, task }
    }

    /// Notes that task `caller` called actor `actor` (a stub here), the
    /// call's first return object being `first`: held, in place of the
    /// earlier call's, when `caller` is watched.
    pub(crate) fn called(&self, caller: TaskId, actor: ActorId, first: ObjectId) {
        let mut tasks = self.tasks.lock();
        let Some(calls) = tasks.get_mut(&caller) else {
            return;
        };
        if !self.objects.acquire(&first) {
            return;
        }
        if let Some(earlier) = calls.insert(actor, first) {
            self.objects.release(&earlier);
        }
    }

    /// Stops tracking `task`: the objects held for it.
    fn take(&self, task: TaskId) -> Vec<ObjectId> {
        self.tasks
            .lock()
            .remove(&task)
            .map(|calls| calls.into_values().collect())
            .unwrap_or_default()
    }
}

impl<'a> Watch<'a> {
    /// Stops watching: what the task's last call on each actor returns
    /// first, held until the [`Ended`] goes (to be waited on:
    /// `Scheduler::calls_ended`).
    pub fn end(self) -> Ended<'a> {
        let held = self.calls.take(self.task);
        Ended {
            objects: &self.calls.objects,
            held,
        }
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        for id in self.calls.take(self.task) {
            self.calls.objects.release(&id);
        }
    }
}

/// A watched task's last calls, their first return objects held until
/// this is dropped.
pub struct Ended<'a> {
    objects: &'a ObjectStore,
    held: Vec<ObjectId>,
}

impl Ended<'_> {
    /// The objects to wait for.
    pub fn objects(&self) -> &[ObjectId] {
        &self.held
    }
}

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        for id in &self.held {
            self.objects.release(id);
        }
    }
}
