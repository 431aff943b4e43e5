//! A pipelined pull: a whole blob read into the caller's slice in chunks,
//! up to `min(pull_in_flight, max_connections_per_peer)` of them in flight
//! on as many pooled connections. The slice is split with `chunks_mut`
//! into disjoint chunk slices, each read straight from its socket.

use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::PeerClient;
use crate::error::{PeerError, Result};

/// What a pull moved and how long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PullStats {
    /// Bytes read.
    pub bytes: u64,
    /// Chunks (reads) it took.
    pub chunks: u64,
    /// The most chunks in flight at once.
    pub in_flight: usize,
    /// Wall time of the whole pull.
    pub elapsed: Duration,
}

impl PullStats {
    /// Throughput, in bytes per second (0 for an empty pull).
    pub fn bytes_per_second(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.bytes as f64 / s
        } else {
            0.0
        }
    }
}

impl PeerClient {
    /// Reads the whole blob `key` (`total_len` bytes, which must be
    /// `dest.len()`) from the node at `addr` into `dest`, `chunk` bytes a
    /// read (at most [`PeerConfig::max_chunk`](crate::PeerConfig::max_chunk);
    /// [`DEFAULT_CHUNK`](crate::DEFAULT_CHUNK) is a good choice), with up to
    /// `min(pull_in_flight, max_connections_per_peer)` reads in flight
    /// (so at most that many chunks' bytes are in flight).
    ///
    /// # Errors
    /// [`PeerError::InvalidArgument`] when `dest.len()` is not
    /// `total_len` or `chunk` is 0; [`PeerError::TooLarge`] for a chunk
    /// past its bound; the first error of any read (the others are then
    /// cancelled): `dest` must then be discarded.
    ///
    /// # Cancel safety
    /// Dropping the future closes the connections in use; `dest` is then
    /// partial.
    pub async fn pull(
        &self,
        addr: &str,
        key: &[u8],
        total_len: u64,
        dest: &mut [u8],
        chunk: u32,
    ) -> Result<PullStats> {
        if u64::try_from(dest.len()).ok() != Some(total_len) {
            return Err(PeerError::InvalidArgument(format!(
                "a pull of {total_len} bytes into a slice of {} bytes",
                dest.len()
            )));
        }
        let max = self.inner.config.max_chunk;
        if chunk == 0 {
            return Err(PeerError::InvalidArgument(
                "a pull in chunks of 0 bytes".into(),
            ));
        }
        if chunk > max {
            return Err(PeerError::TooLarge {
                what: "a pull's chunk",
                size: u64::from(chunk),
                max: u64::from(max),
            });
        }
        let cfg = &self.inner.config;
        let in_flight = cfg.pull_in_flight.min(cfg.max_connections_per_peer).max(1);
        let start = Instant::now();
        let mut chunks = 0u64;
        // Each chunk's offset, then at most `in_flight` reads at once (no
        // closures over the borrowed slices: the future stays `Send` for
        // any caller's lifetimes).
        let mut parts = Vec::new();
        let mut at = 0u64;
        for slice in dest.chunks_mut(chunk as usize) {
            let len = slice.len() as u64;
            parts.push((at, slice));
            // Cannot overflow: the slices' lengths add up to total_len.
            at = at.saturating_add(len);
        }
        let mut parts = parts.into_iter();
        let mut reads = FuturesUnordered::new();
        loop {
            while reads.len() < in_flight {
                let Some((at, slice)) = parts.next() else {
                    break;
                };
                reads.push(self.read(addr, key, at, slice));
            }
            match reads.next().await {
                Some(done) => {
                    done?;
                    chunks += 1;
                }
                None => break,
            }
        }
        Ok(PullStats {
            bytes: total_len,
            chunks,
            in_flight,
            elapsed: start.elapsed(),
        })
    }
}
