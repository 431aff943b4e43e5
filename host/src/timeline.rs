//! The node's timeline as Chrome trace JSON (`wray timeline`, Ray's `ray
//! timeline`), readable by chrome://tracing and Perfetto.
//!
//! Format: the Trace Event Format's JSON object form
//! (<https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU>):
//! `{"traceEvents": [..], "displayTimeUnit": "ms"}`, with one complete event
//! (`"ph": "X"`, `ts` and `dur` in microseconds since the node started) per
//! phase of each task, on one row per worker thread:
//! - `wait for args: f` from submission until its arguments exist;
//! - `queued: f` until it got its resources and started;
//! - `f` (category `task`) while it ran, with its `get`s (category `get`)
//!   and `profile` spans (category `profile`) nested inside.
//!
//! Waiting phases go on a row of their own (`scheduler`), since no worker
//! holds the task yet. Thread rows are named with metadata events.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::registry::{Registry, TaskRecord};

/// The trace of every task in `registry` (see the module docs).
pub fn chrome_trace(registry: &Registry, node_id: &str) -> Value {
    let records = registry.tasks();
    let mut rows: BTreeMap<String, u64> = BTreeMap::new();
    rows.insert("scheduler".to_string(), 0);
    let mut events = Vec::new();
    let now = std::time::Instant::now();
    for r in &records {
        let worker = r.worker.as_deref().unwrap_or("scheduler").to_string();
        let next = rows.len() as u64;
        let tid = *rows.entry(worker).or_insert(next);
        let args = task_args(r);
        let mut phase = |name: String, cat: &str, tid: u64, from, to| {
            if let (Some(from), Some(to)) = (from, to) {
                events.push(json!({
                    "name": name, "cat": cat, "ph": "X", "pid": 1, "tid": tid,
                    "ts": registry.micros(from),
                    "dur": registry.micros(to) - registry.micros(from),
                    "args": args,
                }));
            }
        };
        let end = r.ended.or(Some(now));
        phase(
            format!("wait for args: {}", r.function),
            "scheduling",
            0,
            Some(r.submitted),
            r.ready.or(r.started).or(end),
        );
        phase(
            format!("queued: {}", r.function),
            "scheduling",
            0,
            r.ready,
            r.started.or(end),
        );
        phase(r.function.clone(), "task", tid, r.started, end);
        for s in &r.spans {
            let cat = if s.name == "get" { "get" } else { "profile" };
            phase(s.name.clone(), cat, tid, Some(s.start), s.end.or(end));
        }
    }
    events.push(json!({
        "name": "process_name", "ph": "M", "pid": 1,
        "args": {"name": format!("wray {node_id}")},
    }));
    for (name, tid) in &rows {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
            "args": {"name": name},
        }));
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}

fn task_args(r: &TaskRecord) -> Value {
    json!({
        "task_id": r.id.to_string(),
        "status": r.status,
        "resources": r.request.to_string(),
        "error": r.error.as_ref().map(|e| e.message.clone()),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{mpsc, Arc, Barrier};
    use std::time::Duration;

    use wray_control_plane::TaskId;

    use super::*;
    use crate::worker::pool::WorkerPool;

    #[test]
    fn tasks_run_on_two_workers_are_drawn_on_two_rows() {
        let registry = Arc::new(Registry::default());
        let pool = WorkerPool::new(2, 0);
        // Two tasks that run at the same time, so on two workers.
        let barrier = Arc::new(Barrier::new(2));
        let (tx, rx) = mpsc::channel();
        for lo in 1..=2 {
            let (registry, barrier, tx) = (registry.clone(), barrier.clone(), tx.clone());
            pool.spawn(move || {
                barrier.wait();
                let entry = registry.driver_started(TaskId::from_parts(7, lo));
                registry.ended(&entry, None);
                tx.send(()).unwrap();
            });
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        let trace = chrome_trace(&registry, "n1");
        let rows: Vec<&str> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .filter(|name| *name != "scheduler")
            .collect();
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(
            rows.iter().all(|r| r.starts_with("wray-worker-")),
            "{rows:?}"
        );
        let tids: std::collections::BTreeSet<_> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "task")
            .map(|e| e["tid"].as_u64().unwrap())
            .collect();
        assert_eq!(tids.len(), 2, "each task on its worker's row");
    }
}
