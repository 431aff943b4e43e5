//! The progress line `wray run` shows on stderr while a job runs (only on a
//! terminal, and only once the job has run for a second).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use wray_host::Node;

/// A running progress line; [`Progress::finish`] clears it.
pub struct Progress {
    /// Dropping it wakes and stops the thread at once.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts polling `node`'s counters.
    pub fn start(node: &Node) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let stats = node.stats_source();
        let thread = std::thread::Builder::new()
            .name("wray-progress".into())
            .spawn(move || {
                let bar =
                    ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                let started = Instant::now();
                while stopped.recv_timeout(Duration::from_millis(100))
                    == Err(RecvTimeoutError::Timeout)
                {
                    if started.elapsed() < Duration::from_secs(1) {
                        continue;
                    }
                    let s = stats();
                    bar.set_message(format!(
                        "tasks: {} done, {} failed, {} queued or running",
                        s.finished,
                        s.failed,
                        s.pending()
                    ));
                    bar.tick();
                }
                bar.finish_and_clear();
            })
            .ok();
        Self {
            stop: Some(stop),
            thread,
        }
    }

    /// Stops and clears the line.
    pub fn finish(mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
