//! Scenarios of placement across a cluster of one-CPU nodes
//! (`cluster_burst`, `cluster_once`, `cluster_nested`): plain one-CPU
//! tasks, which spread over the nodes as those have room, and move from
//! a queue to a node that frees up; tasks submitted from tasks, owned by
//! the node they run on.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use wray::{ActorHandle, ObjectRef};

/// Sleeps `ms` holding one CPU; the node it ran on.
#[wray::remote]
pub(crate) fn busy(ms: u64) -> String {
    std::thread::sleep(Duration::from_millis(ms));
    wray::node_id()
}

/// `cluster_burst N MS`: N one-CPU tasks of MS ms each at once; prints
/// how many ran on each node (`ran NODE COUNT`) and how long the burst
/// took (`burst N MS_TAKEN`).
pub(crate) fn cluster_burst(n: u64, ms: u64) -> wray::Result<()> {
    let start = Instant::now();
    let refs: Vec<ObjectRef<String>> = (0..n).map(|_| busy.remote(ms)).collect();
    let nodes = wray::get_all(&refs)?;
    let took = start.elapsed().as_millis();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for node in nodes {
        *counts.entry(node).or_default() += 1;
    }
    for (node, count) in &counts {
        println!("ran {node} {count}");
    }
    println!("burst {n} {took}");
    Ok(())
}

/// Counts how many times each task ran.
#[wray::actor]
pub struct Ledger {
    runs: BTreeMap<u64, u64>,
}

#[wray::actor]
impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Ledger {
            runs: BTreeMap::new(),
        }
    }

    /// Task `i` ran once more; how many times it has run.
    pub fn ran(&mut self, i: u64) -> u64 {
        let runs = self.runs.entry(i).or_default();
        *runs += 1;
        *runs
    }

    /// (distinct tasks seen, tasks seen more than once).
    pub fn tally(&self) -> (u64, u64) {
        let twice = self.runs.values().filter(|r| **r > 1).count();
        (self.runs.len() as u64, twice as u64)
    }
}

/// Records itself in `ledger` as task `i`, then sleeps `ms` holding a
/// CPU; the node it ran on.
#[wray::remote]
pub(crate) fn once(ledger: ActorHandle<Ledger>, i: u64, ms: u64) -> wray::Result<String> {
    ledger.ran().remote(i).get()?;
    std::thread::sleep(Duration::from_millis(ms));
    Ok(wray::node_id())
}

/// `cluster_once N MS`: N one-CPU tasks of MS ms, each recording itself
/// in one ledger as it starts, submitted faster than the nodes run them
/// (they queue and move while others start): prints `once DISTINCT
/// TWICE` (each of the N ran, none twice) and how many ran on each node.
pub(crate) fn cluster_once(n: u64, ms: u64) -> wray::Result<()> {
    let ledger = Ledger::remote();
    let refs: Vec<ObjectRef<String>> = (0..n).map(|i| once.remote(ledger.clone(), i, ms)).collect();
    let nodes = wray::get_all(&refs)?;
    let (distinct, twice) = ledger.tally().remote().get()?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for node in nodes {
        *counts.entry(node).or_default() += 1;
    }
    for (node, count) in &counts {
        println!("ran {node} {count}");
    }
    println!("once {distinct} {twice}");
    Ok(())
}

/// How many different nodes `nodes` names.
fn distinct(nodes: &[String]) -> usize {
    nodes
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// `cluster_strategies NODE`: three 300 ms one-CPU tasks at once under
/// each scheduling strategy, on nodes of 4 CPUs: prints on how many nodes
/// they ran (`default 2`: two stay on the driver's node, under the 50%
/// threshold; `spread 3`), whether all ran on NODE (`pinned true`), that a
/// soft affinity for a node not in the cluster runs anyway, and the error
/// kind of a hard one.
pub(crate) fn cluster_strategies(node: &str) -> wray::Result<()> {
    use wray::{Options, Scheduling};
    let on = |scheduling: Scheduling| -> wray::Result<Vec<String>> {
        let options = Options::new().scheduling(scheduling);
        let refs: Vec<ObjectRef<String>> = (0..3)
            .map(|_| busy.options(options.clone()).remote(300))
            .collect();
        wray::get_all(&refs)
    };
    println!("default {}", distinct(&on(Scheduling::Default)?));
    println!("spread {}", distinct(&on(Scheduling::Spread)?));
    let pinned = on(Scheduling::NodeAffinity {
        node_id: node.to_string(),
        soft: false,
    })?;
    println!("pinned {}", pinned.iter().all(|n| n == node));
    let nowhere = "node-00000000000000ff".to_string();
    let soft = on(Scheduling::NodeAffinity {
        node_id: nowhere.clone(),
        soft: true,
    })?;
    println!("soft {}", soft.len());
    let hard = busy
        .options(Options::new().scheduling(Scheduling::NodeAffinity {
            node_id: nowhere,
            soft: false,
        }))
        .remote(1)
        .get();
    match hard {
        Ok(n) => println!("hard ran on {n}"),
        Err(e) => println!("hard {:?}: {e}", e.kind()),
    }
    Ok(())
}

/// A trivial one-CPU task: the node it ran on.
#[wray::remote]
pub(crate) fn leaf() -> String {
    wray::node_id()
}

/// Submits `m` trivial tasks from where it runs (it is their owner) and
/// waits for them: the node it ran on, and how many of its tasks ran on
/// each node.
#[wray::remote]
pub(crate) fn fan(m: u64) -> wray::Result<(String, Vec<(String, u64)>)> {
    let refs: Vec<ObjectRef<String>> = (0..m).map(|_| leaf.remote()).collect();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for node in wray::get_all(&refs)? {
        *counts.entry(node).or_default() += 1;
    }
    Ok((wray::node_id(), counts.into_iter().collect()))
}

/// `cluster_nested K M`: K tasks spread over the nodes (`SPREAD`), each
/// submitting M trivial tasks from where it runs and waiting for them:
/// prints `fan NODE` for each (the node it ran on), `ran NODE COUNT` for
/// the K x M trivial tasks, and `nested K M MS_TAKEN` (first submit to
/// last get).
pub(crate) fn cluster_nested(k: u64, m: u64) -> wray::Result<()> {
    use wray::{Options, Scheduling};
    let start = Instant::now();
    let options = Options::new().scheduling(Scheduling::Spread);
    let refs: Vec<ObjectRef<(String, Vec<(String, u64)>)>> = (0..k)
        .map(|_| fan.options(options.clone()).remote(m))
        .collect();
    let fans = wray::get_all(&refs)?;
    let took = start.elapsed().as_millis();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (node, leaves) in fans {
        println!("fan {node}");
        for (ran, count) in leaves {
            *counts.entry(ran).or_default() += count;
        }
    }
    for (node, count) in &counts {
        println!("ran {node} {count}");
    }
    println!("nested {k} {m} {took}");
    Ok(())
}
