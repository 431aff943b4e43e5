//! wray's developer tasks, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! Every command works on a fresh Debian 12 machine from a clean clone: it installs what
//! is missing first (see [`setup`]) and says what it does, and leaves `git status` as it
//! found it.
//!
//! - `cargo xtask setup`: guest toolchain, Debian packages, `cargo-component` ([`setup`]).
//! - `cargo xtask build-guests`: the guest workspaces `examples/` and `test-programs/`
//!   built to components and staged in `<target>/wasm/` ([`guests`]).
//! - `cargo xtask demo [--num-cpus N]`: the distributed word count over the Rust standard
//!   library sources, installing and building only what it needs ([`demo`]).
//! - `cargo xtask test`: the docs' names checked against the code ([`doc_names`]), the
//!   vendored wasmtime against its patches, the import cycles, fmt, clippy and the whole
//!   test suite, as CI runs it, ending with a check that nothing it ran changed a
//!   tracked file ([`suite`]).
//! - `cargo xtask vendor-check`: `vendor/wasmtime` is the published crate with
//!   `vendor/patches/*.patch` applied, and nothing else ([`vendor`]).
//! - `cargo xtask import-cycles [SRC_DIR...]`: source files of a crate that import each
//!   other in a circle ([`import_cycles`]).
//! - `cargo xtask runtime-check`: production code blocks a thread on a future only at
//!   the runtime model's allowed edges ([`runtime_check`]).
//! - `cargo xtask bench [--runs N] [--skip-ray] [--baseline DIR]`: the benchmarks,
//!   wray vs Ray on `ray microbenchmark`'s cases, before vs after a baseline build,
//!   and the attacks of the sandbox suite, into `docs/benchmarks.md` ([`bench`]).
//! - `cargo xtask fuzz [--calls N]`: the fuzzing guest run long against a node
//!   ([`fuzz`]).
//! - `cargo xtask chaos [--minutes M] [--seed N]`: the chaos suite's seeded schedules of
//!   faults on a five-node cluster, for M minutes or for one seed ([`chaos`]).
//!
//! The guest toolchain comes in two flavours, chosen once per machine ([`toolchain`]):
//! the ordinary rustup `wasm32-wasip1` target, or, where rustup's server is unreachable,
//! Debian's `rustc-web` with `-Z build-std`.

mod bench;
mod c_bindings;
mod c_guests;
mod chaos;
mod dashboard;
mod demo;
mod doc_names;
mod fuzz;
mod guests;
mod import_cycles;
mod js;
mod paths;
mod python;
mod run;
mod runtime_check;
mod setup;
mod suite;
mod toolchain;
mod tree;
mod vendor;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// wray's set-up, guest builds, demo and test runners.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// One developer task.
#[derive(Debug, Subcommand)]
enum Command {
    /// Install what building wray needs and is missing (idempotent).
    Setup,
    /// Build every guest (Rust, Python, JavaScript, C) to components in
    /// `<target>/wasm/`, going on past failures, then list every guest that failed.
    BuildGuests,
    /// Regenerate the C guests' bindings (`sdk/c/bindings/`) from `wit/`.
    CBindings,
    /// Run the distributed word count over the Rust standard library sources
    /// (installs and builds only the Rust guest toolchain, the word count and `wray`).
    Demo {
        /// Number of CPU slots for tasks (default: every core of this machine).
        #[arg(long, value_name = "N")]
        num_cpus: Option<u32>,
    },
    /// Run fmt, clippy and the whole test suite (what CI runs), then check that
    /// no tracked file changed.
    Test,
    /// Check that vendor/wasmtime is the published crate with vendor/patches/*.patch
    /// applied (downloads the published crate with `cargo fetch` if cargo's
    /// registry cache lacks it).
    VendorCheck,
    /// List source files of a crate that import each other in a circle (by
    /// `crate::` paths), failing if there is any.
    ImportCycles {
        /// The crates' `src/` directories (default: every crate of the workspace
        /// but xtask's and the benchmarks', and those of the guests).
        #[arg(value_name = "SRC_DIR")]
        srcs: Vec<std::path::PathBuf>,
    },
    /// Check that production code calls `block_on` only at the runtime model's
    /// allowed edges, and `block_in_place` nowhere.
    RuntimeCheck,
    /// Run the benchmarks (wray vs Ray included) and write docs/benchmarks.md.
    Bench {
        /// Runs of each word-count and first-look measurement (the median is
        /// reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Run only the wray side of the `ray microbenchmark` comparison.
        #[arg(long)]
        skip_ray: bool,
        /// Another build to compare with, before and after: a directory
        /// holding its `wray-microbenchmark` binary (or an older build's `wray`)
        /// and `wasm/microbench.wasm`.
        #[arg(long, value_name = "DIR")]
        baseline: Option<std::path::PathBuf>,
        /// Alternating rounds of the before-and-after comparison.
        #[arg(long, default_value_t = 8)]
        ab_rounds: usize,
        /// Host calls of the fuzzing run in the security section.
        #[arg(long, default_value_t = 1_000_000)]
        fuzz_calls: u64,
    },
    /// Run the chaos suite: seeded schedules of faults (node and etcd kills and
    /// stops, drains, a stalling relay, an impostor, a fake node record) on a
    /// five-node cluster running jobs with known results, each checked against
    /// the suite's invariants.
    Chaos {
        /// Play schedules with fresh seeds for this many minutes (a soak).
        #[arg(long, value_name = "M")]
        minutes: Option<f64>,
        /// Replay the schedule of this seed.
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
    },
    /// Run the fuzzing guest: random calls of every host import, checking the
    /// node survives them and leaves nothing behind.
    Fuzz {
        /// Host calls in all.
        #[arg(long, default_value_t = 1_000_000)]
        calls: u64,
        /// Seeds (tasks) to split them over (default: one per 10,000 calls).
        #[arg(long)]
        seeds: Option<u64>,
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        first_seed: u64,
    },
}

fn main() -> ExitCode {
    match run_command(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` prints the cause chain on one line, without anyhow's backtrace.
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one command to completion.
fn run_command(command: Command) -> Result<()> {
    match command {
        Command::Setup => setup::setup().map(drop),
        Command::CBindings => c_bindings::write(&paths::repo_root()),
        Command::BuildGuests => {
            let toolchain = toolchain::detect()?;
            guests::build_guests(toolchain)
        }
        Command::Demo { num_cpus } => demo::demo(num_cpus),
        Command::Test => suite::test(),
        Command::VendorCheck => vendor::check(&paths::repo_root()),
        Command::ImportCycles { srcs } => import_cycles::check(&paths::repo_root(), &srcs),
        Command::RuntimeCheck => runtime_check::check(&paths::repo_root()),
        Command::Bench {
            runs,
            skip_ray,
            baseline,
            ab_rounds,
            fuzz_calls,
        } => bench::bench(bench::BenchOptions {
            runs,
            skip_ray,
            baseline,
            ab_rounds,
            fuzz_calls,
        }),
        Command::Chaos { minutes, seed } => chaos::chaos(minutes, seed),
        Command::Fuzz {
            calls,
            seeds,
            first_seed,
        } => fuzz::fuzz(calls, seeds, first_seed),
    }
}
