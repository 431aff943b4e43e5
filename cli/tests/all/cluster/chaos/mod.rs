//! The chaos suite (issue 38): five nodes on a real etcd run jobs whose
//! results are known (the `api` guest's `chaos` workload: spread tasks,
//! an actor counter, an object read from other nodes) while a seeded
//! random schedule of faults plays around them: SIGKILL, SIGSTOP and a
//! drain (`wray stop`) of nodes, SIGSTOP and SIGKILL of etcd, a relay in
//! front of node 3 that stalls, refuses or cuts connections, an impostor
//! node with a wrong token, and a node record written into etcd by hand.
//!
//! After the schedule, [`invariants`] are checked: every job ends (none
//! hangs past its timeout), each result is exact or an error of a kind a
//! fault explains, no acknowledged actor update is lost unless the actor
//! was restarted, the object the driver holds is not lost, no task is
//! left running or queued on any node, and every node's object store
//! and file descriptors are back to their baseline.
//!
//! The seed is printed first. `WRAY_CHAOS_SEED=N` replays one;
//! `WRAY_CHAOS_MINUTES=M` runs schedules with fresh seeds for M minutes
//! (`cargo xtask chaos --minutes M`). A seed that failed once is kept in
//! [`REGRESSIONS`] and replayed by the test command.

mod faults;
mod invariants;
mod relay;
mod schedule;

use std::time::{Duration, Instant};

use super::harness::{deploy_api, job_id, wait_within, Cluster};
use crate::support::success_stdout;
use faults::Injector;
use schedule::Schedule;

/// The seed the test command plays when none is given: its schedule
/// holds one fault of every kind (as every quick schedule does).
const DEFAULT_SEED: u64 = 38;

/// Seeds that once found a failure, replayed by the test command:
/// - 16957937613161218989 (the first seed of the first soak): an actor's
///   call that could not reach its node, killed a moment before, failed
///   with "the call ran there and is not run again" instead of running on
///   the restarted actor.
/// - 12538241326644175449 (the 30-minute soak): a drain drawn while its
///   node was down (killed a moment before), then that node started
///   again; the suite waited for the new process to exit as if drained.
///
/// (6573336585595964796 of the same soak found the workload's error
/// lines cut at 300 characters, before "the actor lived there" that
/// explains them: replay it with `cargo xtask chaos --seed`; kept out of
/// the test command, whose chaos run stays under 3 minutes.)
const REGRESSIONS: &[u64] = &[16_957_937_613_161_218_989, 12_538_241_326_644_175_449];

/// How long the workload runs, and the window the faults fall in.
const WORKLOAD: Duration = Duration::from_secs(36);

/// The whole-job limit each job is submitted with (`--timeout`).
const JOB_TIMEOUT: Duration = Duration::from_secs(150);

#[test]
fn the_cluster_holds_under_a_seeded_schedule_of_faults() {
    let minutes: Option<f64> = std::env::var("WRAY_CHAOS_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok());
    let given: Option<u64> = std::env::var("WRAY_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    match (minutes, given) {
        (Some(minutes), _) => soak(Duration::from_secs_f64(minutes * 60.0)),
        (None, Some(seed)) => {
            play(seed, true);
        }
        (None, None) => {
            for seed in std::iter::once(DEFAULT_SEED).chain(REGRESSIONS.iter().copied()) {
                play(seed, true);
            }
        }
    }
}

/// Plays schedules with fresh seeds (every kind of fault in each, or a
/// random draw of them) until `limit` has passed, going on past a failed
/// one; prints a count of what ran, and fails at the end naming the seeds
/// that broke an invariant.
fn soak(limit: Duration) {
    let start = Instant::now();
    let mut played = 0u32;
    let mut faults = 0usize;
    let mut failed = Vec::new();
    while start.elapsed() < limit {
        let mut seed = [0u8; 8];
        getrandom::fill(&mut seed).expect("random bytes");
        let seed = u64::from_le_bytes(seed);
        let every_kind = played % 2 == 0;
        match std::panic::catch_unwind(|| play(seed, every_kind)) {
            Ok(n) => faults += n,
            Err(_) => failed.push(seed),
        }
        played += 1;
        println!(
            "chaos soak: {played} schedules, {faults} faults, {} failed {failed:?}, {:.1} min",
            failed.len(),
            start.elapsed().as_secs_f64() / 60.0
        );
    }
    assert!(
        failed.is_empty(),
        "chaos soak: seeds that broke an invariant: {failed:?}"
    );
}

/// Plays the schedule of `seed` on a fresh cluster and checks the
/// invariants; the number of faults played.
///
/// # Panics
/// When an invariant does not hold (the message names the seed).
fn play(seed: u64, every_kind: bool) -> usize {
    let schedule = Schedule::new(seed, WORKLOAD, every_kind);
    println!("chaos seed {seed}:\n{schedule}");
    let mut injector = Injector::start();
    let cluster = injector.cluster();
    let baseline = invariants::Baseline::take(cluster);

    let seconds = WORKLOAD.as_secs().to_string();
    let timeout = JOB_TIMEOUT.as_secs().to_string();
    let submit = |node: usize, mib: &str| {
        let argv = [
            "job",
            "submit",
            "--no-wait",
            "--timeout",
            &timeout,
            "api",
            "--",
            "chaos",
            &seconds,
            "4",
            "200",
            mib,
        ];
        let driver = injector.cluster().node(node);
        let id = job_id(&success_stdout(&driver.run(&argv)));
        (node, id, driver.pid)
    };
    let jobs = [submit(1, "8"), submit(2, "4")];
    let started = Instant::now();
    let played = injector.play(&schedule, started);
    injector.heal_all();
    let report = invariants::check(&injector, &baseline, &jobs, started + JOB_TIMEOUT);
    if let Err(why) = report {
        panic!(
            "chaos seed {seed} broke an invariant (replay: WRAY_CHAOS_SEED={seed}):\n{why}\n\
             schedule:\n{schedule}\nwhat each node sees:{}",
            states(injector.cluster())
        );
    }
    println!("chaos seed {seed}: every invariant held");
    played
}

/// Each live node's view of the others' states, one line each.
fn states(cluster: &Cluster) -> String {
    (1..=cluster.len())
        .filter(|&i| cluster.node(i).alive())
        .map(|i| match cluster.try_states_seen_by(i) {
            Ok(states) => format!("\n  node {i} ({}): {states:?}", cluster.node(i).node_id),
            Err(e) => format!("\n  {e}"),
        })
        .collect()
}

/// Waits until the cluster's `n` nodes all list each other ALIVE and
/// the `api` component is deployed.
fn ready(cluster: &Cluster) {
    cluster.wait_all_alive(Duration::from_secs(60));
    deploy_api(cluster.node(1));
    // A short run touches every node once (connections, compiled code)
    // before the baseline is taken.
    let said = success_stdout(
        &cluster
            .node(1)
            .run(&["job", "submit", "api", "--", "chaos", "2", "4", "50", "1"]),
    );
    assert!(said.contains("SUCCEEDED"), "the warm-up job: {said}");
    wait_within("the warm-up to settle", Duration::from_secs(30), || {
        invariants::no_live_tasks(cluster).is_ok()
    });
}
