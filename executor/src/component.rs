//! Loading components: compile once per content hash (with an on-disk cache
//! of compiled artifacts), link the host's imports, pre-instantiate, and read
//! the component's exports through `describe`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::Engine;
use wray_control_plane::{ComponentRecord, Declared, FunctionKind, FunctionRecord, Param, TaskId};

use crate::bindings::types;
use crate::bindings::wray::runtime::{objects, runtime, tasks};
use crate::bounds::{MAX_FUNCTIONS, MAX_NAME, MAX_PARAMS, MAX_RETURNS, MAX_SCHEMA};
use crate::classify::trap_to_task_error;
use crate::compile::process::{self, ChildError};
use crate::compile::{CompileEvents, NotCompiled};
use crate::config::CompileCommand;
use crate::engine::{engine_digest, CodeSettings};
use crate::error::{DeployBound, DeployLimit, Error, Result};
use crate::exports::{Exports, Guest};
use crate::guard::StopWhen;
use crate::schemas::ArgSchemas;
use crate::services::DescribeOnly;
use crate::state::{CurrentTask, TaskState};
use crate::WasmExecutor;

/// How long a component's `describe` may run when it is deployed.
pub const DESCRIBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The first 8 bytes of a wasm component: the magic `\0asm`, then the
/// component-model version and layer (`0d 00 01 00`).
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Checks that `bytes` look like a wasm component before anything parses
/// them, so that a wrong file gets an error saying what it is.
///
/// # Errors
/// [`Error::Component`] naming what was found: nothing, not wasm (with its
/// first bytes), or a core module rather than a component.
pub fn check_header(name: &str, bytes: &[u8]) -> Result<()> {
    let refuse = |reason: String| {
        Err(Error::Component {
            name: name.to_string(),
            reason,
        })
    };
    if bytes.is_empty() {
        return refuse("the file is empty, not a wasm component".to_string());
    }
    let head = &bytes[..bytes.len().min(8)];
    if !head.starts_with(&COMPONENT_HEADER[..4]) || head.len() < 8 {
        let hex: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
        let text: String = head
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        return refuse(format!(
            "not a wasm component: it starts with bytes {} (\"{text}\"), not the wasm magic 00 61 73 6d",
            hex.join(" ")
        ));
    }
    if head[4..8] == [0x01, 0x00, 0x00, 0x00] {
        return refuse(
            "a core wasm module, not a component: build it with `cargo component build` \
             (or wrap it with `wasm-tools component new`)"
                .to_string(),
        );
    }
    if head != COMPONENT_HEADER {
        let hex: Vec<String> = head[4..8].iter().map(|b| format!("{b:02x}")).collect();
        return refuse(format!(
            "a wasm binary of version and layer {}, not a component (0d 00 01 00)",
            hex.join(" ")
        ));
    }
    Ok(())
}

/// A component ready to instantiate: its function-table row and its
/// pre-instantiated form (imports resolved once, so each task only
/// allocates and initializes an instance).
pub struct LoadedComponent {
    /// The function-table row (name, hash, exports).
    pub record: ComponentRecord,
    /// `record.hash`, shared (every task of the component names it).
    pub hash: Arc<str>,
    /// Bytes of its compiled code (the image wasmtime maps).
    pub compiled: u64,
    /// Linked once, instantiated for every task and actor.
    pub pre: InstancePre<TaskState>,
    /// The parts of the world it exports.
    pub exports: Arc<Exports>,
    /// Its parameters' schemas, compiled: what JSON arguments are checked
    /// against before a task runs.
    pub schemas: Arc<ArgSchemas>,
}

/// The linker every component is instantiated with: WASI preview 2 (the
/// guest's preopened directories, stdout, clocks; no network) and the
/// `wray:runtime` imports.
///
/// # Errors
/// [`Error::Engine`] if the imports cannot be added.
pub fn linker(engine: &Engine) -> Result<Linker<TaskState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)
        .map_err(|e| Error::Engine(format!("linking WASI: {e:#}")))?;
    let link = |e: wasmtime::Error| Error::Engine(format!("linking wray:runtime: {e:#}"));
    type Me = wasmtime::component::HasSelf<TaskState>;
    objects::add_to_linker::<TaskState, Me>(&mut linker, |s| s).map_err(link)?;
    tasks::add_to_linker::<TaskState, Me>(&mut linker, |s| s).map_err(link)?;
    runtime::add_to_linker::<TaskState, Me>(&mut linker, |s| s).map_err(link)?;
    // `mapping` takes its windows as `WasmList<u8>` (no copy), so it is
    // defined by hand rather than from the generated trait.
    crate::mapping::add_to_linker(&mut linker).map_err(link)?;
    Ok(linker)
}

/// What a compile needs, moved onto its compile thread.
struct Compile {
    engine: Engine,
    settings: CodeSettings,
    command: Option<CompileCommand>,
    cache_dir: Option<PathBuf>,
    events: CompileEvents,
}

impl Compile {
    /// Compiles `bytes` (in a compile process when the node has a program
    /// for it, killed at `deadline`; else here), or loads the compiled
    /// artifact from the cache directory when an earlier run compiled the
    /// same bytes with a compatible engine. Runs on a thread of the
    /// compile pool.
    fn run(&self, name: &str, hash: &str, bytes: &[u8], deadline: Instant) -> Result<Component> {
        let engine = &self.engine;
        check_header(name, bytes)?;
        let cached = self
            .cache_dir
            .as_deref()
            .map(|dir| cache_path(engine, dir, hash));
        if let Some(path) = cached.as_deref().filter(|p| trusted_cache_entry(p)) {
            // SAFETY: the file was written by `Component::serialize` or a
            // compile process of this binary (`Compile::in_child`), into
            // a directory only this user may write (checked just now:
            // owned by us, not writable by group or others), under a name
            // that includes the engine's compatibility hash; wasmtime
            // re-checks the header.
            match unsafe { Component::deserialize_file(engine, path) } {
                Ok(c) => {
                    self.events.cache_hit();
                    return Ok(c);
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), "ignoring unusable compiled cache entry: {e:#}")
                }
            }
        }
        if let Some(command) = &self.command {
            match self.in_child(command, name, bytes, cached.as_deref(), deadline) {
                Ok(compiled) => return compiled,
                Err(Fallback(why)) => tracing::warn!(
                    component = name,
                    "compiling in this process, where a compile past its time limit \
                     cannot be stopped: {why}"
                ),
            }
        }
        let component = Component::from_binary(engine, bytes).map_err(|e| Error::Component {
            name: name.to_string(),
            reason: format!("{e:#}"),
        })?;
        if let Some(path) = cached {
            if let Err(e) = write_cache(&component, &path) {
                tracing::debug!(path = %path.display(), "not caching compiled component: {e:#}");
            }
        }
        Ok(component)
    }

    /// Compiles `bytes` in a compile process ([`process`]), its artifact
    /// written into a file of the cache directory (`cached`'s, when it is
    /// private to this user) or else of a private temporary directory,
    /// then mapped, and kept in the cache under `cached`.
    ///
    /// # Errors
    /// `Ok(Err)`: the deploy's error (the component does not compile, the
    /// process was killed at the deadline or failed); `Err(Fallback)`:
    /// the process could not start, or the directories could not be made:
    /// compile in-process instead.
    fn in_child(
        &self,
        command: &CompileCommand,
        name: &str,
        bytes: &[u8],
        cached: Option<&Path>,
        deadline: Instant,
    ) -> std::result::Result<Result<Component>, Fallback> {
        let component_error = |reason: String| Error::Component {
            name: name.to_string(),
            reason,
        };
        let cache_dir = cached
            .and_then(Path::parent)
            .filter(|dir| private_dir(dir).is_ok());
        let temp_dir;
        let dir = match cache_dir {
            Some(dir) => dir,
            None => {
                temp_dir = tempfile::Builder::new()
                    .prefix("wray-compile-")
                    .tempdir()
                    .map_err(|e| Fallback(format!("no private temporary directory: {e}")))?;
                temp_dir.path()
            }
        };
        let out = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(dir)
            .map_err(|e| Fallback(format!("cannot make a file in {}: {e}", dir.display())))?;
        let digest = engine_digest(&self.engine);
        let compiled =
            process::compile(command, self.settings, &digest, bytes, out.path(), deadline);
        match compiled {
            Ok(()) => {}
            Err(ChildError::Spawn(e)) => {
                return Err(Fallback(format!(
                    "cannot start `{}`: {e}",
                    command.program.display()
                )))
            }
            Err(ChildError::Killed) => {
                self.events.killed();
                return Ok(Err(component_error(
                    "its compile was stopped at the time limit".to_string(),
                )));
            }
            Err(ChildError::Refused(why)) => return Ok(Err(component_error(why))),
            Err(ChildError::Failed(why)) => return Ok(Err(component_error(why))),
        }
        // SAFETY: the file was made just now by this process (mode 0600,
        // in a directory only this user may write: the cache directory,
        // checked, or a fresh temporary one) and written by a compile
        // process of this very binary (`/proc/self/exe`, or the `wray`
        // binary the node was configured with), whose engine was checked
        // to be this one's (`engine_digest`); wasmtime re-checks the
        // artifact's header and its compatibility with `self.engine`.
        let component = match unsafe { Component::deserialize_file(&self.engine, out.path()) } {
            Ok(c) => c,
            Err(e) => {
                return Ok(Err(Error::Engine(format!(
                    "the compile process's artifact for component `{name}` does not load \
                     into this node's engine (is `{}` another build of wray?): {e:#}",
                    command.program.display()
                ))))
            }
        };
        if let Some(path) = cached.filter(|_| cache_dir.is_some()) {
            // Mapped already: the rename keeps the same file.
            if let Err(e) = out.persist(path) {
                tracing::debug!(path = %path.display(), "not caching compiled component: {e}");
            }
        }
        Ok(Ok(component))
    }
}

/// Why a compile process was not used: the compile runs in-process.
struct Fallback(String);

/// Makes `dir` (mode 0700) if it is missing, and checks that it belongs to
/// this user and that no one else may write it.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    // SAFETY: a plain syscall without arguments.
    let uid = unsafe { libc::geteuid() };
    let meta = std::fs::metadata(dir)?;
    if meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(
            "another user owns it or may write it",
        ));
    }
    Ok(())
}

fn cache_path(engine: &Engine, dir: &Path, hash: &str) -> PathBuf {
    dir.join(format!("{hash}-{}.cwasm", engine_digest(engine)))
}

/// Whether a compiled artifact at `path` may be loaded: it exists, and it
/// and its directory belong to this user and are writable by no one else
/// (loading one runs its machine code).
fn trusted_cache_entry(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: a plain syscall without arguments.
    let uid = unsafe { libc::geteuid() };
    let private =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.uid() == uid && m.mode() & 0o022 == 0);
    let trusted = path.parent().is_some_and(private) && private(path);
    if path.exists() && !trusted {
        tracing::warn!(
            path = %path.display(),
            "ignoring a compiled cache entry another user could have written"
        );
    }
    trusted
}

fn write_cache(component: &Component, path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::DirBuilderExt;
    let bytes = component.serialize().map_err(std::io::Error::other)?;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    // A nameless-until-persisted temporary file (mode 0600), renamed into
    // place: readers never see half an artifact.
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(&bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Checks component `name` cheaply ([`inspect`](super::compile::inspect)),
/// compiles it on the node's compile pool within its time limit (or loads
/// it from the disk cache), links and describes it. `describe` runs as a
/// future of the caller's runtime, within [`DESCRIBE_TIMEOUT`].
///
/// # Errors
/// [`Error::Component`] when the bytes are not a component, do not
/// implement `wray:runtime/guest`, have too much code, take too long to
/// compile, or `describe` fails; [`Error::DeployLimit`] when every compile
/// slot stayed busy for the compile time limit.
///
/// `hash` is the bytes' content hash, computed once by the caller (a
/// deploy) or checked against them by the function table (its `blob`):
/// SHA-256 of an 18 MB Python component takes tens of milliseconds, and a
/// deploy used to compute it three times.
pub async fn load(
    rt: &Arc<WasmExecutor>,
    name: &str,
    bytes: Arc<[u8]>,
    hash: String,
) -> Result<Arc<LoadedComponent>> {
    let component_error = |reason: String| Error::Component {
        name: name.to_string(),
        reason,
    };
    let config = &rt.sched.config();
    if let Err(e) = super::compile::inspect(name, &bytes, config.max_code_bytes) {
        rt.compiles.refused();
        return Err(e);
    }
    let size = bytes.len() as u64;
    let job = {
        let job = Compile {
            engine: rt.engine.clone(),
            settings: CodeSettings::of(config),
            command: config.compiler.clone(),
            cache_dir: config.cache_dir.clone(),
            events: rt.compiles.events(),
        };
        let (name, hash) = (name.to_string(), hash.clone());
        move |deadline| job.run(&name, &hash, &bytes, deadline)
    };
    let limit = config.compile_timeout;
    let component = match rt.compiles.run(limit, limit, job).await {
        Ok(compiled) => compiled?,
        Err(NotCompiled::TimedOut { limit }) => {
            return Err(component_error(format!(
                "compiling it took longer than {:.3} s, the most a compile may take \
                 (--compile-timeout); give it less code",
                limit.as_secs_f64()
            )))
        }
        Err(NotCompiled::Busy { slots, waited }) => {
            return Err(Error::DeployLimit(DeployLimit {
                name: name.to_string(),
                bound: DeployBound::CompileSlots,
                limit: slots as u64,
                reason: format!(
                    "all {slots} compile slots of the node stayed busy for {:.3} s \
                     (--compile-timeout): try again later",
                    waited.as_secs_f64()
                ),
            }))
        }
        Err(NotCompiled::Failed(why)) => return Err(component_error(why)),
    };
    let image = component.image_range();
    let compiled = (image.end as usize).saturating_sub(image.start as usize) as u64;
    let pre = rt
        .linker
        .instantiate_pre(&component)
        .map_err(|e| component_error(format!("{e:#}")))?;
    let exports = Arc::new(Exports::of(&pre).map_err(|e| component_error(e.to_string()))?);

    // Describe it with a placeholder row, then build the real one.
    let placeholder = Arc::new(LoadedComponent {
        record: ComponentRecord {
            name: name.to_string(),
            hash: hash.clone(),
            size,
            has_main: false,
            sdk: String::new(),
            functions: Vec::new(),
        },
        hash: Arc::from(hash.as_str()),
        compiled,
        pre: pre.clone(),
        exports: exports.clone(),
        schemas: Arc::default(),
    });
    let info = describe(rt, placeholder).await?;
    check_described(&info).map_err(|e| component_error(e.to_string()))?;
    let functions = info
        .functions
        .into_iter()
        .map(|f| FunctionRecord {
            kind: match f.kind {
                types::FunctionKind::Function => FunctionKind::Function,
                types::FunctionKind::ActorConstructor => FunctionKind::ActorClass,
                types::FunctionKind::ActorMethod => FunctionKind::ActorMethod,
            },
            name: f.name,
            class: f.class,
            num_returns: f.num_returns,
            params: f
                .params
                .into_iter()
                .map(|p| Param {
                    name: p.name,
                    schema: p.schema,
                })
                .collect(),
            returns: f.returns,
            declared: Declared {
                num_cpus: f.resources.num_cpus,
                num_gpus: f.resources.num_gpus,
                memory: f.resources.memory,
                resources: f.resources.custom,
                max_memory: f.limits.max_memory,
                timeout_ms: f.limits.timeout_ms,
                fuel: f.limits.fuel,
                reuse: f.reuse,
            },
        })
        .collect();
    let record = ComponentRecord {
        name: name.to_string(),
        hash,
        size,
        has_main: exports.has_main(),
        sdk: info.sdk,
        functions,
    };
    // Its row must fit the function table (a bound on its schemas) before
    // they are compiled.
    wray_control_plane::check_record(&record)?;
    let schemas =
        Arc::new(ArgSchemas::compile(&record).map_err(|e| component_error(e.to_string()))?);
    Ok(Arc::new(LoadedComponent {
        hash: Arc::from(record.hash.as_str()),
        record,
        compiled,
        pre,
        exports,
        schemas,
    }))
}

/// Calls `describe` of `component` in a fresh instance, within
/// [`DESCRIBE_TIMEOUT`]. The instance belongs to no job: its services
/// ([`DescribeOnly`]) refuse submissions and keep its objects to itself,
/// so nothing it does outlives it.
async fn describe(
    rt: &Arc<WasmExecutor>,
    component: Arc<LoadedComponent>,
) -> Result<types::ComponentInfo> {
    let component_error = |reason: String| Error::Component {
        name: component.record.name.clone(),
        reason,
    };
    let limits = crate::proto::limits::Limits {
        timeout: Some(DESCRIBE_TIMEOUT),
        ..rt.sched.config().limits()
    };
    // An id no job table issued: its store reaches no job of the node.
    let job = wray_control_plane::JobId::random();
    let current = CurrentTask::new(
        TaskId::driver(job),
        "describe",
        false,
        limits,
        Default::default(),
        Default::default(),
    );
    let services = Arc::new(DescribeOnly::new(rt.services.clone()));
    let started = Instant::now();
    let mut store = rt.new_store_with(services, &component, job, current, &[]);
    let stop = StopWhen::of(store.data());
    let info = async {
        let instance = rt
            .make_instance(&component, &mut store, started)
            .await
            .map_err(|e| component_error(format!("instantiate: {e:#}")))?;
        let guest = Guest::new(instance, component.exports.clone());
        stop.guard(guest.describe(&mut store)).await.map_err(|e| {
            component_error(format!(
                "describe: {}",
                trap_to_task_error(&e, store.data())
            ))
        })
    }
    .await;
    drop(store);
    info
}

/// What `describe` returned past the bounds a component must keep: the
/// deploy is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DescribeError {
    /// More exports than [`MAX_FUNCTIONS`].
    #[error("describe lists {0} functions, more than the {MAX_FUNCTIONS} a component may export")]
    Functions(usize),
    /// An export's (or class's) name of this many bytes: empty or past
    /// [`MAX_NAME`].
    #[error("describe names an export of {0} bytes: names are 1 to {MAX_NAME} bytes")]
    Name(usize),
    /// An export with more than [`MAX_PARAMS`] parameters.
    #[error("describe says `{export}` takes {count} parameters: at most {MAX_PARAMS}")]
    Params {
        /// The export's name.
        export: String,
        /// Its parameters.
        count: usize,
    },
    /// Return schemas not one per return value.
    #[error("describe gives `{export}` {schemas} return schemas for {returns} return values")]
    ReturnSchemas {
        /// The export's name.
        export: String,
        /// Its return schemas.
        schemas: usize,
        /// Its return values.
        returns: u32,
    },
    /// A schema (of a parameter or `return value`) past [`MAX_SCHEMA`]
    /// bytes.
    #[error("describe gives `{export}`'s {what} a schema of {bytes} bytes: at most {MAX_SCHEMA}")]
    SchemaBytes {
        /// The export's name.
        export: String,
        /// The parameter's name, or `return value`.
        what: String,
        /// The schema's size in bytes.
        bytes: usize,
    },
    /// A return schema that is not JSON.
    #[error("describe gives `{export}`'s return value a schema that is not JSON ({reason})")]
    ReturnNotJson {
        /// The export's name.
        export: String,
        /// What the JSON parser said.
        reason: String,
    },
    /// No return value, or more than [`MAX_RETURNS`] (a constructor's 0
    /// excepted).
    #[error(
        "describe says `{export}` returns {returns} values: a function returns 1 to {MAX_RETURNS}"
    )]
    Returns {
        /// The export's name.
        export: String,
        /// Its return values.
        returns: u32,
    },
}

/// Checks what `describe` returned against the bounds a component must
/// keep (how many exports, how long their names, how many returns).
fn check_described(info: &types::ComponentInfo) -> std::result::Result<(), DescribeError> {
    if info.functions.len() > MAX_FUNCTIONS {
        return Err(DescribeError::Functions(info.functions.len()));
    }
    for f in &info.functions {
        let long = [Some(&f.name), f.class.as_ref()]
            .into_iter()
            .flatten()
            .find(|n| n.len() > MAX_NAME || n.is_empty());
        if let Some(n) = long {
            return Err(DescribeError::Name(n.len()));
        }
        if f.params.len() > MAX_PARAMS {
            return Err(DescribeError::Params {
                export: f.name.clone(),
                count: f.params.len(),
            });
        }
        let constructor = f.kind == types::FunctionKind::ActorConstructor;
        if f.returns.len() != f.num_returns as usize && !(constructor && f.returns.is_empty()) {
            return Err(DescribeError::ReturnSchemas {
                export: f.name.clone(),
                schemas: f.returns.len(),
                returns: f.num_returns,
            });
        }
        let schemas = f.params.iter().map(|p| (p.name.as_str(), &p.schema));
        let returns = f.returns.iter().map(|s| ("return value", s));
        for (what, schema) in schemas.chain(returns) {
            if schema.len() > MAX_SCHEMA {
                return Err(DescribeError::SchemaBytes {
                    export: f.name.clone(),
                    what: what.to_string(),
                    bytes: schema.len(),
                });
            }
        }
        // Parameters' schemas are parsed and compiled by `ArgSchemas`;
        // return schemas only need to be JSON.
        for schema in &f.returns {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(schema) {
                return Err(DescribeError::ReturnNotJson {
                    export: f.name.clone(),
                    reason: e.to_string(),
                });
            }
        }
        if f.num_returns == 0 && !constructor || f.num_returns > MAX_RETURNS {
            return Err(DescribeError::Returns {
                export: f.name.clone(),
                returns: f.num_returns,
            });
        }
    }
    Ok(())
}
