//! `wray-microbenchmark`: the cases of `ray microbenchmark`, with Ray's
//! names, counts and timing method, on an embedded node.
//!
//! ```text
//! wray-microbenchmark [--filter S] [--json] [--num-cpus N] [--component PATH] [--scale F]
//!                     [--object-store-memory MIB] [--object-store-dir DIR] [--huge-pages]
//! ```
//!
//! The cases run inside the driver of the `microbench` test component
//! (`main(["suite", CASE, SCALE, CORES])`, see
//! `test-programs/microbench/src/suite.rs`), one driver per case on one
//! node (so a case whose driver traps does not take the rest down), each
//! printing `case\trate\tsd\tunit` into an in-memory stdout. This program
//! prints each case as it finishes, like Ray (`<case> per second <rate> +-
//! <sd>`), or as JSON lines with `--json` ([`CaseResult`], [`CaseFailure`]).
//! Two yardsticks follow, measured in the same run with the same method:
//! `memcpy gigabytes` (a native copy of the bytes of "single client put
//! gigabytes"), `memcpy gigabytes two threads` (the same bytes, half copied
//! by each of two threads at once: the yardstick of "multi client put
//! gigabytes") and `bare wasmtime instantiate+call` ([`baseline`]).
//! `cargo xtask bench` runs it and renders its lines beside Ray's.

use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Parser};
use serde::Serialize;
use wray_host::bounds::{MAX_CPUS, MAX_OBJECT_STORE};
use wray_host::{Node, NodeConfig, Stdio};
use wray_timeit::{timeit, Stat};

use baseline::BareComponent;

mod baseline;

/// Name of the native copy case.
const MEMCPY: &str = "memcpy gigabytes";
/// Name of the native copy case on two threads at once.
const MEMCPY_TWO: &str = "memcpy gigabytes two threads";
/// Name of the bare-wasmtime case.
const BARE: &str = "bare wasmtime instantiate+call";
const BARE_ASYNC: &str = "bare wasmtime instantiate+call async";

/// The largest `--scale`: Ray's 9 s of timing per case become 2.5 hours.
const MAX_SCALE: f64 = 1000.0;

/// Bytes of Ray's `np.zeros(100 * 1024 * 1024, dtype=np.int64)`, and the GB
/// Ray counts them as (`8 * 0.1`).
const PUT_GIGABYTES_BYTES: usize = 100 * 1024 * 1024 * 8;
const PUT_GIGABYTES_GB: f64 = 0.8;

/// Arguments of `wray-microbenchmark`.
#[derive(Parser)]
#[command(
    name = "wray-microbenchmark",
    version,
    about = "Run the cases of `ray microbenchmark` (same names, counts and timing) on an embedded wray node"
)]
struct MicrobenchmarkArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// Run only the cases whose name contains S (Ray's `TESTS_TO_RUN`).
    #[arg(long, value_name = "S", default_value = "")]
    filter: String,
    /// Print one JSON object per case and line: {"case", "rate", "sd",
    /// "unit"}, or {"case", "error"} for a case that failed.
    #[arg(long)]
    json: bool,
    /// CPU slots of the node; default: this machine's cores.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=MAX_CPUS as i64))]
    num_cpus: Option<u16>,
    /// The microbench component; default: $WRAY_MICROBENCH, else
    /// <dir of wray-microbenchmark>/../wasm/microbench.wasm.
    #[arg(long, value_name = "PATH")]
    component: Option<PathBuf>,
    /// Multiplies Ray's durations (1 s warm-up, 4 rounds of 2 s).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    scale: f64,
}

/// The object store's flags, as `wray run` takes them.
#[derive(Args)]
struct StoreArgs {
    /// Capacity of the shared-memory object store in MiB (default: the
    /// node's, 30% of RAM as Ray's; 0: no shared store, values stay on the
    /// heap).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(0..=MAX_OBJECT_STORE >> 20))]
    object_store_memory: Option<u64>,
    /// Directory of the object store's file (default: /dev/shm).
    #[arg(long, value_name = "DIR")]
    object_store_dir: Option<PathBuf>,
    /// Put the object store on 2 MiB huge pages (falls back to 4 KiB pages
    /// with a log line where there are too few).
    #[arg(long)]
    huge_pages: bool,
}

impl StoreArgs {
    /// Applies the flags to `config`.
    fn apply(&self, config: &mut NodeConfig) {
        if let Some(mib) = self.object_store_memory {
            config.object_store_memory = (mib > 0).then_some(mib.saturating_mul(1 << 20));
        }
        if let Some(dir) = &self.object_store_dir {
            config.object_store_dir = dir.clone();
        }
        config.huge_pages |= self.huge_pages;
    }
}

fn main() -> ExitCode {
    let args = MicrobenchmarkArgs::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WRAY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// One measured case: a `--json` line `{"case", "rate", "sd", "unit"}`,
/// the shape `bench/ray/run.sh --json` prints for Ray's side.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct CaseResult {
    /// Ray's case name (or wray's own).
    case: String,
    /// Mean rate (or latency) over the timed rounds.
    rate: f64,
    /// Population standard deviation over the rounds.
    sd: f64,
    /// `per second`, `GB per second` or `us`.
    unit: String,
}

/// A case that failed: a `--json` line `{"case", "error"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct CaseFailure<'a> {
    /// The case.
    case: &'a str,
    /// Why it failed (the guest's message or the driver's trap).
    error: &'a str,
}

/// Prints `line` as one JSON line on stdout.
///
/// # Errors
/// Stdout cannot be written.
fn print_json(line: &impl Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, line).context("writing a JSON line")?;
    writeln!(out).context("writing a JSON line")?;
    Ok(())
}

/// A line of the guest suite.
#[derive(Debug, Clone, PartialEq)]
enum SuiteLine {
    /// `case\trate\tsd\tunit`
    Measured(CaseResult),
    /// `case\terror\tmessage`
    Failed {
        /// The case.
        case: String,
        /// Why it failed.
        message: String,
    },
}

impl SuiteLine {
    fn parse(line: &str) -> Option<Self> {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields[..] {
            [case, "error", message] => Some(Self::Failed {
                case: case.to_string(),
                message: message.to_string(),
            }),
            [case, rate, sd, unit] => Some(Self::Measured(CaseResult {
                case: case.to_string(),
                rate: rate.parse().ok()?,
                sd: sd.parse().ok()?,
                unit: unit.to_string(),
            })),
            _ => None,
        }
    }
}

impl CaseResult {
    fn host(case: &str, rate: Stat, unit: &str) -> Self {
        Self {
            case: case.to_string(),
            rate: rate.mean,
            sd: rate.sd,
            unit: unit.to_string(),
        }
    }

    /// Prints the case: as a JSON line, or as Ray does ([`Self::render`]).
    ///
    /// # Errors
    /// Stdout cannot be written.
    fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            print_json(self)
        } else {
            println!("{}", self.render());
            Ok(())
        }
    }

    /// The line Ray prints: `<case> per second <rate> +- <sd>` (also for
    /// GB per second, as Ray prints it), else `<case> <rate> +- <sd> <unit>`.
    fn render(&self) -> String {
        if self.unit.ends_with("per second") {
            format!(
                "{} per second {:.2} +- {:.2}",
                self.case, self.rate, self.sd
            )
        } else {
            format!(
                "{} {:.2} +- {:.2} {}",
                self.case, self.rate, self.sd, self.unit
            )
        }
    }
}

/// Runs the suite and the yardsticks, printing each case as it finishes.
///
/// Each case runs in a driver of its own on one node, so a case whose
/// driver traps is reported and the next case still runs. The exit code is
/// a failure when any case failed.
///
/// # Errors
/// A bad argument, a missing component, a node that cannot start.
fn run(args: MicrobenchmarkArgs) -> anyhow::Result<ExitCode> {
    if !(args.scale > 0.0 && args.scale <= MAX_SCALE) {
        bail!(
            "--scale {}: expected a number above 0 and at most {MAX_SCALE}",
            args.scale
        );
    }
    let path = component_path(args.component)?;
    let stdio = Stdio::memory();
    let mut config = NodeConfig {
        stdio: stdio.clone(),
        ..NodeConfig::default()
    };
    if let Some(n) = args.num_cpus {
        config.num_cpus = usize::from(n);
    }
    args.store.apply(&mut config);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    let node = Node::start(config.clone())?;
    let app = node
        .deploy_file_blocking(&path)
        .with_context(|| format!("deploying {}", path.display()))?
        .name;
    let mut guest = GuestOutput::new(&stdio);
    let listed = node.run_main_blocking(&app, &["list".to_string()])?;
    if let Err(message) = listed.result {
        bail!("listing the cases of {}: {message}", path.display());
    }
    let names: Vec<String> = guest.new_lines();
    let mut reported = 0;
    let mut failed = Vec::new();
    for name in names.iter().filter(|n| n.contains(args.filter.as_str())) {
        let suite = [
            "suite".to_string(),
            name.clone(),
            args.scale.to_string(),
            cores.to_string(),
        ];
        let outcome = node.run_main_blocking(&app, &suite)?;
        let mut failure = None;
        for line in guest.new_lines() {
            match SuiteLine::parse(&line) {
                Some(SuiteLine::Measured(result)) => {
                    result.print(args.json)?;
                    reported += 1;
                }
                Some(SuiteLine::Failed { message, .. }) => failure = Some(message),
                None => eprintln!("microbench: {line}"),
            }
        }
        // A case that failed says why; a driver that trapped did not.
        if let Some(message) = failure.or(outcome.result.err().map(|e| e.to_string())) {
            eprintln!("{name}: failed: {message}");
            if args.json {
                print_json(&CaseFailure {
                    case: name,
                    error: &message,
                })?;
            }
            failed.push(name.clone());
        }
    }
    drop(node);

    if MEMCPY.contains(args.filter.as_str()) {
        memcpy(args.scale).print(args.json)?;
        reported += 1;
    }
    if MEMCPY_TWO.contains(args.filter.as_str()) {
        memcpy_two_threads(args.scale).print(args.json)?;
        reported += 1;
    }
    let (sync, async_) = (
        BARE.contains(args.filter.as_str()),
        BARE_ASYNC.contains(args.filter.as_str()),
    );
    if sync || async_ {
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let component = BareComponent::new(&config, "microbench", &bytes)?;
        if sync {
            bare(&component, args.scale)?.print(args.json)?;
            reported += 1;
        }
        if async_ {
            bare_async(&component, args.scale)?.print(args.json)?;
            reported += 1;
        }
    }
    if !failed.is_empty() {
        eprintln!(
            "error: {} case(s) failed: {}",
            failed.len(),
            failed.join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    if reported == 0 {
        eprintln!("error: no case name contains `{}`", args.filter);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The guest's in-memory stdout, read line by line as drivers finish.
struct GuestOutput<'a> {
    stdio: &'a Stdio,
    /// Bytes already read.
    read: usize,
}

impl<'a> GuestOutput<'a> {
    fn new(stdio: &'a Stdio) -> Self {
        Self {
            read: stdio.stdout_text().len(),
            stdio,
        }
    }

    /// The whole lines written since the last call.
    fn new_lines(&mut self) -> Vec<String> {
        let text = self.stdio.stdout_text();
        let Some(end) = text.rfind('\n').map(|i| i + 1).filter(|&e| e > self.read) else {
            return Vec::new();
        };
        let lines = text[self.read..end].lines().map(str::to_string).collect();
        self.read = end;
        lines
    }
}

/// `--component`, else `$WRAY_MICROBENCH`, else `../wasm/microbench.wasm`
/// next to this executable; it must exist.
fn component_path(flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let path = match flag.or_else(|| std::env::var_os("WRAY_MICROBENCH").map(PathBuf::from)) {
        Some(p) => p,
        None => {
            let exe = std::env::current_exe()
                .context("cannot find the wray-microbenchmark executable")?;
            let dir = exe.parent().unwrap_or(Path::new("."));
            dir.join("..").join("wasm").join("microbench.wasm")
        }
    };
    if !path.is_file() {
        bail!(
            "the microbench component {} is missing: build it with `cargo xtask build-guests` \
             (or pass --component PATH, or set WRAY_MICROBENCH)",
            path.display()
        );
    }
    Ok(path)
}

/// `memcpy gigabytes`: a native `copy_from_slice` of the bytes "single
/// client put gigabytes" puts, in Ray's GB per second.
fn memcpy(scale: f64) -> CaseResult {
    // Non-zero source bytes, so the copy reads real pages and not the
    // kernel's shared zero page.
    let src = vec![1u8; PUT_GIGABYTES_BYTES];
    let mut dst = vec![0u8; PUT_GIGABYTES_BYTES];
    let rounds = timeit(scale, || {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
        Ok::<(), std::convert::Infallible>(())
    });
    match rounds {
        Ok(r) => CaseResult::host(MEMCPY, r.rate(PUT_GIGABYTES_GB), "GB per second"),
        Err(never) => match never {},
    }
}

/// `memcpy gigabytes two threads`: the bytes of [`memcpy`], half copied
/// by each of two threads at once (started for each round: microseconds
/// against a copy of tens of milliseconds), in Ray's GB per second.
fn memcpy_two_threads(scale: f64) -> CaseResult {
    let half = PUT_GIGABYTES_BYTES / 2;
    let src = [vec![1u8; half], vec![1u8; half]];
    let mut dst = [vec![0u8; half], vec![0u8; half]];
    let rounds = timeit(scale, || {
        std::thread::scope(|scope| {
            for (to, from) in dst.iter_mut().zip(&src) {
                scope.spawn(move || {
                    to.copy_from_slice(black_box(from));
                    black_box(to);
                });
            }
        });
        Ok::<(), std::convert::Infallible>(())
    });
    match rounds {
        Ok(r) => CaseResult::host(MEMCPY_TWO, r.rate(PUT_GIGABYTES_GB), "GB per second"),
        Err(never) => match never {},
    }
}

/// `bare wasmtime instantiate+call`: fresh instances of the microbench
/// component from an `InstancePre`, each calling `init`, per second.
fn bare(component: &BareComponent, scale: f64) -> anyhow::Result<CaseResult> {
    let rounds = timeit(scale, || component.instantiate_and_init())?;
    Ok(CaseResult::host(BARE, rounds.rate(1.0), "per second"))
}

/// `bare wasmtime instantiate+call async`: the same with wasmtime's async
/// API, each instance made and called inside a `block_on` of a runtime like
/// the node's (what stopping a guest inside a blocking host call costs).
fn bare_async(component: &BareComponent, scale: f64) -> anyhow::Result<CaseResult> {
    let io = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let handle = io.handle().clone();
    let rounds = timeit(scale, || component.instantiate_and_init_async(&handle))?;
    Ok(CaseResult::host(BARE_ASYNC, rounds.rate(1.0), "per second"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suite_lines() {
        let Some(SuiteLine::Measured(r)) =
            SuiteLine::parse("1:1 actor calls sync\t9000.5\t12.25\tper second")
        else {
            panic!("a case line");
        };
        assert_eq!(r.case, "1:1 actor calls sync");
        assert_eq!((r.rate, r.sd), (9000.5, 12.25));
        assert_eq!(
            r.render(),
            "1:1 actor calls sync per second 9000.50 +- 12.25"
        );
        assert_eq!(
            SuiteLine::parse("x\terror\tobject too big"),
            Some(SuiteLine::Failed {
                case: "x".into(),
                message: "object too big".into()
            })
        );
        assert_eq!(SuiteLine::parse("roundtrip_us 43.5"), None);
        assert_eq!(SuiteLine::parse("a\t1\t2\tus\textra"), None);
        assert_eq!(SuiteLine::parse("a\tfast\t2\tus"), None);
    }

    #[test]
    fn renders_json_and_other_units() {
        let r = CaseResult {
            case: "guest get latency 4KiB".into(),
            rate: 3.5,
            sd: 0.25,
            unit: "us".into(),
        };
        assert_eq!(r.render(), "guest get latency 4KiB 3.50 +- 0.25 us");
        assert_eq!(
            serde_json::to_string(&r).expect("json"),
            r#"{"case":"guest get latency 4KiB","rate":3.5,"sd":0.25,"unit":"us"}"#
        );
        let failed = CaseFailure {
            case: "x",
            error: "object too big",
        };
        assert_eq!(
            serde_json::to_string(&failed).expect("json"),
            r#"{"case":"x","error":"object too big"}"#
        );
    }
}
