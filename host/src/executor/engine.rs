//! The wasmtime engine of a node, and the epoch ticker that bounds task time.
//!
//! One [`wasmtime::Engine`] per node, built once: Cranelift, the component
//! model, epoch interruption (time limits) and, by default, the pooling
//! instance allocator (slots reserved up front so a fresh instance per task
//! costs microseconds, DESIGN.md "Instances").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::bounds::EPOCH_TICK;
use crate::config::NodeConfig;
use crate::error::{Error, Result};

/// Pooling slots kept warm (not decommitted) for reuse.
pub const WARM_SLOTS: u32 = 64;

/// Builds the node's engine.
///
/// # Errors
/// [`Error::Engine`] when wasmtime rejects the configuration (for example
/// when the pooling allocator cannot reserve its address space).
pub fn build_engine(config: &NodeConfig) -> Result<Engine> {
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(config.fuel_metering)
        // Zero-copy windows are mapped at fixed addresses of linear memory.
        .memory_may_move(false)
        .memory_init_cow(config.memory_cow)
        .cranelift_opt_level(wasmtime::OptLevel::Speed)
        .parallel_compilation(true);
    if config.pooling {
        let n = config.max_instances;
        let mut pool = PoolingAllocationConfig::new();
        // A cargo-component guest is a few core instances (the program, the
        // WASI adapter, shims) with up to two memories and a few tables.
        // Every task's call runs on a fiber stack of its own (async).
        pool.total_stacks(n)
            .total_component_instances(n)
            .total_core_instances(n.saturating_mul(8))
            .total_memories(n.saturating_mul(2))
            .total_tables(n.saturating_mul(4))
            .max_memory_size(usize::try_from(config.task_memory_limit).unwrap_or(usize::MAX))
            .max_component_instance_size(1 << 20)
            .max_core_instance_size(1 << 20)
            .max_unused_warm_slots(WARM_SLOTS)
            // Reset a reused slot's first pages with memset (Linux: only the
            // dirty ones) instead of madvise: the madvise TLB shootdowns
            // halved trivial-task throughput (22k -> 38k tasks/s measured
            // with test-programs/microbench on 2 cores).
            .linear_memory_keep_resident(config.keep_resident)
            .table_keep_resident(config.keep_resident)
            // ... and only the pages an instance wrote (Linux 6.7's
            // PAGEMAP_SCAN, where the kernel has it): resetting the whole
            // 2 MiB with memset took 40% of a trivial task's time (perf,
            // "multi client tasks async", 2 cores). The scan covers every
            // page written, not only the first 32 runs of them (the
            // vendored wasmtime, vendor/README.md): a fresh CPython
            // instance then runs 3-4x as fast.
            .pagemap_scan(wasmtime::Enabled::Auto);

        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Engine::new(&wasm).map_err(|e| Error::Engine(format!("{e:#}")))
}

/// A thread that advances the engine's epoch every [`EPOCH_TICK`]; stops
/// when dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts ticking `engine`.
    ///
    /// # Errors
    /// [`Error::Engine`] if the thread cannot be spawned.
    pub fn start(engine: Engine) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wray-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .map_err(|e| Error::Engine(format!("cannot start the epoch thread: {e}")))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
