//! Scenarios of work whose owner goes (`cluster_fate`) and of a node
//! stopped while it runs another node's work (`cluster_drain`).

use std::collections::BTreeMap;
use std::time::Duration;

use wray::{ActorHandle, ObjectRef, Options, Scheduling};

use crate::cluster::Tally;

/// Options placing on node `node` (node affinity, `soft` or not).
fn on(node: &str, soft: bool) -> Options {
    Options::new().scheduling(Scheduling::NodeAffinity {
        node_id: node.to_string(),
        soft,
    })
}

/// Sleeps `ms` holding `bytes` (its argument, pulled to its node); `i`.
#[wray::remote]
pub(crate) fn nap(ms: u64, i: u64, bytes: Vec<u8>) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    // Non-empty: held while it sleeps.
    i + u64::from(bytes.is_empty())
}

/// `cluster_fate NODE N MS`: two tallies on node NODE (one plain, one
/// detached, named `fate-detached`; prints `actors NODE NODE` once both
/// live), then N tasks of MS ms on nodes with an accelerator, each with a
/// 2 MiB argument put here: the even ones pinned to NODE (queued there
/// beyond its room), the odd ones placed as usual; prints `submitted N`
/// and, if they all end, `fate_sum SUM`.
pub(crate) fn cluster_fate(node: &str, n: u64, ms: u64) -> wray::Result<()> {
    let owned = Tally::remote_with(on(node, false).num_cpus(0.0), 1i64);
    let kept = Tally::remote_with(
        on(node, false)
            .num_cpus(0.0)
            .detached()
            .name("fate-detached"),
        2i64,
    );
    println!(
        "actors {} {}",
        owned.node().remote().get()?,
        kept.node().remote().get()?
    );
    let bytes: ObjectRef<Vec<u8>> = wray::put(&vec![7u8; 2 << 20]);
    let accelerator = |o: Options| o.num_cpus(0.0).resource("accelerator", 1.0);
    let refs: Vec<ObjectRef<u64>> = (0..n)
        .map(|i| {
            let options = if i % 2 == 0 {
                accelerator(on(node, false))
            } else {
                accelerator(Options::new())
            };
            nap.options(options).remote(ms, i, &bytes)
        })
        .collect();
    println!("submitted {n}");
    let sum: u64 = wray::get_all(&refs)?.iter().sum();
    println!("fate_sum {sum}");
    Ok(())
}

/// How many times each task ran.
#[wray::actor]
pub struct Runs {
    runs: BTreeMap<u64, u64>,
}

#[wray::actor]
impl Runs {
    /// None yet.
    pub fn new() -> Self {
        Runs {
            runs: BTreeMap::new(),
        }
    }

    /// Task `i` started once more; how many times it has.
    pub fn ran(&mut self, i: u64) -> u64 {
        let runs = self.runs.entry(i).or_default();
        *runs += 1;
        *runs
    }

    /// How many times task `i` started.
    pub fn runs_of(&self, i: u64) -> u64 {
        self.runs.get(&i).copied().unwrap_or(0)
    }

    /// How many different tasks started.
    pub fn distinct(&self) -> u64 {
        self.runs.len() as u64
    }

    /// The tasks that started more than once, with how many times.
    pub fn again(&self) -> Vec<(u64, u64)> {
        self.runs
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(i, n)| (*i, *n))
            .collect()
    }
}

/// Records itself in `runs` as task `i` (without waiting: a task blocked
/// in `get` lends its CPU, and a queued task would start meanwhile), then
/// sleeps `ms` holding a CPU: `i * i` and the node it ran on.
#[wray::remote]
pub(crate) fn drained(runs: ActorHandle<Runs>, i: u64, ms: u64) -> wray::Result<(u64, String)> {
    drop(runs.ran().remote(i));
    std::thread::sleep(Duration::from_millis(ms));
    Ok((i * i, wray::node_id()))
}

/// `cluster_drain NODE N MS LONG_MS`: a ledger here; task 0 of LONG_MS
/// ms (when LONG_MS > 0), started first, then N tasks of MS ms, all with
/// a soft affinity for node NODE (queued there beyond its room). Prints
/// `ran NODE COUNT` (where each task's result came from), `long_on NODE`,
/// `exact BOOL` (every result is `i * i`), `distinct D` (tasks that
/// started) and `again [(TASK, RUNS)]` (those that started more than
/// once).
pub(crate) fn cluster_drain(node: &str, n: u64, ms: u64, long_ms: u64) -> wray::Result<()> {
    let runs = Runs::remote_with(on(&wray::node_id(), false).num_cpus(0.0));
    let soft = || on(node, true);
    let mut refs: Vec<(u64, ObjectRef<(u64, String)>)> = Vec::new();
    if long_ms > 0 {
        refs.push((
            0,
            drained.options(soft()).remote(runs.clone(), 0u64, long_ms),
        ));
        // Running before the others are sent.
        while runs.runs_of().remote(0u64).get()? == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    for i in 1..=n {
        refs.push((i, drained.options(soft()).remote(runs.clone(), i, ms)));
    }
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut exact = true;
    for (i, r) in &refs {
        let (value, ran_on) = r.get()?;
        exact &= value == i * i;
        if *i == 0 {
            println!("long_on {ran_on}");
        }
        *counts.entry(ran_on).or_default() += 1;
    }
    for (node, count) in &counts {
        println!("ran {node} {count}");
    }
    println!("exact {exact}");
    println!("distinct {}", runs.distinct().remote().get()?);
    println!("again {:?}", runs.again().remote().get()?);
    Ok(())
}
