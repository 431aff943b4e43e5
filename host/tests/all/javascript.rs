//! JavaScript guests (`examples/js/`, built by `cargo xtask build-guests`
//! with componentize-js): a JavaScript driver creates a JavaScript actor of
//! another component and calls a Rust function, values crossing as JSON;
//! a thrown `Error` comes back as an `application` error with its stack;
//! the SDK's own end-to-end checks (`sdk/js/tests/api.js`, named actors
//! included) pass.

use crate::support::{component, Setup, TestNode};

#[test]
fn a_javascript_driver_calls_a_javascript_actor_and_a_rust_function() {
    let node = TestNode::start(Setup {
        num_cpus: 2,
        ..Setup::default()
    });
    for name in ["counter_js", "tree_reduce"] {
        node.node
            .deploy_file_blocking(component(name))
            .expect("deploys");
    }
    let (result, stdout) = node.run("driver_js", &["10"]);
    assert_eq!(result, Ok(()), "{stdout}");
    assert!(stdout.contains("counter: [11,16,16]"), "{stdout}");
    assert!(
        stdout.contains("tree_reduce/make_array(3): 1000 elements, first 3000 last 3999"),
        "{stdout}"
    );
    assert!(
        stdout.contains("expected error: application counter_js/fail \"Error: boom"),
        "{stdout}"
    );
}

#[test]
fn a_javascript_component_describes_itself_and_imports_no_wasi_http() {
    let node = TestNode::start(Setup::default());
    // The node links no wasi:http: a component importing it would be
    // refused here (componentize-js needs `-d http -d fetch-event`).
    let record = node
        .node
        .deploy_file_blocking(component("counter_js"))
        .expect("deploys");
    assert!(record.sdk.starts_with("wray-js"), "{}", record.sdk);
    let add = record
        .actor_method("Counter", "add")
        .expect("Counter.add is described");
    assert_eq!(add.params.len(), 1);
    assert!(add.params[0].schema.contains("integer"), "{:?}", add.params);
}

#[test]
fn the_javascript_sdk_passes_its_own_end_to_end_checks() {
    // sdk/js/tests/api.js: every API call from a JS driver into JS
    // functions and actors of the same component; each check prints
    // `ok <what>` and a failed one throws.
    let node = TestNode::start(Setup {
        num_cpus: 2,
        ..Setup::default()
    });
    let (result, stdout) = node.run("api_js", &[]);
    assert_eq!(result, Ok(()), "{stdout}");
    for want in [
        "ok numReturns 2",
        "ok actor handle passed to a task",
        "ok an uncaught get error is the first cause: add",
        "ok an Error's cause chain is followed: add",
        "ok kill",
        "ok the bindings' realm warmed before the snapshot (driver and a fresh task)",
        "ok a fresh instance sees no global the last task set",
        "ok a named actor found from a task",
        "ok a taken name is refused naming the holder",
        "ok getIfExists returns the holder",
        "ok getActor of an unknown name says so",
    ] {
        assert!(
            stdout.lines().any(|l| l == want),
            "no {want:?} in\n{stdout}"
        );
    }
    assert!(!stdout.contains("check failed"), "{stdout}");
}
