//! wray vs Ray on the cases of `ray microbenchmark`: runs
//! `wray-microbenchmark --json` (crate `wray-bench`) and `bench/ray/run.sh --json` on this machine
//! in the same `cargo xtask bench`, and renders the side-by-side table.
//!
//! Both print one JSON object per case and line, `{"case", "rate", "sd",
//! "unit"}` (wray adds `{"case", "error"}` for a case that failed). Ratios are
//! wray's rate over Ray's, so above 1 means wray is faster; the yardsticks
//! (`memcpy gigabytes`, `bare wasmtime instantiate+call`) are compared with
//! the wray case they bound.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::run;

/// One case's result, as both sides print it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CaseResult {
    /// Ray's case name (or wray's own).
    pub case: String,
    /// Mean rate (or latency) over the timed rounds.
    pub rate: f64,
    /// Standard deviation over the rounds.
    pub sd: f64,
    /// `per second`, `GB per second` or `us`.
    pub unit: String,
}

/// What one side printed: results, and cases that failed with their
/// message, in the order printed.
#[derive(Debug, Default)]
pub struct Side {
    /// Measured cases.
    pub results: Vec<CaseResult>,
    /// (case, message) of cases that failed.
    pub failed: Vec<(String, String)>,
    /// Every case reported, measured or failed, in the order printed.
    pub order: Vec<String>,
    /// Why the side is missing or incomplete, if it is.
    pub note: Option<String>,
}

impl Side {
    pub(crate) fn get(&self, case: &str) -> Option<&CaseResult> {
        self.results.iter().find(|r| r.case == case)
    }
}

/// One JSON line of either side: `wray-microbenchmark`'s `CaseFailure`
/// or `CaseResult` (`bench/src/bin/wray-microbenchmark/main.rs`), or the
/// same shape from `bench/ray/parse.py`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Line {
    /// `{"case", "error"}`.
    Failed { case: String, error: String },
    /// `{"case", "rate", "sd", "unit"}`.
    Measured(CaseResult),
}

/// One JSON line of either side, if it is one.
fn parse_line(line: &str, side: &mut Side) {
    match serde_json::from_str::<Line>(line) {
        Ok(Line::Failed { case, error }) => {
            side.order.push(case.clone());
            side.failed.push((case, error));
        }
        Ok(Line::Measured(result)) => {
            side.order.push(result.case.clone());
            side.results.push(result);
        }
        Err(_) => {}
    }
}

/// Runs `cmd`, echoing its stdout as it comes (stderr is inherited), and
/// collects its JSON lines; a non-zero exit is noted, not an error.
///
/// # Errors
/// Fails when the command cannot be started.
pub(crate) fn json_lines(cmd: &mut Command) -> Result<Side> {
    println!("$ {}", run::display(cmd));
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{}`", run::display(cmd)))?;
    let mut side = Side::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading the benchmark's output")?;
            println!("{line}");
            parse_line(&line, &mut side);
        }
    }
    let status = child.wait().context("waiting for the benchmark")?;
    if !status.success() {
        side.note = Some(format!("`{}` exited with {status}", run::display(cmd)));
    }
    Ok(side)
}

/// The command running `program`: `wray-microbenchmark`, or an older
/// build's `wray` (a `--baseline` from before the benchmark moved to
/// `bench/`), whose subcommand `microbenchmark` takes the same flags.
fn microbenchmark(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    if program.file_name().is_some_and(|n| n == "wray") {
        cmd.arg("microbenchmark");
    }
    cmd
}

/// `wray-microbenchmark --json` (the release binary `program`) with the
/// staged microbench component.
///
/// # Errors
/// Fails when it cannot start, or reports nothing at all.
pub fn wray_side(program: &Path, component: &Path, scale: Option<&str>) -> Result<Side> {
    let mut cmd = microbenchmark(program);
    cmd.args(["--json", "--component"]).arg(component);
    if let Some(scale) = scale {
        cmd.args(["--scale", scale]);
    }
    let side = json_lines(&mut cmd)?;
    if side.results.is_empty() && side.failed.is_empty() {
        bail!(
            "wray-microbenchmark reported no case ({})",
            side.note.as_deref().unwrap_or("no output")
        );
    }
    Ok(side)
}

/// The zero-copy read cases (`gigabytes` and `latency`) on a store of
/// `store_mib` MiB, with `--huge-pages` or not, in one process each.
///
/// # Errors
/// Fails when the command cannot be started.
pub fn store_cases(program: &Path, component: &Path, store_mib: u64, huge: bool) -> Result<Side> {
    let mut all = Side::default();
    for filter in ["get gigabytes", "latency"] {
        let mut cmd = microbenchmark(program);
        cmd.args(["--json", "--filter", filter])
            .args(["--object-store-memory", &store_mib.to_string()])
            .arg("--component")
            .arg(component);
        if huge {
            cmd.arg("--huge-pages");
        }
        let side = json_lines(&mut cmd)?;
        all.results.extend(side.results);
        all.failed.extend(side.failed);
        all.note = all.note.or(side.note);
    }
    Ok(all)
}

/// A table of the same cases on 4 KiB and on huge pages, side by side.
pub fn render_pages(small: &Side, huge: &Side) -> Result<String> {
    let mut s = String::new();
    writeln!(s, "| case | 4 KiB pages | 2 MiB huge pages | unit |")?;
    writeln!(s, "| --- | ---: | ---: | --- |")?;
    for r in &small.results {
        let other = huge.get(&r.case).map_or_else(
            || "-".to_string(),
            |h| format!("{:.2} ± {:.2}", h.rate, h.sd),
        );
        writeln!(
            s,
            "| {} | {:.2} ± {:.2} | {other} | {} |",
            r.case, r.rate, r.sd, r.unit
        )?;
    }
    for (case, message) in small.failed.iter().chain(&huge.failed) {
        writeln!(
            s,
            "
{case} failed: {message}"
        )?;
    }
    Ok(s)
}

/// `bench/ray/run.sh --json` if it exists; `None` when skipped.
///
/// # Errors
/// Fails when the script exists but cannot be started.
pub fn ray_side(root: &Path, skip: bool) -> Result<Option<Side>> {
    if skip {
        println!("--skip-ray: not running the Ray side");
        return Ok(None);
    }
    let script = root.join("bench").join("ray").join("run.sh");
    if !script.is_file() {
        println!(
            "the Ray side is missing ({} does not exist): Ray columns stay empty",
            script.display()
        );
        return Ok(Some(Side {
            note: Some(format!("{} does not exist", script.display())),
            ..Side::default()
        }));
    }
    json_lines(Command::new(script).arg("--json")).map(Some)
}

/// `12,345 ± 67`-style figure with its unit.
fn figure(r: &CaseResult) -> String {
    let digits = if r.rate.abs() >= 100.0 { 0 } else { 2 };
    let unit = match r.unit.as_str() {
        "per second" => "/s",
        "GB per second" => "GB/s",
        "us" => "µs",
        other => other,
    };
    format!("{:.*} ± {:.*} {unit}", digits, r.rate, digits, r.sd)
}

fn ratio(a: &CaseResult, b: &CaseResult) -> String {
    if b.rate > 0.0 {
        format!("{:.2}", a.rate / b.rate)
    } else {
        "—".to_string()
    }
}

/// The wray-vs-Ray section of `docs/benchmarks.md`.
///
/// # Errors
/// Only formatting errors.
pub fn render(wray: &Side, ray: Option<&Side>) -> Result<String> {
    let mut s = String::new();
    writeln!(s, "## `ray microbenchmark` cases: wray vs Ray\n")?;
    writeln!(
        s,
        "`wray-microbenchmark` and `bench/ray/run.sh` (Ray 2.60's `ray microbenchmark`), \
         one after the other in the same run on this machine. Ray's names, counts and \
         timing: a 1 s warm-up, then the mean ± standard deviation of 4 rounds of 2 s \
         (Ray also sleeps 10 s before each case; wray does not). Gigabytes are Ray's \
         (800 MiB counts as 0.8 GB). wray/Ray above 1: wray is faster. The `guest get \
         latency` cases are wray's own (mean µs per `get`, no Ray counterpart).\n"
    )?;
    match ray {
        None => writeln!(s, "Ray side not run (`--skip-ray`).\n")?,
        Some(Side { note: Some(n), .. }) => writeln!(s, "Ray side incomplete: {n}.\n")?,
        Some(_) => {}
    }
    if let Some(n) = &wray.note {
        writeln!(s, "wray side incomplete: {n}.\n")?;
    }
    writeln!(
        s,
        "| case | wray | Ray | wray/Ray |\n| --- | ---: | ---: | ---: |"
    )?;
    let empty = Side::default();
    let ray = ray.unwrap_or(&empty);
    let mut cases: Vec<&str> = Vec::new();
    for name in wray.order.iter().chain(&ray.order).map(String::as_str) {
        if !cases.contains(&name) && !is_yardstick(name) {
            cases.push(name);
        }
    }
    for case in cases {
        let w = wray.get(case);
        let r = ray.get(case);
        let wray_cell = wray_cell(wray, case);
        let ray_cell = r.map_or("—".to_string(), figure);
        let ratio_cell = match (w, r) {
            (Some(w), Some(r)) if w.unit == r.unit => ratio(w, r),
            _ => "—".to_string(),
        };
        writeln!(s, "| {case} | {wray_cell} | {ray_cell} | {ratio_cell} |")?;
    }

    writeln!(s, "\n### Yardsticks (same run, same timing)\n")?;
    writeln!(
        s,
        "| wray case | wray | yardstick | ratio |\n| --- | ---: | ---: | ---: |"
    )?;
    for (case, yardstick) in YARDSTICKS {
        let ratio_cell = match (wray.get(case), wray.get(yardstick)) {
            (Some(w), Some(y)) => ratio(w, y),
            _ => "—".to_string(),
        };
        writeln!(
            s,
            "| {case} | {} | {yardstick}: {} | {ratio_cell} |",
            wray_cell(wray, case),
            wray_cell(wray, yardstick),
        )?;
    }
    if !wray.failed.is_empty() {
        writeln!(s, "\n### Cases that failed on wray\n")?;
        for (case, message) in &wray.failed {
            writeln!(s, "- {case}: {}", one_line(message))?;
        }
    }
    Ok(s)
}

/// wray's figure for `case`, or why there is none.
fn wray_cell(wray: &Side, case: &str) -> String {
    match wray.get(case) {
        Some(w) => figure(w),
        None if wray.failed.iter().any(|f| f.0 == case) => "failed (below)".to_string(),
        None => "not run".to_string(),
    }
}

/// A message on one line: its first line and, for a trap with a backtrace,
/// its last (where wasmtime puts the cause).
fn one_line(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    match lines.next_back() {
        Some(last) => format!("{first} … {last}"),
        None => first.to_string(),
    }
}

/// (wray case, the yardstick it is compared with).
const YARDSTICKS: [(&str, &str); 4] = [
    ("single client put gigabytes", "memcpy gigabytes"),
    ("multi client put gigabytes", "memcpy gigabytes two threads"),
    (
        "single client tasks async",
        "bare wasmtime instantiate+call async",
    ),
    ("single client tasks sync", "bare wasmtime instantiate+call"),
];

fn is_yardstick(case: &str) -> bool {
    YARDSTICKS.iter().any(|(_, y)| *y == case)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(lines: &[&str]) -> Side {
        let mut s = Side::default();
        for l in lines {
            parse_line(l, &mut s);
        }
        s
    }

    #[test]
    fn parses_results_failures_and_ignores_the_rest() {
        let s = side(&[
            r#"{"case": "a", "rate": 10.0, "sd": 1.0, "unit": "per second"}"#,
            r#"{"case": "b", "error": "trap"}"#,
            "run.sh: progress",
            r#"{"case": "c"}"#,
        ]);
        assert_eq!(s.results.len(), 1);
        assert_eq!(s.results[0].rate, 10.0);
        assert_eq!(s.failed, [("b".to_string(), "trap".to_string())]);
    }

    #[test]
    fn renders_ratios_yardsticks_and_failures() {
        let wray = side(&[
            r#"{"case": "single client tasks async", "rate": 20000, "sd": 10, "unit": "per second"}"#,
            r#"{"case": "guest get latency 4KiB", "rate": 1.5, "sd": 0.1, "unit": "us"}"#,
            r#"{"case": "single client put gigabytes", "error": "fuel\nmore"}"#,
            r#"{"case": "bare wasmtime instantiate+call async", "rate": 40000, "sd": 10, "unit": "per second"}"#,
        ]);
        let ray = side(&[
            r#"{"case": "single client tasks async", "rate": 10000, "sd": 5, "unit": "per second"}"#,
            r#"{"case": "1:1 async-actor calls sync", "rate": 900, "sd": 5, "unit": "per second"}"#,
        ]);
        let md = render(&wray, Some(&ray)).expect("renders");
        assert!(
            md.contains("| single client tasks async | 20000 ± 10 /s | 10000 ± 5 /s | 2.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| guest get latency 4KiB | 1.50 ± 0.10 µs | — | — |"),
            "{md}"
        );
        assert!(
            md.contains("| single client put gigabytes | failed (below) | — | — |"),
            "{md}"
        );
        assert!(
            md.contains("| 1:1 async-actor calls sync | not run | 900 ± 5 /s | — |"),
            "{md}"
        );
        assert!(
            md.contains("| bare wasmtime instantiate+call async: 40000 ± 10 /s | 0.50 |"),
            "{md}"
        );
        assert!(
            md.contains("- single client put gigabytes: fuel … more\n"),
            "{md}"
        );
        assert!(
            md.contains(
                "| single client put gigabytes | failed (below) | memcpy gigabytes: not run | — |"
            ),
            "{md}"
        );
        // Rows follow wray's order, then Ray's own cases.
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).skip(2).collect();
        assert!(rows[0].starts_with("| single client tasks async |"), "{md}");
        assert!(
            rows[2].starts_with("| single client put gigabytes |"),
            "{md}"
        );
        assert!(render(&wray, None)
            .expect("renders")
            .contains("`--skip-ray`"));
    }
}
