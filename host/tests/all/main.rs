//! Integration tests of the wray host: real components (built by
//! `cargo xtask build-guests` from `test-programs/` and `examples/`) run on
//! real nodes.

mod api;
mod boundary;
mod c_guests;
mod compile_process;
mod deployed;
mod deploys;
mod examples;
mod follow;
mod javascript;
mod job_options;
mod jobs;
mod microbench;
mod python;
mod refs;
mod resources;
mod session;
mod support;
mod versions;
mod wordcount;
mod workers;
mod zero_copy;
