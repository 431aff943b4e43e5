//! Qualified calls: a guest submits functions of, and creates an actor of,
//! other deployed components (`component/function`), resolved through the
//! node's function table.

use wray_host::TaskOptions;

use crate::support::{component, Setup, TestNode};

#[test]
fn a_guest_calls_functions_and_an_actor_of_other_deployed_components() {
    let node = TestNode::start(Setup::default());
    node.node.deploy_file_blocking(component("nested")).unwrap();
    node.node
        .deploy_file_blocking(component("counter"))
        .unwrap();
    let (result, stdout) = node.run("api", &["deployed"]);
    assert_eq!(result, Ok(()), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..3],
        ["sub_experiment 42", "run_experiment 95", "counter 16"]
    );
    assert!(
        lines[3].starts_with(
            "missing not-found nested/missing: component `nested` has no remote function `missing`"
        ),
        "{stdout}"
    );
    assert!(
        lines[4]
            .starts_with("absent not-found absent/anything: no component is deployed as `absent`"),
        "{stdout}"
    );
    // Every task ran in the caller's job, labelled by its qualified name.
    let labels: Vec<String> = node.node.tasks().into_iter().map(|t| t.function).collect();
    assert!(
        labels.iter().any(|l| l == "nested/sub_experiment"),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l == "counter/Counter.new"),
        "{labels:?}"
    );
}

#[test]
fn a_redeploy_takes_effect_on_the_next_qualified_call() {
    // `nested` redeployed as the `counter` component: the name now means
    // the new bytes, so its old function is gone on the next call.
    let node = TestNode::start(Setup::default());
    node.node
        .deploy_file_blocking(component("counter"))
        .unwrap();
    let bytes = std::fs::read(component("counter")).unwrap();
    node.node.deploy_blocking("nested", &bytes).unwrap();
    let (result, stdout) = node.run("api", &["deployed"]);
    assert!(result.is_err(), "{stdout}");
    // A session names components the same way.
    let session = node.node.session().unwrap();
    let ids = session
        .submit_blocking(
            "nested",
            "sub_experiment",
            Vec::new(),
            TaskOptions::default(),
        )
        .unwrap();
    let err = session.get_blocking(ids[0], None).unwrap_err();
    assert!(
        err.to_string()
            .contains("has no remote function `sub_experiment`"),
        "{err}"
    );
}

#[test]
fn a_rust_guest_calls_a_javascript_actor_and_c_functions_in_json() {
    let node = TestNode::start(Setup::default());
    node.node
        .deploy_file_blocking(component("counter_js"))
        .unwrap();
    node.node
        .deploy_file_blocking(component("sum_bytes"))
        .unwrap();
    let (result, stdout) = node.run("api", &["languages"]);
    assert_eq!(result, Ok(()), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "js counter 22",
            &format!("c sum_bytes {}", 3 * (300 << 10)),
            "c add 3.75",
            "rkyv actor-died",
        ],
        "{stdout}"
    );
}
