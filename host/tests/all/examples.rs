//! The examples under `examples/` print what their READMEs promise.

use crate::support::{Setup, TestNode};

fn run(name: &str, num_cpus: usize) -> Vec<String> {
    let node = TestNode::start(Setup {
        num_cpus,
        ..Setup::default()
    });
    let (result, stdout) = node.run(name, &[]);
    assert_eq!(result, Ok(()), "{name}: {stdout}");
    stdout.lines().map(str::to_string).collect()
}

#[test]
fn nested_example_prints_rays_result() {
    assert!(run("nested", 1).contains(&"[45, 55, 65, 75, 85]".to_string()));
}

#[test]
fn tree_reduce_example_sums_100_arrays() {
    let out = run("tree_reduce", 2);
    // Array i holds i*1000 + j for j < 1000; the reduced array's element j
    // is the sum over i < 100.
    let total: u64 = (0..100u64)
        .flat_map(|i| (0..1000u64).map(move |j| i * 1000 + j))
        .sum();
    let first: u64 = (0..100u64).map(|i| i * 1000).sum();
    assert!(out.contains(&format!("sum {total}")), "{out:?}");
    assert!(out.contains(&format!("first {first}")), "{out:?}");
}

#[test]
fn counter_example_runs_ten_actors_then_serial_calls() {
    let out = run("counter", 2).join("\n");
    assert!(out.contains("[1, 2, 3, 4, 5]"), "{out}");
}
