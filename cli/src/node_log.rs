//! The node's log: `node.log` in the node directory, rotated by size
//! (`file-rotate`): when it reaches `--log-max-bytes` it becomes
//! `node.log.1` (the older ones move up one) and a new `node.log` begins;
//! `--log-files` files are kept in all, so the log never takes more than
//! `--log-max-bytes` x `--log-files` bytes of disk. It gets the node's
//! tracing events at the level of `--log-level`, else of `WRAY_LOG`, else
//! `info` (tracing-subscriber's `EnvFilter` syntax: `debug`,
//! `wray_host=debug,info`), the guests' output included (target
//! `wray::guest`), and any panic's message.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use clap::Args;
use file_rotate::compression::Compression;
use file_rotate::suffix::AppendCount;
use file_rotate::{ContentLimit, FileRotate};
use tracing_subscriber::EnvFilter;

/// The smallest `--log-max-bytes`: 4 KiB.
pub const MIN_LOG_BYTES: u64 = 4096;

/// The largest `--log-max-bytes`: 1 TiB.
pub const MAX_LOG_BYTES: u64 = 1 << 40;

/// The most `--log-files`.
pub const MAX_LOG_FILES: u64 = 1000;

/// The log's file name in the node directory.
pub const LOG_FILE: &str = "node.log";

/// `wray start`'s flags for its log.
#[derive(Args, Debug, Clone)]
pub struct LogArgs {
    /// What the node logs to node.log, in tracing's filter syntax (`info`,
    /// `debug`, `wray_host=debug,info`); default: the `WRAY_LOG`
    /// environment variable, else `info` (which includes what guests of
    /// plain calls print).
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Bytes node.log grows to before it is rotated (to node.log.1, ...),
    /// 4096 to 1 TiB.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20,
          value_parser = clap::value_parser!(u64).range(MIN_LOG_BYTES..=MAX_LOG_BYTES))]
    pub log_max_bytes: u64,
    /// Log files kept, node.log included (the oldest is removed), 1 to
    /// 1000: at most `--log-max-bytes` x this many bytes of disk.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=MAX_LOG_FILES))]
    pub log_files: u64,
}

impl LogArgs {
    /// The filter: `--log-level`, else `WRAY_LOG`, else `info`.
    ///
    /// # Errors
    /// A filter that does not parse, naming where it came from.
    fn filter(&self) -> anyhow::Result<EnvFilter> {
        match &self.log_level {
            Some(level) => EnvFilter::try_new(level)
                .with_context(|| format!("--log-level {level}: not a tracing filter")),
            None => match std::env::var("WRAY_LOG") {
                Ok(level) => EnvFilter::try_new(&level)
                    .with_context(|| format!("WRAY_LOG={level}: not a tracing filter")),
                Err(_) => Ok(EnvFilter::new("info")),
            },
        }
    }
}

/// The path of the log in node directory `dir`.
pub fn log_path(dir: &Path) -> PathBuf {
    dir.join(LOG_FILE)
}

/// Sends this process's tracing events, and its panics' messages, to
/// `dir`'s rotated `node.log` (mode 0600).
///
/// # Errors
/// A bad filter, or a log already set up in this process.
pub fn init(dir: &Path, args: &LogArgs) -> anyhow::Result<()> {
    let filter = args.filter()?;
    let mut open = std::fs::OpenOptions::new();
    open.read(true).create(true).append(true).mode(0o600);
    // Both in range (the flags' parsers), so no conversion fails on a
    // 64-bit host; the largest value stands in otherwise.
    let max_bytes = usize::try_from(args.log_max_bytes).unwrap_or(usize::MAX);
    let rotated = usize::try_from(args.log_files.saturating_sub(1)).unwrap_or(usize::MAX);
    let log = FileRotate::new(
        log_path(dir),
        AppendCount::new(rotated),
        ContentLimit::Bytes(max_bytes),
        Compression::None,
        Some(open),
    );
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(log))
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up the node log: {e}"))?;
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        tracing::error!(target: "wray::panic", "{info}");
        previous(info);
    }));
    Ok(())
}
