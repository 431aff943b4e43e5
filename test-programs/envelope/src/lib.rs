//! The drivers of `bench/envelope` (see its README): each `main` call runs
//! one dimension of Ray's scalability envelope at one size and prints one
//! JSON line, `{"dimension": .., "n": .., "seconds": .., ..}`, timed with
//! the guest's monotonic clock from the first submission to the last
//! result. A size that fails prints the line with `"error"` and fails the
//! driver. The harness (`bench/envelope/envelope.py`) picks the sizes,
//! bounds time and memory, and reads the node's RSS.
//!
//! | `main(args)` | what |
//! |---|---|
//! | `actors N` | N actors made, each called once ([`cluster::actors`]) |
//! | `running N DEADLINE_MS` | N tasks blocked in `get` at once ([`barrier`]) |
//! | `args N` | one task given N object refs ([`one_node::args`]) |
//! | `returns N` | one task returning N objects ([`one_node::returns`]) |
//! | `get N` | N objects in one `get_all` ([`one_node::get`]) |
//! | `queued N` | N tasks queued behind one object ([`one_node::queued`]) |
//! | `large MIB` | one object of MIB MiB put and read ([`one_node::large`]) |
//! | `broadcast NODES MIB` | one object read on NODES nodes ([`cluster::broadcast`]) |
//! | `pinned NODES K` | K trivial tasks on each of NODES nodes ([`cluster::pinned`]) |
//! | `local K` | K trivial tasks on this node ([`cluster::local`]) |

mod barrier;
mod cluster;
mod one_node;

use std::time::Instant;

use serde_json::{json, Map, Value};

/// The error text of any displayable error.
pub(crate) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Parses argument `i` of `args` (after the dimension's name).
pub(crate) fn arg(args: &[String], i: usize, what: &str) -> Result<u64, String> {
    let s = args
        .get(i)
        .ok_or_else(|| format!("missing argument {i}: {what}"))?;
    s.parse().map_err(|e| format!("{what} `{s}`: {e}"))
}

/// Seconds since `start`.
pub(crate) fn secs(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

/// What one dimension measured: extra fields of its JSON line.
pub(crate) type Fields = Map<String, Value>;

#[wray::main]
fn main(args: Vec<String>) -> Result<(), String> {
    let dimension = args.first().cloned().unwrap_or_default();
    let rest = args.get(1..).unwrap_or_default();
    let n = arg(rest, 0, "N").unwrap_or(0);
    let start = Instant::now();
    let result = match dimension.as_str() {
        "actors" => cluster::actors(rest),
        "running" => barrier::running(rest),
        "args" => one_node::args(rest),
        "returns" => one_node::returns(rest),
        "get" => one_node::get(rest),
        "queued" => one_node::queued(rest),
        "large" => one_node::large(rest),
        "broadcast" => cluster::broadcast(rest),
        "pinned" => cluster::pinned(rest),
        "local" => cluster::local(rest),
        other => Err(format!("unknown dimension `{other}`")),
    };
    let mut line = json!({ "dimension": dimension, "n": n, "seconds": secs(start) });
    let fields = line.as_object_mut().ok_or("a JSON object")?;
    let outcome = match result {
        Ok(extra) => {
            fields.extend(extra);
            Ok(())
        }
        Err(e) => {
            fields.insert("error".into(), Value::String(e.clone()));
            Err(e)
        }
    };
    println!("{line}");
    outcome
}

wray::export! {
    main: main,
    functions: [
        barrier::gate,
        barrier::waiter,
        one_node::sum_refs,
        one_node::returns_100,
        one_node::returns_3000,
        one_node::after,
        one_node::mapped_len,
        cluster::trivial,
        cluster::read_here,
    ],
    actors: [barrier::Arrivals, cluster::Cell],
}
