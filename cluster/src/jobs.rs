//! A job's end told to the nodes that ran its tasks (`JobEnded`): the
//! node that ends a job (its driver returned, or a peer told it so) tells
//! every node it forwarded the job's tasks to, which ends the job there in
//! turn (Ray kills a job's workers and actors on every node when its
//! driver exits): what the job left running there is cancelled, its
//! actors not created detached are killed, its cached instances dropped
//! and its objects freed, and that node tells the nodes it forwarded the
//! job's tasks to. A node only honours the message from a peer that sent
//! it tasks of that job.

use std::collections::BTreeSet;

use parking_lot::Mutex;
use wray_control_plane::JobId;

use crate::id_map::BoundedIdMap;

/// The most jobs whose nodes are remembered at once; past it the oldest
/// is forgotten (its end is then not told to those nodes, whose cached
/// instances go at their own bound).
pub(crate) const MAX_JOBS: usize = 4_096;

/// The most nodes remembered per job.
const MAX_NODES_PER_JOB: usize = 4_096;

/// The nodes each job's tasks went to (or came from), bounded by
/// [`MAX_JOBS`] jobs, the oldest forgotten first.
pub(crate) struct JobNodes {
    jobs: Mutex<BoundedIdMap<JobId, BTreeSet<String>>>,
}

impl Default for JobNodes {
    fn default() -> Self {
        JobNodes {
            jobs: Mutex::new(BoundedIdMap::new(MAX_JOBS)),
        }
    }
}

impl JobNodes {
    /// Notes that a task of `job` went to (or came from) `node`.
    pub(crate) fn note(&self, job: JobId, node: &str) {
        let mut jobs = self.jobs.lock();
        let nodes = jobs.get_or_insert_with(job, BTreeSet::new);
        if nodes.len() < MAX_NODES_PER_JOB && !nodes.contains(node) {
            nodes.insert(node.to_string());
        }
    }

    /// The nodes noted for `job`, forgotten here.
    pub(crate) fn take(&self, job: JobId) -> BTreeSet<String> {
        self.jobs.lock().remove(&job).unwrap_or_default()
    }

    /// Whether `node` was noted for `job`.
    pub(crate) fn has(&self, job: JobId, node: &str) -> bool {
        self.jobs
            .lock()
            .get(&job)
            .is_some_and(|nodes| nodes.contains(node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_noted_per_job_taken_once_and_the_oldest_job_forgotten_past_the_bound() {
        let nodes = JobNodes::default();
        nodes.note(JobId(1), "a");
        nodes.note(JobId(1), "b");
        nodes.note(JobId(1), "a");
        assert!(nodes.has(JobId(1), "b"));
        assert!(!nodes.has(JobId(2), "a"));
        assert_eq!(nodes.take(JobId(1)).len(), 2);
        assert!(nodes.take(JobId(1)).is_empty());
        for j in 0..=MAX_JOBS as u64 {
            nodes.note(JobId(j + 10), "a");
        }
        assert!(!nodes.has(JobId(10), "a"), "the oldest is forgotten");
        assert!(nodes.has(JobId(11), "a"));
        assert_eq!(nodes.jobs.lock().len(), MAX_JOBS);
    }
}
