//! The cluster dimensions: many actors, one object read on many nodes,
//! trivial tasks on every node. Node i (1-based) of the harness's cluster
//! has the custom resource `{"node<i>": 1}`, which pins a task there.

use std::time::Instant;

use serde_json::json;
use wray::{ObjectRef, Options, Scheduling};

use crate::one_node::mapped_len;
use crate::{arg, err, secs, Fields};

fn fields(v: serde_json::Value) -> Fields {
    v.as_object().cloned().unwrap_or_default()
}

/// An actor holding one number.
#[wray::actor]
pub struct Cell {
    v: u64,
}

#[wray::actor]
impl Cell {
    /// Holds `v`.
    pub fn new(v: u64) -> Self {
        Cell { v }
    }

    /// The number it holds, and the node it lives on.
    pub fn read(&self) -> (u64, String) {
        (self.v, wray::node_id())
    }
}

/// `actors N [spread|slot]`: N actors made (all live at once), then each
/// called once; with `spread`, placed `SPREAD`; with `slot`, each asks for
/// one unit of the custom resource `slot` (which the harness gives each
/// node as many of as it may hold actors), so the default placement moves
/// them to other nodes as a node fills.
pub(crate) fn actors(a: &[String]) -> Result<Fields, String> {
    let n = arg(a, 0, "N")?;
    let options = match a.get(1).map(String::as_str) {
        Some("spread") => Options::new().scheduling(Scheduling::Spread),
        Some("slot") => Options::new().resource("slot", 1.0),
        _ => Options::new(),
    };
    let start = Instant::now();
    let cells: Vec<_> = (0..n)
        .map(|i| Cell::remote_with(options.clone(), i))
        .collect();
    let create_s = secs(start);
    let calls: Vec<_> = cells.iter().map(|c| c.read().remote()).collect();
    let values = wray::get_all(&calls).map_err(err)?;
    if values.iter().map(|(v, _)| *v).ne(0..n) {
        return Err("an actor answered another's value".into());
    }
    let mut per_node = std::collections::BTreeMap::<String, u64>::new();
    for (_, node) in values {
        *per_node.entry(node).or_default() += 1;
    }
    Ok(fields(
        json!({ "create_submit_s": create_s, "per_node": per_node }),
    ))
}

/// Pinned to node `i` (1-based).
fn on_node(i: u64) -> Options {
    Options::new().resource(&format!("node{i}"), 1.0)
}

/// The length and page sum of `r` (an object argument pulled to this
/// node before the task runs), read in place.
#[wray::remote]
pub fn read_here(r: ObjectRef<Vec<u8>>) -> Result<(u64, u64), String> {
    mapped_len.local(r)
}

/// `broadcast NODES MIB`: one object of MIB MiB put on the driver's node,
/// then one task on each of nodes 1..=NODES reading it (each node but the
/// driver's pulls it first).
pub(crate) fn broadcast(a: &[String]) -> Result<Fields, String> {
    let nodes = arg(a, 0, "NODES")?;
    let mib = arg(a, 1, "MIB")?;
    let len = usize::try_from(mib << 20).map_err(err)?;
    let r = {
        let bytes = vec![1u8; len];
        wray::put(&bytes)
    };
    let start = Instant::now();
    let reads: Vec<_> = (1..=nodes)
        .map(|i| read_here.options(on_node(i)).remote(r.clone()))
        .collect();
    let got = wray::get_all(&reads).map_err(err)?;
    let broadcast_s = secs(start);
    let want = (len as u64, (len as u64).div_ceil(4096));
    if let Some(bad) = got.iter().find(|g| **g != want) {
        return Err(format!("a node read {bad:?}, expected {want:?}"));
    }
    Ok(fields(
        json!({ "broadcast_s": broadcast_s, "bytes": len, "nodes": nodes }),
    ))
}

/// The trivial task.
#[wray::remote]
pub fn trivial(x: u64) -> u64 {
    x
}

/// `pinned NODES K`: K trivial tasks pinned to each of nodes 1..=NODES,
/// all submitted, then all read; tasks per second.
pub(crate) fn pinned(a: &[String]) -> Result<Fields, String> {
    let nodes = arg(a, 0, "NODES")?;
    let k = arg(a, 1, "K")?;
    let start = Instant::now();
    let mut refs = Vec::new();
    for i in 1..=nodes {
        let o = on_node(i);
        refs.extend((0..k).map(|j| trivial.options(o.clone()).remote(j)));
    }
    let values = wray::get_all(&refs).map_err(err)?;
    let s = secs(start);
    let want: u64 = nodes * (k * k.saturating_sub(1) / 2);
    if values.iter().sum::<u64>() != want {
        return Err("wrong sum".into());
    }
    Ok(fields(
        json!({ "tasks": nodes * k, "tasks_per_s": (nodes * k) as f64 / s.max(1e-9) }),
    ))
}

/// `local K`: K trivial tasks on this node (one of many drivers).
pub(crate) fn local(a: &[String]) -> Result<Fields, String> {
    let k = arg(a, 0, "K")?;
    let start = Instant::now();
    let refs: Vec<_> = (0..k).map(|j| trivial.remote(j)).collect();
    let values = wray::get_all(&refs).map_err(err)?;
    if values.iter().copied().ne(0..k) {
        return Err("results out of order".into());
    }
    Ok(fields(
        json!({ "tasks_per_s": k as f64 / secs(start).max(1e-9) }),
    ))
}
