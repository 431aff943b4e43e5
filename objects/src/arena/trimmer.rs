//! The arena's trimmer: a thread that gives freed pages back once they
//! have stayed over the bound for the arena's delay (as jemalloc's
//! background thread purges dirty pages after `dirty_decay_ms`), so that a
//! loop of puts, which frees a block and allocates it again at once, never
//! pays for a punch and a refault, while memory left free goes back.

use std::time::Instant;

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct State {
    /// When the trimmer should look next (`None`: when told).
    due: Option<Instant>,
    /// The arena is gone: the thread ends.
    closed: bool,
}

/// The wake-up shared by an arena and its thread (whose look holds only a
/// weak reference to the arena, so that dropping the arena is never
/// delayed).
#[derive(Default)]
pub(super) struct Trimmer {
    state: Mutex<State>,
    wake: Condvar,
}

impl Trimmer {
    /// Starts the thread of a trimmer calling `look` when a look is due;
    /// `look` returns false when its arena is gone (the thread ends).
    ///
    /// # Errors
    /// The OS error when no thread can be made.
    pub(super) fn start(
        look: impl Fn() -> bool + Send + 'static,
    ) -> std::io::Result<std::sync::Arc<Self>> {
        let trimmer = std::sync::Arc::new(Self::default());
        let t = trimmer.clone();
        std::thread::Builder::new()
            .name("wray-store-trim".into())
            .spawn(move || t.run(look))?;
        Ok(trimmer)
    }

    /// Asks for a look at `at` (or earlier, if one is asked for already).
    pub(super) fn schedule(&self, at: Instant) {
        let mut state = self.state.lock();
        if state.due.is_none_or(|d| at < d) {
            state.due = Some(at);
            self.wake.notify_one();
        }
    }

    /// Ends the thread (the arena is being dropped).
    pub(super) fn close(&self) {
        self.state.lock().closed = true;
        self.wake.notify_one();
    }

    fn run(&self, look: impl Fn() -> bool) {
        loop {
            {
                let mut state = self.state.lock();
                loop {
                    if state.closed {
                        return;
                    }
                    match state.due {
                        Some(d) if Instant::now() >= d => {
                            state.due = None;
                            break;
                        }
                        Some(d) => {
                            self.wake.wait_until(&mut state, d);
                        }
                        None => self.wake.wait(&mut state),
                    }
                }
            }
            if !look() {
                return;
            }
        }
    }
}
