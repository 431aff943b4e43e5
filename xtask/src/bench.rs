//! `cargo xtask bench`: wray's benchmarks, run side by side on this machine,
//! written to `docs/benchmarks.md`.
//!
//! - The cases of `ray microbenchmark`: `wray-microbenchmark --json` and, in
//!   the same run, `bench/ray/run.sh --json` (Ray's own; skipped with
//!   `--skip-ray`, left empty when the script is missing), as one table with
//!   wray/Ray ratios, plus wray's yardsticks (memcpy, bare wasmtime); see
//!   [`compare`].
//! - Word count over the Rust standard library sources: `wray run` with
//!   `--num-cpus 1` and `--num-cpus 2` against `wordcount_native` (the same
//!   count as a plain single-threaded Rust program, `bench/`), each the
//!   median wall time of `--runs` whole-process runs; every wray run's output
//!   is checked against the native one.
//! - The cases of `test-programs/microbench`, timed inside the driver: one
//!   trivial task's round trip (submit + get), the throughput of 10,000
//!   trivial tasks submitted at once, one actor call's round trip, and a
//!   put + get of a small value; the median of `--runs` runs.
//! - Before and after (with `--baseline DIR`): another build's
//!   `wray-microbenchmark` against this one's, alternating; see
//!   [`before_after`].
//! - Security: every attack of the sandbox suite through `wray run`, and the
//!   fuzzing guest on `--fuzz-calls` calls; see [`security`].

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::run;
use crate::{guests, paths};

mod before_after;
mod compare;
mod security;

/// What `cargo xtask bench` runs besides its fixed parts.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Runs of each word-count and first-look measurement.
    pub runs: usize,
    /// Skip Ray's side of the comparison.
    pub skip_ray: bool,
    /// Another build (`wray-microbenchmark` and `wasm/microbench.wasm`) to
    /// compare with.
    pub baseline: Option<std::path::PathBuf>,
    /// Alternating rounds of the before-and-after comparison.
    pub ab_rounds: usize,
    /// Calls of the fuzzing run in the security section.
    pub fuzz_calls: u64,
}

/// Headings of the report's sections that `bench` does not measure: kept
/// from the earlier report as they were, in this order, before the
/// security section. `EARLIER_CHANGES` holds the side-by-side measurements
/// of earlier changes, which a new `--baseline` table must not erase.
const KEPT_SECTIONS: &[&str] = &[
    EARLIER_CHANGES,
    "## Guests by language",
    "## Task table: 1 M tasks",
    "## HTTP",
    "## Cluster",
];

/// The heading of the measurements of earlier changes (see `KEPT_SECTIONS`).
const EARLIER_CHANGES: &str = "## Earlier changes, side by side";

/// The section of `report` under `heading` (to the next `## ` heading),
/// with a blank line before it; empty when there is none.
fn kept_section(report: &str, heading: &str) -> String {
    let Some(start) = report.find(&format!("\n{heading}\n")) else {
        return String::new();
    };
    let body = &report[start + 1..];
    let end = body[heading.len()..]
        .find("\n## ")
        .map_or(body.len(), |i| heading.len() + i + 1);
    format!("\n{}", &body[..end])
}

/// The word count's input, as in the demo.
const CORPUS: &str = "/usr/lib/rustlib/src/rust/library";

/// Runs every benchmark (the word count and the first-look cases `runs`
/// times each; `ray microbenchmark`'s cases once, Ray's too unless
/// `skip_ray`) and writes the report.
///
/// # Errors
/// Fails when a build fails, a command fails, or wray's output differs from
/// the native count.
pub fn bench(options: BenchOptions) -> Result<()> {
    let BenchOptions { runs, skip_ray, .. } = options;
    guests::build_all("bench")?;
    let release = paths::target_dir().join("release");
    let wasm = paths::wasm_dir();
    let runs = runs.max(1);

    run::header("bench: word count");
    let native = || {
        let mut c = Command::new(release.join("wordcount_native"));
        c.arg(CORPUS);
        c
    };
    let expected = output(&mut native())?;
    let native_s = median_wall(runs, native, &expected)?;
    let mut rows = vec![("native (1 thread)".to_string(), native_s)];
    for cpus in [1, 2] {
        let wray = || {
            let mut c = Command::new(release.join("wray"));
            c.arg("run")
                .arg("--quiet")
                .args(["--num-cpus", &cpus.to_string()])
                .arg(wasm.join("wordcount.wasm"))
                .args(["--dir", &format!("{CORPUS}::/data"), "--", "/data"]);
            c
        };
        rows.push((
            format!("wray --num-cpus {cpus}"),
            median_wall(runs, wray, &expected)?,
        ));
    }

    run::header("bench: microbenchmarks");
    let cases = [
        (
            "roundtrip",
            "5000",
            "trivial task round trip (submit + get)",
            "µs",
        ),
        (
            "throughput",
            "10000",
            "10,000 trivial tasks submitted at once",
            "tasks/s",
        ),
        ("actor_roundtrip", "5000", "actor call round trip", "µs"),
        ("put_get", "10000", "put + get of a u64", "µs"),
    ];
    let mut micro = Vec::new();
    for (case, n, what, unit) in cases {
        let mut values = Vec::new();
        for _ in 0..runs {
            let out = output(
                Command::new(release.join("wray"))
                    .args(["run", "--quiet"])
                    .arg(wasm.join("microbench.wasm"))
                    .args(["--", case, n]),
            )?;
            values.push(parse_value(&out).with_context(|| format!("case {case}: {out}"))?);
        }
        micro.push((what, median(&mut values), unit));
    }

    run::header("bench: wray-microbenchmark (ray microbenchmark's cases)");
    let microbenchmark = release.join("wray-microbenchmark");
    let wray_side = compare::wray_side(&microbenchmark, &wasm.join("microbench.wasm"), None)?;
    run::header("bench: Ray's ray microbenchmark (bench/ray/run.sh)");
    let ray_side = compare::ray_side(&paths::repo_root(), skip_ray)?;
    let comparison = compare::render(&wray_side, ray_side.as_ref())?;
    let pages = huge_pages(&microbenchmark, &wasm.join("microbench.wasm"))?;
    let before_after = match &options.baseline {
        Some(baseline) => {
            let (before, after) = before_after::measure(
                baseline,
                &microbenchmark,
                &wasm.join("microbench.wasm"),
                options.ab_rounds,
            )?;
            format!(
                "\n## Before and after\n\nThis build against `{}`.\n\n{}",
                baseline.display(),
                before_after::render(&before, &after)?
            )
        }
        None => String::new(),
    };
    let security = security::section(&release.join("wray"), &wasm, options.fuzz_calls)?;

    let path = paths::repo_root().join("docs").join("benchmarks.md");
    // Sections measured by hand (`bench/task-table.sh` takes an hour) are
    // carried over from the report this one replaces.
    let earlier = std::fs::read_to_string(&path).unwrap_or_default();
    let mut report = render(&comparison, &rows, &micro, runs)?;
    report.push_str(&pages);
    report.push_str(&before_after);
    for heading in KEPT_SECTIONS {
        report.push_str(&kept_section(&earlier, heading));
    }
    report.push_str(&security);
    print!("{report}");
    std::fs::write(&path, report).with_context(|| format!("writing {}", path.display()))?;
    println!("written to {}", path.display());
    Ok(())
}

/// Huge pages the store case needs free: a 2 GiB store (1,024 pages) and
/// as many again for the copy-on-write reservation of a private mapping of
/// the 1 GiB object.
const HUGE_PAGES_NEEDED: u64 = 1_600;

/// The zero-copy read cases on 4 KiB pages and on 2 MiB huge pages, both in
/// this run, when the kernel has enough huge pages reserved; otherwise a
/// line saying how to reserve them.
fn huge_pages(program: &std::path::Path, component: &std::path::Path) -> Result<String> {
    run::header("bench: zero-copy reads on 4 KiB and on huge pages");
    let free = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("HugePages_Free:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0);
    let mut s = String::from(
        "
## Zero-copy reads on huge pages (`--huge-pages`)

",
    );
    if free < HUGE_PAGES_NEEDED {
        writeln!(
            s,
            "Not measured: {free} huge pages free, {HUGE_PAGES_NEEDED} needed \
             (as root: `echo {HUGE_PAGES_NEEDED} > /proc/sys/vm/nr_hugepages`)."
        )?;
        return Ok(s);
    }
    let small = compare::store_cases(program, component, 2048, false)?;
    let huge = compare::store_cases(program, component, 2048, true)?;
    writeln!(
        s,
        "The same cases with a 2 GiB store, in this run, on 4 KiB pages and on 2 MiB \
         huge pages.\n"
    )?;
    s.push_str(&compare::render_pages(&small, &huge)?);
    Ok(s)
}

/// Runs `cmd` and returns its stdout; fails on a non-zero exit.
fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start `{}`", run::display(cmd)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}): {}",
            run::display(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Median wall time in seconds of `runs` runs of `make()`, each checked to
/// print `expected`.
fn median_wall(runs: usize, make: impl Fn() -> Command, expected: &str) -> Result<f64> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut cmd = make();
        let start = Instant::now();
        let out = output(&mut cmd)?;
        times.push(start.elapsed().as_secs_f64());
        if out != expected {
            bail!(
                "`{}` printed a different result than the native count",
                run::display(&cmd)
            );
        }
    }
    Ok(median(&mut times))
}

/// The number after the last space of the last line (`roundtrip_us 43.5`).
fn parse_value(out: &str) -> Option<f64> {
    out.lines().last()?.rsplit(' ').next()?.parse().ok()
}

/// The median of `values` (the upper one of an even count; `NaN` when
/// there are none).
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn render(
    comparison: &str,
    wordcount: &[(String, f64)],
    micro: &[(&str, f64, &str)],
    runs: usize,
) -> Result<String> {
    let date = output(Command::new("date").args(["-u", "+%Y-%m-%d"]))?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let native = wordcount.first().map_or(1.0, |r| r.1);
    let mut s = String::new();
    writeln!(s, "# wray benchmarks\n")?;
    writeln!(
        s,
        "Measured by `cargo xtask bench` on {}, {cores} cores; every side of every \
         comparison in the same run on the same machine.\n",
        date.trim()
    )?;
    writeln!(s, "{comparison}")?;
    writeln!(s, "## Word count over the Rust standard library sources\n")?;
    writeln!(
        s,
        "Whole-process wall time, compile cache warm; output identical to the native \
         count; medians of {runs} runs.\n"
    )?;
    writeln!(s, "| run | wall (s) | vs native |\n| --- | ---: | ---: |")?;
    for (name, secs) in wordcount {
        writeln!(s, "| {name} | {secs:.3} | {:.2}x |", secs / native)?;
    }
    writeln!(s, "\n## First-look round trips (timed inside the driver)\n")?;
    writeln!(s, "Medians of {runs} runs.\n")?;
    writeln!(s, "| case | value | unit |\n| --- | ---: | --- |")?;
    for (what, value, unit) in micro {
        writeln!(s, "| {what} | {value:.1} | {unit} |")?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_section_runs_to_the_next_heading_and_a_missing_one_is_empty() {
        let report = "# t\n\n## A\n\na\n\n## Task table: 1 M tasks\n\nrows\n\n### sub\n\nmore\n\n## Security\n\ns\n";
        assert_eq!(
            kept_section(report, "## Task table: 1 M tasks"),
            "\n## Task table: 1 M tasks\n\nrows\n\n### sub\n\nmore\n\n"
        );
        assert_eq!(kept_section(report, "## Security"), "\n## Security\n\ns\n");
        assert_eq!(kept_section(report, "## Nope"), "");
    }

    #[test]
    fn parses_the_last_value() {
        assert_eq!(parse_value("x\nroundtrip_us 43.5\n"), Some(43.5));
        assert_eq!(parse_value("throughput_per_s 22228"), Some(22228.0));
        assert_eq!(parse_value(""), None);
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
    }
}
