//! `GET /metrics`: Prometheus text exposition format 0.0.4.
//!
//! Requests by route pattern and status, request latency as a histogram,
//! requests being served, kept sessions; from the node: instantiation
//! times as a histogram, failed instantiations, tasks by state, object
//! store bytes, and what the node holds against its bounds (deployed
//! components, compiles, guest memory, the store's inline bytes:
//! [`write_bounds`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use parking_lot::Mutex;
use wray_host::TaskStatus;
use wray_host::{InstantiationHistogram, JobStatus};

/// Upper bounds of the request latency buckets, in seconds (Prometheus'
/// default buckets, from 100 µs).
const BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0, 10.0,
];

/// The server's own counters.
#[derive(Default)]
pub(crate) struct Metrics {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// (route pattern, method, status) -> requests.
    requests: BTreeMap<(&'static str, &'static str, u16), u64>,
    /// Requests at or under each bucket's bound, then all of them.
    latency_buckets: [u64; BUCKETS.len()],
    latency_count: u64,
    latency_sum: f64,
}

impl Metrics {
    /// Counts one request of `route` (pattern and method) answered with
    /// `status` after `elapsed`.
    pub(crate) fn record(
        &self,
        route: (&'static str, &'static str),
        status: u16,
        elapsed: Duration,
    ) {
        let secs = elapsed.as_secs_f64();
        let mut m = self.inner.lock();
        *m.requests.entry((route.0, route.1, status)).or_default() += 1;
        for (bound, n) in BUCKETS.iter().zip(m.latency_buckets.iter_mut()) {
            if secs <= *bound {
                *n += 1;
            }
        }
        m.latency_count += 1;
        m.latency_sum += secs;
    }

    /// The exposition text: these counters, the node's `instantiation`
    /// times, then its `task_counts` (by state), `job_counts` (by status),
    /// `inflight`, `kept` and `store_bytes`.
    pub(crate) fn render(
        &self,
        instantiation: &InstantiationHistogram,
        task_counts: &BTreeMap<TaskStatus, u64>,
        job_counts: &[(JobStatus, usize)],
        inflight: usize,
        kept: usize,
        store_bytes: u64,
    ) -> String {
        let mut s = String::new();
        let m = self.inner.lock();
        let _ = writeln!(
            s,
            "# HELP wray_http_requests_total HTTP requests answered, by route and status."
        );
        let _ = writeln!(s, "# TYPE wray_http_requests_total counter");
        for ((route, method, status), n) in &m.requests {
            let _ = writeln!(
                s,
                "wray_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {n}"
            );
        }
        write_histogram(
            &mut s,
            "wray_http_request_duration_seconds",
            "Time to answer a request.",
            BUCKETS
                .iter()
                .copied()
                .zip(m.latency_buckets.iter().copied()),
            m.latency_count,
            m.latency_sum,
        );
        drop(m);
        write_histogram(
            &mut s,
            "wray_instantiation_seconds",
            "Time to make an instance (store and instantiate, not the call); failed ones are in wray_instantiation_failures_total.",
            instantiation
                .bounds_ns
                .iter()
                .map(|&ns| ns as f64 / 1e9) // at most 1e8: exact in f64
                .zip(instantiation.cumulative.iter().copied()),
            instantiation.count,
            instantiation.sum_ns as f64 / 1e9,
        );
        let _ = writeln!(
            s,
            "# HELP wray_instantiation_failures_total Instantiations that failed (no free instance slot, a trap or limit in the start, a cancel)."
        );
        let _ = writeln!(s, "# TYPE wray_instantiation_failures_total counter");
        let _ = writeln!(
            s,
            "wray_instantiation_failures_total {}",
            instantiation.failed
        );
        let _ = writeln!(
            s,
            "# HELP wray_http_requests_in_flight Requests being served."
        );
        let _ = writeln!(s, "# TYPE wray_http_requests_in_flight gauge");
        let _ = writeln!(s, "wray_http_requests_in_flight {inflight}");
        let _ = writeln!(s, "# HELP wray_http_kept_sessions Async invocations and actors whose jobs the server keeps.");
        let _ = writeln!(s, "# TYPE wray_http_kept_sessions gauge");
        let _ = writeln!(s, "wray_http_kept_sessions {kept}");
        let _ = writeln!(
            s,
            "# HELP wray_tasks Tasks by state (finished ones: since the node started)."
        );
        let _ = writeln!(s, "# TYPE wray_tasks gauge");
        for (state, n) in task_counts {
            let _ = writeln!(s, "wray_tasks{{state=\"{}\"}} {n}", state.as_str());
        }
        let _ = writeln!(s, "# HELP wray_jobs Jobs the node remembers, by status.");
        let _ = writeln!(s, "# TYPE wray_jobs gauge");
        for (status, n) in job_counts {
            let _ = writeln!(s, "wray_jobs{{status=\"{}\"}} {n}", status.as_str());
        }
        let _ = writeln!(
            s,
            "# HELP wray_object_store_bytes Bytes of objects in the node's store."
        );
        let _ = writeln!(s, "# TYPE wray_object_store_bytes gauge");
        let _ = writeln!(s, "wray_object_store_bytes {store_bytes}");
        s
    }
}

/// What the node holds against its bounds, for [`write_bounds`].
pub(crate) struct Bounds {
    /// Deployed components: names, versions, bytes, compiled code.
    pub components: wray_host::ComponentUsage,
    /// The compile pool's counters.
    pub compiles: wray_host::CompileStats,
    /// Guest linear memory held, and the node's budget (bytes).
    pub guest_memory: (u64, u64),
    /// Bytes of the inline budget in use (small values and every
    /// object's metadata).
    pub inline_bytes: usize,
    /// Objects spilled to files now.
    pub spilled: usize,
    /// Bytes of the store's shared-memory file holding pages, and bytes of
    /// freed pages given back to the kernel since the node started.
    pub arena: (usize, u64),
    /// Live actors whose instance is on the node, and stubs of actors
    /// living on other nodes.
    pub actors: (usize, usize),
}

/// Writes the gauges and counters of the node's bounds: deployed
/// components (`wray_components`, `wray_component_versions`,
/// `wray_component_bytes`, `wray_compiled_code_bytes`, each with its
/// `_limit`), compiles (`wray_compiles_running`, `wray_compiles_waiting`,
/// `wray_compiles_total`, `wray_compiles_timed_out_total`,
/// `wray_components_refused_before_compile_total`), guest memory
/// (`wray_guest_memory_bytes` and its `_limit`) and the store's inline
/// bytes (`wray_object_store_inline_bytes`) and spilled objects
/// (`wray_object_store_spilled_objects`), the pages of its shared-memory
/// file (`wray_object_store_resident_bytes`,
/// `wray_object_store_punched_bytes_total`), actors (`wray_actors_live`,
/// `wray_actor_stubs`).
pub(crate) fn write_bounds(s: &mut String, b: &Bounds) {
    let c = &b.components;
    let gauges: [(&str, &str, u64); 17] = [
        (
            "wray_components",
            "Component names deployed.",
            c.names as u64,
        ),
        (
            "wray_components_limit",
            "The most names (--max-components).",
            c.max_names as u64,
        ),
        (
            "wray_component_versions",
            "Component versions loaded (retired ones still in use included).",
            c.versions as u64,
        ),
        (
            "wray_component_versions_per_name_limit",
            "Versions kept per name (--max-versions).",
            c.max_versions as u64,
        ),
        (
            "wray_component_bytes",
            "Bytes of component files and function-table rows held.",
            c.bytes,
        ),
        (
            "wray_component_bytes_limit",
            "The most (--max-component-mib).",
            c.max_bytes,
        ),
        (
            "wray_compiled_code_bytes",
            "Bytes of compiled code held.",
            c.compiled_bytes,
        ),
        (
            "wray_compiled_code_bytes_limit",
            "The most (--max-compiled-mib).",
            c.max_compiled_bytes,
        ),
        (
            "wray_compiles_running",
            "Compiles running (given-up ones until Cranelift returns included).",
            b.compiles.running as u64,
        ),
        (
            "wray_compiles_waiting",
            "Deploys waiting for a compile slot.",
            b.compiles.waiting as u64,
        ),
        (
            "wray_guest_memory_bytes",
            "Bytes of linear memory the node's instances hold.",
            b.guest_memory.0,
        ),
        (
            "wray_guest_memory_bytes_limit",
            "The node's budget (--guest-memory).",
            b.guest_memory.1,
        ),
        (
            "wray_object_store_inline_bytes",
            "Bytes of the store's inline budget in use: small values and every object's metadata.",
            b.inline_bytes as u64,
        ),
        (
            "wray_object_store_spilled_objects",
            "Objects of the store spilled to files now.",
            b.spilled as u64,
        ),
        (
            "wray_object_store_resident_bytes",
            "Bytes of the store's shared-memory file holding pages: objects, and freed pages kept for reuse (--object-store-keep-freed).",
            b.arena.0 as u64,
        ),
        (
            "wray_actors_live",
            "Live actors whose instance is on this node.",
            b.actors.0 as u64,
        ),
        (
            "wray_actor_stubs",
            "Live actors on other nodes that this node sends calls to.",
            b.actors.1 as u64,
        ),
    ];
    for (name, help, value) in gauges {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} gauge");
        let _ = writeln!(s, "{name} {value}");
    }
    let counters: [(&str, &str, u64); 6] = [
        (
            "wray_compiles_total",
            "Compiles started (from the disk cache included).",
            b.compiles.started,
        ),
        (
            "wray_compiles_timed_out_total",
            "Compiles given up on past --compile-timeout.",
            b.compiles.timed_out,
        ),
        (
            "wray_compiles_killed_total",
            "Compile processes killed at --compile-timeout.",
            b.compiles.killed,
        ),
        (
            "wray_compile_cache_hits_total",
            "Compiles served from the disk cache of compiled components.",
            b.compiles.cache_hits,
        ),
        (
            "wray_components_refused_before_compile_total",
            "Components refused by the checks before compiling.",
            b.compiles.refused_before_compile,
        ),
        (
            "wray_object_store_punched_bytes_total",
            "Bytes of freed pages the store's shared-memory file gave back to the kernel.",
            b.arena.1,
        ),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} counter");
        let _ = writeln!(s, "{name} {value}");
    }
}

/// Writes histogram `name` with `help`: one `_bucket{le=..}` line per
/// (upper bound in seconds, observations at or under it, cumulative) of
/// `buckets`, then `+Inf` (= `count`), `_sum` (seconds) and `_count`.
fn write_histogram(
    s: &mut String,
    name: &str,
    help: &str,
    buckets: impl Iterator<Item = (f64, u64)>,
    count: u64,
    sum_seconds: f64,
) {
    let _ = writeln!(s, "# HELP {name} {help}");
    let _ = writeln!(s, "# TYPE {name} histogram");
    for (bound, n) in buckets {
        let _ = writeln!(s, "{name}_bucket{{le=\"{bound}\"}} {n}");
    }
    let _ = writeln!(s, "{name}_bucket{{le=\"+Inf\"}} {count}");
    let _ = writeln!(s, "{name}_sum {sum_seconds}");
    let _ = writeln!(s, "{name}_count {count}");
}

/// Appends the node's cluster counters: tasks run again because the node
/// running them died or could not be reached, tasks moved to a node with
/// room (spillback), tasks cancelled because their owner died, actors
/// restarted.
pub(crate) fn write_cluster(text: &mut String, stats: &wray_host::ClusterStats) {
    use std::fmt::Write;
    let _ = writeln!(
        text,
        "# HELP wray_cluster_tasks_retried_total Tasks run again because the node running them \
         died, broke their connection or stalled.\n# TYPE wray_cluster_tasks_retried_total counter\n\
         wray_cluster_tasks_retried_total {}",
        stats.retried
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_tasks_resent_total Tasks and actor constructors placed again because \
         the node they were sent to could not be reached before it took them (not retries).\n\
         # TYPE wray_cluster_tasks_resent_total counter\nwray_cluster_tasks_resent_total {}",
        stats.resent
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_tasks_preempted_total Tasks run again because the draining node \
         running them stopped them at its grace (not retries).\n\
         # TYPE wray_cluster_tasks_preempted_total counter\nwray_cluster_tasks_preempted_total {}",
        stats.preempted
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_tasks_moved_total Tasks moved to a node with room while they waited \
         for resources (spillback).\n# TYPE wray_cluster_tasks_moved_total counter\n\
         wray_cluster_tasks_moved_total {}",
        stats.moved
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_tasks_forwarded_total Tasks (functions, actor constructors and calls) \
         this node owns and sent to another node to run, each attempt counted.\n\
         # TYPE wray_cluster_tasks_forwarded_total counter\nwray_cluster_tasks_forwarded_total {}",
        stats.forwarded
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_tasks_taken_total Tasks other nodes (their owners) sent here that \
         ran here, their results answered.\n# TYPE wray_cluster_tasks_taken_total counter\n\
         wray_cluster_tasks_taken_total {}",
        stats.taken
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_tasks_cancelled_total Tasks other nodes sent here, cancelled \
         (queued or running) because the node that sent them, their owner, died (fate \
         sharing).\n# TYPE wray_cluster_tasks_cancelled_total counter\n\
         wray_cluster_tasks_cancelled_total{{reason=\"owner_died\"}} {}",
        stats.cancelled_owner_died
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_actors_restarted_total Actors this node owns created again on another \
         node after theirs died (max_restarts).\n# TYPE wray_cluster_actors_restarted_total \
         counter\nwray_cluster_actors_restarted_total {}",
        stats.actors_restarted
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_object_bytes_sent_total Bytes of object values sent to other nodes \
         (inline in messages and served to their pulls).\n# TYPE \
         wray_cluster_object_bytes_sent_total counter\nwray_cluster_object_bytes_sent_total {}",
        stats.object_bytes_sent
    );
    let _ = writeln!(
        text,
        "# HELP wray_cluster_object_bytes_received_total Bytes of object values received from \
         other nodes.\n# TYPE wray_cluster_object_bytes_received_total counter\n\
         wray_cluster_object_bytes_received_total {}",
        stats.object_bytes_received
    );
    let _ = writeln!(
        text,
        "# HELP wray_peer_unknown_methods_total Calls of a peer method this node does not know \
         (a newer node's, or a hostile peer's), answered unknown_method \
         (docs/peer-protocol.md).\n# TYPE wray_peer_unknown_methods_total counter\n\
         wray_peer_unknown_methods_total {}",
        stats.peer_unknown_methods
    );
    let _ = writeln!(
        text,
        "# HELP wray_peer_connections_refused_total Connections the node-to-node channel refused, \
         by reason (docs/peer-protocol.md).\n# TYPE wray_peer_connections_refused_total counter"
    );
    for (reason, n) in stats.peer_refused.by_reason() {
        let _ = writeln!(
            text,
            "wray_peer_connections_refused_total{{reason=\"{}\"}} {n}",
            reason.as_str()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instantiation_histogram_renders_cumulative_buckets_in_seconds() {
        let bounds: &'static [u64] = &[5_000, 1_000_000, 100_000_000];
        let h = InstantiationHistogram {
            bounds_ns: bounds,
            cumulative: vec![1, 3, 3],
            count: 4,
            sum_ns: 1_500_000_000,
            failed: 2,
        };
        let text =
            Metrics::default().render(&h, &BTreeMap::new(), &[(JobStatus::Running, 2)], 0, 0, 0);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("wray_instantiation"))
            .collect();
        assert_eq!(
            lines,
            [
                "wray_instantiation_seconds_bucket{le=\"0.000005\"} 1",
                "wray_instantiation_seconds_bucket{le=\"0.001\"} 3",
                "wray_instantiation_seconds_bucket{le=\"0.1\"} 3",
                "wray_instantiation_seconds_bucket{le=\"+Inf\"} 4",
                "wray_instantiation_seconds_sum 1.5",
                "wray_instantiation_seconds_count 4",
                "wray_instantiation_failures_total 2",
            ]
        );
        assert!(text.contains("# TYPE wray_instantiation_seconds histogram"));
        assert!(
            text.contains("\nwray_jobs{status=\"RUNNING\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("wray_http_request_duration_seconds_bucket{le=\"+Inf\"} 0"));
    }

    #[test]
    fn the_peer_refusals_render_one_counter_per_reason() {
        let mut text = String::new();
        write_cluster(&mut text, &wray_host::ClusterStats::default());
        for reason in ["no_hello", "unauthenticated", "version", "source_budget"] {
            let line = format!("\nwray_peer_connections_refused_total{{reason=\"{reason}\"}} 0\n");
            assert!(text.contains(&line), "{text}");
        }
        assert!(text.contains("# TYPE wray_peer_connections_refused_total counter"));
    }

    #[test]
    fn the_bounds_render_as_gauges_and_counters() {
        let mut text = String::new();
        write_bounds(
            &mut text,
            &Bounds {
                components: wray_host::ComponentUsage {
                    names: 3,
                    compiled_bytes: 5 << 20,
                    max_compiled_bytes: 4 << 30,
                    ..Default::default()
                },
                compiles: wray_host::CompileStats {
                    started: 7,
                    ..Default::default()
                },
                guest_memory: (1 << 20, 1 << 30),
                inline_bytes: 344,
                spilled: 5,
                arena: (6 << 20, 512 << 20),
                actors: (2, 1),
            },
        );
        for line in [
            "wray_components 3",
            "wray_compiled_code_bytes 5242880",
            "wray_compiled_code_bytes_limit 4294967296",
            "wray_compiles_total 7",
            "wray_guest_memory_bytes 1048576",
            "wray_object_store_inline_bytes 344",
            "wray_object_store_spilled_objects 5",
            "wray_object_store_resident_bytes 6291456",
            "wray_object_store_punched_bytes_total 536870912",
            "# TYPE wray_object_store_punched_bytes_total counter",
            "wray_actors_live 2",
            "wray_actor_stubs 1",
            "# TYPE wray_compiles_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }
}
