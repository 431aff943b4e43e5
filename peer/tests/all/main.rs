//! The channel over loopback: round trips, a pipelined pull, the
//! handshake and its versions, hostile raw peers and the connection
//! budgets, the client's pool, token files, TLS and shutdown. One binary (see STYLE.md).

// The helpers, like the tests, fail a test by panicking.
#![allow(clippy::unwrap_used)]

mod budget;
mod common;
mod handshake;
mod hostile;
mod pool;
mod raw;
mod round_trip;
mod shutdown;
mod tls;
mod token_file;

/// The largest single allocation this test binary has made, in bytes:
/// hostile tests check that a claimed size was never allocated.
#[global_allocator]
static ALLOC: common::Counting = common::Counting;
