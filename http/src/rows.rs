//! The order of the cluster listings (`GET /v1/tasks`, `/v1/actors`,
//! `/v1/jobs`, `/v1/objects`, `/v1/errors`): each row has a [`Place`] (a
//! time, the node it belongs to, its id), the rows are sorted by it, newest
//! or oldest first ([`Order`]), and a page's cursor is the place of its last
//! row. A node answers the rows after a cursor whether or not it holds the
//! row the cursor came from, so pages from several nodes merge
//! ([`merge`]) and a cursor never goes stale.

use std::cmp::Ordering;

use hyper::StatusCode;
use wray_api::{
    ActorList, ActorState, ErrorInfo, ErrorList, JobInfo, JobList, ObjectInfo, ObjectList, Order,
    TaskInfo, TaskList, Unreachable,
};

use crate::error::ApiError;
use wray_api::ErrorCode;

/// The longest node id or row id a cursor may name, in bytes.
const MAX_CURSOR_PART: usize = 64;

/// Where a row sits in a listing's order: by `micros` (its submission or
/// creation, in microseconds since the Unix epoch), then `node`, then
/// `id`. Its text is `MICROS.NODE.ID` (the `next` of a page).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    pub(crate) micros: u64,
    pub(crate) node: String,
    pub(crate) id: String,
}

/// `secs` (seconds since the Unix epoch) in whole microseconds: 0 for a
/// time before the epoch or not a number. Every place is made by this,
/// so that a row's place is the same wherever it is computed.
pub(crate) fn micros(secs: f64) -> u64 {
    if secs.is_finite() && secs > 0.0 {
        // `as` saturates at u64::MAX.
        (secs * 1e6).round() as u64
    } else {
        0
    }
}

impl Place {
    /// The place of a row of `node` and `id` at `secs`.
    pub(crate) fn new(secs: f64, node: &str, id: &str) -> Self {
        Place {
            micros: micros(secs),
            node: node.to_string(),
            id: id.to_string(),
        }
    }

    /// Its text, a page's `next`.
    pub(crate) fn cursor(&self) -> String {
        format!("{}.{}.{}", self.micros, self.node, self.id)
    }

    /// The place `text` names (a client's `?after=`).
    ///
    /// # Errors
    /// 400 `bad_query` for anything but `MICROS.NODE.ID` with a node and an
    /// id of at most 64 letters, digits and `-`.
    pub(crate) fn parse(text: &str) -> Result<Self, ApiError> {
        let bad = || {
            ApiError::bad_request(
                ErrorCode::BadQuery,
                format!(
                    "after={}: not a cursor of this listing (the `next` of a page); list again \
                     without `after`",
                    text.chars().take(64).collect::<String>()
                ),
            )
        };
        let mut parts = text.splitn(3, '.');
        let (Some(micros), Some(node), Some(id)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let fine = |s: &str| {
            !s.is_empty()
                && s.len() <= MAX_CURSOR_PART
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if !fine(node) || !fine(id) {
            return Err(bad());
        }
        Ok(Place {
            micros: micros.parse().map_err(|_| bad())?,
            node: node.to_string(),
            id: id.to_string(),
        })
    }

    /// Whether this place comes after `cursor` in `order`.
    pub(crate) fn after(&self, cursor: &Place, order: Order) -> bool {
        match order {
            Order::Newest => self < cursor,
            Order::Oldest => self > cursor,
        }
    }
}

/// `a` against `b` in `order`: the one that comes first is `Less`.
pub(crate) fn in_order(a: &Place, b: &Place, order: Order) -> Ordering {
    match order {
        Order::Newest => b.cmp(a),
        Order::Oldest => a.cmp(b),
    }
}

/// A row of a cluster listing.
pub(crate) trait Row {
    /// Where it sits.
    fn place(&self) -> Place;
}

impl Row for TaskInfo {
    fn place(&self) -> Place {
        Place::new(self.submitted_at, &self.node_id, &self.task_id)
    }
}

impl Row for ErrorInfo {
    fn place(&self) -> Place {
        Place::new(self.time, &self.node_id, &self.task_id)
    }
}

impl Row for ActorState {
    fn place(&self) -> Place {
        Place::new(self.created_at, &self.node_id, &self.actor)
    }
}

impl Row for ObjectInfo {
    fn place(&self) -> Place {
        Place::new(self.created_at, &self.node_id, &self.id)
    }
}

impl Row for JobInfo {
    fn place(&self) -> Place {
        Place::new(self.submitted_at, &self.node_id, &self.job_id)
    }
}

/// A page of a cluster listing, as its answer carries it.
pub(crate) trait Listing: Sized {
    /// Its rows' type.
    type Item: Row;
    /// A page of `rows`.
    fn of(rows: Vec<Self::Item>, next: Option<String>, unreachable: Vec<Unreachable>) -> Self;
    /// Its rows, cursor and unreachable nodes.
    fn parts(self) -> (Vec<Self::Item>, Option<String>, Vec<Unreachable>);
}

macro_rules! listing {
    ($list:ty, $item:ty, $field:ident) => {
        impl Listing for $list {
            type Item = $item;
            fn of(rows: Vec<$item>, next: Option<String>, unreachable: Vec<Unreachable>) -> Self {
                Self {
                    $field: rows,
                    next,
                    unreachable,
                }
            }
            fn parts(self) -> (Vec<$item>, Option<String>, Vec<Unreachable>) {
                (self.$field, self.next, self.unreachable)
            }
        }
    };
}

listing!(TaskList, TaskInfo, tasks);
listing!(ErrorList, ErrorInfo, errors);
listing!(ActorList, ActorState, actors);
listing!(ObjectList, ObjectInfo, objects);
listing!(JobList, JobInfo, jobs);

/// How a page is asked for: its order, the cursor it follows, its size.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub(crate) order: Order,
    pub(crate) after: Option<Place>,
    pub(crate) limit: usize,
}

impl Window {
    /// Whether a row at `place` belongs after the cursor.
    pub(crate) fn admits(&self, place: &Place) -> bool {
        self.after
            .as_ref()
            .is_none_or(|c| place.after(c, self.order))
    }
}

/// The page of `rows` (in any order) that `window` asks for, as a
/// listing's answer: the first `limit` after the cursor, in order, and
/// the cursor of the next page when there are more.
pub(crate) fn page<L: Listing>(rows: Vec<L::Item>, window: &Window) -> L {
    let mut placed: Vec<(Place, L::Item)> = rows
        .into_iter()
        .map(|r| (r.place(), r))
        .filter(|(p, _)| window.admits(p))
        .collect();
    placed.sort_by(|(a, _), (b, _)| in_order(a, b, window.order));
    cut(placed, window.limit, false, Vec::new())
}

/// `placed` (in order) cut to `limit` as a listing's answer; `more`: a
/// node had rows past what it gave.
fn cut<L: Listing>(
    mut placed: Vec<(Place, L::Item)>,
    limit: usize,
    more: bool,
    unreachable: Vec<Unreachable>,
) -> L {
    let more = more || placed.len() > limit;
    placed.truncate(limit);
    let next = more
        .then(|| placed.last().map(|(p, _)| p.cursor()))
        .flatten();
    L::of(
        placed.into_iter().map(|(_, r)| r).collect(),
        next,
        unreachable,
    )
}

/// Pages of several nodes merged into one, as they come ([`Merge::add`]):
/// at most `limit + 1` rows are kept at any time.
pub(crate) struct Merge<L: Listing> {
    window: Window,
    rows: Vec<(Place, L::Item)>,
    more: bool,
    unreachable: Vec<Unreachable>,
}

impl<L: Listing> Merge<L> {
    /// An empty merge of pages asked for with `window`.
    pub(crate) fn new(window: Window) -> Self {
        Merge {
            window,
            rows: Vec::new(),
            more: false,
            unreachable: Vec::new(),
        }
    }

    /// Adds a node's page (rows after the cursor only; `keep` says which
    /// rows belong).
    pub(crate) fn add(&mut self, page: L, keep: impl Fn(&L::Item) -> bool) {
        let (rows, next, unreachable) = page.parts();
        self.more |= next.is_some();
        self.unreachable.extend(unreachable);
        self.rows.extend(
            rows.into_iter()
                .filter(|r| keep(r))
                .map(|r| (r.place(), r))
                .filter(|(p, _)| self.window.admits(p)),
        );
        let order = self.window.order;
        self.rows.sort_by(|(a, _), (b, _)| in_order(a, b, order));
        self.rows.truncate(self.window.limit.saturating_add(1));
    }

    /// Names `node` among those whose rows are missing, and why.
    pub(crate) fn missing(&mut self, node: String, error: String) {
        self.unreachable.push(Unreachable {
            node_id: node,
            error,
        });
    }

    /// The merged page.
    pub(crate) fn finish(mut self) -> L {
        self.unreachable.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        cut(self.rows, self.window.limit, self.more, self.unreachable)
    }
}

/// The window a listing's query asks for.
///
/// # Errors
/// 400 `bad_query` when `after` is not a cursor.
pub(crate) fn window(order: Order, after: Option<&str>, limit: usize) -> Result<Window, ApiError> {
    Ok(Window {
        order,
        after: after.map(Place::parse).transpose()?,
        limit,
    })
}

/// 404 `unknown_node`: `node` is not a node of this cluster that answers.
pub(crate) fn unknown_node(node: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::UnknownNode,
        format!("node {node} is not a live node of this cluster (see GET /v1/nodes)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(secs: f64, node: &str, id: &str) -> JobInfo {
        JobInfo {
            job_id: id.to_string(),
            component: "c".to_string(),
            args: Vec::new(),
            status: wray_api::JobStatus::Succeeded,
            message: None,
            submitted_at: secs,
            start_time: None,
            end_time: None,
            driver_task: String::new(),
            node_id: node.to_string(),
            log_bytes: 0,
            options: Default::default(),
        }
    }

    fn ids(list: &JobList) -> Vec<&str> {
        list.jobs.iter().map(|j| j.job_id.as_str()).collect()
    }

    #[test]
    fn pages_of_several_nodes_merge_in_order_and_their_cursors_cover_every_row() {
        // Three nodes' jobs, their times interleaved, two at one instant.
        let all = [
            job(1.0, "node-a", "a1"),
            job(3.0, "node-a", "a3"),
            job(5.0, "node-a", "a5"),
            job(2.0, "node-b", "b2"),
            job(3.0, "node-b", "b3"),
            job(6.0, "node-c", "c6"),
        ];
        for order in [Order::Newest, Order::Oldest] {
            let mut seen = Vec::new();
            let mut after: Option<String> = None;
            for _ in 0..10 {
                let w = window(order, after.as_deref(), 2).unwrap();
                let mut merge = Merge::<JobList>::new(w.clone());
                for node in ["node-a", "node-b", "node-c"] {
                    let mine: Vec<JobInfo> =
                        all.iter().filter(|j| j.node_id == node).cloned().collect();
                    merge.add(page::<JobList>(mine, &w), |_| true);
                }
                let merged = merge.finish();
                assert!(merged.jobs.len() <= 2);
                seen.extend(ids(&merged).into_iter().map(str::to_string));
                match merged.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            let mut want = vec!["a1", "b2", "a3", "b3", "a5", "c6"];
            if order == Order::Newest {
                want.reverse();
            }
            assert_eq!(seen, want, "{order:?}");
        }
    }

    #[test]
    fn a_cursor_is_checked_and_never_goes_stale() {
        for bad in ["", "x", "1.node-a", "1.node a.b", "x.node-a.b", "1..b"] {
            assert_eq!(
                Place::parse(bad).unwrap_err().code,
                ErrorCode::BadQuery,
                "{bad}"
            );
        }
        // A cursor of a row no node holds any more still places the next
        // page.
        let w = window(Order::Oldest, Some("2000000.node-z.gone"), 10).unwrap();
        let rows = vec![job(1.0, "node-a", "a1"), job(3.0, "node-a", "a3")];
        assert_eq!(ids(&page::<JobList>(rows, &w)), ["a3"]);
        let p = Place::new(1.5, "node-a", "abc");
        assert_eq!(Place::parse(&p.cursor()).unwrap(), p);
    }

    #[test]
    fn a_node_with_more_rows_than_it_gave_keeps_a_next_page() {
        let w = window(Order::Oldest, None, 1).unwrap();
        let mut merge = Merge::<JobList>::new(w.clone());
        let rows = vec![job(1.0, "node-a", "a1"), job(2.0, "node-a", "a2")];
        merge.add(page::<JobList>(rows, &w), |_| true);
        merge.missing("node-b".into(), "no answer within 3s".into());
        let merged = merge.finish();
        assert_eq!(ids(&merged), ["a1"]);
        assert!(merged.next.is_some());
        assert_eq!(merged.unreachable[0].node_id, "node-b");
    }
}
