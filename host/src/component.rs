//! Loading components: compile once per content hash (with an on-disk cache
//! of compiled artifacts), link the host's imports, pre-instantiate, and read
//! the component's exports through `describe`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};
use wray_control_plane::{
    content_hash, ComponentRecord, Declared, FunctionKind, FunctionRecord, TaskId,
};

use crate::bindings::wray::runtime::{objects, runtime, tasks};
use crate::bindings::{types, GuestPre};
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::worker::mapping::TaskStore;
use crate::worker::state::{CurrentTask, TaskState};

/// A component ready to instantiate: its function-table row and its
/// pre-instantiated form (imports resolved once, so each task only
/// allocates and initializes an instance).
pub struct LoadedComponent {
    /// The function-table row (name, hash, exports).
    pub record: ComponentRecord,
    pub(crate) pre: GuestPre<TaskState>,
}

/// The linker every component is instantiated with: WASI preview 2 (the
/// guest's preopened directories, stdout, clocks; no network) and the
/// `wray:runtime` imports.
///
/// # Errors
/// [`Error::Engine`] if the imports cannot be added.
pub(crate) fn linker(engine: &Engine) -> Result<Linker<TaskState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
        .map_err(|e| Error::Engine(format!("linking WASI: {e:#}")))?;
    let link = |e: wasmtime::Error| Error::Engine(format!("linking wray:runtime: {e:#}"));
    type Me = wasmtime::component::HasSelf<TaskState>;
    objects::add_to_linker::<TaskState, Me>(&mut linker, |s| s).map_err(link)?;
    tasks::add_to_linker::<TaskState, Me>(&mut linker, |s| s).map_err(link)?;
    runtime::add_to_linker::<TaskState, Me>(&mut linker, |s| s).map_err(link)?;
    // `mapping` takes its windows as `WasmList<u8>` (no copy), so it is
    // defined by hand rather than from the generated trait.
    crate::worker::mapping::add_to_linker(&mut linker).map_err(link)?;
    Ok(linker)
}

/// Compiles `bytes`, or loads the compiled artifact from `cache_dir` when an
/// earlier run compiled the same bytes with a compatible engine.
fn compile(
    engine: &Engine,
    name: &str,
    hash: &str,
    bytes: &[u8],
    cache_dir: Option<&Path>,
) -> Result<Component> {
    let component_error = |reason: String| Error::Component {
        name: name.to_string(),
        reason,
    };
    let cached = cache_dir.map(|dir| cache_path(engine, dir, hash));
    if let Some(path) = cached.as_deref().filter(|p| p.exists()) {
        // SAFETY: the file was written by `Component::serialize` below, into
        // a directory only this user writes, under a name that includes the
        // engine's compatibility hash; wasmtime re-checks the header.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(c) => return Ok(c),
            Err(e) => {
                tracing::warn!(path = %path.display(), "ignoring unusable compiled cache entry: {e:#}")
            }
        }
    }
    let component = Component::new(engine, bytes).map_err(|e| component_error(format!("{e:#}")))?;
    if let Some(path) = cached {
        if let Err(e) = write_cache(&component, &path) {
            tracing::debug!(path = %path.display(), "not caching compiled component: {e:#}");
        }
    }
    Ok(component)
}

fn cache_path(engine: &Engine, dir: &Path, hash: &str) -> PathBuf {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    dir.join(format!("{hash}-{:016x}.cwasm", h.finish()))
}

fn write_cache(component: &Component, path: &Path) -> anyhow::Result<()> {
    let bytes = component.serialize()?;
    let dir = path
        .parent()
        .ok_or_else(|| anyhow::anyhow!("no parent directory"))?;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), unique_suffix()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn unique_suffix() -> u64 {
    let mut h = DefaultHasher::new();
    std::time::SystemTime::now().hash(&mut h);
    std::thread::current().id().hash(&mut h);
    h.finish()
}

/// Compiles, links and describes component `name`.
///
/// # Errors
/// [`Error::Component`] when the bytes are not a component, do not
/// implement `wray:runtime/guest`, or `describe` fails.
pub(crate) fn load(rt: &Arc<Runtime>, name: &str, bytes: &[u8]) -> Result<Arc<LoadedComponent>> {
    let component_error = |reason: String| Error::Component {
        name: name.to_string(),
        reason,
    };
    let hash = content_hash(bytes);
    let component = compile(
        &rt.engine,
        name,
        &hash,
        bytes,
        rt.config.cache_dir.as_deref(),
    )?;
    let pre = rt
        .linker
        .instantiate_pre(&component)
        .map_err(|e| component_error(format!("{e:#}")))?;
    let pre = GuestPre::new(pre).map_err(|e| component_error(format!("{e:#}")))?;

    // Describe it with a placeholder row, then build the real one.
    let placeholder = Arc::new(LoadedComponent {
        record: ComponentRecord {
            name: name.to_string(),
            hash: hash.clone(),
            size: bytes.len() as u64,
            has_main: false,
            functions: Vec::new(),
        },
        pre: pre.clone(),
    });
    let current = CurrentTask::new(
        TaskId::driver(u64::MAX),
        "describe",
        false,
        crate::limits::Limits::node(&rt.config),
        Default::default(),
        Default::default(),
    );
    let mut store = TaskStore(Store::new(
        &rt.engine,
        TaskState::new(rt.clone(), placeholder, current, &[]),
    ));
    crate::worker::run::arm_limits(&mut store);
    let guest = pre
        .instantiate(&mut *store)
        .map_err(|e| component_error(format!("instantiate: {e:#}")))?;
    let info = guest
        .wray_runtime_app()
        .call_describe(&mut *store)
        .map_err(|e| component_error(format!("describe: {e:#}")))?;
    drop(store);

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
            num_args: f.num_args,
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
        size: bytes.len() as u64,
        has_main: info.has_main,
        functions,
    };
    Ok(Arc::new(LoadedComponent { record, pre }))
}
