//! `store_puts`: the object store's arena with freed pages kept (as before
//! issue 40) against freed pages given back past the bound
//! (`DEFAULT_KEEP_FREED`), side by side in one run, rounds alternating.
//!
//! For each object size, a loop of puts (a block allocated, the value
//! copied in, the block freed, as a guest's `put` of a value nobody keeps)
//! for `--secs` seconds, then the bytes the arena's file holds after one
//! put and free of 512 MiB (`st_blocks`), once the pages over the bound are
//! given back (`PUNCH_DELAY` later; waited for up to 10 s). Prints one JSON line per
//! measurement and a markdown table of the medians.
//!
//! `cargo run --release -p wray-bench --bin store_puts -- --rounds 3`

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use wray_objects::arena::{Arena, DEFAULT_KEEP_FREED};

const MIB: usize = 1 << 20;

#[derive(Parser)]
struct Args {
    /// Rounds (each runs both configurations).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Seconds of each loop of puts.
    #[arg(long, default_value_t = 1.0)]
    secs: f64,
    /// Object sizes in MiB.
    #[arg(long, value_delimiter = ',', default_value = "1,80,512")]
    sizes_mib: Vec<usize>,
    /// Directory of the arena's file.
    #[arg(long, default_value = "/dev/shm")]
    dir: PathBuf,
    /// Capacity of the arena in MiB.
    #[arg(long, default_value_t = 1024)]
    capacity_mib: usize,
}

/// Bytes the arena's file holds pages for.
fn allocated(arena: &Arena) -> anyhow::Result<u64> {
    Ok(std::fs::metadata(arena.path())?.blocks() * 512)
}

/// Puts of `source` per second over `secs` (after one put to warm up).
fn put_loop(arena: &Arc<Arena>, source: &[u8], secs: f64) -> anyhow::Result<f64> {
    let put = || -> anyhow::Result<()> {
        let mut block = arena.alloc(source.len() as u64)?;
        block.bytes_mut().copy_from_slice(source);
        Ok(())
    };
    put()?;
    let (start, mut n) = (Instant::now(), 0u64);
    while start.elapsed() < Duration::from_secs_f64(secs) {
        put()?;
        n += 1;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let configs = [
        ("keep all (before)", usize::MAX),
        ("keep 128 MiB (after)", DEFAULT_KEEP_FREED),
    ];
    let sources: Vec<Vec<u8>> = args.sizes_mib.iter().map(|m| vec![7u8; m * MIB]).collect();
    // [config][size] rates, and [config] MiB left after 512 MiB.
    let mut rates = vec![vec![Vec::new(); sources.len()]; configs.len()];
    let mut left = vec![Vec::new(); configs.len()];
    for round in 0..args.rounds {
        for (c, (name, keep)) in configs.iter().enumerate() {
            let arena = Arena::create(&args.dir, args.capacity_mib * MIB, false)?;
            arena.set_keep_freed(*keep);
            for (s, source) in sources.iter().enumerate() {
                let rate = put_loop(&arena, source, args.secs)?;
                let mib = args.sizes_mib[s];
                println!(
                    r#"{{"round": {round}, "config": "{name}", "size_mib": {mib}, "puts_per_s": {rate:.1}, "gb_per_s": {:.2}}}"#,
                    rate * source.len() as f64 / 1e9
                );
                rates[c][s].push(rate);
            }
            let mut big = arena.alloc(512 * MIB as u64)?;
            big.bytes_mut().fill(1);
            drop(big);
            let deadline = Instant::now() + Duration::from_secs(10);
            while arena.free_resident_bytes() > *keep && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let mib = allocated(&arena)? as f64 / MIB as f64;
            println!(
                r#"{{"round": {round}, "config": "{name}", "allocated_mib_after_512_mib_freed": {mib:.0}}}"#
            );
            left[c].push(mib);
        }
    }
    println!(
        "\n| puts of | {} | {} | after / before |",
        configs[0].0, configs[1].0
    );
    println!("| --- | ---: | ---: | ---: |");
    for (s, mib) in args.sizes_mib.iter().enumerate() {
        let (a, b) = (median(&mut rates[0][s]), median(&mut rates[1][s]));
        let gb = |r: f64| r * (mib * MIB) as f64 / 1e9;
        println!(
            "| {mib} MiB | {a:.0}/s ({:.2} GB/s) | {b:.0}/s ({:.2} GB/s) | {:.2} |",
            gb(a),
            gb(b),
            b / a
        );
    }
    let (a, b) = (median(&mut left[0]), median(&mut left[1]));
    println!("| file's MiB after put+free of 512 MiB | {a:.0} | {b:.0} | |");
    Ok(())
}
