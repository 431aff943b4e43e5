//! The placement policy driven with a fake view of the cluster.

use std::collections::HashMap;

use super::*;

const POLICY: Policy = Policy {
    spread_threshold: 0.5,
    locality_bytes: 1 << 20,
};

fn cpus(n: f64) -> BTreeMap<String, f64> {
    BTreeMap::from([("CPU".to_string(), n)])
}

/// A cluster as a test sets it up: this node is `me`.
#[derive(Default)]
struct Fake {
    nodes: Vec<NodeFacts>,
    suspects: HashMap<String, Suspect>,
    /// Tasks sent to each node and not ended.
    sent: HashMap<String, usize>,
}

impl Fake {
    /// A cluster of `me` (4 CPUs) and the others `(id, total, free)`.
    fn of(others: &[(&str, f64, f64)]) -> Self {
        let mut fake = Fake::default();
        fake.add("me", 4.0, 4.0);
        for (id, total, free) in others {
            fake.add(id, *total, *free);
        }
        fake
    }

    fn add(&mut self, id: &str, total: f64, free: f64) {
        self.nodes.push(NodeFacts {
            id: id.to_string(),
            alive: true,
            draining: false,
            totals: cpus(total),
            available: cpus(free),
        });
    }

    fn set(&mut self, id: &str, f: impl FnOnce(&mut NodeFacts)) {
        if let Some(n) = self.nodes.iter_mut().find(|n| n.id == id) {
            f(n);
        }
    }

    fn mark(&mut self, id: &str, why: &'static str) {
        self.suspects.insert(
            id.to_string(),
            Suspect {
                why,
                seen: "seen in a test".to_string(),
                unprobed: why == "unprobed",
            },
        );
    }
}

impl PlacementView for Fake {
    fn this_node(&self) -> &str {
        "me"
    }
    fn cluster(&self) -> &str {
        "test"
    }
    fn alive(&self) -> Vec<NodeFacts> {
        self.nodes.iter().filter(|n| n.alive).cloned().collect()
    }
    fn node(&self, id: &str) -> Option<NodeFacts> {
        self.nodes.iter().find(|n| n.id == id).cloned()
    }
    fn suspect(&self, id: &str) -> Option<Suspect> {
        self.suspects.get(id).cloned()
    }
    fn load(&self, id: &str, available: &BTreeMap<String, f64>) -> Load {
        Load {
            free: available.clone(),
            outstanding: self.sent.get(id).copied().unwrap_or(0),
        }
    }
}

fn local(fits_now: bool, utilization: f64) -> Local {
    Local {
        feasible: true,
        fits_now,
        utilization,
        arg_bytes: 0,
    }
}

/// What `choose` decided, as a short word.
fn at(p: Result<Placement, crate::remote::Infeasible>) -> String {
    match p {
        Ok(Placement::Here) => "here".into(),
        Ok(Placement::Node(n)) => n,
        Ok(Placement::Later) => "later".into(),
        Err(e) => format!("error: {e}"),
    }
}

fn place(view: &Fake, local: Local, scheduling: &Scheduling) -> String {
    at(choose(
        view,
        POLICY,
        &Request::one_cpu(),
        local,
        scheduling,
        &[],
        false,
    ))
}

fn affinity(node: &str, soft: bool) -> Scheduling {
    Scheduling::Node {
        node: node.to_string(),
        soft,
    }
}

#[test]
fn the_default_prefers_here_then_the_least_loaded_node_with_room() {
    let view = Fake::of(&[("b", 4.0, 1.0), ("c", 4.0, 3.0)]);
    // Here a quarter used: it stays.
    assert_eq!(
        place(&view, local(true, 0.25), &Scheduling::Default),
        "here"
    );
    // Here three quarters used: c (a quarter used) is less used.
    assert_eq!(place(&view, local(true, 0.75), &Scheduling::Default), "c");
    // No room here: the least used with room.
    assert_eq!(place(&view, local(false, 1.0), &Scheduling::Default), "c");
    // Others under the threshold count as idle: the fewest sent wins.
    let mut idle = Fake::of(&[("b", 4.0, 3.0), ("c", 4.0, 3.0)]);
    idle.sent.insert("b".into(), 2);
    idle.sent.insert("c".into(), 1);
    assert_eq!(place(&idle, local(true, 0.75), &Scheduling::Default), "c");
    // Large arguments keep it here while it fits, over the threshold.
    let heavy = Local {
        arg_bytes: POLICY.locality_bytes,
        ..local(true, 0.9)
    };
    assert_eq!(place(&view, heavy, &Scheduling::Default), "here");
}

#[test]
fn spread_takes_the_least_used_whatever_the_threshold() {
    let mut view = Fake::of(&[("b", 1.0, 1.0), ("c", 1.0, 1.0)]);
    view.sent.insert("b".into(), 2);
    view.sent.insert("c".into(), 1);
    // Here idle: a tie at 0, here first.
    assert_eq!(place(&view, local(true, 0.0), &Scheduling::Spread), "here");
    // Here a quarter used, under the default's threshold: the default
    // stays, SPREAD goes to c (idle, sent fewer than b).
    assert_eq!(
        place(&view, local(true, 0.25), &Scheduling::Default),
        "here"
    );
    assert_eq!(place(&view, local(true, 0.25), &Scheduling::Spread), "c");
}

#[test]
fn draining_and_suspect_nodes_are_never_picked() {
    let mut view = Fake::of(&[("b", 4.0, 4.0), ("c", 4.0, 4.0), ("d", 4.0, 2.0)]);
    view.set("b", |n| n.draining = true);
    view.mark("c", "unreachable");
    // b and c are idle, but only d may take it.
    assert_eq!(place(&view, local(false, 1.0), &Scheduling::Spread), "d");
    assert_eq!(
        candidates(&view, &[])
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["d"]
    );
    // Skipped nodes (those that failed the task) are left out too.
    let skip = ["d".to_string()];
    let placed = choose(
        &view,
        POLICY,
        &Request::one_cpu(),
        local(false, 1.0),
        &Scheduling::Default,
        &skip,
        false,
    );
    // It fits here at all: queued here.
    assert_eq!(at(placed), "here");
}

#[test]
fn hard_affinity_goes_there_or_fails_naming_why() {
    let mut view = Fake::of(&[("b", 4.0, 0.0), ("c", 4.0, 4.0), ("d", 4.0, 4.0)]);
    // b is full: it is queued there all the same.
    assert_eq!(place(&view, local(true, 0.0), &affinity("b", false)), "b");
    assert_eq!(
        place(&view, local(true, 0.0), &affinity("me", false)),
        "here"
    );
    view.set("c", |n| n.draining = true);
    view.mark("d", "stalled");
    let err = place(&view, local(true, 0.0), &affinity("c", false));
    assert!(
        err.ends_with("node c (node affinity), which is draining"),
        "{err}"
    );
    let err = place(&view, local(true, 0.0), &affinity("d", false));
    assert!(
        err.contains("which is stalled in this node's view"),
        "{err}"
    );
    let err = place(&view, local(true, 0.0), &affinity("x", false));
    assert!(err.contains("is not a node of cluster `test`"), "{err}");
    view.set("b", |n| n.alive = false);
    let err = place(&view, local(true, 0.0), &affinity("b", false));
    assert!(err.ends_with("which is dead"), "{err}");
    // One only awaiting its first probe is sent to: the call probes it.
    view.mark("d", "unprobed");
    assert_eq!(place(&view, local(true, 0.0), &affinity("d", false)), "d");
    // A node too small for the task.
    view.add("e", 4.0, 4.0);
    let big = Request {
        cpu: crate::proto::Quantity::from_f64(8.0, "CPU").unwrap_or(crate::proto::Quantity::ONE),
        ..Request::default()
    };
    let err = at(choose(
        &view,
        POLICY,
        &big,
        local(false, 0.0),
        &affinity("e", false),
        &[],
        false,
    ));
    assert!(err.contains("cannot run a task asking for"), "{err}");
}

#[test]
fn soft_affinity_falls_back_to_the_default() {
    let mut view = Fake::of(&[("b", 4.0, 4.0), ("c", 4.0, 4.0)]);
    assert_eq!(place(&view, local(true, 0.0), &affinity("b", true)), "b");
    view.set("b", |n| n.draining = true);
    assert_eq!(place(&view, local(true, 0.0), &affinity("b", true)), "here");
    // An unprobed node is not bound to softly: the default goes on.
    view.mark("c", "unprobed");
    assert_eq!(
        place(&view, local(false, 1.0), &affinity("c", true)),
        "here"
    );
    assert_eq!(
        place(&view, local(true, 0.0), &affinity("gone", true)),
        "here"
    );
}

#[test]
fn with_no_room_anywhere_it_queues_here_waits_or_is_infeasible() {
    let mut view = Fake::of(&[("b", 2.0, 0.0), ("c", 2.0, 0.0)]);
    view.sent.insert("b".into(), 3);
    view.sent.insert("c".into(), 1);
    assert_eq!(
        place(&view, local(false, 1.0), &Scheduling::Default),
        "here"
    );
    let cannot = Local {
        feasible: false,
        ..local(false, 1.0)
    };
    // Not here at all: the node sent the fewest tasks (an actor), or
    // later (a function that can wait).
    assert_eq!(place(&view, cannot, &Scheduling::Default), "c");
    let later = choose(
        &view,
        POLICY,
        &Request::one_cpu(),
        cannot,
        &Scheduling::Default,
        &[],
        true,
    );
    assert_eq!(at(later), "later");
    // A GPU nobody has: infeasible, naming what the usable nodes offer
    // and why the others were left out.
    view.mark("c", "quarantined");
    let gpu = Request {
        gpu: crate::proto::Quantity::ONE,
        ..Request::default()
    };
    let err = at(choose(
        &view,
        POLICY,
        &gpu,
        cannot,
        &Scheduling::Default,
        &[],
        false,
    ));
    assert!(
        err.contains("no node of cluster `test` can run a task asking for")
            && err.contains("offer: b {CPU: 2}; me {CPU: 4}")
            && err.contains("left out: c {CPU: 2} (quarantined: seen in a test)"),
        "{err}"
    );
    assert!(feasible(&view, POLICY, &gpu, false, &Scheduling::Default).is_err());
    assert!(feasible(
        &view,
        POLICY,
        &Request::one_cpu(),
        false,
        &Scheduling::Default
    )
    .is_ok());
}
