//! Microbenchmarks timed inside a driver (the guest's monotonic clock), so
//! they measure what a wray program sees: submission, scheduling, a fresh
//! instance per task, and the object round trip.
//!
//! `main(["roundtrip", N])`: N times, submit one trivial task and `get` its
//! result; prints `roundtrip_us <mean µs per task>`.
//! `main(["throughput", N])`: submit N trivial tasks, then `get_all`; prints
//! `throughput_per_s <tasks per second>`.
//! `main(["actor_roundtrip", N])`: N calls on one actor, each awaited;
//! prints `actor_roundtrip_us <mean µs per call>`.
//! `main(["put_get", N])`: N puts of a small value each read back; prints
//! `put_get_us <mean µs per put + get>`.
//!
//! `main(["call", COMPONENT, FUNCTION, ARGS_JSON, N])`: calls deployed
//! `COMPONENT/FUNCTION` (any language) with the JSON array `ARGS_JSON`, its
//! integer result read as JSON: N/10 round trips (submit, `get`), then N submitted
//! at once and `get_all`; prints `call <component>/<function> roundtrip_us
//! <µs> async_per_s <tasks/s>` (`bench/languages`).
//!
//! `main(["big_arg", MIB..])`: an object argument of each size passed by
//! value, then mapped (see [`large_objects::big_arg`]).
//!
//! `main(["suite", FILTER, SCALE, CORES])`: the cases of `ray microbenchmark`
//! with Ray's names, counts and timing method, plus wray's own; one line per
//! case, `case\trate\tsd\tunit` (see [`suite`]); `main(["list"])` prints the
//! case names. `wray-microbenchmark` (`bench/`) runs it.

mod large_objects;
mod ray_perf;
mod suite;

/// Large zeroed allocations (`do_put`'s `vec![0i64; 10 * 1024 * 1024]`,
/// the mirror of Ray's `np.zeros`) get fresh zero pages from the host
/// instead of a `memset`, as `np.zeros` gets them from `calloc`'s `mmap`.
#[global_allocator]
static ALLOC: wray::ZeroPages = wray::ZeroPages;

use std::time::Instant;

/// The trivial task: Ray's microbenchmark uses a no-op too.
#[wray::remote]
fn noop(x: u64) -> u64 {
    x
}

/// The trivial task on a long-lived instance reused across tasks of a job
/// (`bench/http`: against `wasmtime serve --max-instance-reuse-count`).
#[wray::remote(reuse)]
fn noop_reused(x: u64) -> u64 {
    x
}

/// An actor whose method does nothing.
#[wray::actor]
pub struct Echo;

#[wray::actor]
impl Echo {
    /// A new echo actor.
    pub fn new() -> Self {
        Echo
    }

    /// Returns its argument.
    pub fn echo(&self, x: u64) -> u64 {
        x
    }
}

fn count(args: &[String]) -> Result<u64, String> {
    let n = args.get(1).ok_or("usage: <case> N")?;
    n.parse().map_err(|e| format!("N `{n}`: {e}"))
}

#[wray::main]
fn main(args: Vec<String>) -> Result<(), String> {
    let case = args.first().map(String::as_str).unwrap_or("");
    match case {
        "suite" => return suite::run(&args[1..]),
        "big_arg" => return large_objects::big_arg(&args[1..]),
        "call" => return call(&args[1..]),
        "list" => {
            suite::list();
            return Ok(());
        }
        _ => {}
    }
    let n = count(&args)?;
    let start = Instant::now();
    match case {
        "roundtrip" => {
            for i in 0..n {
                let v = noop.remote(i).get().map_err(|e| e.to_string())?;
                if v != i {
                    return Err(format!("noop({i}) returned {v}"));
                }
            }
            println!(
                "roundtrip_us {:.2}",
                start.elapsed().as_secs_f64() * 1e6 / n as f64
            );
        }
        "throughput" => {
            let refs: Vec<_> = (0..n).map(|i| noop.remote(i)).collect();
            let values = wray::get_all(&refs).map_err(|e| e.to_string())?;
            if values.iter().copied().ne(0..n) {
                return Err("results out of order".into());
            }
            println!(
                "throughput_per_s {:.0}",
                n as f64 / start.elapsed().as_secs_f64()
            );
        }
        "actor_roundtrip" => {
            let echo = Echo::remote();
            for i in 0..n {
                let v = echo.echo().remote(i).get().map_err(|e| e.to_string())?;
                if v != i {
                    return Err(format!("echo({i}) returned {v}"));
                }
            }
            println!(
                "actor_roundtrip_us {:.2}",
                start.elapsed().as_secs_f64() * 1e6 / n as f64
            );
        }
        "put_get" => {
            for i in 0..n {
                let v = wray::put(&i).get().map_err(|e| e.to_string())?;
                if v != i {
                    return Err(format!("put({i}) read back {v}"));
                }
            }
            println!(
                "put_get_us {:.2}",
                start.elapsed().as_secs_f64() * 1e6 / n as f64
            );
        }
        other => return Err(format!("unknown case `{other}`")),
    }
    Ok(())
}

/// The `call` case: `[component, function, args_json, n]`.
fn call(args: &[String]) -> Result<(), String> {
    let [component, function, json, n] = args else {
        return Err("usage: call COMPONENT FUNCTION ARGS_JSON N".into());
    };
    let n: usize = n.parse().map_err(|e| format!("N {n}: {e}"))?;
    let values: Vec<serde_json::Value> =
        serde_json::from_str(json).map_err(|e| format!("ARGS_JSON {json}: {e}"))?;
    let submit = || {
        let args = values
            .iter()
            .map(|v| {
                wray::__private::Arg::Value(wray::__private::Payload {
                    codec: wray::__private::Codec::Json,
                    data: v.to_string().into_bytes(),
                    refs: Vec::new(),
                })
            })
            .collect();
        wray::__private::submit(Some(component), function, args, 1, wray::Format::Json)
            .nth::<i64>(0)
    };
    let first = submit().get().map_err(|e| e.to_string())?;
    let rounds = (n / 10).max(1);
    let start = Instant::now();
    for _ in 0..rounds {
        let v = submit().get().map_err(|e| e.to_string())?;
        if v != first {
            return Err(format!("{component}/{function} returned {v}, then {first}"));
        }
    }
    let roundtrip_us = start.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    let start = Instant::now();
    let refs: Vec<_> = (0..n).map(|_| submit()).collect();
    let results = wray::get_all(&refs).map_err(|e| e.to_string())?;
    let per_s = n as f64 / start.elapsed().as_secs_f64();
    if results.iter().any(|v| *v != first) {
        return Err(format!("{component}/{function}: results differ"));
    }
    println!("call {component}/{function} roundtrip_us {roundtrip_us:.1} async_per_s {per_s:.0}");
    Ok(())
}

wray::export! {
    main: main,
    functions: [
        noop,
        noop_reused,
        ray_perf::small_value,
        ray_perf::do_put_small,
        ray_perf::do_put,
        ray_perf::create_object_containing_ref,
        ray_perf::work,
        large_objects::make_bytes,
        large_objects::bytes_len,
        large_objects::mapped_len,
    ],
    actors: [Echo, ray_perf::Server, ray_perf::Client],
    // Exported so that `wray-microbenchmark`'s bare-wasmtime baseline has
    // an export to call that reaches no import.
    init: no_init,
}

/// The `lifecycle.init` hook: nothing to set up.
fn no_init() -> Result<(), String> {
    Ok(())
}
