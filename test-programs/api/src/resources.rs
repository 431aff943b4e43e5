//! Resources, limits and cancellation: fractional GPUs packed on unit ids,
//! infeasible requests, CPUs given back while blocked, per-task limits,
//! cancel and kill, profile spans.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wray::{ObjectRef, Options};

/// Milliseconds since the Unix epoch (the WASI wall clock).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Holds half a GPU (and no CPU) for `ms`; returns (GPU ids, start, end).
#[wray::remote(num_gpus = 0.5, num_cpus = 0)]
pub(crate) fn half_gpu(ms: u64) -> (Vec<u32>, u64, u64) {
    let start = now_ms();
    std::thread::sleep(Duration::from_millis(ms));
    (wray::get_gpu_ids(), start, now_ms())
}

/// Asks for more GPUs than any node has.
#[wray::remote(num_gpus = 4)]
pub(crate) fn four_gpus() -> u32 {
    0
}

/// Asks for a custom resource, one unit; returns the units it got.
#[wray::remote(resources = {"accelerator": 1}, num_cpus = 0.5)]
pub(crate) fn accelerated() -> Vec<(String, Vec<(u32, f64)>)> {
    wray::get_resource_ids()
}

/// A one-CPU task: the CPU units it holds.
#[wray::remote]
pub(crate) fn cpu_ids() -> Vec<(String, Vec<(u32, f64)>)> {
    wray::get_resource_ids()
}

/// Holds a whole GPU and one CPU; blocks in `get` on a one-CPU child (which
/// can only run because the CPU is given back), then reports its GPU ids
/// and when it ended.
#[wray::remote(num_gpus = 1)]
pub(crate) fn gpu_parent() -> (Vec<u32>, Vec<u32>, u64) {
    let before = wray::get_gpu_ids();
    let _ = crate::objects::sleep_ms.remote(300).get();
    (before, wray::get_gpu_ids(), now_ms())
}

/// Needs the GPU: returns when it started.
#[wray::remote(num_gpus = 1, num_cpus = 0)]
pub(crate) fn gpu_after() -> u64 {
    now_ms()
}

/// Grows past a declared 16 MiB memory limit.
#[wray::remote(max_memory = 16 << 20)]
pub(crate) fn small_memory() -> u64 {
    let v = vec![1u8; 32 << 20];
    std::hint::black_box(&v).len() as u64
}

/// Spins past a declared 200 ms time limit.
#[wray::remote(timeout_ms = 200)]
pub(crate) fn short_time() -> u64 {
    let mut n = 0u64;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// Blocks in `get` on a task that never ends; for cancel. (A task asleep
/// in a WASI call stops only when the call returns, so the child spins.)
#[wray::remote]
pub(crate) fn waits_long() -> i64 {
    crate::failures::spin.remote().get().unwrap_or(0)
}

/// Runs a profiled step.
#[wray::remote]
pub(crate) fn profiled() -> u64 {
    let _span = wray::profile("load");
    std::thread::sleep(Duration::from_millis(20));
    7
}

/// An actor that holds a GPU for its lifetime.
#[wray::actor]
pub struct GpuHolder {}

#[wray::actor(num_gpus = 1, num_cpus = 0)]
impl GpuHolder {
    pub fn new() -> Self {
        GpuHolder {}
    }

    pub fn ids(&self) -> Vec<u32> {
        wray::get_gpu_ids()
    }

    pub fn sleep(&self, ms: u64) -> u64 {
        std::thread::sleep(Duration::from_millis(ms));
        ms
    }
}

fn kind<T>(r: wray::Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(e) => e.kind().to_string(),
    }
}

fn message<T>(r: wray::Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    }
}

/// `gpu_packing` (node with 2 GPUs): five half-GPU tasks; four run at once,
/// two per GPU, and the fifth starts only when one of them has ended.
pub(crate) fn gpu_packing() -> wray::Result<()> {
    let refs: Vec<ObjectRef<(Vec<u32>, u64, u64)>> = (0..5).map(|_| half_gpu.remote(400)).collect();
    let mut runs = wray::get_all(&refs)?;
    runs.sort_by_key(|(_, start, _)| *start);
    let mut first: Vec<u32> = runs[..4]
        .iter()
        .flat_map(|(ids, _, _)| ids.clone())
        .collect();
    first.sort_unstable();
    println!("first four on {first:?}");
    let first_end = runs[..4].iter().map(|(_, _, end)| *end).min().unwrap_or(0);
    let overlap = runs[..4].iter().all(|(_, start, _)| *start < first_end);
    println!("four at once {overlap}");
    println!("fifth waited {}", runs[4].1 + 5 >= first_end);
    println!("fifth on one gpu {}", runs[4].0.len() == 1);
    Ok(())
}

/// `infeasible` (node with 2 GPUs and accelerator = 1): requests no node can
/// meet fail at once, naming the request and the node's totals.
pub(crate) fn infeasible() -> wray::Result<()> {
    println!("{}", message(four_gpus.remote().get()));
    let fractional = half_gpu.options(Options::new().num_gpus(1.5)).remote(1);
    println!("{}", message(fractional.get()));
    let tpu = cpu_ids
        .options(Options::new().resource("tpu", 1.0))
        .remote();
    println!("{}", kind(tpu.get()));
    let bad = cpu_ids.options(Options::new().num_cpus(-1.0)).remote();
    println!("{}", kind(bad.get()));
    // Feasible ones still run.
    let ids = accelerated.remote().get()?;
    println!("accelerator {ids:?}");
    Ok(())
}

/// `blocked` (1 CPU, 1 GPU): a GPU task blocked in `get` gives its CPU to
/// its child but keeps its GPU; a GPU actor holds its GPU for its life.
pub(crate) fn blocked() -> wray::Result<()> {
    let parent = gpu_parent.remote();
    std::thread::sleep(Duration::from_millis(100));
    let after = gpu_after.remote();
    let (before, still, parent_end) = parent.get()?;
    println!("parent gpus {before:?} {still:?}");
    println!("gpu waited for parent {}", after.get()? + 5 >= parent_end);
    let holder = GpuHolder::remote();
    println!("actor gpus {:?}", holder.ids().remote().get()?);
    // The actor holds the only GPU: a GPU task waits until it is killed.
    let waiting = gpu_after.remote();
    let (ready, _) = wray::wait(&[waiting.clone()], 1, Some(Duration::from_millis(300)));
    println!("gpu task waits for the actor {}", ready.is_empty());
    println!("killed {}", wray::kill(&holder));
    println!("again {}", wray::kill(&holder));
    println!("after kill {}", kind(holder.ids().remote().get()));
    println!("gpu task ran {}", waiting.get().is_ok());
    println!("cpu {:?}", cpu_ids.remote().get()?);
    Ok(())
}

/// `limits`: each limit, declared or per call, ends the task with an error
/// naming it.
pub(crate) fn limits() -> wray::Result<()> {
    println!("{}", message(small_memory.remote().get()));
    println!("{}", message(short_time.remote().get()));
    let quick = crate::failures::spin
        .options(Options::new().timeout(Duration::from_millis(100)))
        .remote();
    println!("{}", kind(quick.get()));
    let roomy = small_memory
        .options(Options::new().max_memory(64 << 20))
        .remote();
    println!("override {}", roomy.get()?);
    Ok(())
}

/// `fuel` (node with fuel metering): a fuel limit stops a spinning task.
pub(crate) fn fuel() -> wray::Result<()> {
    let r = crate::failures::spin
        .options(Options::new().fuel(1_000_000))
        .remote();
    println!("{}", message(r.get()));
    Ok(())
}

/// `cancel` (1 CPU): cancel a queued task, a running one, one blocked in
/// `get`, and a parent with its children.
pub(crate) fn cancel() -> wray::Result<()> {
    let running = crate::failures::spin.remote();
    let queued = crate::objects::sleep_ms.remote(1);
    std::thread::sleep(Duration::from_millis(100));
    println!("cancel queued {}", wray::cancel(&queued, false, false));
    println!("queued {}", kind(queued.get()));
    println!("cancel running {}", wray::cancel(&running, true, false));
    println!("running {}", kind(running.get()));
    let blocked = waits_long.remote();
    std::thread::sleep(Duration::from_millis(200));
    let start = now_ms();
    println!("cancel blocked {}", wray::cancel(&blocked, false, true));
    println!("blocked {}", kind(blocked.get()));
    println!("quick {}", now_ms() - start < 5_000);
    println!("cancel done {}", wray::cancel(&queued, false, false));
    println!("then {}", crate::objects::sleep_ms.remote(1).get()?);
    let p = profiled.remote().get()?;
    println!("profiled {p}");
    Ok(())
}

/// Instance-wide counters of the reuse hooks (each instance has its own).
static INITS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static REINITS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static TASKS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// `init` hook of this component (see `wray::export!`).
pub(crate) fn on_init() -> Result<(), String> {
    INITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// `reinit` hook of this component.
pub(crate) fn on_reinit() -> Result<(), String> {
    REINITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

fn counts() -> (u32, u32, u32) {
    use std::sync::atomic::Ordering::Relaxed;
    let tasks = TASKS.fetch_add(1, Relaxed) + 1;
    (INITS.load(Relaxed), REINITS.load(Relaxed), tasks)
}

/// Runs on a reused instance: (inits, reinits, tasks) of its instance.
#[wray::remote(reuse)]
pub(crate) fn reused() -> (u32, u32, u32) {
    counts()
}

thread_local! {
    /// Refs `reused_put` keeps (its instance then holds their objects).
    static KEPT: std::cell::RefCell<Vec<wray::ObjectRef<u64>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// On a reused instance: puts `x` and reads it back, keeping the ref when
/// `keep`, and cancels a child it submitted (which only a task bound to
/// its own job may); (inits, reinits, tasks) of its instance, the value
/// read, and 1 if the cancel was taken.
#[wray::remote(reuse)]
pub(crate) fn reused_put(x: u64, keep: bool) -> wray::Result<(u32, u32, u32, u64, u32)> {
    let r = wray::put(&x);
    let v = r.get()?;
    if keep {
        KEPT.with(|k| k.borrow_mut().push(r));
    }
    let child = crate::objects::sleep_ms.remote(60_000);
    let cancelled = wray::cancel(&child, true, false);
    let (i, re, t) = counts();
    Ok((i, re, t, v, u32::from(cancelled)))
}

/// The same on a fresh instance each time.
#[wray::remote]
pub(crate) fn fresh() -> (u32, u32, u32) {
    counts()
}

/// Pages of [`IMAGE_PAGES`] and [`ZERO_PAGES`]: 80 each, so that writing
/// every other page leaves 40 separate runs of dirty pages in each, more
/// than the 32 a pooling slot's reset used to look at (vendor/README.md).
const SCATTER_PAGES: usize = 80;
const PAGE: usize = 4096;

/// Memory from the component's data segment (the memory image): sevens.
static IMAGE_PAGES: [std::sync::atomic::AtomicU8; SCATTER_PAGES * PAGE] =
    [const { std::sync::atomic::AtomicU8::new(7) }; SCATTER_PAGES * PAGE];
/// Memory past the image (zero-initialized): zeros.
static ZERO_PAGES: [std::sync::atomic::AtomicU8; SCATTER_PAGES * PAGE] =
    [const { std::sync::atomic::AtomicU8::new(0) }; SCATTER_PAGES * PAGE];

/// On a fresh instance: counts the bytes of [`IMAGE_PAGES`] and
/// [`ZERO_PAGES`] that differ from what the component starts with, then
/// writes every other page of both (`mark` at a few places in each page).
#[wray::remote]
pub(crate) fn scatter_writes(mark: u8) -> (u32, u32) {
    use std::sync::atomic::Ordering::Relaxed;
    let changed = |pages: &[std::sync::atomic::AtomicU8], pristine: u8| {
        let n = pages.iter().filter(|b| b.load(Relaxed) != pristine).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    };
    let seen = (changed(&IMAGE_PAGES, 7), changed(&ZERO_PAGES, 0));
    for page in (0..SCATTER_PAGES).step_by(2) {
        for offset in [0, 1000, PAGE - 1] {
            IMAGE_PAGES[page * PAGE + offset].store(mark, Relaxed);
            ZERO_PAGES[page * PAGE + offset].store(mark, Relaxed);
        }
    }
    seen
}

/// `fresh_pages` (1 CPU): five plain tasks in a row, each writing pages
/// scattered over its memory; each sees the memory as the component
/// starts, none of the last task's writes.
pub(crate) fn fresh_pages() -> wray::Result<()> {
    for mark in 1..=5u8 {
        let (image, zeros) = scatter_writes.remote(mark).get()?;
        print!("{image}/{zeros} ");
    }
    println!();
    Ok(())
}

/// `reuse` (1 CPU): ten reusable tasks in a row share one instance, set up
/// once; ten plain ones each get a fresh instance.
pub(crate) fn reuse() -> wray::Result<()> {
    for _ in 0..10 {
        let (i, r, t) = reused.remote().get()?;
        print!("{i}/{r}/{t} ");
    }
    println!();
    for _ in 0..3 {
        let (i, r, t) = fresh.remote().get()?;
        print!("{i}/{r}/{t} ");
    }
    println!();
    Ok(())
}
