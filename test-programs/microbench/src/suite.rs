//! `main(["list"])`: the names of the cases, one per line.
//!
//! `main(["suite", FILTER, SCALE, CORES])`: every case of `ray microbenchmark`
//! (see [`crate::ray_perf`]) plus wray's own (see [`crate::large_objects`]),
//! in Ray's order, timed with Ray's method ([`crate::timeit`]).
//!
//! - `FILTER`: run the cases whose name contains it (empty: all), like Ray's
//!   `TESTS_TO_RUN`.
//! - `SCALE` (default 1.0): multiplies the warm-up and round durations.
//! - `CORES` (default 2): the machine's cores; Ray's 1:n and n:n cases use
//!   `cores / 2` actors (`multiprocessing.cpu_count() // 2`).
//!
//! Prints one line per case as it finishes: `case\trate\tsd\tunit`, where
//! unit is `per second` (Ray's cases), `GB per second` (the gigabytes cases,
//! in Ray's GB of 1000 MiB; Ray prints "per second" for them too) or `us`
//! (latencies). A case that fails prints
//! `case\terror\tmessage` instead, the others still run, and `main` then
//! fails naming the failed cases.

use crate::large_objects;
use crate::ray_perf;
use wray_timeit::Stat;

/// Ray's "gigabyte": its 800 MiB array counts as 0.8 GB
/// (`multiplier = 8 * 0.1`), so 1 GB = 1000 MiB.
pub const RAY_GB: f64 = 1000.0 * 1024.0 * 1024.0;

/// What a case is given.
pub struct Ctx {
    /// Multiplies Ray's durations (1 s warm-up, 2 s rounds).
    pub scale: f64,
    /// The machine's cores.
    pub cores: usize,
}

impl Ctx {
    /// Ray's `multiprocessing.cpu_count() // 2`, at least 1.
    pub fn half_cores(&self) -> usize {
        (self.cores / 2).max(1)
    }
}

/// How a case reports.
#[derive(Clone, Copy)]
enum Unit {
    /// Ray's rate: calls per second.
    PerSecond,
    /// Ray's rate for the gigabytes cases: Ray's GB per second.
    GbPerSecond,
    /// Mean microseconds per call.
    Micros,
}

impl Unit {
    fn label(self) -> &'static str {
        match self {
            Unit::PerSecond => "per second",
            Unit::GbPerSecond => "GB per second",
            Unit::Micros => "us",
        }
    }
}

type CaseFn = fn(&Ctx) -> Result<Stat, String>;

/// Every case, in the order `ray microbenchmark` runs them, then wray's.
const CASES: &[(&str, Unit, CaseFn)] = &[
    (
        "single client get calls (Plasma Store)",
        Unit::PerSecond,
        ray_perf::get_calls,
    ),
    (
        "single client put calls (Plasma Store)",
        Unit::PerSecond,
        ray_perf::put_calls,
    ),
    (
        "multi client put calls (Plasma Store)",
        Unit::PerSecond,
        ray_perf::multi_put_calls,
    ),
    (
        "single client put gigabytes",
        Unit::GbPerSecond,
        ray_perf::put_gigabytes,
    ),
    (
        "single client tasks and get batch",
        Unit::PerSecond,
        ray_perf::tasks_and_get_batch,
    ),
    (
        "multi client put gigabytes",
        Unit::GbPerSecond,
        ray_perf::multi_put_gigabytes,
    ),
    (
        "single client get object containing 10k refs",
        Unit::PerSecond,
        ray_perf::get_containing_refs,
    ),
    (
        "single client wait 1k refs",
        Unit::PerSecond,
        ray_perf::wait_1k_refs,
    ),
    (
        "single client tasks sync",
        Unit::PerSecond,
        ray_perf::tasks_sync,
    ),
    (
        "single client tasks async",
        Unit::PerSecond,
        ray_perf::tasks_async,
    ),
    (
        "multi client tasks async",
        Unit::PerSecond,
        ray_perf::multi_tasks_async,
    ),
    (
        "1:1 actor calls sync",
        Unit::PerSecond,
        ray_perf::actor_sync,
    ),
    (
        "1:1 actor calls async",
        Unit::PerSecond,
        ray_perf::actor_async,
    ),
    (
        "1:1 actor calls concurrent",
        Unit::PerSecond,
        ray_perf::actor_concurrent,
    ),
    (
        "1:n actor calls async",
        Unit::PerSecond,
        ray_perf::one_to_n_actor_async,
    ),
    (
        "n:n actor calls async",
        Unit::PerSecond,
        ray_perf::n_to_n_actor_async,
    ),
    (
        "n:n actor calls with arg async",
        Unit::PerSecond,
        ray_perf::n_to_n_actor_with_arg,
    ),
    (
        "single client get gigabytes",
        Unit::GbPerSecond,
        large_objects::get_gigabytes,
    ),
    ("guest get latency 4KiB", Unit::Micros, |cx| {
        large_objects::get_latency(cx, 4 << 10)
    }),
    ("guest get latency 1MiB", Unit::Micros, |cx| {
        large_objects::get_latency(cx, 1 << 20)
    }),
    ("guest get latency 64MiB", Unit::Micros, |cx| {
        large_objects::get_latency(cx, 64 << 20)
    }),
    ("guest get latency 1GiB", Unit::Micros, |cx| {
        large_objects::get_latency(cx, 1 << 30)
    }),
];

/// A `wray::Error` as the `String` errors `main` returns.
pub fn err(e: wray::Error) -> String {
    e.to_string()
}

/// Runs the suite with `args` = `[FILTER, SCALE, CORES]` (all optional).
///
/// # Errors
///
/// A bad argument, or the names of the cases that failed.
pub fn run(args: &[String]) -> Result<(), String> {
    let filter = args.first().map(String::as_str).unwrap_or("");
    let scale = match args.get(1) {
        None => 1.0,
        Some(s) => match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => v,
            _ => return Err(format!("scale `{s}`: expected a number > 0")),
        },
    };
    let cores = match args.get(2) {
        None => 2,
        Some(s) => s
            .parse::<usize>()
            .map_err(|e| format!("cores `{s}`: {e}"))?,
    };
    let cx = Ctx { scale, cores };
    let mut failed = Vec::new();
    for &(name, unit, case) in CASES.iter().filter(|c| c.0.contains(filter)) {
        match case(&cx) {
            Ok(stat) => println!("{name}\t{}\t{}\t{}", stat.mean, stat.sd, unit.label()),
            Err(e) => {
                // One line, whatever the message holds.
                let message: String = e
                    .chars()
                    .map(|c| if c == '\t' || c == '\n' { ' ' } else { c })
                    .collect();
                println!("{name}\terror\t{message}");
                failed.push(name);
            }
        }
    }
    match failed.as_slice() {
        [] => Ok(()),
        names => Err(format!(
            "{} case(s) failed: {}",
            names.len(),
            names.join(", ")
        )),
    }
}

/// `main(["list"])`: every case's name, one per line, in order.
pub fn list() {
    for (name, _, _) in CASES {
        println!("{name}");
    }
}
