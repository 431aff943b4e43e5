//! The microbenchmark component runs each case correctly (its timings are
//! reported by `cargo xtask bench`, never asserted here).

use crate::support::{Setup, TestNode};

#[test]
fn every_microbenchmark_case_runs_and_checks_its_results() {
    let node = TestNode::start(Setup::default());
    for (case, prefix) in [
        ("roundtrip", "roundtrip_us "),
        ("throughput", "throughput_per_s "),
        ("actor_roundtrip", "actor_roundtrip_us "),
        ("put_get", "put_get_us "),
    ] {
        let (result, stdout) = node.run("microbench", &[case, "200"]);
        assert_eq!(result, Ok(()), "{case}");
        let last = stdout.lines().last().unwrap_or_default().to_string();
        let value = last
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{case}: {last}"));
        assert!(value.parse::<f64>().unwrap() > 0.0, "{case}: {last}");
    }
    let (result, _) = node.run("microbench", &["bogus", "1"]);
    assert!(result.unwrap_err().contains("unknown case `bogus`"));
}
