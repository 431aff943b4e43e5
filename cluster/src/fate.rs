//! Fate sharing (Ray's): what a node does here for another node that died
//! while it owned work here. In Ray a task's and an actor's owner is the
//! worker that submitted it; when the owner dies, what it owns is of no
//! use to anyone (nobody can read its results) and goes with it. Here the
//! owner is the node that sent the work (`RunTask`); when the view says
//! it died (its lease expired or was revoked), this node, at once:
//!
//! - cancels every task that node sent here, queued (never to start) or
//!   running (stopped at the next epoch tick, or at once in a host call:
//!   `Scheduler::cancel` with `force`), with what those tasks submitted;
//!   an actor call it sent is cancelled without force (a running one ends,
//!   a queued one never starts), the actor's state left whole;
//! - kills the actors that node created here, unless they were created
//!   detached (Ray's `lifetime="detached"`: they outlive their owner);
//! - gives back the results parked here for it (it will never release
//!   them), and answers none: a task of its that ends sends nothing back,
//!   and waits for nothing (its output's flush included);
//! - ends here the jobs whose log (their driver) was on that node, as a
//!   job ends when its driver exits (`Scheduler::end_job`: its tasks
//!   cancelled, its actors not detached killed, its objects freed).
//!
//! An owner that lives on but ended its job tells this node so
//! (`JobEnded`, `jobs`), with the same effect on that job. Counted in
//! [`Service::cancelled_owner_died`] (the metric
//! `wray_cluster_tasks_cancelled_total{reason="owner_died"}`), and logged
//! once per owner death with the counts.

use std::sync::atomic::Ordering;

use wray_control_plane::{NodeState, TaskId};

use crate::error::{ErrorKind, TaskError};
use crate::serve::Service;

/// What one owner's death took here.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Orphans {
    /// Its tasks cancelled (queued or running).
    pub(crate) tasks: usize,
    /// Its actors killed.
    pub(crate) actors: usize,
    /// Its tasks' results given back unreleased.
    pub(crate) results: usize,
    /// Its jobs ended (their log was there).
    pub(crate) jobs: usize,
}

impl Orphans {
    fn is_empty(&self) -> bool {
        *self == Orphans::default()
    }
}

impl Service {
    /// Whether node `node`, the owner of work here, is gone: dead, or
    /// unknown to the view (forgotten after its death). A node in any
    /// other state lives on, and so does its work.
    pub(crate) fn owner_gone(&self, node: &str) -> bool {
        matches!(self.view.state(node), Some(NodeState::Dead) | None)
    }

    /// Node `dead` died: what it owned here goes (see the module docs).
    /// Safe to call more than once: what went is not counted again.
    pub(crate) fn owner_died(&self, dead: &str) -> Orphans {
        let Some(sched) = self.sched.upgrade() else {
            return Orphans::default();
        };
        let mut orphans = Orphans::default();
        // Its tasks here, queued or running.
        let tasks: Vec<(TaskId, bool)> = self
            .running
            .lock()
            .iter()
            .filter(|(_, sent)| sent.by == dead)
            .map(|(task, sent)| (*task, sent.call))
            .collect();
        for (task, call) in tasks {
            // An actor's call leaves its instance whole: no force.
            if sched.cancel(task, !call, true) {
                orphans.tasks += 1;
            }
        }
        // Its results parked here.
        let parked = self
            .shipped
            .lock()
            .take_where(|_, (owner, _)| owner == dead);
        orphans.results = parked.len();
        drop(parked);
        // Its actors, unless detached.
        let owned = self
            .actor_owners
            .lock()
            .take_where(|_, owner| owner == dead);
        for (actor, _) in owned {
            let Some(found) = sched.actors().get(&actor).filter(|a| a.home.is_none()) else {
                continue;
            };
            if found.detached {
                continue;
            }
            let cause = TaskError::new(
                ErrorKind::ActorDied,
                format!("{}.kill", found.class),
                found.id,
                format!("its owner, node {dead}, died"),
            );
            if sched.end_actor(&found, cause) {
                orphans.actors += 1;
            }
        }
        // The jobs whose driver was there.
        for job in self.jobs.envs.forget_node(dead) {
            sched.end_job(job);
            orphans.jobs += 1;
        }
        self.cancelled_owner_died
            .fetch_add(orphans.tasks as u64, Ordering::Relaxed);
        if !orphans.is_empty() {
            tracing::info!(
                node = dead,
                tasks = orphans.tasks,
                actors = orphans.actors,
                results = orphans.results,
                jobs = orphans.jobs,
                "a node that owned work here died: its tasks cancelled, its actors \
                 (not detached) killed, its results given back, its jobs ended"
            );
        }
        orphans
    }

    /// [`Service::owner_died`] for every owner of work here that the view
    /// lists dead now (after deaths were missed; one it does not know yet
    /// is left be).
    pub(crate) fn owners_gone(&self) {
        let mut owners: Vec<String> = self.running.lock().values().map(|s| s.by.clone()).collect();
        owners.extend(self.actor_owners.lock().values().cloned());
        owners.extend(self.shipped.lock().values().map(|(o, _)| o.clone()));
        owners.extend(self.jobs.envs.log_nodes());
        owners.sort_unstable();
        owners.dedup();
        let dead = |o: &&String| self.view.state(o) == Some(NodeState::Dead);
        for owner in owners.iter().filter(dead) {
            self.owner_died(owner);
        }
    }
}
