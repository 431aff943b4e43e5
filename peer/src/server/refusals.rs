//! Connections a server refused, by reason: counted ([`RefusalCounts`],
//! for a metric) and logged as counts at most once every
//! [`REPORT_EVERY`], so that a flood of bad connections writes a line
//! every 10 s, not one per connection.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often refusals are reported in the log at most: 10 s.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);

/// Why a server closed a connection before serving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No hello and proof within
    /// [`PeerConfig::hello_timeout`](crate::PeerConfig::hello_timeout), or
    /// closed before them.
    NoHello,
    /// A malformed hello or proof frame.
    BadHello,
    /// The TLS handshake failed.
    Tls,
    /// No protocol version in common.
    Version,
    /// The client failed to prove the cluster token.
    Unauthenticated,
    /// Its source address holds
    /// [`PeerConfig::max_unauthenticated_per_source`](crate::PeerConfig::max_unauthenticated_per_source)
    /// unauthenticated connections already (closed at accept).
    SourceBudget,
    /// The unauthenticated budget
    /// ([`PeerConfig::max_unauthenticated`](crate::PeerConfig::max_unauthenticated))
    /// was full and this was its oldest connection: closed to admit a new
    /// one.
    Evicted,
    /// It proved the token, but the server holds
    /// [`PeerConfig::max_connections`](crate::PeerConfig::max_connections)
    /// authenticated connections already.
    ConnectionBound,
}

impl Refusal {
    /// Every reason, in the order of [`RefusalCounts::by_reason`].
    pub const ALL: [Refusal; 8] = [
        Refusal::NoHello,
        Refusal::BadHello,
        Refusal::Tls,
        Refusal::Version,
        Refusal::Unauthenticated,
        Refusal::SourceBudget,
        Refusal::Evicted,
        Refusal::ConnectionBound,
    ];

    /// Its name: a metric's `reason` label, a word of the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::NoHello => "no_hello",
            Refusal::BadHello => "bad_hello",
            Refusal::Tls => "tls",
            Refusal::Version => "version",
            Refusal::Unauthenticated => "unauthenticated",
            Refusal::SourceBudget => "source_budget",
            Refusal::Evicted => "evicted",
            Refusal::ConnectionBound => "connection_bound",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Connections a server refused since it started, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefusalCounts([u64; 8]);

impl RefusalCounts {
    /// The count of `reason`.
    pub fn get(&self, reason: Refusal) -> u64 {
        self.0[reason.index()]
    }

    /// Every reason with its count, in the order of [`Refusal::ALL`].
    pub fn by_reason(&self) -> impl Iterator<Item = (Refusal, u64)> + '_ {
        Refusal::ALL.iter().map(|r| (*r, self.get(*r)))
    }

    /// Every count added up.
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, n| a.saturating_add(*n))
    }
}

/// The counters and the log's last report.
#[derive(Default)]
pub(crate) struct Refusals {
    counts: [AtomicU64; 8],
    report: Mutex<Report>,
}

#[derive(Default)]
struct Report {
    /// When the last line was written.
    at: Option<Instant>,
    /// The counts it reported up to.
    reported: [u64; 8],
}

impl Refusals {
    /// Counts a refusal of the connection from `from` for `reason`
    /// (`why`: what was wrong); writes a line when none was written for
    /// [`REPORT_EVERY`].
    pub fn note(&self, reason: Refusal, from: SocketAddr, why: &str) {
        self.counts[reason.index()].fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            "peer connection from {from} refused ({}): {why}",
            reason.as_str()
        );
        let now = self.counts();
        let mut report = self.report.lock();
        match report.at {
            Some(at) if at.elapsed() < REPORT_EVERY => return,
            Some(_) => {
                let since: Vec<String> = Refusal::ALL
                    .iter()
                    .filter_map(|r| {
                        let n = now.get(*r).saturating_sub(report.reported[r.index()]);
                        (n > 0).then(|| format!("{n} {}", r.as_str()))
                    })
                    .collect();
                tracing::warn!(
                    "peer connections refused since the last report: {}; the last from {from}: {why}",
                    since.join(", ")
                );
            }
            None => tracing::warn!(
                "peer connection from {from} refused ({}): {why} (further refusals are \
                 reported as counts, at most every {REPORT_EVERY:?})",
                reason.as_str()
            ),
        }
        report.at = Some(Instant::now());
        report.reported = now.0;
    }

    /// The counts so far.
    pub fn counts(&self) -> RefusalCounts {
        RefusalCounts(std::array::from_fn(|i| {
            self.counts[i].load(Ordering::Relaxed)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_by_reason() {
        let r = Refusals::default();
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        for _ in 0..3 {
            r.note(Refusal::NoHello, from, "no hello");
        }
        r.note(Refusal::Version, from, "versions");
        let c = r.counts();
        assert_eq!(c.get(Refusal::NoHello), 3);
        assert_eq!(c.get(Refusal::Version), 1);
        assert_eq!(c.total(), 4);
        assert_eq!(c.by_reason().count(), Refusal::ALL.len());
        for (i, reason) in Refusal::ALL.iter().enumerate() {
            assert_eq!(reason.index(), i);
        }
    }

    /// The log lines written, shared with the subscriber.
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
        type Writer = Lines;
        fn make_writer(&'a self) -> Lines {
            self.clone()
        }
    }

    #[test]
    fn a_flood_of_refusals_writes_one_line_not_one_each() {
        let lines = Lines::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(lines.clone())
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .finish();
        let r = Refusals::default();
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..1000 {
                r.note(Refusal::NoHello, from, &format!("no hello ({i})"));
            }
        });
        let text = String::from_utf8(lines.0.lock().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("WARN") && text.contains("no_hello"), "{text}");
        assert_eq!(r.counts().get(Refusal::NoHello), 1000);
    }
}
