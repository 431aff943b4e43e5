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

use crate::scheduler::task_table::{TaskRecord, TaskTable};

/// The trace of every task in `registry` (see the module docs).
pub fn chrome_trace(registry: &TaskTable, node_id: &str) -> Value {
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
