//! `store-contention`: how the node's object store scales with the threads
//! that put into it at once (issue 40, item 2: `multi client put calls` ran
//! 3.6x slower on 16 cores than on 2 of the same machine).
//!
//! Each thread plays a task of Ray's `multi client put calls` case over and
//! over: 100 small puts, each the host's path for a guest's `put` (`admit`,
//! `register_pending`, `acquire` for the task's hold, `value`, `seal`), then
//! the task's end (`release` of its 100 holds, which frees the objects).
//! No wasm runs: this measures the store alone, the part every task of a
//! node shares. One JSON line per thread count on stdout: puts per second
//! over all threads, and the ratio to one thread's rate (`scaling`; the
//! ideal is the thread count, while the machine has that many cores idle).
//!
//! ```sh
//! cargo run --release -p wray-bench --bin store-contention -- --threads 1,2 --seconds 2
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::Parser;
use wray_control_plane::{JobId, TaskId};
use wray_objects::{Codec, ObjectStore, Refs};

/// Puts per task, as Ray's `do_put_small`.
const PUTS_PER_TASK: u32 = 100;

#[derive(Parser)]
#[command(
    name = "store-contention",
    about = "object store puts per second by threads"
)]
struct Args {
    /// Thread counts to run, comma separated (default: 1, 2, 4, ... up to
    /// the machine's cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Seconds each thread count runs.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Runs of each thread count; the best is kept (as Ray's timeit).
    #[arg(long, default_value_t = 3)]
    runs: u32,
}

fn main() {
    let args = Args::parse();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = if args.threads.is_empty() {
        std::iter::successors(Some(1usize), |t| (t * 2 <= cores).then_some(t * 2)).collect()
    } else {
        args.threads.clone()
    };
    let seconds = Duration::from_secs_f64(args.seconds.max(0.01));
    let mut one = None;
    for &t in &threads {
        let best = (0..args.runs.max(1))
            .map(|_| puts_per_second(t.max(1), seconds))
            .fold(0.0f64, f64::max);
        let base = *one.get_or_insert(best / t.max(1) as f64);
        println!(
            "{}",
            serde_json::json!({
                "bench": "store_contention",
                "threads": t,
                "cores": cores,
                "puts_per_s": best.round(),
                "scaling": (best / base * 100.0).round() / 100.0,
            })
        );
    }
}

/// Puts per second over `threads` threads putting into one store for
/// `seconds`.
fn puts_per_second(threads: usize, seconds: Duration) -> f64 {
    let store = Arc::new(ObjectStore::new());
    let stop = Arc::new(AtomicBool::new(false));
    let puts = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (store, stop, puts, start) =
                (store.clone(), stop.clone(), puts.clone(), start.clone());
            std::thread::spawn(move || {
                let driver = TaskId::driver(JobId(t as u64 + 1));
                let mut done = 0u64;
                start.wait();
                let mut task_index = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let task = driver.child(task_index);
                    task_index += 1;
                    one_task(&store, task);
                    done += u64::from(PUTS_PER_TASK);
                }
                puts.fetch_add(done, Ordering::Relaxed);
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    std::thread::sleep(seconds);
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("a put thread panicked");
    }
    let elapsed = began.elapsed().as_secs_f64();
    puts.load(Ordering::Relaxed) as f64 / elapsed
}

/// One task's puts and end, as the host runs them for a guest.
fn one_task(store: &ObjectStore, task: TaskId) {
    let mut held = Vec::with_capacity(PUTS_PER_TASK as usize);
    for k in 0..PUTS_PER_TASK {
        let Some(id) = task.put_object(k) else { break };
        if !matches!(store.admit(1), Ok(None)) {
            break;
        }
        store.register_pending(id);
        store.acquire(&id);
        held.push(id);
        let Ok(value) = store.value(Codec::Json, b"0", Refs::default()) else {
            break;
        };
        store.seal(id, value);
    }
    for id in &held {
        store.release(id);
    }
}
