//! The fixture of the host's sandbox tests (`host/tests/hostile`): each
//! export is an attack on the host, most of them through the raw
//! `wray:runtime` imports that the SDK would never call that way.
//!
//! `main(args)` runs attack `args[0]` (with `args[1..]` as its parameters)
//! and prints one line per outcome, then `next: 42` from a plain task: the
//! tests compare those lines, and check that the node got back every file,
//! mapping, thread and byte the attack took.
//!
//! | module | attacks |
//! | --- | --- |
//! | [`crashes`] | sizes and offsets past the store, counts that size allocations, windows past the kernel's mappings |
//! | [`hangs`] | blocking calls past a time limit or a cancel, waits that cannot end, deadlocks, fork bombs |
//! | [`leaks`] | host memory a guest can grow: spans, polls, inline objects, small objects, actors, objects naming themselves, guest memory across the node |
//! | [`over_http`] | what a client of `wray start`'s HTTP API asks for: megabytes of output, millions of puts, results past an answer's bound |
//! | [`trust`] | values another guest wrote, forged errors and ids, other jobs' objects, bogus windows, files outside `--dir` |

mod crashes;
mod hangs;
mod leaks;
mod over_http;
mod raw;
mod trust;

/// A plain task: the node still runs work after an attack.
#[wray::remote]
pub(crate) fn ping(x: i64) -> i64 {
    x + 1
}

/// A plain task without arguments.
#[wray::remote]
pub(crate) fn ping0() -> i64 {
    42
}

/// Prints `{label}: ok: {value}` or `{label}: {kind}: {message}`.
pub(crate) fn report<T: std::fmt::Display>(label: &str, result: wray::Result<T>) {
    match result {
        Ok(v) => println!("{label}: ok: {v}"),
        Err(e) => println!("{label}: {}: {}", e.kind(), e.message()),
    }
}

/// The `n`-th parameter of the attack, parsed (or `default`).
fn param<T: std::str::FromStr>(args: &[String], n: usize, default: T) -> T {
    args.get(n).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// Runs attack `args[0]`, then a plain task.
#[wray::main]
fn main(args: Vec<String>) -> Result<(), String> {
    let attack = args.first().map(String::as_str).unwrap_or("");
    let p = |n| param::<u64>(&args, n, 0);
    match attack {
        "reserve_sizes" => crashes::reserve_sizes_scenario(),
        "foreign_writes" => crashes::foreign_writes_scenario(),
        "num_returns" => crashes::num_returns_scenario(),
        "windows" => report("windows", crashes::windows.remote(p(1) as u32).get()),
        "remap" => report("remap", crashes::remap.remote(p(1) as u32).get()),
        "bigger_than_store" => crashes::bigger_than_store_scenario(p(1), p(2)),
        "sleep" => hangs::sleep_scenario(p(1), p(2)),
        "cancel_sleep" => hangs::cancel_sleep_scenario(),
        "wait_unknown" => hangs::wait_unknown_scenario(),
        "hang_driver" => std::thread::sleep(std::time::Duration::from_secs(p(1))),
        "spin" => report("spin", hangs::spin.remote().get()),
        "escape_limit" => hangs::escape_limit_scenario(),
        "deep_stack" => report("deep_stack", hangs::deep_stack.remote(1).get()),
        "grow_4g" => report("grow_4g", hangs::grow_4g.remote().get()),
        "fork" => hangs::fork_scenario(p(1) as u32, p(2) as u32),
        "own_return" => report("own_return", hangs::own_return.remote().get()),
        "actor_self_call" => hangs::actor_self_call_scenario(),
        "tiny_tasks" => hangs::tiny_tasks_scenario(p(1)),
        "blocked_at_once" => hangs::blocked_at_once_scenario(p(1)),
        "sleeping_at_once" => hangs::sleeping_at_once_scenario(p(1), p(2)),
        "spans" => report("spans", leaks::spans.remote(p(1) as u32).get()),
        "wait_polls" => leaks::wait_polls_scenario(p(1)),
        "inline_flood" => leaks::inline_flood_scenario(p(1), p(2) as usize),
        "actor_flood" => leaks::actor_flood_scenario(p(1)),
        "small_puts" => leaks::small_puts_scenario(p(1)),
        "guest_memory" => leaks::guest_memory_scenario(p(1) as u32),
        "self_refs" => report("self_refs", leaks::self_refs.remote().get()),
        "actor_death" => leaks::actor_death_scenario(),
        "fail_point" => report("fail_point", leaks::boom_point.remote().get()),
        "map_garbage" => report("map_garbage", trust::map_garbage.remote().get()),
        "wrong_type" => report("wrong_type", trust::wrong_type.remote().get()),
        "forged_error" => trust::forged_error_scenario(),
        "forged_ids" => report("forged_ids", trust::forged_ids.remote().get()),
        "cross_job_hold" => trust::cross_job_hold_scenario(p(1)),
        "cross_job_steal" => trust::cross_job_steal_scenario(&args[1..]),
        "bogus_windows" => report("bogus_windows", trust::bogus_windows.remote().get()),
        "private_writes" => report("private_writes", trust::private_writes_scenario()),
        "dir_escapes" => report(
            "dir_escapes",
            trust::dir_escapes
                .remote(args.get(1).cloned().unwrap_or_default())
                .get(),
        ),
        other => return Err(format!("unknown attack {other}")),
    }
    report("next", ping.remote(41i64).get());
    Ok(())
}

wray::export! {
    main: main,
    functions: [
        ping,
        ping0,
        crashes::reserve_sizes,
        crashes::foreign_writes,
        crashes::windows,
        crashes::remap,
        hangs::sleep_for,
        hangs::spin,
        hangs::deep_stack,
        hangs::grow_4g,
        hangs::fork,
        hangs::own_return,
        hangs::gate,
        hangs::wait_at_gate,
        leaks::spans,
        leaks::self_refs,
        leaks::boom_point,
        leaks::grow_mib,
        over_http::print_mib,
        over_http::put_many,
        over_http::big_string,
        trust::map_garbage,
        trust::wrong_type,
        trust::ForgedError,
        trust::forged_ids,
        trust::bogus_windows,
        trust::read_mapped,
        trust::dir_escapes,
    ],
    actors: [hangs::Selfish, hangs::Arrivals, leaks::Holder, leaks::Cell, leaks::Hog],
}
