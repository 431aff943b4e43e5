//! Unit tests of the task table.

use super::rows::MAX_ERRORS;
use super::*;
use crate::bounds::{MAX_FINISHED_SPANS, MAX_FINISHED_TASKS, MAX_TASK_LABELS};
use crate::error::ErrorKind;

/// A task of `function` with `parent`, recorded as submitted (and, with
/// `started`, as running).
fn add(reg: &TaskTable, id: TaskId, parent: Option<TaskId>, function: &str) -> Arc<TaskEntry> {
    let record = TaskRecord::new(id, parent, function.to_string(), Request::one_cpu());
    let entry = TaskEntry::new(record, CancelToken::new(), true);
    reg.table.lock().entries.insert(id, entry.clone());
    entry
}

fn id(n: u64) -> TaskId {
    TaskId::from_parts(7, n)
}

#[test]
fn finished_record_is_compact() {
    let reg = TaskTable::default();
    for n in 0..3 {
        let e = add(&reg, id(n), Some(id(100)), "noop");
        e.started();
        reg.ended(&e, None);
    }
    let f = reg.finished.lock();
    let records: Vec<&FinishedRecord> = f.records.items.iter().collect();
    assert_eq!(records.len(), 3);
    // Its strings are shared by every record: its heap of its own is
    // none, so its cost is its size (and its slot in the ring).
    for r in &records[1..] {
        assert!(Arc::ptr_eq(&r.function, &records[0].function));
        assert!(Arc::ptr_eq(&r.resources, &records[0].resources));
        assert_eq!(r.worker.is_some(), records[0].worker.is_some());
    }
    let size = std::mem::size_of::<FinishedRecord>();
    assert!(size <= 1024, "a finished record takes {size} bytes");
    assert!(std::mem::size_of::<FinishedSpan>() <= 64);
    // A running task's entry and the spec it links to are gone.
    assert!(reg.table.lock().entries.is_empty());
}

#[test]
fn retention_is_bounded_and_totals_exact() {
    let reg = TaskTable::default();
    let n = MAX_FINISHED_TASKS as u64 + 1500;
    for i in 0..n {
        let e = add(&reg, id(i), None, "f");
        e.started();
        e.span_begin("load".to_string());
        let error = (i % 3 == 0).then(|| {
            let kind = if i % 2 == 0 {
                ErrorKind::Cancelled
            } else {
                ErrorKind::Application
            };
            TaskError::new(kind, "f", id(i), format!("error {i}"))
        });
        reg.ended(&e, error.as_ref());
    }
    let kept = reg.tasks();
    assert_eq!(kept.len(), MAX_FINISHED_TASKS);
    // The oldest went first.
    assert_eq!(kept[0].task_id, id(1500).to_string());
    assert_eq!(kept.last().unwrap().task_id, id(n - 1).to_string());
    let counts = reg.counts();
    let failed = (0..n).filter(|i| i % 3 == 0 && i % 2 == 1).count() as u64;
    let cancelled = (0..n).filter(|i| i % 6 == 0).count() as u64;
    assert_eq!(counts[&TaskStatus::Failed], failed);
    assert_eq!(counts[&TaskStatus::Cancelled], cancelled);
    assert_eq!(counts[&TaskStatus::Finished], n - failed - cancelled);
    assert_eq!(reg.errors().len(), MAX_ERRORS);
    let f = reg.finished.lock();
    assert_eq!(f.spans.items.len(), MAX_FINISHED_SPANS);
    assert!(f.interner.strings.len() <= MAX_TASK_LABELS);
    drop(f);
    // The last rows carry their span and, where kept, their error.
    let last = kept.last().unwrap();
    assert_eq!(last.spans.len(), 1);
    assert_eq!(last.spans[0].name, "load");
    let failed_row = kept.iter().rev().find(|r| r.state == TaskStatus::Failed);
    assert!(failed_row
        .unwrap()
        .error
        .as_deref()
        .unwrap()
        .starts_with("error "));
}

#[test]
fn finished_since_gives_each_task_once_and_counts_the_dropped() {
    let reg = TaskTable::default();
    for i in 0..10 {
        let e = add(&reg, id(i), None, "f");
        reg.ended(&e, None);
    }
    let (rows, next) = reg.finished_since(0, 4);
    assert_eq!(next, 4);
    let ids: Vec<String> = rows.into_iter().map(|r| r.task_id).collect();
    assert_eq!(ids, (0..4).map(|i| id(i).to_string()).collect::<Vec<_>>());
    let (rows, next) = reg.finished_since(next, 100);
    assert_eq!((rows.len(), next), (6, 10));
    assert_eq!(reg.finished_since(next, 100), (Vec::new(), 10));
    // Once more than the table keeps have finished, a reader behind
    // skips those dropped.
    for i in 10..(MAX_FINISHED_TASKS as u64 + 20) {
        let e = add(&reg, id(i), None, "f");
        reg.ended(&e, None);
    }
    let (rows, next) = reg.finished_since(10, 5);
    assert_eq!(next, 25);
    assert_eq!(rows[0].task_id, id(20).to_string());
    // A read of several chunks gives them in order, each once.
    let want = 2 * COPY_CHUNK + 7;
    let (rows, next) = reg.finished_since(next, want);
    assert_eq!((rows.len(), next), (want, 25 + want as u64));
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.task_id, id(25 + i as u64).to_string());
    }
}

#[test]
fn a_task_that_ends_while_the_table_is_read_is_listed_once_as_finished() {
    let reg = TaskTable::default();
    let running = add(&reg, id(1), None, "f");
    running.started();
    let done = add(&reg, id(2), None, "f");
    reg.ended(&done, None);
    // As `tasks` may see it: still among the live entries, and finished.
    reg.table.lock().entries.insert(id(2), done.clone());
    let rows = reg.tasks();
    let states: Vec<(String, TaskStatus)> =
        rows.into_iter().map(|r| (r.task_id, r.state)).collect();
    assert_eq!(
        states,
        [
            (id(1).to_string(), TaskStatus::Running),
            (id(2).to_string(), TaskStatus::Finished)
        ]
    );
}

#[test]
fn ending_twice_counts_once() {
    let reg = TaskTable::default();
    let e = add(&reg, id(1), None, "f");
    reg.ended(&e, None);
    let cancelled = TaskError::new(ErrorKind::Cancelled, "f", id(1), "late");
    reg.ended(&e, Some(&cancelled));
    assert_eq!(reg.counts()[&TaskStatus::Finished], 1);
    assert_eq!(reg.counts().get(&TaskStatus::Cancelled), None);
    assert!(reg.errors().is_empty());
}

#[test]
fn recursive_cancel_reaches_grandchildren_through_a_finished_child() {
    let reg = TaskTable::default();
    let _grandparent = add(&reg, id(1), None, "g");
    let child = add(&reg, id(2), Some(id(1)), "c");
    let grandchild = add(&reg, id(3), Some(id(2)), "x");
    grandchild.started();
    reg.ended(&child, None);
    let found: Vec<TaskId> = reg
        .cancel(id(1), false, true)
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert!(found.contains(&id(3)), "{found:?}");
    assert!(grandchild.cancel.is_cancelled());
    // Live tasks show as such, finished ones with their end.
    let live = reg.live(10);
    assert_eq!(live.len(), 2);
    assert!(live.iter().all(|r| r.ended_ns.is_none()));
    assert_eq!(reg.counts()[&TaskStatus::Running], 1);
}
