//! Native baselines for wray's benchmarks and tests.
//!
//! - [`wordcount`]: the word count of `examples/wordcount` done as a plain,
//!   single-threaded Rust program, with the same tokenization and output.

pub mod wordcount;
