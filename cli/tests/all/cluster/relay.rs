//! Any node's HTTP API reaches what was made through another: a job
//! submitted through node 1 is listed, followed and stopped through node
//! 2; an async call's result made through node 1 is read through node 2;
//! an actor created through node 1 is called and killed through node 2.
//! What no node has is a 404 saying so.

use std::time::Duration;

use serde_json::Value;

use super::harness::{deploy_api, start_job, wait_within, Cluster};
use crate::support::success_stdout;

/// The status and JSON answer of `req`.
fn answer(req: Result<ureq::Response, ureq::Error>) -> (u16, Value, Option<String>) {
    let r = match req {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("no answer: {e}"),
    };
    let node = r.header("wray-node").map(str::to_string);
    (r.status(), r.into_json().unwrap_or(Value::Null), node)
}

#[test]
fn jobs_objects_and_actors_made_through_one_node_are_reached_through_another() {
    let cluster = Cluster::start(2, &[]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let ids = cluster.node_ids();
    let (one, two) = (cluster.node(1), cluster.node(2));
    deploy_api(one);

    // A job through node 1, followed to its end through node 2.
    let id = start_job(one, &["chain"]);
    let (status, info, node) = answer(two.request("GET", &format!("/v1/jobs/{id}")).call());
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["job_id"], id.as_str(), "{info}");
    assert_eq!(node.as_deref(), Some(ids[0].as_str()));
    let followed = success_stdout(&two.run(&["job", "logs", "--follow", &id]));
    assert!(followed.contains("sum_refs 6"), "{followed}");
    let said = success_stdout(&two.run(&["job", "status", &id]));
    assert!(said.contains("SUCCEEDED"), "{said}");

    // A job that runs on until stopped, stopped through node 2.
    let forever = start_job(one, &["job_forever"]);
    let status = |n: &crate::node_ops::StartedNode| {
        answer(n.request("GET", &format!("/v1/jobs/{forever}")).call()).1["status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    wait_within("the job to run", Duration::from_secs(30), || {
        status(two) == "RUNNING"
    });
    let (s, stopped, _) = answer(
        two.request("POST", &format!("/v1/jobs/{forever}/stop"))
            .call(),
    );
    assert_eq!(s, 200, "{stopped}");
    wait_within("the job to stop", Duration::from_secs(30), || {
        status(one) == "STOPPED"
    });

    // An async call's result, made through node 1, read through node 2.
    let (s, call, _) = answer(
        one.request("POST", "/v1/functions/api/inc?async=true")
            .send_string("[41]"),
    );
    assert_eq!(s, 202, "{call}");
    let object = call["objects"][0]
        .as_str()
        .expect("an object id")
        .to_string();
    let (s, value, node) = answer(two.request("GET", &format!("/v1/objects/{object}")).call());
    assert_eq!((s, value), (200, serde_json::json!(42)));
    assert_eq!(node.as_deref(), Some(ids[0].as_str()));

    // An actor created through node 1, called and killed through node 2.
    let (s, made, _) = answer(
        one.request("POST", "/v1/actors")
            .send_string(r#"{"component": "api", "class": "Counter", "args": [10]}"#),
    );
    assert_eq!(s, 201, "{made}");
    let actor = made["actor"].as_str().expect("an actor id").to_string();
    let (s, value, _) = answer(
        two.request("POST", &format!("/v1/actors/{actor}/increment"))
            .send_string("[]"),
    );
    assert_eq!((s, value), (200, serde_json::json!(11)));
    let (s, _, _) = answer(two.request("DELETE", &format!("/v1/actors/{actor}")).call());
    assert_eq!(s, 200);
    let (s, gone, _) = answer(
        one.request("POST", &format!("/v1/actors/{actor}/increment"))
            .send_string("[]"),
    );
    assert_ne!(s, 200, "killed: {gone}");

    // What no node has.
    let (s, missing, _) = answer(two.request("GET", "/v1/jobs/0123456789abcdef").call());
    assert_eq!(s, 404, "{missing}");
    let message = missing["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no other live node of the cluster has it either"),
        "{missing}"
    );
    assert!(!message.contains("forgotten"), "{missing}");
}
