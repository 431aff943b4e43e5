//! Every bound a guest (or, later, a request) meets, in one place.
//!
//! Each number a guest supplies (a size, an offset, a count, an id) is
//! checked against these before it sizes an allocation, a mapping or a loop,
//! and each per-task or per-node table has a bound here. Going past one is a
//! clear error (or, where the WIT has no error channel, a trap) for the task
//! that tried; the node and every other task go on. The node's own limits
//! (time, memory, fuel, instances, actors, pending tasks) are in
//! `NodeConfig` (in `wray-config`), whose `validate` checks their ranges
//! (those of CPUs, GPUs, custom resources, task memory, store and time
//! limits are below). A few bounds live beside the table they bound: the
//! task table's errors (`scheduler/src/task_table/rows.rs`), dead actors
//! (`scheduler/src/actor_table.rs`), spill files (`objects/src/store.rs`),
//! an instance's table elements (`executor/src/state.rs`).

pub use wray_control_plane::{MAX_PUTS, MAX_RETURNS};

/// Most windows (objects mapped over the guest's memory by `map`, plus
/// objects being built in place by `create`) one instance may have at once.
/// Each is a kernel mapping; the whole process may have only
/// `vm.max_map_count` of them (65,530 by default), and the host's own
/// allocations need their share.
pub const MAX_WINDOWS_PER_INSTANCE: usize = 1024;

/// Most objects one instance may be creating (`reserve`/`create` not yet
/// sealed) at once.
pub const MAX_CREATING_PER_INSTANCE: usize = 1024;

/// Most object ids one instance may hold at once (its `ObjectRef`s: puts,
/// submissions' returns, refs received). Past it the task traps.
pub const MAX_HOLDS_PER_INSTANCE: usize = 1 << 22;

/// Most spans (profile spans and blocked `get`s) the task table keeps per
/// task; later ones are counted, not kept.
pub const MAX_SPANS_PER_TASK: usize = 10_000;

/// Finished tasks the task table keeps (the oldest are dropped first; the
/// counts by state stay exact). Ray's GCS keeps as many task events:
/// `RAY_task_events_max_num_task_in_gcs`, 100,000 by default
/// (`ray/src/ray/common/ray_config_def.h`). At about 170 bytes a record,
/// 17 MB.
pub const MAX_FINISHED_TASKS: usize = 100_000;

/// Spans (profile spans and blocked `get`s) of finished tasks the task
/// table keeps, all tasks together (the oldest are dropped first). 48 bytes
/// each plus a name not shared (at most [`MAX_SPAN_NAME`] bytes): at most
/// about 30 MB.
pub const MAX_FINISHED_SPANS: usize = 100_000;

/// Distinct function names, resource requests and span names the task
/// table shares among its finished records (each kind); past it a record
/// keeps a copy of its own (and is dropped with it).
pub const MAX_TASK_LABELS: usize = 4096;

/// Longest profile-span name kept, in bytes (longer ones are cut).
pub const MAX_SPAN_NAME: usize = 256;

/// The longest actor name or class a guest may pass to `get-actor`, and
/// the longest class name or component hash a peer's actor reference may
/// carry, in bytes (the actor directory's rules are narrower: names of at
/// most 128 bytes, classes of at most 256).
pub const MAX_ACTOR_NAME: usize = 256;

/// Longest guest log line written, in bytes (longer ones are cut).
pub const MAX_LOG_LINE: usize = 64 << 10;

/// Most functions, actor classes and methods a component may describe.
pub const MAX_FUNCTIONS: usize = 10_000;

/// Longest function, class or method name a component may describe, in
/// bytes.
pub const MAX_NAME: usize = 1024;

/// Most parameters one function or method may declare in `describe`.
pub const MAX_PARAMS: usize = 1024;

/// Most bytes of one JSON Schema in `describe` (a generous bound: schemars'
/// schema of a nested struct is a few KiB).
pub const MAX_SCHEMA: usize = 256 << 10;

/// Longest task-error message kept, in bytes (longer ones are cut, with a
/// note of how much): a guest's message is otherwise bounded only by its
/// memory, and the node keeps the last
/// `MAX_ERRORS` (the scheduler's task table) errors. 16 KiB
/// holds a deep Python traceback.
pub const MAX_ERROR_MESSAGE: usize = 16 << 10;

/// Most errors in one task error's cause chain (`causes`); a longer chain
/// keeps its nearest entries. Ray's `RayTaskError` has no bound; 16 covers
/// any tree of tasks a person reads.
pub const MAX_CAUSES: usize = 16;

/// Most errors a task's `get` calls returned that the node remembers for
/// the task (the ones a guest may name as the cause of its own error); the
/// oldest are forgotten first.
pub const MAX_SEEN_ERRORS: usize = 16;

/// The share of `vm.max_map_count` the windows of all instances of a node
/// may use (a quarter): each window can split one kernel mapping into three,
/// and the host's allocator, stacks and pooling slots need the rest.
pub const WINDOWS_SHARE_OF_MAP_COUNT: usize = 4;

/// Most worker threads of a node blocked in `get`/`wait` (or a mapping call
/// waiting for its object) at once. The worker pool runs one thread per
/// CPU slot plus one replacement per blocked worker (a blocked task gives
/// its CPU back, and its slot's next task needs a thread), so a node runs
/// at most `num_cpus + MAX_BLOCKED_WORKERS` worker threads (the same extra
/// threads also run light jobs: tasks holding less than one CPU, actor
/// calls); a wait past it fails its task with a clear error instead of
/// blocking a thread nothing would replace (see `resources/src/worker_pool.rs`). 1,024: a blocked task also keeps
/// its instance, and a node has 1,000 instance slots by default
/// (`max_instances`), so the slots, not this bound, stop a fork bomb first;
/// 1,024 threads cost 2 GiB of stack address space (Rust's 2 MiB per
/// thread, little of it resident) and stay far below the kernel's
/// `threads-max`.
pub const MAX_BLOCKED_WORKERS: usize = 1024;

/// Most tasks of a node parked in a wait at once (blocked in `get`/`wait`,
/// a mapping call waiting for its object, or a WASI sleep), holding no
/// thread: the worker pool polls each task's future and parks it while it
/// waits (`resources/src/worker_pool/suspend.rs`). A parked task keeps its
/// instance and its fiber stack, so what bounds them is memory, through
/// the node's instance slots (`max_instances`, at most 100,000) and its
/// guest memory budget; this bound only matches the largest
/// `max_instances`. A wait past it fails its task, as one past
/// [`MAX_BLOCKED_WORKERS`] does.
pub const MAX_SUSPENDED_TASKS: usize = 100_000;

/// Most extra worker threads (beyond the CPU slots) that light tasks (less
/// than one CPU each) share: a light task the pool polls holds a thread
/// only while it computes, so 10,000 sleeping tasks of 0.0001 CPU need no
/// thread each; more light tasks computing at once than this take turns
/// (queued, first come first served). 64: many times the CPUs of the
/// machines measured (2 to 16), far below [`MAX_BLOCKED_WORKERS`].
pub const MAX_LIGHT_TASK_THREADS: usize = 64;

/// Most CPUs a node may be given (`--num-cpus`).
pub const MAX_CPUS: usize = 4096;

/// Most GPUs a node may be given (`--num-gpus`).
pub const MAX_GPUS: u32 = 1024;

/// Most units of one custom resource (`--resources`): every unit is tracked
/// on its own, with an id.
pub const MAX_CUSTOM_UNITS: f64 = 65_536.0;

/// Most custom resources a node may have.
pub const MAX_CUSTOM_RESOURCES: usize = 256;

/// Largest per-task memory limit: a wasm32 memory is at most 4 GiB.
pub const MAX_TASK_MEMORY: u64 = 4 << 30;

/// Largest shared-memory object store: 16 TiB (the file system under it
/// must also have room, checked when the node starts).
pub const MAX_OBJECT_STORE: u64 = 16 << 40;

/// Longest time limit a task, actor call or driver may be given: one year.
pub const MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

/// Most component names a node may be given room for
/// (`NodeConfig::max_components`, `--max-components`).
pub const MAX_COMPONENTS: usize = 100_000;

/// Most versions of one name a node may keep loaded
/// (`NodeConfig::max_versions`, `--max-versions`): as many as the function
/// table keeps ([`MAX_VERSIONS_KEPT`](wray_control_plane::MAX_VERSIONS_KEPT)).
pub const MAX_VERSIONS: usize = wray_control_plane::MAX_VERSIONS_KEPT;

/// Largest budget of component bytes or compiled code a node may be given
/// (`--max-component-mib`, `--max-compiled-mib`): 1 TiB.
pub const MAX_COMPONENT_MEMORY: u64 = 1 << 40;

/// Smallest budget of component bytes or compiled code (1 MiB).
pub const MIN_COMPONENT_MEMORY: u64 = 1 << 20;

/// Largest code a component may have, all its modules together, as a node
/// may be told to accept (`--max-code-mib`): the largest component file.
pub const MAX_CODE_BYTES: u64 = wray_control_plane::MAX_COMPONENT_BYTES;

/// Longest compile time limit (`--compile-timeout`): one hour.
pub const MAX_COMPILE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Most compiles a node runs at once (`NodeConfig::compile_slots`).
pub const MAX_COMPILE_SLOTS: usize = 64;

/// Largest node-wide budget of guest linear memory (`--guest-memory`):
/// 16 TiB, as the object store.
pub const MAX_GUEST_MEMORY: u64 = 16 << 40;

/// `vm.max_map_count` (65,530 when it cannot be read).
pub fn max_map_count() -> usize {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65_530)
}

/// The soft limit on open files (`RLIMIT_NOFILE`; 1,024 when it cannot be
/// read).
pub fn open_files_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit the kernel fills in.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        1024
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary, then adds
/// a short note of how many bytes were cut (so the result may pass `max` by
/// that note's length).
pub fn truncate(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("… ({cut} bytes cut)"));
    text
}

/// How often the epoch advances: the resolution of task time limits, and
/// the shortest one (`--task-timeout`, `--driver-timeout`).
pub const EPOCH_TICK: std::time::Duration = std::time::Duration::from_millis(10);

/// Bytes of output one task keeps (stdout and stderr together): 64 KiB.
/// The rest is counted (`wray_api::TaskLogs::dropped`) and dropped.
pub const TASK_OUTPUT_BYTES: usize = 64 << 10;

/// The largest working-directory package a node may be set to take, in
/// bytes (`--max-working-dir-mib`): 16 GiB.
pub const MAX_WORKING_DIR_BYTES: u64 = 16 << 30;

/// The largest working-directory cache a node may be set to keep, in
/// bytes (`--working-dir-cache-mib`): 16 TiB.
pub const MAX_WORKING_DIR_CACHE: u64 = 16 << 40;

/// Tasks whose output the node keeps at most: the last 4,096 that wrote.
pub const MAX_TASK_OUTPUTS: usize = 4096;

/// Bytes of output the node keeps at most, all tasks together: 16 MiB
/// (256 tasks at their bound).
pub const MAX_TASK_OUTPUTS_BYTES: usize = 16 << 20;

/// What one object costs the host besides its value's bytes, in bytes,
/// charged to the inline budget from its registration to its freeing
/// (each object, pending or sealed, whatever its value and wherever that
/// lives), so that many small objects meet the same bound as many bytes.
///
/// Its parts on x86_64 with glibc, at their worst (both hash tables just
/// grown, at 7/16 of their buckets): the store's table entry (an
/// `ObjectId` and its slot, 56 bytes and a control byte: 130), the sealed
/// object (`Arc<Object>`: a 112-byte chunk), a small value's chunk of its
/// own (16 bytes of header and rounding beyond its bytes, which are
/// charged apart), and the holder's set entry (an `ObjectId` and a control
/// byte: 48). Measured with `mallinfo2` on 229,377 held `i64`s
/// (`small_objects_cost_what_the_store_charges` in
/// `objects/src/store/tests.rs`): 337 bytes each with the value's 24,
/// 262 at 200,000 (tables fuller).
pub const OBJECT_OVERHEAD: usize = 320;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("abc".into(), 3), "abc");
        assert_eq!(truncate("abcdef".into(), 3), "abc… (3 bytes cut)");
        // "é" is two bytes: a cut inside it moves back before it.
        assert_eq!(truncate("aé".into(), 2), "a… (2 bytes cut)");
    }

    #[test]
    fn system_limits_are_read() {
        assert!(max_map_count() > 1000);
        assert!(open_files_limit() > 16);
    }
}
