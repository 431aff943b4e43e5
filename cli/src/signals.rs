//! SIGINT and SIGTERM during `wray run`: the first stops the node's work
//! (the driver and every task end with a `cancelled` error, the session's
//! final state is written and the node shuts down in order); a second one
//! exits at once. Either way nothing is left in `/dev/shm` or the spill
//! directory: the store's and spill files have no names.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use wray_host::StopHandle;

/// Watches for SIGINT and SIGTERM while a driver runs.
pub struct Interrupts {
    received: Arc<AtomicI32>,
    handle: signal_hook::iterator::Handle,
}

impl Interrupts {
    /// Starts watching; the first signal stops `node`.
    ///
    /// # Errors
    /// When the handlers cannot be installed.
    pub fn watch(node: StopHandle) -> anyhow::Result<Self> {
        let mut signals = Signals::new([SIGINT, SIGTERM])?;
        let handle = signals.handle();
        let received = Arc::new(AtomicI32::new(0));
        let seen = received.clone();
        std::thread::Builder::new()
            .name("wray-signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    if seen.swap(signal, Ordering::AcqRel) != 0 {
                        // A second signal: do not wait for the shutdown.
                        std::process::exit(128 + signal);
                    }
                    eprintln!("wray: signal {signal}: stopping (again to exit at once)");
                    node.stop();
                }
            })?;
        Ok(Self { received, handle })
    }

    /// The signal that stopped the run, if any.
    pub fn received(&self) -> Option<i32> {
        Some(self.received.load(Ordering::Acquire)).filter(|s| *s != 0)
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        self.handle.close();
    }
}
