//! The fixture the host's integration tests run: `main(args)` runs scenario
//! `args[0]` and prints one line per check, which the tests compare.
//!
//! | scenario | module | what it exercises |
//! | --- | --- | --- |
//! | `put_get`, `wait` | [`objects`] | put/get of many types, get_all, wait, get_timeout |
//! | `num_returns`, `chain`, `nested` | [`tasks`] | several returns, dependencies, refs in values, nested tasks |
//! | `actors`, `actor_lifetime`, `current_actor` | [`actors`] | actor state, parallel actors, call order, handles passed to tasks; actors exit when their last handle is dropped, unless detached; an actor's own id and a handle to itself (callbacks) |
//! | `named`, `named_make`, `named_use`, `named_kill` | [`named`] | named actors: found by name from another task, job or node; a taken name, unknown names, the wrong class |
//! | `errors`, `trap`, `panic`, `oom`, `spin`, `actor_panic` | [`failures`] | every way a task can fail |
//! | `refs`, `spill` | [`refs`] | refs inside returned values, objects freed when unreferenced, spilling |
//! | `zero_copy`, `window_leak`, `hold_mapped`, `zeroed` | [`zero_copy`] | objects mapped into guests, private writes, no leak into later instances; large zeroed allocations zeroed by the host's pages |
//! | `gpu_packing`, `infeasible`, `blocked`, `limits`, `fuel`, `cancel`, `reuse`, `fresh_pages` | [`resources`] | resources, limits, cancel and kill; a fresh instance sees none of the last one's writes |
//! | `ids` | here | task and node ids |
//! | `job_output`, `job_forever`, `job_env` | [`jobs`] | output of a job's driver and tasks, a job that runs until stopped, what a job's driver, tasks and actors see of its variables, directories and GPUs |
//! | `chaos` | [`chaos`] | the chaos suite's workload: tasks, an actor counter and an object with known results, in rounds |
//! | `cluster_on`, `cluster_actor_on`, `cluster_many_refs` | [`failover`] | tasks bound to a node that stalls or dies, an actor made on a node just killed, a result of many refs from another node |
//! | `cluster_fate`, `cluster_drain` | [`fate`] | work whose owner node dies (its tasks, actors, a detached actor); a node drained while it runs another's tasks |
//! | `deployed` | [`deployed`] | functions and an actor of other deployed components (`nested`, `counter`), by qualified name |

// The scenarios pass `&ObjectRef`s on purpose (Ray's `f.remote(&x)` style).
#![allow(clippy::needless_borrows_for_generic_args)]

mod actors;
mod causal;
mod chaos;
mod cluster;
mod cluster_reduce;
mod deployed;
mod failover;
mod failures;
mod fate;
mod jobs;
mod named;
mod objects;
mod refs;
mod resources;
mod spread;
mod tasks;
mod zero_copy;

/// Large zeroed allocations get the host's zero pages (`zeroed` checks
/// them; every other scenario runs on it too).
#[global_allocator]
static ALLOC: wray::ZeroPages = wray::ZeroPages;

/// `args[i]` as a number, or `default`.
fn number(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// Runs scenario `args[0]`.
#[wray::main]
fn main(args: Vec<String>) -> Result<(), String> {
    let scenario = args.first().map(String::as_str).unwrap_or("");
    let result = match scenario {
        "put_get" => objects::put_get(),
        "cluster_bytes" => cluster::cluster_bytes(number(&args, 1, 256)),
        "cluster_spread" => {
            cluster::cluster_spread(number(&args, 1, 8) as u64, number(&args, 2, 1000) as u64)
        }
        "cluster_actors" => cluster::cluster_actors(),
        "cluster_actor_lost" => cluster::cluster_actor_lost(),
        "cluster_actor_restart" => cluster::cluster_actor_restart(),
        "cluster_handle_follows_restart" => cluster::cluster_handle_follows_restart(),
        "cluster_actor_idle_restart" => {
            cluster::cluster_actor_idle_restart(number(&args, 1, 15) as u64)
        }
        "cluster_cancel" => cluster::cluster_cancel(),
        "cluster_left_behind" => cluster::cluster_left_behind(number(&args, 1, 60_000) as u64),
        "cluster_borrowed_actor" => cluster::cluster_borrowed_actor(number(&args, 1, 30) as u64),
        "cluster_nested_refs" => cluster::cluster_nested_refs(),
        "cluster_causal" => {
            causal::cluster_causal(number(&args, 1, 40) as u64, number(&args, 2, 200) as u64)
        }
        "cluster_strategies" => spread::cluster_strategies(args.get(1).map_or("", String::as_str)),
        "cluster_on" => failover::cluster_on(
            args.get(1).map_or("", String::as_str),
            number(&args, 2, 4) as u64,
            number(&args, 3, 1000) as u64,
            args.get(4).is_some_and(|a| a == "soft"),
        ),
        "cluster_actor_on" => failover::cluster_actor_on(args.get(1).map_or("", String::as_str)),
        "cluster_many_refs" => failover::cluster_many_refs(number(&args, 1, 20_000) as u64),
        "cluster_burst" => {
            spread::cluster_burst(number(&args, 1, 12) as u64, number(&args, 2, 500) as u64)
        }
        "cluster_fate" => fate::cluster_fate(
            args.get(1).map_or("", String::as_str),
            number(&args, 2, 16) as u64,
            number(&args, 3, 30_000) as u64,
        ),
        "cluster_drain" => fate::cluster_drain(
            args.get(1).map_or("", String::as_str),
            number(&args, 2, 8) as u64,
            number(&args, 3, 2_000) as u64,
            number(&args, 4, 0) as u64,
        ),
        "cluster_nested" => {
            spread::cluster_nested(number(&args, 1, 3) as u64, number(&args, 2, 20) as u64)
        }
        "cluster_once" => {
            spread::cluster_once(number(&args, 1, 200) as u64, number(&args, 2, 20) as u64)
        }
        "cluster_tree_reduce" => cluster_reduce::cluster_tree_reduce(
            number(&args, 1, 16) as u64,
            number(&args, 2, 0) as u64,
            number(&args, 3, 1000) as u64,
        ),
        "chaos" => chaos::chaos(
            number(&args, 1, 30) as u64,
            number(&args, 2, 4) as u64,
            number(&args, 3, 200) as u64,
            number(&args, 4, 8),
        ),
        "cluster_wordcount" => cluster_reduce::cluster_wordcount(
            number(&args, 1, 8) as u64,
            number(&args, 2, 20) as u64,
            number(&args, 3, 0) as u64,
        ),
        "wait" => objects::wait(),
        "num_returns" => tasks::num_returns(),
        "chain" => tasks::chain(),
        "nested" => tasks::nested(),
        "actors" => actors::actors(),
        "actor_lifetime" => actors::actor_lifetime(),
        "current_actor" => actors::current_actor(),
        "named" => named::named(),
        "named_make" => named::named_make(
            args.get(1).map_or("keeper", String::as_str),
            number(&args, 2, 0) as i64,
        ),
        "named_use" => named::named_use(args.get(1).map_or("keeper", String::as_str)),
        "named_kill" => named::named_kill(args.get(1).map_or("keeper", String::as_str)),
        "errors" => failures::errors(),
        "trap" => failures::trap(),
        "panic" => failures::panic(),
        "oom" => failures::oom_scenario(),
        "spin" => failures::spin_scenario(),
        "cluster_limits" => failures::cluster_limits(),
        "actor_panic" => failures::actor_panic(),
        "ids" => ids(),
        "deployed" => deployed::deployed(),
        "languages" => deployed::languages(),
        "gpu_packing" => resources::gpu_packing(),
        "infeasible" => resources::infeasible(),
        "blocked" => resources::blocked(),
        "limits" => resources::limits(),
        "fuel" => resources::fuel(),
        "cancel" => resources::cancel(),
        "reuse" => resources::reuse(),
        "fresh_pages" => resources::fresh_pages(),
        "refs" => refs::refs(),
        "spill" => refs::spill(),
        "zero_copy" => zero_copy::zero_copy(),
        "window_leak" => zero_copy::window_leak(),
        "hold_mapped" => zero_copy::hold_mapped(),
        "zeroed" => zero_copy::zeroed(),
        "job_output" => jobs::job_output(&args),
        "job_forever" => jobs::job_forever(),
        "job_env" => jobs::job_env(&args),
        other => return Err(format!("unknown scenario {other}")),
    };
    result.map_err(|e| e.to_string())
}

/// `ids`: the running task's and node's ids.
fn ids() -> wray::Result<()> {
    println!("task {}", wray::task_id());
    println!("node {}", wray::node_id());
    Ok(())
}

wray::export! {
    main: main,
    init: resources::on_init,
    reinit: resources::on_reinit,
    functions: [
        objects::sleep_ms,
        objects::echo_wide,
        tasks::split,
        tasks::inc,
        tasks::sum_refs,
        tasks::sub_experiment,
        actors::make_counter,
        tasks::run_experiment,
        tasks::fib,
        actors::sleep_then,
        cluster::digest_on_accelerator,
        cluster::slow_on_accelerator,
        cluster::sum_on_accelerator,
        cluster::deep_sum_on_accelerator,
        cluster::leave_behind,
        cluster::add_from_relay,
        cluster::tally_from_relay,
        cluster::watch_from_relay,
        cluster_reduce::reduce_leaf,
        cluster_reduce::reduce_add,
        cluster_reduce::count_chunk,
        cluster_reduce::merge_counts,
        actors::bump,
        actors::add_back,
        actors::actor_of_task,
        named::use_named,
        failures::fail,
        failures::trap_now,
        failures::pass_on,
        failures::wrap,
        failures::forge_cause,
        failures::panic_now,
        failures::oom,
        failures::spin,
        refs::make_refs,
        refs::big,
        zero_copy::mapped_checksum,
        zero_copy::fresh_pages_are_zero,
        zero_copy::zeroed_allocations,
        resources::half_gpu,
        resources::four_gpus,
        resources::accelerated,
        resources::cpu_ids,
        resources::gpu_parent,
        resources::gpu_after,
        resources::small_memory,
        resources::short_time,
        resources::waits_long,
        resources::profiled,
        resources::reused,
        resources::fresh,
        resources::scatter_writes,
        resources::reused_put,
        jobs::shout,
        jobs::task_env,
        spread::busy,
        causal::push_from_relay,
        spread::once,
        spread::leaf,
        spread::fan,
        chaos::chaos_square,
        chaos::chaos_digest,
        failover::many_refs,
        fate::nap,
        fate::drained,
    ],
    actors: [
        actors::Counter,
        chaos::ChaosCounter,
        actors::Log,
        actors::Napper,
        actors::Mirror,
        cluster::Tally,
        cluster::Keeper,
        failures::Fragile,
        resources::GpuHolder,
        jobs::EnvReader,
        spread::Ledger,
        fate::Runs,
    ],
}
