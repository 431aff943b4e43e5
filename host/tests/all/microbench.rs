//! The microbenchmark component runs each case correctly (its timings are
//! reported by `cargo xtask bench`, never asserted here;
//! `wray-microbenchmark` is tested in `bench/tests/microbenchmark.rs`).

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

#[test]
fn a_large_object_argument_passed_by_value_arrives_whole() {
    // 1 MiB and 3 MiB: objects in shared memory, which the task
    // maps and decodes in place rather than receive as a copied value.
    let node = TestNode::start(Setup::default());
    let (result, stdout) = node.run("microbench", &["big_arg", "1", "3"]);
    assert_eq!(result, Ok(()), "{stdout}");
    let sizes: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("big_arg "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(sizes, ["1", "3"], "{stdout}");
}

/// The parsed fields of one suite line: `case\trate\tsd\tunit`.
fn parse_case(line: &str) -> (String, f64, f64, String) {
    let fields: Vec<&str> = line.split('\t').collect();
    let [case, rate, sd, unit] = fields[..] else {
        panic!("not a case line: {line:?}");
    };
    let number = |s: &str| {
        s.parse::<f64>()
            .unwrap_or_else(|e| panic!("{line:?}: {s}: {e}"))
    };
    (case.to_string(), number(rate), number(sd), unit.to_string())
}

#[test]
fn suite_cases_report_positive_rates_in_rays_format() {
    let node = TestNode::start(Setup::default());
    // Cheap cases only, each timed for a few milliseconds (scale 0.01).
    let mut cases = Vec::new();
    for filter in ["1:1 actor calls", "single client get calls", "latency 4KiB"] {
        let before = node.stdio.stdout_text().lines().count();
        let (result, stdout) = node.run("microbench", &["suite", filter, "0.01", "2"]);
        assert_eq!(result, Ok(()), "{filter}: {stdout}");
        for line in stdout.lines().skip(before) {
            let (case, rate, sd, unit) = parse_case(line);
            assert!(case.contains(filter), "{filter}: {line}");
            assert!(rate > 0.0 && sd >= 0.0, "{line}");
            cases.push((case, unit));
        }
    }
    let expect = |c: &str, u: &str| (c.to_string(), u.to_string());
    assert_eq!(
        cases,
        [
            expect("1:1 actor calls sync", "per second"),
            expect("1:1 actor calls async", "per second"),
            expect("1:1 actor calls concurrent", "per second"),
            expect("single client get calls (Plasma Store)", "per second"),
            expect("guest get latency 4KiB", "us"),
        ]
    );
}

#[test]
fn suite_lists_distinct_case_names() {
    let node = TestNode::start(Setup::default());
    let (result, stdout) = node.run("microbench", &["list"]);
    assert_eq!(result, Ok(()));
    let names: Vec<&str> = stdout.lines().collect();
    assert!(names.contains(&"single client tasks async"), "{stdout}");
    assert!(
        names.contains(&"n:n actor calls with arg async"),
        "{stdout}"
    );
    // `wray-microbenchmark` runs one case per driver with the case's name as
    // the suite's substring filter: no name may contain another.
    for a in &names {
        for b in &names {
            assert!(a == b || !a.contains(b), "`{a}` contains `{b}`");
        }
    }
    let (result, _) = node.run("microbench", &["suite", "", "0"]);
    assert!(result.unwrap_err().contains("scale `0`"));
}
