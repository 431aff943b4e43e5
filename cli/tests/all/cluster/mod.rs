//! A cluster of `wray start` nodes as real processes on one machine, on a
//! throwaway etcd ([`harness::Cluster`]), and what a user of the cluster
//! would notice: the nodes see each other and the death of one, a task
//! asking for a resource one node has runs on that node, an etcd outage
//! kills nobody, a tree reduce and a word count give the same results on
//! three nodes as on one (and a node killed halfway through the reduce
//! does not change its result), a job's environment (variables,
//! directories, working directory, output) follows its tasks to every
//! node, and a peer that does not know the cluster's token (or knows it
//! and sends garbage) is refused without hurting the node; a burst of
//! tasks spreads over every node, queued tasks moving to nodes that free
//! up, none run twice; the cluster's state is seen whole through any
//! node (`listings`); a peer that stalls, a node just killed, one with a
//! wrong token and a fake record in etcd get no work, and their tasks run
//! elsewhere (`stalls`); a dead node's work goes with it, while a drained
//! node finishes what runs within its grace (`fate`); a node of another
//! protocol range works with the others while a range in common remains
//! (`upgrade`); and a seeded schedule of all these faults leaves every job
//! ended and every node clean (`chaos`). The cluster benchmark's and the
//! scalability envelope's scripts run in their quick modes (`bench`,
//! `envelope`).
//!
//! Every wait polls a state with a deadline; no sleep stands for one.

mod actors;
mod bench;
mod chaos;
mod envelope;
mod etcd_outage;
mod fate;
mod harness;
mod hostile_peers;
mod job_env;
mod listings;
mod membership;
mod placement;
mod reduce;
mod relay;
mod sdk_actors;
mod spread;
mod stalls;
mod tls;
mod upgrade;
mod work;
