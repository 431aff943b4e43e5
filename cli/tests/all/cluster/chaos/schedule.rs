//! [`Schedule`]: which faults happen when, drawn from a seed (rand's
//! `StdRng`, so a seed replays the same schedule on any machine).

use std::fmt;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// A fault, on node `n` (from 1) where it names one. Node 1 runs the
/// first job's driver and is never harmed (Ray's head node); node 3 is
/// the one behind the relay, harmed only through it (so that a stall is
/// not cut short by its node's death).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL; started again (a new node) when it heals.
    Kill(usize),
    /// SIGSTOP; SIGCONT when it heals (past the lease, the others have
    /// seen it die meanwhile).
    Pause(usize),
    /// `wray stop` (a drain within its grace); started again when it
    /// heals.
    Drain(usize),
    /// SIGSTOP of etcd; SIGCONT when it heals.
    PauseEtcd,
    /// SIGKILL of etcd; started again (same data) when it heals.
    KillEtcd,
    /// The relay holds every byte (connections stay open) until it heals.
    Stall,
    /// The relay cuts what it holds and refuses new connections until it
    /// heals.
    Refuse,
    /// The relay cuts every connection it holds, once.
    Cut,
    /// A node with a wrong cluster token joins etcd until it heals.
    Impostor,
    /// A node record written into etcd without a lease, its peer address
    /// a listener that never answers, until it heals (removed).
    FakeRecord,
}

/// A fault and when it starts and heals, from the workload's start.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    pub fault: Fault,
    pub at: Duration,
    pub heals: Duration,
}

/// The faults of one run, by start time.
pub struct Schedule {
    pub events: Vec<Event>,
}

impl Schedule {
    /// The schedule of `seed` within `window`: with `every_kind`, one
    /// fault of each kind (the node faults on nodes 2, 4 and 5 in a
    /// random order); else 3 to 8 faults drawn at random. Each starts in
    /// the window's first three quarters and heals within it.
    pub fn new(seed: u64, window: Duration, every_kind: bool) -> Schedule {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut nodes = [2usize, 4, 5];
        for i in (1..nodes.len()).rev() {
            nodes.swap(i, rng.random_range(0..=i));
        }
        let kinds: Vec<Fault> = if every_kind {
            vec![
                Fault::Kill(nodes[0]),
                Fault::Pause(nodes[1]),
                Fault::Drain(nodes[2]),
                Fault::PauseEtcd,
                Fault::KillEtcd,
                Fault::Stall,
                Fault::Refuse,
                Fault::Cut,
                Fault::Impostor,
                Fault::FakeRecord,
            ]
        } else {
            let n = rng.random_range(3..=8);
            (0..n)
                .map(|_| {
                    let node = nodes[rng.random_range(0..nodes.len())];
                    match rng.random_range(0..10) {
                        0 => Fault::Kill(node),
                        1 => Fault::Pause(node),
                        2 => Fault::Drain(node),
                        3 => Fault::PauseEtcd,
                        4 => Fault::KillEtcd,
                        5 => Fault::Stall,
                        6 => Fault::Refuse,
                        7 => Fault::Cut,
                        8 => Fault::Impostor,
                        _ => Fault::FakeRecord,
                    }
                })
                .collect()
        };
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let last_start = ms(window) * 3 / 4;
        let mut events: Vec<Event> = kinds
            .into_iter()
            .map(|fault| {
                // In a quick schedule the relay's faults come one after
                // another: a cut while the relay stalls would end the
                // stalled calls early and hide a hang.
                let at = match fault {
                    Fault::Stall => rng.random_range(ms(window) / 12..=ms(window) / 6),
                    Fault::Cut | Fault::Refuse if every_kind => {
                        rng.random_range(ms(window) * 5 / 6..=ms(window) * 7 / 8)
                    }
                    _ => rng.random_range(ms(window) / 12..=last_start),
                };
                let lasts = match fault {
                    Fault::Cut => 0,
                    // Longer than a task's limit (its 200 ms and 5 s) and
                    // the 15 s the suite gives to find a stalled node out.
                    Fault::Stall => rng.random_range(21_000..=23_000),
                    Fault::Pause(_) | Fault::PauseEtcd => rng.random_range(1_000..=6_000),
                    _ => rng.random_range(2_000..=8_000),
                };
                let heals = (at + lasts).min(ms(window));
                Event {
                    fault,
                    at: Duration::from_millis(at),
                    heals: Duration::from_millis(heals),
                }
            })
            .collect();
        events.sort_by_key(|e| e.at);
        Schedule { events }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.events {
            writeln!(
                f,
                "  {:>6.1} s .. {:>6.1} s  {:?}",
                e.at.as_secs_f64(),
                e.heals.as_secs_f64(),
                e.fault
            )?;
        }
        Ok(())
    }
}

#[test]
fn a_seed_gives_the_same_schedule_and_every_kind_is_in_a_quick_one() {
    let window = Duration::from_secs(36);
    let a = Schedule::new(7, window, true).to_string();
    assert_eq!(a, Schedule::new(7, window, true).to_string());
    assert_ne!(a, Schedule::new(8, window, true).to_string());
    let quick = Schedule::new(7, window, true);
    assert_eq!(quick.events.len(), 10);
    for e in &quick.events {
        assert!(e.at <= e.heals && e.heals <= window, "{e:?}");
    }
}
