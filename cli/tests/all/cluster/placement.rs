//! Placement: a call on node 1 of a function asking for a resource only
//! node 3 has runs on node 3; a request no node can meet fails at once,
//! naming what was asked and what the nodes offer.

use std::time::Duration;

use serde_json::{json, Value};

use super::harness::{wait_within, Cluster};
use crate::node_ops::StartedNode;
use crate::support::{component, success_stdout};

/// An answer's status and JSON body (or its text as a JSON string).
fn read(answer: Result<ureq::Response, ureq::Error>) -> (u16, Value, Option<String>) {
    let r = match answer {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("the node did not answer: {e}"),
    };
    let status = r.status();
    let task = r.header("Wray-Task-Id").map(str::to_string);
    let text = r.into_string().unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body, task)
}

/// `POST path` on `node` with the JSON `body`.
pub(super) fn post(node: &StartedNode, path: &str, body: &Value) -> (u16, Value, Option<String>) {
    read(
        node.request("POST", path)
            // "At once": an infeasible request must not wait for a timeout.
            .timeout(Duration::from_secs(30))
            .set("Content-Type", "application/json")
            .send_string(&body.to_string()),
    )
}

/// The tasks of `function` in `node`'s task table.
fn tasks_of(node: &StartedNode, function: &str) -> Vec<Value> {
    let tasks = node.get(super::harness::OWN_TASKS);
    tasks["tasks"]
        .as_array()
        .expect("a task list")
        .iter()
        .filter(|t| t["function"] == function)
        .cloned()
        .collect()
}

/// Node 3's extra flags: `api/accelerated` asks for {"accelerator": 1},
/// which node 3 alone has.
const NODE3: [&str; 2] = ["--resources", r#"{"node3": 1, "accelerator": 1}"#];

/// Deploys `api` through `node`.
fn deploy_api(node: &StartedNode) {
    success_stdout(&node.run(&["deploy", component("api").to_str().expect("UTF-8")]));
}

#[test]
fn a_task_needing_a_resource_only_node_3_has_runs_there() {
    let cluster = Cluster::start(3, &[&[], &[], &NODE3]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let first = cluster.node(1);
    let third = cluster.node(3);
    // Deployed through node 3, which has it loaded when the deploy
    // answers; node 1 calls it once it follows the function table (a
    // call that fits node 1 runs there).
    deploy_api(third);
    wait_within(
        "node 1 to follow the deploy",
        Duration::from_secs(30),
        || post(first, "/v1/functions/api/inc", &json!([41])).1 == json!(42),
    );

    let (status, answer, task) = post(first, "/v1/functions/api/accelerated", &json!([]));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.to_string().contains("accelerator"), "{answer}");
    eprintln!("api/accelerated on node 1 answered {answer} (task {task:?})");
    // It ran on node 3: node 3's task table has it, finished, run there.
    let mut ran = Vec::new();
    wait_within(
        "node 3 to list the task finished",
        Duration::from_secs(10),
        || {
            ran = tasks_of(third, "accelerated");
            ran.iter().any(|t| t["state"] == "FINISHED")
        },
    );
    assert!(
        ran.iter().all(|t| t["node_id"] == third.node_id.as_str()),
        "{ran:?}"
    );
    if let Some(task) = &task {
        assert!(
            ran.iter().any(|t| t["task_id"] == task.as_str()),
            "{task}: {ran:?}"
        );
    }
    assert!(tasks_of(cluster.node(2), "accelerated").is_empty());

    // No node has 4 GPUs: the call fails at once, naming GPU and what the
    // nodes offer (node 3's own resource among them).
    let (status, answer, _) = post(first, "/v1/functions/api/four_gpus", &json!([]));
    assert_eq!(status, 422, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("GPU") && message.contains("node3"),
        "{answer}"
    );
    eprintln!("a task asking for 4 GPUs: {message}");

    // No node has `nowhere`: a job's driver asking for it is refused at
    // once, naming it (a driver runs on the node it is submitted to).
    let job = json!({"component": "api", "args": ["ids"], "resources": {"nowhere": 1}});
    let (status, answer, _) = post(first, "/v1/jobs", &job);
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["code"], "infeasible", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("nowhere"), "{answer}");
    eprintln!("a job asking for nowhere: {message}");
}

#[test]
fn a_call_right_after_a_deploy_runs_on_the_node_it_is_forwarded_to() {
    let cluster = Cluster::start(3, &[&[], &[], &NODE3]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let first = cluster.node(1);
    // Deployed through node 1, called there at once: node 1 forwards the
    // task to node 3, which must run the component its sender names even
    // before it has followed the deploy.
    deploy_api(first);
    let (status, answer, _) = post(first, "/v1/functions/api/accelerated", &json!([]));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.to_string().contains("accelerator"), "{answer}");
}
