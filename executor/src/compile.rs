//! What a deploy costs, bounded: a component is first looked at cheaply
//! ([`inspect`]: is it a component, which wray parts it exports, what it
//! imports, how much code it has, read from its sections with
//! `wasmparser`, nothing compiled), and only then compiled, on the node's
//! [`CompilePool`]: a few threads of its own (never a runtime's), each
//! compile under a time limit.
//!
//! Cranelift cannot be interrupted inside a process: a node with a
//! [`CompileCommand`](crate::config::CompileCommand) (a `wray` binary) compiles
//! in a child process, killed at the compile's time limit, its slot free
//! again at once ([`process`]; the child's side is [`child`]). Without one
//! (a program embedding a node that is not `wray`: tests, benchmarks), the
//! compile runs on the compile thread: past its limit it is given up on
//! (the deploy fails naming the limit), but its thread runs to the end and
//! keeps its slot until then, so hostile components hold at most the
//! pool's slots, never more threads.

pub mod child;
pub mod process;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmparser::{Chunk, ComponentExternalKind, Parser, Payload};

use crate::error::{Error, Result};
use crate::exports::{ACTORS, DRIVER, FUNCTIONS, METADATA};

/// Import names a wray node provides: WASI and the `wray:runtime`
/// interfaces (see `component::linker`).
const PROVIDED: [&str; 2] = ["wasi:", "wray:runtime/"];

/// Most names of a component's exports quoted in an error.
const NAMES_SHOWN: usize = 16;

/// What [`inspect`] read of a component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Bytes of code: the code sections of all its core modules.
    pub code_bytes: u64,
    /// The names of its exports (the first [`NAMES_SHOWN`]).
    pub exports: Vec<String>,
}

/// Checks what can be checked of component `name` without compiling it:
/// it is a component ([`check_header`](super::component::check_header)),
/// its sections parse, it exports a wray part (`functions`, `actors` or
/// `driver`, as instances; `metadata` beside the first two), it imports
/// only WASI and `wray:runtime`, and its core modules have at most
/// `max_code` bytes of code. Reads section headers only (code sections
/// are skipped): microseconds, whatever the size.
///
/// # Errors
/// [`Error::Component`] saying what is wrong: what it lacks, what it
/// imports that no node provides, how much code it has.
pub fn inspect(name: &str, bytes: &[u8], max_code: u64) -> Result<Shape> {
    let refuse = |reason: String| Error::Component {
        name: name.to_string(),
        reason,
    };
    super::component::check_header(name, bytes)?;
    let invalid = |e: wasmparser::BinaryReaderError| refuse(format!("not a valid component: {e}"));
    let mut parser = Parser::new(0);
    let mut outer: Vec<Parser> = Vec::new();
    let mut data = bytes;
    let mut shape = Shape {
        code_bytes: 0,
        exports: Vec::new(),
    };
    let mut parts: Vec<&'static str> = Vec::new();
    let mut exports = 0usize;
    loop {
        let (consumed, payload) = match parser.parse(data, true).map_err(invalid)? {
            Chunk::Parsed { consumed, payload } => (consumed, payload),
            Chunk::NeedMoreData(_) => {
                return Err(refuse(
                    "not a valid component: it ends inside a section".into(),
                ))
            }
        };
        let top = outer.is_empty();
        let mut skip = 0u64;
        match payload {
            Payload::ComponentImportSection(reader) if top => {
                for import in reader {
                    let import = import.map_err(invalid)?;
                    let import_name = import.name.name;
                    if !PROVIDED.iter().any(|p| import_name.starts_with(p)) {
                        return Err(refuse(format!(
                            "it imports {} `{}`, which no wray node provides: a component \
                             may import only WASI (`wasi:`) and `wray:runtime` interfaces",
                            import.ty.kind().desc(),
                            cut(import_name)
                        )));
                    }
                }
            }
            Payload::ComponentExportSection(reader) if top => {
                for export in reader {
                    let export = export.map_err(invalid)?;
                    let export_name = export.name.name;
                    exports += 1;
                    if shape.exports.len() < NAMES_SHOWN {
                        shape.exports.push(cut(export_name));
                    }
                    let Some(part) = [METADATA, FUNCTIONS, ACTORS, DRIVER]
                        .into_iter()
                        .find(|p| *p == export_name)
                    else {
                        continue;
                    };
                    if export.kind != ComponentExternalKind::Instance {
                        return Err(refuse(format!(
                            "its export `{part}` is a {}, not an instance of wray:runtime 0.1.0",
                            export.kind.desc()
                        )));
                    }
                    parts.push(part);
                }
            }
            Payload::CodeSectionStart { size, .. } => {
                shape.code_bytes = shape.code_bytes.saturating_add(u64::from(size));
                parser.skip_section();
                skip = u64::from(size);
            }
            Payload::ModuleSection { parser: inner, .. }
            | Payload::ComponentSection { parser: inner, .. } => {
                outer.push(std::mem::replace(&mut parser, inner));
            }
            Payload::End(_) => match outer.pop() {
                Some(up) => parser = up,
                None => break,
            },
            _ => {}
        }
        let skip = usize::try_from(skip).unwrap_or(usize::MAX);
        data = consumed
            .checked_add(skip)
            .and_then(|end| data.get(end..))
            .ok_or_else(|| refuse("not a valid component: a section runs past its end".into()))?;
    }
    let has = |part| parts.contains(&part);
    if !has(FUNCTIONS) && !has(ACTORS) && !has(DRIVER) {
        let mut names: Vec<String> = shape.exports.iter().map(|n| format!("`{n}`")).collect();
        if exports > names.len() {
            names.push(format!("and {} more", exports - names.len()));
        }
        if names.is_empty() {
            names.push("nothing".to_string());
        }
        return Err(refuse(format!(
            "it exports none of `{FUNCTIONS}`, `{ACTORS}` and `{DRIVER}` (it exports {}): \
             build it with a wray SDK against wit/runtime.wit",
            names.join(", ")
        )));
    }
    if !has(METADATA) && (has(FUNCTIONS) || has(ACTORS)) {
        return Err(refuse(format!(
            "it exports remote functions or actors but not `{METADATA}` (describe), \
             so the node cannot know their names"
        )));
    }
    if shape.code_bytes > max_code {
        return Err(refuse(format!(
            "it has {} bytes of code, more than the {max_code} one component may have \
             (--max-code-mib {}): compiling it would hold a compile slot too long",
            shape.code_bytes,
            max_code >> 20
        )));
    }
    Ok(shape)
}

/// `name`, cut to 128 bytes for a message.
fn cut(name: &str) -> String {
    crate::bounds::truncate(name.to_string(), 128)
}

/// Counters of a node's compiles since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompileStats {
    /// Compiles the pool runs at once.
    pub slots: usize,
    /// Compiles started (one served from the disk cache included).
    pub started: u64,
    /// Deploys waiting for a compile slot now.
    pub waiting: usize,
    /// Compiles running now, those given up on past their time limit
    /// included (until Cranelift returns).
    pub running: usize,
    /// The most compiles that ran at once.
    pub peak_running: usize,
    /// Compiles given up on past their time limit.
    pub timed_out: u64,
    /// Of those, compiles stopped at their time limit: their compile
    /// process killed (a node with a compile program).
    pub killed: u64,
    /// Compiles served from the disk cache of compiled components.
    pub cache_hits: u64,
    /// Components refused by [`inspect`], never compiled.
    pub refused_before_compile: u64,
}

#[derive(Default)]
struct Counters {
    started: AtomicU64,
    waiting: AtomicUsize,
    running: AtomicUsize,
    peak_running: AtomicUsize,
    timed_out: AtomicU64,
    killed: AtomicU64,
    cache_hits: AtomicU64,
    refused: AtomicU64,
}

/// What a compile tells its pool's counters (from its compile thread).
#[derive(Clone)]
pub struct CompileEvents(Arc<Counters>);

impl CompileEvents {
    /// A compile process was killed at its time limit.
    pub fn killed(&self) {
        self.0.killed.fetch_add(1, Ordering::Relaxed);
    }

    /// A compile was served from the disk cache.
    pub(crate) fn cache_hit(&self) {
        self.0.cache_hits.fetch_add(1, Ordering::Relaxed);
    }
}

/// Why [`CompilePool::run`] gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCompiled {
    /// Every slot stayed busy for `waited`.
    Busy {
        /// The pool's slots.
        slots: usize,
        /// How long it waited.
        waited: Duration,
    },
    /// The compile ran past `limit` (its thread goes on, in its slot).
    TimedOut {
        /// The time limit.
        limit: Duration,
    },
    /// The compile panicked, or its thread could not start (a host bug or
    /// a system limit).
    Failed(String),
}

/// The node's compile threads (see the module docs).
pub struct CompilePool {
    slots: Arc<tokio::sync::Semaphore>,
    size: usize,
    counters: Arc<Counters>,
}

/// A compile in its slot: counted as running until dropped (its thread
/// ends, or could not start).
struct Running {
    counters: Arc<Counters>,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.counters.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A deploy waiting for a slot: counted until dropped (it got one, gave
/// up, or its future was dropped).
struct Waiting(Arc<Counters>);

impl Waiting {
    fn new(counters: &Arc<Counters>) -> Self {
        counters.waiting.fetch_add(1, Ordering::AcqRel);
        Waiting(counters.clone())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Sizes and names the process's Cranelift threads (rayon's global pool,
/// which wasmtime's parallel compilation uses) once, before the first
/// compile: half the machine's cores, at least 1 (so compiles leave the
/// other half to tasks), named `cranelift-N` (unnamed, they would take the
/// name of whichever thread compiled first). Shared by every node of the
/// process and kept for its life, as rayon's pool is.
pub(crate) fn init_cranelift_threads() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads((cores / 2).max(1))
            .thread_name(|i| format!("cranelift-{i}"))
            .build_global();
        if let Err(e) = built {
            tracing::debug!("Cranelift's threads were set up already: {e}");
        }
    });
}

impl CompilePool {
    /// A pool running `slots` compiles at once.
    pub fn new(slots: usize) -> Self {
        init_cranelift_threads();
        let size = slots.max(1);
        CompilePool {
            slots: Arc::new(tokio::sync::Semaphore::new(size)),
            size,
            counters: Arc::default(),
        }
    }

    /// The pool's counters now.
    pub fn stats(&self) -> CompileStats {
        let c = &self.counters;
        CompileStats {
            slots: self.size,
            started: c.started.load(Ordering::Relaxed),
            waiting: c.waiting.load(Ordering::Relaxed),
            running: c.running.load(Ordering::Relaxed),
            peak_running: c.peak_running.load(Ordering::Relaxed),
            timed_out: c.timed_out.load(Ordering::Relaxed),
            killed: c.killed.load(Ordering::Relaxed),
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            refused_before_compile: c.refused.load(Ordering::Relaxed),
        }
    }

    /// What a compile of this pool tells its counters.
    pub fn events(&self) -> CompileEvents {
        CompileEvents(self.counters.clone())
    }

    /// Counts a component refused before compiling.
    pub fn refused(&self) {
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs `compile` on a thread of its own once a slot is free (waiting
    /// at most `wait`), and waits for it at most `limit` from its start;
    /// `compile` is given that deadline (a compile process is killed at
    /// it). Needs a tokio runtime with timers (the caller's).
    ///
    /// # Errors
    /// [`NotCompiled`] saying why there is no result.
    ///
    /// # Cancel safety
    /// Dropping the future before the compile starts gives its slot back;
    /// after, the compile runs to its end in its slot, its result dropped.
    pub async fn run<T: Send + 'static>(
        &self,
        wait: Duration,
        limit: Duration,
        compile: impl FnOnce(Instant) -> T + Send + 'static,
    ) -> std::result::Result<T, NotCompiled> {
        let since = Instant::now();
        let waiting = Waiting::new(&self.counters);
        let slot = tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await;
        drop(waiting);
        let slot = match slot {
            Ok(Ok(slot)) => slot,
            Ok(Err(_)) | Err(_) => {
                return Err(NotCompiled::Busy {
                    slots: self.size,
                    waited: since.elapsed(),
                })
            }
        };
        let c = &self.counters;
        c.started.fetch_add(1, Ordering::Relaxed);
        let now = c.running.fetch_add(1, Ordering::AcqRel) + 1;
        c.peak_running.fetch_max(now, Ordering::Relaxed);
        let running = Running {
            counters: self.counters.clone(),
            _slot: slot,
        };
        let deadline = Instant::now() + limit;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("wray-compile".into())
            .spawn(move || {
                let out = std::panic::catch_unwind(AssertUnwindSafe(|| compile(deadline)));
                drop(running);
                let _ = tx.send(out);
            });
        if let Err(e) = spawned {
            return Err(NotCompiled::Failed(format!(
                "cannot start a compile thread: {e}"
            )));
        }
        match tokio::time::timeout_at(deadline.into(), rx).await {
            Ok(Ok(Ok(out))) => Ok(out),
            Ok(Ok(Err(panic))) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                Err(NotCompiled::Failed(format!(
                    "the compiler failed (a bug in wasmtime or wray): {message}"
                )))
            }
            Ok(Err(_)) => Err(NotCompiled::Failed(
                "the compile thread ended without a result (a bug in wray)".to_string(),
            )),
            Err(_) => {
                c.timed_out.fetch_add(1, Ordering::Relaxed);
                Err(NotCompiled::TimedOut { limit })
            }
        }
    }
}

#[cfg(test)]
mod tests;
