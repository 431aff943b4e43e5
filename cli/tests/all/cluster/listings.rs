//! The cluster seen whole from any node: every listing (`/v1/tasks`,
//! `/v1/actors`, `/v1/jobs`, `/v1/objects`, `/v1/errors`) asked of any node
//! has every node's rows, each naming its node, newest first, `?node=`
//! keeping one node's, its pages covering every row once; a task sent to
//! another node is listed once, as that node's; the timeline has a process
//! per node; `wray status --address` prints the cluster's totals; an actor
//! killed through another node (one living on another node than the one
//! that made it among them), or whose node was killed, is `DEAD` seen
//! from every node; a dead node is forgotten after `--dead-node-keep`; a
//! node that does not answer is named, the others' rows answered.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{json, Value};

use super::harness::{job, job_log, start_job, wait_job_end, wait_within, Cluster, ACCELERATED};
use crate::node_ops::{wait_for, StartedNode};
use crate::support::{component, in_dir, success_stdout};

/// The listings of the cluster's state, and the field naming each row.
const LISTINGS: [(&str, &str); 5] = [
    ("/v1/tasks", "tasks"),
    ("/v1/actors", "actors"),
    ("/v1/jobs", "jobs"),
    ("/v1/objects", "objects"),
    ("/v1/errors", "errors"),
];

/// `GET path` on `node`: the status and the JSON answer.
fn get(node: &StartedNode, path: &str) -> (u16, Value) {
    match node
        .request("GET", path)
        .timeout(Duration::from_secs(30))
        .call()
    {
        Ok(r) => (r.status(), r.into_json().unwrap_or(Value::Null)),
        Err(ureq::Error::Status(s, r)) => (s, r.into_json().unwrap_or(Value::Null)),
        Err(e) => panic!("GET {path}: {e}"),
    }
}

/// `POST path` on `node` with the JSON `body`: the status and the answer.
fn post(node: &StartedNode, path: &str, body: &Value) -> (u16, Value) {
    let sent = node
        .request("POST", path)
        .timeout(Duration::from_secs(30))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string());
    match sent {
        Ok(r) => (r.status(), r.into_json().unwrap_or(Value::Null)),
        Err(ureq::Error::Status(s, r)) => (s, r.into_json().unwrap_or(Value::Null)),
        Err(e) => panic!("POST {path}: {e}"),
    }
}

/// The rows of `field` in a listing's answer.
fn rows<'a>(answer: &'a Value, field: &str) -> &'a Vec<Value> {
    answer[field]
        .as_array()
        .unwrap_or_else(|| panic!("no {field} in {answer}"))
}

/// The nodes `rows` name.
fn nodes_of(rows: &[Value]) -> BTreeSet<String> {
    rows.iter()
        .map(|r| r["node_id"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The times a listing orders `rows` by.
fn times(rows: &[Value], field: &str) -> Vec<f64> {
    let key = match field {
        "tasks" | "jobs" => "submitted_at",
        "errors" => "time",
        _ => "created_at",
    };
    rows.iter()
        .map(|r| r[key].as_f64().unwrap_or(-1.0))
        .collect()
}

/// A row's identity in a listing (its id and, for objects, which a node
/// may hold a copy of, its node).
fn id_of(row: &Value) -> String {
    let id = ["task_id", "actor", "job_id", "id"]
        .iter()
        .find_map(|k| row[*k].as_str())
        .unwrap_or("");
    format!("{id}@{}", row["node_id"].as_str().unwrap_or(""))
}

/// Every row of `path` through `node`, `limit` a page, following `next`.
fn all_pages(node: &StartedNode, path: &str, field: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..10_000 {
        let cursor = after
            .as_deref()
            .map(|a| format!("&after={}", wray_api::encode(a)))
            .unwrap_or_default();
        let (s, page) = get(node, &format!("{path}?limit={limit}{cursor}"));
        assert_eq!(s, 200, "{page}");
        let mine = rows(&page, field);
        assert!(mine.len() <= limit, "{page}");
        out.extend(mine.iter().cloned());
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => return out,
        }
    }
    panic!("{path}: the pages never ended");
}

#[test]
fn every_listing_asked_of_any_node_has_every_nodes_rows() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &ACCELERATED]);
    let ids = cluster.node_ids();
    let all: BTreeSet<String> = ids.iter().cloned().collect();
    // On each node: a job (its driver a task there), an actor made over
    // HTTP, an async result kept in its store, a failed task.
    for i in 1..=3 {
        let node = cluster.node(i);
        assert!(job(node, &["ids"]).contains("task"));
        let (s, v) = post(
            node,
            "/v1/actors",
            &json!({"component": "api", "class": "Counter", "args": [i]}),
        );
        assert_eq!(s, 201, "{v}");
        let (s, v) = post(node, "/v1/functions/api/inc?async=true", &json!([i]));
        assert_eq!(s, 202, "{v}");
        let (s, v) = post(node, "/v1/functions/api/four_gpus", &json!([]));
        assert_eq!(s, 422, "{v}");
    }
    // A job on node 1 whose tasks run on nodes 2 and 3.
    let spread = job(cluster.node(1), &["cluster_spread", "6", "0"]);
    assert!(spread.contains("cluster_spread 15"), "{spread}");

    for i in 1..=3 {
        let node = cluster.node(i);
        for (path, field) in LISTINGS {
            let (s, answer) = get(node, &format!("{path}?limit=1000"));
            assert_eq!(s, 200, "{path} through node {i}: {answer}");
            assert!(answer.get("unreachable").is_none(), "{answer}");
            let listed = rows(&answer, field);
            assert_eq!(
                nodes_of(listed),
                all,
                "{path} through node {i} names every node: {answer}"
            );
            // Newest first; `?order=oldest` the other way.
            let newest = times(listed, field);
            assert!(
                newest.windows(2).all(|w| w[0] >= w[1]),
                "{path} newest first: {newest:?}"
            );
            let (_, oldest) = get(node, &format!("{path}?limit=1000&order=oldest"));
            let oldest = times(rows(&oldest, field), field);
            assert!(oldest.windows(2).all(|w| w[0] <= w[1]), "{oldest:?}");
            // `?node=`: that node's rows alone, some of them.
            let third = &ids[2];
            let (s, one) = get(node, &format!("{path}?limit=1000&node={third}"));
            assert_eq!(s, 200, "{one}");
            let only = rows(&one, field);
            assert!(!only.is_empty(), "{path}?node={third}: {one}");
            assert_eq!(nodes_of(only), BTreeSet::from([third.clone()]), "{one}");
        }
    }

    // Pages of 2 cover the one page of 1,000, in its order, each row once.
    for (path, field) in LISTINGS {
        let paged: Vec<String> = all_pages(cluster.node(2), path, field, 2)
            .iter()
            .map(id_of)
            .collect();
        let (_, whole) = get(cluster.node(2), &format!("{path}?limit=1000"));
        let whole: Vec<String> = rows(&whole, field).iter().map(id_of).collect();
        assert_eq!(paged, whole, "{path}");
        let distinct: BTreeSet<&String> = paged.iter().collect();
        assert_eq!(distinct.len(), paged.len(), "{path}: {paged:?}");
    }

    // The forwarded tasks: each listed once, as the node that ran it.
    let (_, tasks) = get(cluster.node(1), "/v1/tasks?limit=1000");
    let slow: Vec<&Value> = rows(&tasks, "tasks")
        .iter()
        .filter(|t| t["function"] == "slow_on_accelerator")
        .collect();
    assert_eq!(slow.len(), 6, "{slow:?}");
    let ran_on = nodes_of(&slow.iter().map(|t| (*t).clone()).collect::<Vec<_>>());
    assert!(!ran_on.contains(&ids[0]), "none ran on node 1: {slow:?}");
    assert!(
        slow.iter()
            .all(|t| t["worker"].as_str().is_some_and(|w| w.starts_with("wray-"))),
        "each names the worker it ran on: {slow:?}"
    );
    // One task by id, through any node: the row of the node that ran it
    // (node 1, which sent it, relays to it), as the listing shows it.
    for listed in &slow {
        let id = listed["task_id"].as_str().expect("a task id");
        for i in 1..=3 {
            let (s, one) = get(cluster.node(i), &format!("/v1/tasks/{id}"));
            assert_eq!(s, 200, "task {id} through node {i}: {one}");
            assert_eq!(one["task_id"], listed["task_id"], "{one}");
            assert_eq!(one["node_id"], listed["node_id"], "{one}");
            assert_eq!(one["worker"], listed["worker"], "{one}");
            assert_eq!(one["state"], listed["state"], "{one}");
        }
    }
    let (s, none) = get(cluster.node(2), &format!("/v1/tasks/{}", "0".repeat(32)));
    assert_eq!(s, 404, "{none}");
    assert_eq!(none["error"]["code"], "unknown_task", "{none}");
    let (s, bad) = get(cluster.node(2), "/v1/tasks/not-a-task");
    assert_eq!(s, 400, "{bad}");
    assert_eq!(bad["error"]["code"], "bad_id", "{bad}");

    // The timeline: a process per node, each with its workers' rows.
    let (s, trace) = get(cluster.node(3), "/v1/timeline");
    assert_eq!(s, 200);
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let processes: BTreeMap<u64, String> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            let name = e["args"]["name"].as_str().unwrap_or("").to_string();
            (e["pid"].as_u64().unwrap_or(0), name)
        })
        .collect();
    for id in &ids {
        assert!(
            processes.values().any(|n| n.ends_with(id.as_str())),
            "{processes:?}"
        );
    }
    for pid in processes.keys() {
        assert!(
            events
                .iter()
                .any(|e| e["pid"] == *pid && e["ph"] == "X" && e["cat"] == "task"),
            "process {pid} drew no task: {processes:?}"
        );
    }
}

#[test]
fn the_cli_reads_the_whole_cluster_through_any_node() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &ACCELERATED]);
    let ids = cluster.node_ids();
    let spread = job(cluster.node(1), &["cluster_spread", "4", "0"]);
    assert!(spread.contains("cluster_spread 6"), "{spread}");
    let (s, v) = post(cluster.node(3), "/v1/functions/api/four_gpus", &json!([]));
    assert_eq!(s, 422, "{v}");
    let node = cluster.node(2);
    let wray = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--address", &node.url]);
        let out = in_dir(&node.tmp, &all)
            .env("WRAY_TOKEN", &node.token)
            .output()
            .expect("wray runs");
        success_stdout(&out)
    };
    // The cluster's resources: three nodes of one CPU each, nodes 2 and 3
    // two accelerators each (every task has ended: once each node has
    // published so, none in use).
    let wants = ["Cluster: 3 nodes alive", "CPU: 0 / 3", "accelerator: 0 / 4"];
    let mut status = String::new();
    wait_within("the cluster's totals", Duration::from_secs(30), || {
        status = wray(&["status"]);
        wants.iter().all(|w| status.contains(w))
    });
    for id in &ids {
        assert!(status.contains(id.as_str()), "{id} in\n{status}");
    }
    // Memory in binary units, never in bytes.
    let memory = status
        .lines()
        .find(|l| l.trim_start().starts_with("memory:"))
        .unwrap_or_else(|| panic!("no memory line in\n{status}"));
    assert!(memory.contains("iB"), "{memory}");
    // Every node's tasks, the forwarded ones as the nodes that ran them.
    let tasks = wray(&["tasks"]);
    let slow: Vec<&str> = tasks
        .lines()
        .filter(|l| l.contains("slow_on_accelerator"))
        .collect();
    assert_eq!(slow.len(), 4, "{tasks}");
    assert!(slow.iter().all(|l| !l.contains(ids[0].as_str())), "{tasks}");
    assert!(
        tasks.contains(ids[0].as_str()),
        "the driver on node 1: {tasks}"
    );
    let only = wray(&["tasks", "--node-id", &ids[0]]);
    assert!(!only.contains("slow_on_accelerator"), "{only}");
    assert!(only.contains("main"), "{only}");
    let errors = wray(&["errors"]);
    assert!(
        errors.contains("four_gpus") && errors.contains(ids[2].as_str()),
        "{errors}"
    );
    let jobs = wray(&["job", "list"]);
    assert!(
        jobs.contains(ids[0].as_str()) && jobs.ends_with("1 jobs\n"),
        "{jobs}"
    );
    let objects = wray(&["objects"]);
    assert!(objects.contains("NODE"), "{objects}");
    let trace = node.tmp.join("trace.json");
    let said = wray(&["timeline", "-o", trace.to_str().expect("UTF-8")]);
    assert!(said.starts_with("Trace file written to "), "{said}");
    let trace: Value =
        serde_json::from_slice(&std::fs::read(&trace).expect("the trace")).expect("JSON");
    let processes = trace["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["name"] == "process_name")
        .count();
    assert_eq!(processes, 3, "{trace}");
}

/// The state of the actor named or with id `actor` as node `i` lists it
/// (`None`: not listed).
fn actor_state(cluster: &Cluster, i: usize, actor: &dyn Fn(&Value) -> bool) -> Option<String> {
    let (s, v) = get(cluster.node(i), "/v1/actors?limit=1000");
    if s != 200 {
        return None;
    }
    let found = v["actors"].as_array()?.iter().find(|a| actor(a))?.clone();
    found["state"].as_str().map(str::to_string)
}

#[test]
fn an_actor_killed_through_another_node_or_on_a_killed_node_is_dead_seen_from_every_node() {
    let cluster = Cluster::with_api(3, &[&[], &ACCELERATED, &[]]);
    // A detached actor made by a job on node 1, killed by a job on node 2.
    assert_eq!(
        job(cluster.node(1), &["named_make", "kept", "1"])
            .lines()
            .last(),
        Some("named_make 2")
    );
    let named = |a: &Value| a["name"] == "kept";
    for i in 1..=3 {
        wait_within(
            "every node to list it alive",
            Duration::from_secs(30),
            || actor_state(&cluster, i, &named).as_deref() == Some("ALIVE"),
        );
    }
    assert!(job(cluster.node(2), &["named_kill", "kept"]).contains("named_kill true"));
    for i in 1..=3 {
        wait_within(
            "every node to list it DEAD",
            Duration::from_secs(30),
            || actor_state(&cluster, i, &named).as_deref() == Some("DEAD"),
        );
    }

    // A detached actor made by node 1 living on node 2 (it holds an
    // accelerator), killed by a job on node 3: node 1 keeps a stub of it,
    // yet every node lists it DEAD, by its name.
    let python = component("keeper_py");
    success_stdout(
        &cluster
            .node(1)
            .run(&["deploy", python.to_str().expect("UTF-8")]),
    );
    let keeper = |node: &StartedNode, args: &[&str]| {
        // `--node` before `--`: what follows is the job's.
        let pid = node.pid.to_string();
        let mut argv = vec!["job", "submit", "--node", &pid, "keeper_py", "--"];
        argv.extend_from_slice(args);
        let said = success_stdout(&in_dir(&node.tmp, &argv).output().expect("wray runs"));
        job_log(node, &super::harness::job_id(&said))
    };
    let made = keeper(cluster.node(1), &["make", "far", "5", "accelerator"]);
    assert!(
        made.contains(&format!("node {}", cluster.node(2).node_id)),
        "{made}"
    );
    let far = |a: &Value| a["name"] == "far";
    for i in 1..=3 {
        wait_within(
            "every node to list it alive",
            Duration::from_secs(30),
            || actor_state(&cluster, i, &far).as_deref() == Some("ALIVE"),
        );
    }
    let killed = keeper(cluster.node(3), &["kill", "far"]);
    assert!(killed.contains("kill True"), "{killed}");
    for i in 1..=3 {
        wait_within(
            "every node to list the far actor DEAD",
            Duration::from_secs(30),
            || actor_state(&cluster, i, &far).as_deref() == Some("DEAD"),
        );
    }

    // An actor made by a job on node 1 living on node 2, which is killed:
    // dead for nodes 1 and 3, which its owner (node 1) speaks for.
    let id = start_job(cluster.node(1), &["cluster_actor_lost"]);
    wait_within("the actor to be made", Duration::from_secs(60), || {
        job_log(cluster.node(1), &id).contains("actor_node")
    });
    let (_, listed) = get(cluster.node(3), &format!("/v1/actors?limit=1000&job={id}"));
    let tally = rows(&listed, "actors")
        .iter()
        .find(|a| a["class"] == "Tally")
        .unwrap_or_else(|| panic!("no Tally listed through node 3: {listed}"))
        .clone();
    assert_eq!(
        tally["node_id"],
        cluster.node(2).node_id.as_str(),
        "{tally}"
    );
    assert_eq!(tally["state"], "ALIVE", "{tally}");
    let actor = tally["actor"].as_str().unwrap_or("").to_string();
    cluster.kill(2);
    let is_it = |a: &Value| a["actor"] == actor.as_str();
    for i in [1, 3] {
        wait_within(
            "the actor of the killed node to be DEAD",
            Duration::from_secs(30),
            || actor_state(&cluster, i, &is_it).as_deref() == Some("DEAD"),
        );
    }
    assert!(wait_job_end(cluster.node(1), &id, Duration::from_secs(60)).contains("SUCCEEDED"));
}

#[test]
fn a_dead_node_is_listed_dead_for_its_keep_time_then_forgotten() {
    let keep: &[&str] = &["--dead-node-keep", "3"];
    let cluster = Cluster::start(3, &[keep, keep, keep]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let gone = cluster.node(3).node_id.clone();
    cluster.kill(3);
    let listed = |i: usize| -> Option<Value> {
        cluster
            .try_nodes_seen_by(i)
            .ok()?
            .into_iter()
            .find(|n| n["node_id"] == gone.as_str())
    };
    for i in [1, 2] {
        let mut seen = Value::Null;
        wait_within(
            "the node to be listed DEAD",
            Duration::from_secs(30),
            || {
                seen = listed(i).unwrap_or(Value::Null);
                seen["state"] == "DEAD" || seen.is_null()
            },
        );
        // A dead node runs nothing and has nothing free (when it was seen
        // before it was forgotten).
        if !seen.is_null() {
            assert_eq!(seen["running_tasks"], 0, "{seen}");
            assert_eq!(seen["resources_available"], json!({}), "{seen}");
        }
    }
    for i in [1, 2] {
        wait_within(
            "the dead node to be forgotten",
            Duration::from_secs(30),
            || listed(i).is_none(),
        );
        assert_eq!(cluster.nodes_seen_by(i).len(), 2);
    }
}

#[test]
fn a_node_that_does_not_answer_is_named_and_not_waited_for() {
    let cluster = Cluster::with_api(3, &[]);
    let ids = cluster.node_ids();
    for i in 1..=3 {
        assert!(job(cluster.node(i), &["ids"]).contains("task"));
    }
    // Node 3 hangs (SIGSTOP): alive to the others until its lease lapses,
    // it answers nothing.
    let hung = cluster.node(3);
    // SAFETY: a plain signal to a node this cluster started.
    assert_eq!(unsafe { libc::kill(hung.pid as i32, libc::SIGSTOP) }, 0);
    wait_for("node 3 is stopped", || hung.stopped());
    let (s, listed) = get(cluster.node(1), "/v1/jobs?limit=1000&timeout=2");
    // What node 1 saw of the others, for a failure's message.
    let (_, seen) = get(cluster.node(1), "/v1/nodes");
    // SAFETY: as above; it goes on (and the cluster stops it when dropped).
    assert_eq!(unsafe { libc::kill(hung.pid as i32, libc::SIGCONT) }, 0);
    assert_eq!(s, 200, "{listed}");
    let missing: BTreeSet<String> = listed["unreachable"]
        .as_array()
        .map(|u| {
            u.iter()
                .filter_map(|u| u["node_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(missing.contains(&ids[2]), "{listed}; node 1 saw {seen}");
    // Every node that answered is there (node 1 always: it asked), the
    // hung one not.
    let answered: BTreeSet<String> = ids
        .iter()
        .filter(|i| !missing.contains(*i))
        .cloned()
        .collect();
    assert!(answered.contains(&ids[0]), "{listed}");
    assert_eq!(nodes_of(rows(&listed, "jobs")), answered, "{listed}");
}
