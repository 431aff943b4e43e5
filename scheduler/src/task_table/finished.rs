//! Finished tasks as the table keeps them: compact records, their spans
//! and errors in bounded rings, shared strings, exact totals; and the
//! pending and running tasks' map.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use wray_control_plane::TaskId;

use super::entry::TaskEntry;
use super::rows::{FailedTask, SpanRow, TaskRow};
use super::rows::{TaskStatus, MAX_ERRORS};
use crate::bounds::{MAX_FINISHED_SPANS, MAX_FINISHED_TASKS, MAX_TASK_LABELS};
use crate::id_map::IdMap;
use crate::resources::Request;

/// A finished task as the table keeps it: no heap of its own (the strings
/// are shared), about 170 bytes (see the module docs).
#[derive(Debug, Clone)]
pub(super) struct FinishedRecord {
    pub(super) id: TaskId,
    pub(super) parent: Option<TaskId>,
    /// Interned function name.
    pub(super) function: Arc<str>,
    /// Interned resource request, in Ray's notation.
    pub(super) resources: Arc<str>,
    /// The worker thread's name (shared by all its tasks); the node's id
    /// for a task run on another node (`remote`).
    pub(super) worker: Option<Arc<str>>,
    /// Whether another node ran it (and lists it).
    pub(super) remote: bool,
    pub(super) status: TaskStatus,
    /// Nanoseconds since the node started.
    pub(super) submitted: u64,
    pub(super) ready: Option<u64>,
    pub(super) started: Option<u64>,
    pub(super) ended: u64,
    /// Sequence number of its first span in [`Finished::spans`].
    pub(super) first_span: u64,
    /// Its spans there (from `first_span` on).
    pub(super) spans: u32,
    /// Spans it opened past the per-task bound (saturating).
    pub(super) dropped_spans: u32,
    /// Sequence number of its error in [`Finished::errors`].
    pub(super) error: Option<u64>,
}

/// A span of a finished task: interned name, nanoseconds since the node
/// started.
#[derive(Debug, Clone)]
pub(super) struct FinishedSpan {
    pub(super) name: Arc<str>,
    pub(super) start: u64,
    pub(super) end: u64,
}

/// Shared copies of the strings finished records repeat (function names,
/// resource requests, span names), at most [`MAX_TASK_LABELS`] of each
/// kind; past it a record gets a copy of its own.
#[derive(Default)]
pub(super) struct Interner {
    pub(super) strings: HashSet<Arc<str>>,
    pub(super) requests: HashMap<Request, Arc<str>>,
}

impl Interner {
    pub(super) fn str(&mut self, s: &str) -> Arc<str> {
        if let Some(shared) = self.strings.get(s) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        if self.strings.len() < MAX_TASK_LABELS {
            self.strings.insert(shared.clone());
        }
        shared
    }

    pub(super) fn request(&mut self, request: &Request) -> Arc<str> {
        if let Some(shared) = self.requests.get(request) {
            return shared.clone();
        }
        let shared = self.str(&request.to_string());
        if self.requests.len() < MAX_TASK_LABELS {
            self.requests.insert(request.clone(), shared.clone());
        }
        shared
    }
}

/// A ring of at most `max` items, numbered from 0 as they were added.
pub(super) struct Ring<T> {
    pub(super) items: VecDeque<T>,
    pub(super) added: u64,
    pub(super) max: usize,
}

impl<T> Ring<T> {
    pub(super) fn new(max: usize) -> Self {
        Self {
            items: VecDeque::new(),
            added: 0,
            max,
        }
    }

    /// Adds `item` (dropping the oldest past the bound); its number.
    pub(super) fn push(&mut self, item: T) -> u64 {
        if self.items.len() >= self.max {
            self.items.pop_front();
        }
        self.items.push_back(item);
        self.added += 1;
        self.added - 1
    }

    /// The number of the oldest item kept.
    pub(super) fn first(&self) -> u64 {
        self.added - self.items.len() as u64
    }

    /// Item number `n`, if still kept.
    pub(super) fn get(&self, n: u64) -> Option<&T> {
        let i = usize::try_from(n.checked_sub(self.first())?).ok()?;
        self.items.get(i)
    }
}

/// Pending and running tasks.
#[derive(Default)]
pub(super) struct Table {
    pub(super) entries: IdMap<TaskId, Arc<TaskEntry>>,
}

/// Finished tasks, their spans and errors (bounded), and exact totals.
pub(super) struct Finished {
    pub(super) records: Ring<FinishedRecord>,
    pub(super) spans: Ring<FinishedSpan>,
    pub(super) errors: Ring<FailedTask>,
    /// Tasks ended, by final state (exact, never dropped).
    pub(super) totals: BTreeMap<TaskStatus, u64>,
    pub(super) interner: Interner,
}

impl Default for Finished {
    fn default() -> Self {
        Self {
            records: Ring::new(MAX_FINISHED_TASKS),
            spans: Ring::new(MAX_FINISHED_SPANS),
            errors: Ring::new(MAX_ERRORS),
            totals: BTreeMap::new(),
            interner: Interner::default(),
        }
    }
}

impl Finished {
    /// Record `r` with its spans and error message, copied out of the
    /// rings: shared strings and numbers, no formatting, so that the lock
    /// is held briefly; [`Copied::row`] formats it after.
    pub(super) fn copy(&self, r: &FinishedRecord) -> Copied {
        let spans = (r.first_span..r.first_span.saturating_add(u64::from(r.spans)))
            .filter_map(|n| self.spans.get(n))
            .cloned()
            .collect();
        let error = r
            .error
            .and_then(|n| self.errors.get(n))
            .map(|f| f.error.message.clone());
        Copied {
            record: r.clone(),
            spans,
            error,
        }
    }

    /// The records numbered `from..` (those kept), at most `limit`, copied
    /// ([`Finished::copy`]); and the number after the last one copied.
    pub(super) fn copy_since(&self, from: u64, limit: usize) -> (Vec<Copied>, u64) {
        let start = from.max(self.records.first());
        let copied: Vec<Copied> = (start..self.records.added)
            .take(limit)
            .filter_map(|n| self.records.get(n))
            .map(|r| self.copy(r))
            .collect();
        let next = start.saturating_add(u64::try_from(copied.len()).unwrap_or(u64::MAX));
        (copied, next)
    }
}

/// A finished task copied out of the table (see [`Finished::copy`]).
pub(super) struct Copied {
    record: FinishedRecord,
    spans: Vec<FinishedSpan>,
    error: Option<String>,
}

impl Copied {
    /// Its id.
    pub(super) fn id(&self) -> TaskId {
        self.record.id
    }

    /// Its snapshot row.
    pub(super) fn row(self) -> TaskRow {
        let r = self.record;
        let spans = self
            .spans
            .iter()
            .map(|s| SpanRow {
                name: s.name.to_string(),
                start_ns: s.start,
                end_ns: Some(s.end),
            })
            .collect();
        TaskRow {
            task_id: r.id.to_string(),
            parent_task_id: r.parent.map(|p| p.to_string()),
            function: r.function.to_string(),
            state: r.status,
            worker: super::worker_here(r.remote, r.worker.as_deref()),
            node: super::worker_here(!r.remote, r.worker.as_deref()),
            resources: r.resources.to_string(),
            submitted_ns: r.submitted,
            ready_ns: r.ready,
            started_ns: r.started,
            ended_ns: Some(r.ended),
            spans,
            dropped_spans: u64::from(r.dropped_spans),
            error: self.error,
        }
    }
}
