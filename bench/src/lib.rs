//! wray's benchmark programs and the native baselines they compare with.
//!
//! - [`wordcount`]: the word count of `examples/wordcount` done as a plain,
//!   single-threaded Rust program, with the same tokenization and output
//!   (the binary `wordcount_native`).
//!
//! The binary `wray-microbenchmark` (`src/bin/wray-microbenchmark/`) runs
//! the cases of `ray microbenchmark` on an embedded node, with a memcpy and
//! two bare-wasmtime yardsticks; `cargo xtask bench` sets its `--json`
//! lines beside Ray's own run.

pub mod wordcount;
