//! Blocking until objects exist: the host side of `get` and `wait`.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use wray_control_plane::ObjectId;

use crate::object_store::Subscription;
use crate::runtime::Runtime;

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
}

impl Runtime {
    /// Blocks until `need` of `ids` are sealed or `deadline` passes. A
    /// caller holding a CPU slot (`holds_cpu`) gives it back while blocked and
    /// takes one again before returning. Ids that name no object never count.
    pub(crate) fn block_until_sealed(
        self: &Arc<Self>,
        ids: &[ObjectId],
        need: usize,
        deadline: Option<Instant>,
        holds_cpu: bool,
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
        if holds_cpu {
            self.release_cpu();
        }
        let end = loop {
            if sealed + *count >= need {
                break WaitEnd::Ready;
            }
            match deadline {
                None => latch.cond.wait(&mut count),
                Some(d) => {
                    if latch.cond.wait_until(&mut count, d).timed_out() {
                        break if sealed + *count >= need {
                            WaitEnd::Ready
                        } else {
                            WaitEnd::TimedOut
                        };
                    }
                }
            }
        };
        drop(count);
        if holds_cpu {
            self.cpus.reacquire();
        }
        end
    }
}
