//! The language-neutral boundary: JSON values reaching a Rust guest and
//! coming back as JSON, codec mismatches named, schemas in `describe`, and
//! components refused for exporting none of the world's parts.

use wray_host::{Arg, Codec, ErrorKind, Payload, TaskOptions};

use crate::support::{component, json, json_results, Setup, TestNode};

#[test]
fn json_arguments_reach_a_rust_function_and_json_results_come_back() {
    let t = TestNode::start(Setup::default());
    t.node
        .deploy_file_blocking(component("tree_reduce"))
        .expect("deploys");
    let session = t.node.session().expect("a session");
    let ids = session
        .submit_blocking(
            "tree_reduce",
            "add_arrays",
            vec![json("[1, 2, 3]"), json("[10, 20, 30]")],
            json_results(),
        )
        .expect("submits");
    let sum = session.get_blocking(ids[0], None).expect("a value");
    assert_eq!(sum.codec, Codec::Json);
    assert_eq!(std::str::from_utf8(&sum.data).unwrap(), "[11,22,33]");

    // A JSON object put by the session is an argument like any other.
    let put = session
        .put(Payload {
            codec: Codec::Json,
            data: b"[5, 5, 5]".to_vec(),
            refs: Vec::new(),
        })
        .expect("puts");
    let ids = session
        .submit_blocking(
            "tree_reduce",
            "add_arrays",
            vec![Arg::Object(put), json("[1, 1, 1]")],
            json_results(),
        )
        .expect("submits");
    let sum = session.get_blocking(ids[0], None).expect("a value");
    assert_eq!(std::str::from_utf8(&sum.data).unwrap(), "[6,6,6]");

    // Without a result codec the callee answers in its own: rkyv.
    let ids = session
        .submit_blocking(
            "tree_reduce",
            "make_array",
            vec![json("0")],
            TaskOptions::new(),
        )
        .expect("submits");
    assert_eq!(
        session.get_blocking(ids[0], None).unwrap().codec,
        Codec::Rkyv
    );

    // The function's own error, reached through JSON arguments.
    let ids = session
        .submit_blocking(
            "tree_reduce",
            "add_arrays",
            vec![json("[1]"), json("[1, 2]")],
            json_results(),
        )
        .expect("submits");
    let err = session.get_blocking(ids[0], None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Application, "{err}");
    assert!(err.message.contains("lengths differ"), "{err}");
}

#[test]
fn a_value_in_a_codec_the_function_cannot_read_is_an_invalid_argument_naming_both() {
    let t = TestNode::start(Setup::default());
    t.node
        .deploy_file_blocking(component("tree_reduce"))
        .expect("deploys");
    let session = t.node.session().expect("a session");
    let raw = Arg::Value(Payload {
        codec: Codec::Raw,
        data: vec![1, 2, 3],
        refs: Vec::new(),
    });
    let bad_json = json(r#"{"not": "an array"}"#);
    let wrong_item = json(r#"[1, "two"]"#);
    let not_json = json("[1, 2");
    for (arg, wanted) in [
        (raw, "raw"),
        (bad_json, "does not match its schema"),
        (wrong_item, "does not match its schema at /1"),
        (not_json, "is not valid JSON"),
    ] {
        let ids = session
            .submit_blocking(
                "tree_reduce",
                "add_arrays",
                vec![arg, json("[1]")],
                json_results(),
            )
            .expect("submits");
        let err = session.get_blocking(ids[0], None).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
        assert!(err.message.contains("add_arrays"), "{err}");
        assert!(err.message.contains(wanted), "{err}");
        if wanted == "raw" {
            assert!(err.message.contains("rkyv or json"), "{err}");
        }
    }
    // Raw results of a typed value: refused, naming what to ask for.
    let ids = session
        .submit_blocking(
            "tree_reduce",
            "make_array",
            vec![json("1")],
            TaskOptions {
                result_codec: Some(Codec::Raw),
                ..TaskOptions::new()
            },
        )
        .expect("submits");
    let err = session.get_blocking(ids[0], None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    assert!(err.message.contains("ask for json or rkyv"), "{err}");
}

#[test]
fn json_arguments_of_actor_calls_are_checked_before_the_actor_sees_them() {
    // Checked through the SDK-neutral door: JSON arguments of an actor
    // constructor and method (the JavaScript counter declares integers).
    let t = TestNode::start(Setup::default());
    t.node
        .deploy_file_blocking(component("counter_js"))
        .expect("deploys");
    let session = t.node.session().expect("a session");
    let actor = session
        .create_actor_blocking("counter_js", "Counter", vec![json("1")], TaskOptions::new())
        .expect("creates");
    let bad = session
        .call(actor, "add", vec![json(r#""five""#)], json_results())
        .expect("calls");
    let err = session.get_blocking(bad[0], None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    assert!(err.message.contains("does not match its schema"), "{err}");
    // The bad call never reached the actor: it is alive and unchanged.
    let good = session
        .call(actor, "add", vec![json("2")], json_results())
        .expect("calls");
    let total = session.get_blocking(good[0], None).expect("a total");
    assert_eq!(std::str::from_utf8(&total.data).unwrap(), "3");
}

#[test]
fn describe_reports_parameter_names_and_json_schemas() {
    let t = TestNode::start(Setup::default());
    let record = t
        .node
        .deploy_file_blocking(component("tree_reduce"))
        .expect("deploys");
    assert!(record.sdk.starts_with("wray-rust "), "{}", record.sdk);
    let f = record.function("add_arrays").expect("add_arrays");
    let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(f.num_args(), 2);
    let schema = |text: &str| serde_json::from_str::<serde_json::Value>(text).expect("json");
    let a = schema(&f.params[0].schema);
    assert_eq!(a["type"], "array");
    assert_eq!(a["items"]["type"], "integer");
    assert_eq!(f.returns.len(), 1);
    assert_eq!(schema(&f.returns[0])["type"], "array");
    let make = record.function("make_array").expect("make_array");
    assert_eq!(schema(&make.params[0].schema)["type"], "integer");
}

#[test]
fn a_component_exporting_none_of_the_parts_is_refused_naming_them() {
    let t = TestNode::start(Setup::default());
    // The smallest valid component: the header alone, exporting nothing.
    let empty = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
    let err = t
        .node
        .deploy_blocking("empty", &empty)
        .unwrap_err()
        .to_string();
    assert!(err.contains("exports none of"), "{err}");
    assert!(err.contains("wray:runtime/functions"), "{err}");
    assert!(err.contains("it exports nothing"), "{err}");
    // A component of actors and a driver, without functions, deploys.
    let counter = t
        .node
        .deploy_file_blocking(component("counter"))
        .expect("deploys without the functions part");
    assert!(counter.has_main);
    assert!(counter.function("increment").is_none());
}
