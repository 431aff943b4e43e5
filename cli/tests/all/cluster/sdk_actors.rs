//! Ray's actor options from the Python, JavaScript and C SDKs on three
//! nodes: a named, detached counter with a restart and a retry, asking
//! for an accelerator (which only nodes 2 and 3 have), is made by a job
//! (a call, in C) on node 1; jobs on nodes 2 and 3 find it by name and
//! increment it; a second actor asking its name is refused, naming the
//! holder; an unknown name is an error naming it; its node SIGKILLed, it
//! restarts on the other node with its constructor's state and is found
//! there by name; killed, its name is free. One scenario, each SDK's
//! guest driving it: `examples/python/keeper` (`keeper_py`),
//! `examples/js/keeper` (`keeper_js`) and `examples/c/keeper` (`keeper`,
//! over the Rust `counter` example's `Counter`).

use std::time::{Duration, Instant};

use serde_json::Value;

use super::harness::{job_id, job_log, wait_within, Cluster, ACCELERATED};
use crate::node_ops::StartedNode;
use crate::support::{component, in_dir, success_stdout};

/// The custom resource the counter asks for (`ACCELERATED` nodes have it).
const RESOURCE: &str = "accelerator";

/// How the scenario reaches one SDK's guest, on a node.
trait Keeper {
    /// The components the guest needs (deployed by [`deploy`]).
    fn components(&self) -> &[&'static str];
    /// Makes counter `name` at `start` (asking for one `resource` unless
    /// empty) and increments it: the count, or why it was refused.
    fn make(
        &self,
        node: &StartedNode,
        name: &str,
        start: i64,
        resource: &str,
    ) -> Result<i64, String>;
    /// Increments counter `name`, found by name: the count, or why not.
    fn bump(&self, node: &StartedNode, name: &str) -> Result<i64, String>;
    /// Kills counter `name`, found by name: whether it was alive.
    fn kill(&self, node: &StartedNode, name: &str) -> bool;
}

/// A Python or JavaScript guest: component `name` with a driver taking
/// `make NAME START [RESOURCE]`, `use NAME`, `kill NAME`, one per job.
struct Driver(&'static str);

impl Driver {
    /// The last line of job `args` on `node`, after `word `.
    fn said(&self, node: &StartedNode, word: &str, args: &[&str]) -> String {
        // `--node` before `--`: what follows is the job's.
        let pid = node.pid.to_string();
        let mut argv = vec!["job", "submit", "--node", &pid, self.0, "--"];
        argv.extend_from_slice(args);
        let out = in_dir(&node.tmp, &argv).output().expect("wray runs");
        let said = success_stdout(&out);
        assert!(said.contains("SUCCEEDED"), "{said}");
        let log = job_log(node, &job_id(&said));
        let line = log
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(&format!("{word} ")))
            .unwrap_or_else(|| panic!("no `{word}` line in {log}"));
        line.to_string()
    }

    /// `said`'s count, or the text after `refused: ` / `missing: `.
    fn count(said: &str) -> Result<i64, String> {
        match said.parse() {
            Ok(n) => Ok(n),
            Err(_) => Err(said.to_string()),
        }
    }
}

impl Keeper for Driver {
    fn components(&self) -> &[&'static str] {
        std::slice::from_ref(&self.0)
    }

    fn make(
        &self,
        node: &StartedNode,
        name: &str,
        start: i64,
        resource: &str,
    ) -> Result<i64, String> {
        let start = start.to_string();
        let mut args = vec!["make", name, &start];
        if !resource.is_empty() {
            args.push(resource);
        }
        Self::count(&self.said(node, "make", &args))
    }

    fn bump(&self, node: &StartedNode, name: &str) -> Result<i64, String> {
        Self::count(&self.said(node, "use", &["use", name]))
    }

    fn kill(&self, node: &StartedNode, name: &str) -> bool {
        self.said(node, "kill", &["kill", name])
            .eq_ignore_ascii_case("true")
    }
}

/// The C guest: `wray call keeper/keep|bump|drop`, over the Rust
/// `counter` component's `Counter`.
struct CKeeper;

impl CKeeper {
    /// `wray call keeper/FUNCTION --json ARGS` on `node`: the result, or
    /// what the failed call said.
    fn call(node: &StartedNode, function: &str, args: &Value) -> Result<Value, String> {
        let target = format!("keeper/{function}");
        let json = args.to_string();
        let out = node.run(&["call", &target, "--json", &json]);
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        serde_json::from_str(text.trim()).map_err(|e| format!("`{text}` is not JSON: {e}"))
    }

    fn count(answer: Result<Value, String>) -> Result<i64, String> {
        answer.and_then(|v| v.as_i64().ok_or_else(|| format!("not a count: {v}")))
    }
}

impl Keeper for CKeeper {
    fn components(&self) -> &[&'static str] {
        &["counter", "keeper"]
    }

    fn make(
        &self,
        node: &StartedNode,
        name: &str,
        start: i64,
        resource: &str,
    ) -> Result<i64, String> {
        Self::count(Self::call(
            node,
            "keep",
            &serde_json::json!([name, start, resource]),
        ))
    }

    fn bump(&self, node: &StartedNode, name: &str) -> Result<i64, String> {
        Self::count(Self::call(node, "bump", &serde_json::json!([name])))
    }

    fn kill(&self, node: &StartedNode, name: &str) -> bool {
        Self::call(node, "drop", &serde_json::json!([name])) == Ok(Value::Bool(true))
    }
}

/// Deploys `keeper`'s components through node 1 and waits until every
/// node knows them (the cluster's function table reaches the others
/// through etcd).
fn deploy(cluster: &Cluster, keeper: &dyn Keeper) {
    for name in keeper.components() {
        let path = component(name);
        success_stdout(
            &cluster
                .node(1)
                .run(&["deploy", path.to_str().expect("UTF-8")]),
        );
        for i in 1..=3 {
            let known = || {
                let path = format!("/v1/components/{name}");
                cluster.node(i).request("GET", &path).call().is_ok()
            };
            wait_within(
                &format!("node {i} to know {name}"),
                Duration::from_secs(30),
                known,
            );
        }
    }
}

/// The node the live actor named `name` lives on, as the first of
/// `nodes` listing it (`/v1/actors`: the node that named it keeps its
/// name, a stub where the actor lives elsewhere) says.
fn home_of(cluster: &Cluster, nodes: &[usize], name: &str) -> Option<String> {
    nodes.iter().find_map(|&i| {
        let list = cluster.node(i).get("/v1/actors?limit=1000");
        list["actors"].as_array()?.iter().find_map(|a| {
            let named = a["name"] == name && a["state"] == "ALIVE";
            named.then(|| a["node_id"].as_str().unwrap_or_default().to_string())
        })
    })
}

/// Actors restarted on another node, as the live nodes of `nodes` count
/// them.
fn restarts(cluster: &Cluster, nodes: &[usize]) -> f64 {
    nodes
        .iter()
        .filter(|&&i| cluster.node(i).alive())
        .filter_map(|&i| {
            cluster
                .node(i)
                .metric("wray_cluster_actors_restarted_total")
        })
        .sum()
}

/// The scenario of the module's doc, driven through `keeper`.
fn named_detached_restartable_actor(keeper: &dyn Keeper) {
    let cluster = Cluster::start(3, &[&[], &ACCELERATED, &ACCELERATED]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let ids = cluster.node_ids();
    deploy(&cluster, keeper);
    let name = "keeper";

    // Made on node 1 (it lives on node 2 or 3: it asks for an
    // accelerator), then found by name from jobs on nodes 2 and 3.
    assert_eq!(keeper.make(cluster.node(1), name, 5, RESOURCE), Ok(6));
    assert_eq!(keeper.bump(cluster.node(2), name), Ok(7));
    assert_eq!(keeper.bump(cluster.node(3), name), Ok(8));

    // A second actor asking the name is refused, naming the name and why.
    let refused = keeper
        .make(cluster.node(2), name, 0, "")
        .expect_err("a second actor of a taken name is refused");
    assert!(
        refused.contains(name) && refused.contains("taken"),
        "{refused}"
    );
    // The holder is untouched.
    assert_eq!(keeper.bump(cluster.node(1), name), Ok(9));

    // An unknown name: an error naming it.
    let missing = keeper
        .bump(cluster.node(3), "nobody")
        .expect_err("no actor is named nobody");
    assert!(
        missing.contains("no live actor is named `nobody`"),
        "{missing}"
    );

    // Its node killed, it restarts on the other accelerated node
    // (max_restarts 1), from its constructor's state.
    let home = home_of(&cluster, &[1, 2, 3], name).expect("a node lists the counter");
    let (lost, other) = if home == ids[1] { (2, 3) } else { (3, 2) };
    assert_eq!(home, ids[lost - 1], "the counter lives on node 2 or 3");
    cluster.kill(lost);
    // Found by name again once restarted (until then a lookup finds the
    // dead node's entry, or a call reaches the new node before the
    // constructor did: errors, each from a job of its own).
    let killed = Instant::now();
    let mut errors = Vec::new();
    let answer = loop {
        match keeper.bump(cluster.node(1), name) {
            Ok(n) => break n,
            Err(e) => errors.push(format!("{:?}: {e}", killed.elapsed())),
        }
        assert!(
            killed.elapsed() < Duration::from_secs(90),
            "the counter did not answer within 90 s of its node's kill: {errors:#?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "the restarted counter answered {:?} after its node's kill; before: {errors:#?}",
        killed.elapsed()
    );
    assert_eq!(answer, 6, "the constructor's 5, plus one");
    assert_eq!(restarts(&cluster, &[1, 2, 3]), 1.0);
    assert_eq!(keeper.bump(cluster.node(other), name), Ok(7));
    assert_eq!(
        home_of(&cluster, &[1, other], name).as_deref(),
        Some(ids[other - 1].as_str()),
        "the restarted counter lives on node {other}"
    );

    // Killed (where it lives), it answers no more; its owner (node 1)
    // learns it at its next call there and frees the name: a new counter
    // may take it.
    assert!(keeper.kill(cluster.node(other), name));
    let dead = keeper
        .bump(cluster.node(1), name)
        .expect_err("a killed counter answers no more");
    assert!(
        dead.contains("actor-died") || dead.contains("no live actor"),
        "{dead}"
    );
    let mut made = None;
    wait_within("the name to be free", Duration::from_secs(30), || {
        made = keeper.make(cluster.node(1), name, 100, RESOURCE).ok();
        made.is_some()
    });
    assert_eq!(made, Some(101));
}

#[test]
fn a_python_named_detached_actor_is_found_from_every_node_and_restarts_elsewhere() {
    named_detached_restartable_actor(&Driver("keeper_py"));
}

#[test]
fn a_javascript_named_detached_actor_is_found_from_every_node_and_restarts_elsewhere() {
    named_detached_restartable_actor(&Driver("keeper_js"));
}

#[test]
fn a_c_named_detached_actor_is_found_from_every_node_and_restarts_elsewhere() {
    named_detached_restartable_actor(&CKeeper);
}
