//! Scenarios of a node that fails under its owner's feet (issue 38):
//! tasks bound to a node that stalls or dies (`cluster_on`), an actor
//! made on a node just killed (`cluster_actor_on`), and a result holding
//! many refs sent back from another node (`cluster_many_refs`).

use wray::{ObjectRef, Options, Scheduling};

use crate::cluster::{accelerated, Tally};
use crate::spread::busy;

/// `cluster_on NODE N MS SOFT`: N one-CPU tasks of MS ms bound to NODE
/// (`soft`: or elsewhere when it cannot), all at once: prints how many
/// ran on each node (`ran NODE COUNT`) and each one that failed
/// (`failed I: ERROR`).
pub(crate) fn cluster_on(node: &str, n: u64, ms: u64, soft: bool) -> wray::Result<()> {
    let options = Options::new().scheduling(Scheduling::NodeAffinity {
        node_id: node.to_string(),
        soft,
    });
    let refs: Vec<ObjectRef<String>> = (0..n)
        .map(|_| busy.options(options.clone()).remote(ms))
        .collect();
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for (i, r) in refs.iter().enumerate() {
        match r.get() {
            Ok(node) => *counts.entry(node).or_default() += 1,
            Err(e) => println!("failed {i}: {:?}: {e}", e.kind()),
        }
    }
    for (node, count) in &counts {
        println!("ran {node} {count}");
    }
    Ok(())
}

/// `cluster_actor_on NODE`: a tally (starting at 100; one restart) made
/// on a node with an accelerator, NODE if it can: where it lives and its
/// first total (`actor_node NODE`, `total 101`), or the error.
pub(crate) fn cluster_actor_on(node: &str) -> wray::Result<()> {
    let options = accelerated()
        .max_restarts(1)
        .scheduling(Scheduling::NodeAffinity {
            node_id: node.to_string(),
            soft: true,
        });
    let tally = Tally::remote_with(options, 100i64);
    match tally.add().remote(1i64).get() {
        Ok(total) => {
            println!("actor_node {}", tally.node().remote().get()?);
            println!("total {total}");
        }
        Err(e) => println!("actor_failed {:?}: {e}", e.kind()),
    }
    Ok(())
}

/// Puts `n` numbers 0..n on a node with an accelerator; refs to them.
#[wray::remote(resources = {"accelerator": 1})]
pub(crate) fn many_refs(n: u64) -> Vec<ObjectRef<u64>> {
    (0..n).map(|i| wray::put(&i)).collect()
}

/// `cluster_many_refs N`: a task on a node with an accelerator returns N
/// refs: their sum (`refs N sum S`), or the error (`refs_failed KIND:
/// ERROR`).
pub(crate) fn cluster_many_refs(n: u64) -> wray::Result<()> {
    match many_refs.remote(n).get() {
        Ok(refs) => {
            let values = wray::get_all(&refs)?;
            println!("refs {} sum {}", values.len(), values.iter().sum::<u64>());
        }
        Err(e) => println!("refs_failed {:?}: {e}", e.kind()),
    }
    Ok(())
}
