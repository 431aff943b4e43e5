//! C guests (`examples/c/`, built by `cargo xtask build-guests` with clang,
//! wasi-libc and the checked-in bindings of `sdk/c/`): a C function reads a
//! large raw object zero-copy through the mapping imports, and JSON numbers
//! cross both ways; C functions keep a named, detached counter of the Rust
//! `counter` component, find it by name, are refused a taken name and told
//! an unknown one.

use wray_host::{Arg, Codec, ErrorKind, Payload};

use crate::support::{component, json, json_results, Setup, TestNode};

#[test]
fn a_c_function_sums_a_large_raw_object_it_maps_and_adds_json_numbers() {
    let t = TestNode::start(Setup::default());
    let record = t
        .node
        .deploy_file_blocking(component("sum_bytes"))
        .expect("deploys");
    assert!(record.sdk.starts_with("wray-c"), "{}", record.sdk);
    assert!(!record.has_main);
    let session = t.node.session().expect("a session");

    // 8 MiB of raw bytes: stored in shared memory, passed to the guest by
    // id and mapped there.
    let data: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
    let expected: u64 = data.iter().map(|b| u64::from(*b)).sum();
    let put = session
        .put(Payload {
            codec: Codec::Raw,
            data,
            refs: Vec::new(),
        })
        .expect("puts");
    let ids = session
        .submit_blocking(
            "sum_bytes",
            "sum_bytes",
            vec![Arg::Object(put)],
            json_results(),
        )
        .expect("submits");
    let sum = session.get_blocking(ids[0], None).expect("a sum");
    assert_eq!(sum.codec, Codec::Json);
    assert_eq!(
        std::str::from_utf8(&sum.data).unwrap(),
        expected.to_string()
    );

    let ids = session
        .submit_blocking(
            "sum_bytes",
            "add",
            vec![json("1.5"), json("2.25")],
            json_results(),
        )
        .expect("submits");
    let total = session.get_blocking(ids[0], None).expect("a number");
    let total: f64 = std::str::from_utf8(&total.data).unwrap().parse().unwrap();
    assert_eq!(total, 3.75);

    // JSON where the function reads raw: named, with both codecs.
    let ids = session
        .submit_blocking(
            "sum_bytes",
            "sum_bytes",
            vec![json("[1, 2]")],
            json_results(),
        )
        .expect("submits");
    let err = session.get_blocking(ids[0], None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    assert!(
        err.message.contains("json") && err.message.contains("raw"),
        "{err}"
    );
    assert!(err.message.contains("sum_bytes"), "{err}");
}

#[test]
fn c_functions_keep_a_named_detached_actor_of_another_component() {
    let t = TestNode::start(Setup {
        num_cpus: 2,
        ..Setup::default()
    });
    for name in ["counter", "keeper"] {
        t.node
            .deploy_file_blocking(component(name))
            .expect("deploys");
    }
    let session = t.node.session().expect("a session");
    let call = |function: &str, args: &[&str]| {
        let args = args.iter().map(|a| json(a)).collect();
        let ids = session
            .submit_blocking("keeper", function, args, json_results())
            .expect("submits");
        session
            .get_blocking(ids[0], None)
            .map(|p| String::from_utf8(p.data).expect("UTF-8"))
    };
    assert_eq!(call("keep", &["\"tally\"", "5", "\"\""]), Ok("6".into()));
    assert_eq!(call("bump", &["\"tally\""]), Ok("7".into()));

    // A second actor asking the name: refused, naming the name and the
    // holder; the holder is untouched.
    let err = call("keep", &["\"tally\"", "0", "\"\""]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    assert!(
        err.message.contains("\"tally\" is taken") && err.message.contains("held by live actor"),
        "{err}"
    );
    assert_eq!(call("bump", &["\"tally\""]), Ok("8".into()));

    // An unknown name, and a name no actor can have.
    let err = call("bump", &["\"nobody\""]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound, "{err}");
    assert!(
        err.message.contains("no live actor is named `nobody`"),
        "{err}"
    );
    let err = call("bump", &["\"a/b\""]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    assert!(err.message.contains("contains `/`"), "{err}");

    // Found with no class given (`get-actor` with an empty class), killed:
    // the name is free again.
    assert_eq!(call("drop", &["\"tally\""]), Ok("true".into()));
    assert_eq!(
        call("bump", &["\"tally\""]).unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(
        call("keep", &["\"tally\"", "100", "\"\""]),
        Ok("101".into())
    );
}
