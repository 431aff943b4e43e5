//! The node's timeline as Chrome trace JSON (`wray timeline`, Ray's `ray
//! timeline`), readable by chrome://tracing and Perfetto.
//!
//! Format: the Trace Event Format's JSON object form
//! (<https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU>):
//! `{"traceEvents": [..], "displayTimeUnit": "ms"}`, with one complete event
//! (`"ph": "X"`, `ts` in microseconds from an origin, the Unix epoch for a
//! node's own trace, and `dur` in microseconds) per phase of each task, on
//! one row per worker thread:
//! - `wait for args: f` from submission until its arguments exist;
//! - `queued: f` until it got its resources and started;
//! - `f` (category `task`) while it ran, with its `get`s (category `get`)
//!   and `profile` spans (category `profile`) nested inside.
//!
//! Waiting phases go on a row of their own (`scheduler`), since no worker
//! holds the task yet. Thread rows are named with metadata events. A task
//! this node sent to another is that node's to draw: it is left out.
//!
//! The trace is written event by event ([`write_chrome_trace`]), so that
//! the trace of 100,000 tasks never exists as one JSON value in memory.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::scheduler::task_table::{TaskRow, TaskStatus, TaskTable};

/// The trace of the last `limit` tasks submitted in `registry` (see the
/// module docs), in microseconds since the Unix epoch, as a JSON value.
pub fn chrome_trace(registry: &TaskTable, node_id: &str, limit: usize) -> Value {
    let now = registry.nanos(std::time::Instant::now());
    let mut rows = registry.tasks();
    rows.retain(|r| r.node.is_none());
    let rows = &rows[rows.len().saturating_sub(limit)..];
    let origin_us = registry.epoch_unix_ns as f64 / 1e3;
    let mut text = Vec::new();
    // Writing to memory fails only on a serializer bug.
    if write_chrome_trace(rows, node_id, now, origin_us, &mut text).is_err() {
        return Value::Null;
    }
    serde_json::from_slice(&text).unwrap_or(Value::Null)
}

/// A complete event (`"ph": "X"`).
#[derive(Serialize)]
struct Complete<'a> {
    name: &'a str,
    cat: &'a str,
    ph: &'static str,
    pid: u32,
    tid: u64,
    /// Microseconds since the origin.
    ts: f64,
    /// Microseconds.
    dur: f64,
    args: &'a Args<'a>,
}

/// What every event of a task carries.
#[derive(Serialize)]
struct Args<'a> {
    task_id: &'a str,
    status: TaskStatus,
    resources: &'a str,
    error: Option<&'a str>,
}

/// Writes the trace of `rows` (see the module docs; a row of a task sent
/// to another node is left out) to `out`; `now_ns` (nanoseconds since the
/// node started, the rows' clock) ends the phases of tasks that have not
/// ended; `origin_us` is added to every `ts` (the node's start in
/// microseconds since the Unix epoch, or 0 to count from the node's
/// start). Returns how many events it wrote.
///
/// # Errors
/// Writing to `out` failed.
pub fn write_chrome_trace(
    rows: &[TaskRow],
    node_id: &str,
    now_ns: u64,
    origin_us: f64,
    out: impl Write,
) -> io::Result<usize> {
    let mut out = io::BufWriter::new(out);
    let mut rows_by_worker: BTreeMap<&str, u64> = BTreeMap::new();
    rows_by_worker.insert("scheduler", 0);
    let micros = |ns: u64| ns as f64 / 1e3;
    out.write_all(b"{\"traceEvents\":[")?;
    let mut events = 0usize;
    for r in rows.iter().filter(|r| r.node.is_none()) {
        let worker = r.worker.as_deref().unwrap_or("scheduler");
        let next = rows_by_worker.len() as u64;
        let tid = *rows_by_worker.entry(worker).or_insert(next);
        let args = Args {
            task_id: &r.task_id,
            status: r.state,
            resources: &r.resources,
            error: r.error.as_deref(),
        };
        let mut phase = |out: &mut io::BufWriter<_>,
                         name: &str,
                         cat: &str,
                         tid: u64,
                         from: Option<u64>,
                         to: Option<u64>|
         -> io::Result<()> {
            let (Some(from), Some(to)) = (from, to) else {
                return Ok(());
            };
            if events > 0 {
                out.write_all(b",")?;
            }
            events += 1;
            let event = Complete {
                name,
                cat,
                ph: "X",
                pid: 1,
                tid,
                ts: origin_us + micros(from),
                dur: micros(to.saturating_sub(from)),
                args: &args,
            };
            serde_json::to_writer(&mut *out, &event).map_err(io::Error::from)
        };
        let end = r.ended_ns.or(Some(now_ns));
        let waited = format!("wait for args: {}", r.function);
        let ready = r.ready_ns.or(r.started_ns).or(end);
        phase(
            &mut out,
            &waited,
            "scheduling",
            0,
            Some(r.submitted_ns),
            ready,
        )?;
        let queued = format!("queued: {}", r.function);
        phase(
            &mut out,
            &queued,
            "scheduling",
            0,
            r.ready_ns,
            r.started_ns.or(end),
        )?;
        phase(&mut out, &r.function, "task", tid, r.started_ns, end)?;
        for s in &r.spans {
            let cat = if s.name == "get" { "get" } else { "profile" };
            phase(
                &mut out,
                &s.name,
                cat,
                tid,
                Some(s.start_ns),
                s.end_ns.or(end),
            )?;
        }
    }
    let mut meta = vec![serde_json::json!({
        "name": "process_name", "ph": "M", "pid": 1,
        "args": {"name": format!("wray {node_id}")},
    })];
    for (name, tid) in &rows_by_worker {
        meta.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
            "args": {"name": name},
        }));
    }
    for m in meta {
        if events > 0 {
            out.write_all(b",")?;
        }
        events += 1;
        serde_json::to_writer(&mut out, &m).map_err(io::Error::from)?;
    }
    out.write_all(b"],\"displayTimeUnit\":\"ms\"}")?;
    out.flush()?;
    Ok(events)
}

#[cfg(test)]
mod tests {
    use std::sync::{mpsc, Arc, Barrier};
    use std::time::Duration;

    use wray_control_plane::TaskId;

    use super::*;
    use crate::worker_pool::WorkerPool;

    #[test]
    fn tasks_run_on_two_workers_are_drawn_on_two_rows() {
        let registry = Arc::new(TaskTable::default());
        let pool = WorkerPool::new(2, 0);
        // Two tasks that run at the same time, so on two workers.
        let barrier = Arc::new(Barrier::new(2));
        let (tx, rx) = mpsc::channel();
        for lo in 1..=2 {
            let (registry, barrier, tx) = (registry.clone(), barrier.clone(), tx.clone());
            pool.spawn(move |_| {
                barrier.wait();
                let entry = registry.driver_started(TaskId::from_parts(7, lo));
                registry.ended(&entry, None);
                tx.send(()).unwrap();
            });
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        let trace = chrome_trace(&registry, "n1", 100);
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
