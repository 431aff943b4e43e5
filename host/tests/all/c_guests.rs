//! C guests (`examples/c/`, built by `cargo xtask build-guests` with clang,
//! wasi-libc and the checked-in bindings of `sdk/c/`): a C function reads a
//! large raw object zero-copy through the mapping imports, and JSON numbers
//! cross both ways.

use wray_host::{Arg, Codec, ErrorKind, Payload};

use crate::support::{component, json, json_results, Setup, TestNode};

#[test]
fn a_c_function_sums_a_large_raw_object_it_maps_and_adds_json_numbers() {
    let t = TestNode::start(Setup::default());
    let record = t.node.deploy_file(component("sum_bytes")).expect("deploys");
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
        .submit(
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
        .submit(
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
        .submit(
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
