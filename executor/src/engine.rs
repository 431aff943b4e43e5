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

/// What of a node's configuration changes the code Cranelift emits: all a
/// compile needs to build an engine whose artifacts the node's engine
/// loads (wasmtime refuses an artifact whose compiler flags, tunables or
/// features differ: `Engine::precompile_compatibility_hash`). The
/// allocation strategy (pooling or not) is not part of it: it changes
/// none of the three (wasmtime 48, `HashedEngineCompileEnv`), which
/// `engine_digest` checks (tests in `compile/child.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodeSettings {
    /// [`NodeConfig::fuel_metering`].
    pub fuel_metering: bool,
    /// [`NodeConfig::memory_cow`].
    pub memory_cow: bool,
}

impl CodeSettings {
    /// The settings of `config`'s engine.
    pub fn of(config: &NodeConfig) -> Self {
        CodeSettings {
            fuel_metering: config.fuel_metering,
            memory_cow: config.memory_cow,
        }
    }

    /// The wasmtime configuration of an engine with these settings, before
    /// any allocation strategy.
    fn wasmtime_config(&self) -> Config {
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .consume_fuel(self.fuel_metering)
            // Zero-copy windows are mapped at fixed addresses of linear memory.
            .memory_may_move(false)
            .memory_init_cow(self.memory_cow)
            .cranelift_opt_level(wasmtime::OptLevel::Speed)
            .parallel_compilation(true);
        wasm
    }

    /// An engine with these settings and the on-demand allocator: what a
    /// compile process compiles with (it instantiates nothing).
    ///
    /// # Errors
    /// [`Error::Engine`] when wasmtime rejects the configuration.
    pub(crate) fn compile_engine(&self) -> Result<Engine> {
        Engine::new(&self.wasmtime_config()).map_err(|e| Error::Engine(format!("{e:#}")))
    }
}

/// A digest of what makes `engine`'s compiled artifacts loadable by
/// another engine (its `precompile_compatibility_hash`), as 16 hex digits:
/// names the on-disk cache's entries, and is checked by a compile process
/// against its own engine. Stable within one build of wray (Rust's
/// `DefaultHasher`), which is all either needs.
pub(crate) fn engine_digest(engine: &Engine) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Builds the node's engine.
///
/// # Errors
/// [`Error::Engine`] when wasmtime rejects the configuration (for example
/// when the pooling allocator cannot reserve its address space).
pub fn build_engine(config: &NodeConfig) -> Result<Engine> {
    let mut wasm = CodeSettings::of(config).wasmtime_config();
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

#[cfg(test)]
mod tests {
    use wasm_encoder::{
        CodeSection, ConstExpr, DataSection, ExportKind, ExportSection, Function, FunctionSection,
        Instruction, MemorySection, MemoryType, Module, TypeSection, ValType,
    };
    use wasmtime::{Instance, Store};

    use super::*;
    use crate::objects::arena::PAGE;
    use crate::windows::pagemap_entry;

    /// A core module with 8 MiB of memory, `wray` as its data at offset 0,
    /// and `fill(len)` writing `len` bytes of 7s from offset 0.
    fn filler() -> Vec<u8> {
        let mut types = TypeSection::new();
        types.ty().function([ValType::I32], []);
        let mut functions = FunctionSection::new();
        functions.function(0);
        let mut memories = MemorySection::new();
        memories.memory(MemoryType {
            minimum: 128,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        let mut exports = ExportSection::new();
        exports.export("fill", ExportKind::Func, 0);
        exports.export("memory", ExportKind::Memory, 0);
        let mut f = Function::new([]);
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I32Const(7));
        f.instruction(&Instruction::LocalGet(0));
        f.instruction(&Instruction::MemoryFill(0));
        f.instruction(&Instruction::End);
        let mut code = CodeSection::new();
        code.function(&f);
        let mut data = DataSection::new();
        data.active(0, &ConstExpr::i32_const(0), b"wray".iter().copied());
        let mut module = Module::new();
        module.section(&types);
        module.section(&functions);
        module.section(&memories);
        module.section(&exports);
        module.section(&code);
        module.section(&data);
        module.finish()
    }

    /// Whether the kernel has `PAGEMAP_SCAN` (Linux 6.7), with which
    /// wasmtime's reset finds the pages an instance wrote; without it the
    /// reset writes the first `keep_resident` bytes of every slot instead.
    fn pagemap_scan() -> bool {
        /// `struct pm_scan_arg` (linux/fs.h): 12 u64s.
        #[repr(C)]
        struct PmScanArg([u64; 12]);
        /// `_IOWR('f', 16, struct pm_scan_arg)`.
        const PAGEMAP_SCAN: u64 = (3 << 30) | (96 << 16) | ((b'f' as u64) << 8) | 16;
        let Ok(pagemap) = std::fs::File::open("/proc/self/pagemap") else {
            return false;
        };
        let mut arg = PmScanArg([0; 12]);
        arg.0[0] = std::mem::size_of::<PmScanArg>() as u64;
        use std::os::fd::AsRawFd;
        // SAFETY: an empty range (start = end = 0), no output vector.
        unsafe { libc::ioctl(pagemap.as_raw_fd(), PAGEMAP_SCAN as _, &mut arg) == 0 }
    }

    #[test]
    fn a_slot_forgets_the_pages_one_heavy_instance_left_resident() {
        let config = NodeConfig {
            max_instances: 4,
            ..NodeConfig::default()
        };
        let engine = build_engine(&config).unwrap();
        let module = wasmtime::Module::new(&engine, filler()).unwrap();
        // One instance writing `len` bytes: where its memory lies, and
        // what it found at offset 0.
        let run = |len: usize| {
            let mut store = Store::new(&engine, ());
            store.set_epoch_deadline(1);
            let instance = Instance::new(&mut store, &module, &[]).unwrap();
            let memory = instance.get_memory(&mut store, "memory").unwrap();
            let found: [u8; 4] = memory.data(&store)[..4].try_into().unwrap();
            let fill = instance
                .get_typed_func::<i32, ()>(&mut store, "fill")
                .unwrap();
            fill.call(&mut store, len as i32).unwrap();
            (memory.data_ptr(&store) as usize, found)
        };
        let light = 64 << 10;
        let heavy = 4 << 20;
        // The slot learns what its instances usually leave: 64 KiB.
        let (base, found) = run(light);
        assert_eq!(found, *b"wray");
        assert_eq!(run(light), (base, *b"wray"), "one slot, reused");
        // One instance writes 4 MiB; then a light one runs in the slot.
        assert_eq!(run(heavy), (base, *b"wray"));
        assert_eq!(run(light), (base, *b"wray"), "the image came back");
        // What the heavy one wrote past the light ones' 64 KiB is not kept
        // resident (wasmtime's reset would copy or zero every page of it
        // after every later instance): vendor/README.md, change 5.
        if !pagemap_scan() {
            eprintln!("no PAGEMAP_SCAN in this kernel: every reset writes 8 MiB, nothing learned");
            return;
        }
        let kept = (light..heavy)
            .step_by(PAGE)
            .filter(|offset| {
                pagemap_entry(base + offset).expect("pagemap readable") & (1 << 63) != 0
            })
            .count();
        assert_eq!(kept, 0, "pages of the heavy instance still resident");
    }
}
