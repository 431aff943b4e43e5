//! Python guests (`examples/python/`, built by `cargo xtask build-guests`
//! with componentize-py): the word count in Python prints what the Rust one
//! prints, and a Python driver calls the Rust `tree_reduce`'s functions by
//! qualified name, its values crossing as JSON.

use wray_bench::wordcount::count_dir;
use wray_host::Preopen;

use crate::support::{component, small_tree, Setup, TestNode};

#[test]
fn the_python_word_count_matches_the_native_count() {
    let dir = small_tree();
    let expected = count_dir(dir.path(), 20).expect("native count").render();
    let node = TestNode::start(Setup {
        num_cpus: 2,
        preopens: vec![Preopen {
            host: dir.path().to_path_buf(),
            guest: "/data".into(),
        }],
        ..Setup::default()
    });
    let (result, stdout) = node.run("wordcount_py", &["/data"]);
    assert_eq!(result, Ok(()), "{stdout}");
    assert_eq!(stdout, expected);
}

#[test]
fn a_python_driver_reduces_arrays_made_by_rust_functions() {
    let node = TestNode::start(Setup {
        num_cpus: 2,
        ..Setup::default()
    });
    let record = node
        .node
        .deploy_file_blocking(component("tree_reduce"))
        .expect("deploys");
    assert!(record.sdk.starts_with("wray-rust"));
    let (result, stdout) = node.run("tree_reduce_driver", &[]);
    assert_eq!(result, Ok(()), "{stdout}");
    let total: u64 = (0..100u64)
        .flat_map(|i| (0..1000u64).map(move |j| i * 1000 + j))
        .sum();
    assert!(stdout.contains(&format!("sum {total}")), "{stdout}");
    assert!(stdout.contains("first 4950000"), "{stdout}");
}

#[test]
fn a_python_component_describes_its_functions_with_schemas() {
    let node = TestNode::start(Setup::default());
    let record = node
        .node
        .deploy_file_blocking(component("wordcount_py"))
        .expect("deploys");
    assert!(record.sdk.starts_with("wray-python"), "{}", record.sdk);
    let count = record
        .functions
        .iter()
        .find(|f| !f.params.is_empty())
        .expect("a function with parameters");
    for p in &count.params {
        serde_json::from_str::<serde_json::Value>(&p.schema).expect("a JSON schema");
    }
}
