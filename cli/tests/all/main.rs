//! Integration tests of the `wray` binary, run as a process on real
//! components (built by `cargo xtask build-guests` from `test-programs/` and
//! `examples/`).

mod cli;
mod cluster;
mod cores_bench;
mod dashboard;
mod hostile_node;
mod http_bench;
mod jobs;
mod node;
mod node_log;
mod node_ops;
mod support;
