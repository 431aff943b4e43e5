//! Links the microbench module with 4 MiB of linear memory at start (about
//! 2.9 MiB of heap past its data and 1 MiB stack), so that a trivial task
//! never grows its memory.
//!
//! Why it matters: an instance that grows its memory leaves its pooling
//! slot larger than the next instance may be, and wasmtime shrinks the
//! slot back with `mprotect(PROT_NONE)` before the next instance starts
//! (its bounds checks are the guard pages). That `mprotect` flushes the
//! TLB of every CPU running one of the node's threads, an inter-processor
//! interrupt each: on 2 cores it was the largest cost of a trivial fresh
//! task (perf, `single client tasks async`: 25k -> 69k tasks per second
//! with this; docs/benchmarks.md, "Memory growth and fresh instances").
//! Any guest whose tasks allocate a little can do the same
//! (`--initial-memory`, or `--initial-heap` with LLD 17 or later).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=--initial-memory=4194304");
    }
}
