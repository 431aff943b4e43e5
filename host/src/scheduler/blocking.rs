//! Blocking until objects exist: the host side of `get` and `wait`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use wray_control_plane::ObjectId;

use crate::object_store::Subscription;
use crate::registry::TaskEntry;
use crate::resources::Allocation;
use crate::runtime::Runtime;

/// How often a blocked task looks at its cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The task that blocks.
pub(crate) struct Blocker<'a> {
    /// Its entry in the task table.
    pub entry: Option<&'a TaskEntry>,
    /// Its allocation, when it gives its CPUs back while blocked.
    pub allocation: Option<&'a mut Allocation>,
    /// Its cancel flag: a cancelled task stops waiting.
    pub cancel: &'a AtomicBool,
}

/// Counts sealed objects and wakes the blocked thread.
#[derive(Default)]
struct Latch {
    sealed: Mutex<usize>,
    cond: Condvar,
}

impl Latch {
    fn bump(&self) {
        *self.sealed.lock() += 1;
        self.cond.notify_one();
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// At least the requested number of objects is sealed.
    Ready,
    /// The deadline passed first.
    TimedOut,
    /// The task was cancelled while it waited.
    Cancelled,
}

impl Runtime {
    /// Blocks until `need` of `ids` are sealed, `deadline` passes or the
    /// task is cancelled. A task with an allocation gives its CPUs back while
    /// blocked (keeping GPUs and the rest) and takes them again before
    /// returning. Ids that name no object never count.
    pub(crate) fn block_until_sealed(
        self: &Arc<Self>,
        ids: &[ObjectId],
        need: usize,
        deadline: Option<Instant>,
        blocker: Blocker<'_>,
    ) -> WaitEnd {
        let latch = Arc::new(Latch::default());
        let mut sealed = 0;
        for id in ids {
            let l = latch.clone();
            if let Subscription::Ready(_) = self.objects.subscribe(id, Box::new(move || l.bump())) {
                sealed += 1;
            }
        }
        let mut count = latch.sealed.lock();
        if sealed + *count >= need {
            return WaitEnd::Ready;
        }
        if let Some(e) = blocker.entry {
            e.blocked(true);
        }
        let mut cpu = None;
        if let Some(allocation) = blocker.allocation {
            let (amount, start) = self.pool.release_cpu(allocation);
            self.start(start);
            cpu = Some((allocation, amount));
        }
        let end = loop {
            if sealed + *count >= need {
                break WaitEnd::Ready;
            }
            if blocker.cancel.load(Ordering::Acquire) {
                break WaitEnd::Cancelled;
            }
            let poll = Instant::now() + CANCEL_POLL;
            let until = deadline.map_or(poll, |d| d.min(poll));
            if latch.cond.wait_until(&mut count, until).timed_out()
                && deadline.is_some_and(|d| Instant::now() >= d)
            {
                break if sealed + *count >= need {
                    WaitEnd::Ready
                } else {
                    WaitEnd::TimedOut
                };
            }
        };
        drop(count);
        if let Some((allocation, amount)) = cpu {
            self.pool.reacquire(allocation, amount);
            self.pin_worker(allocation);
        }
        if let Some(e) = blocker.entry {
            e.blocked(false);
        }
        end
    }
}
