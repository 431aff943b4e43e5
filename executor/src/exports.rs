//! Which parts of the `wray:runtime` world a component exports, read once
//! when it is loaded, and calls into them on an instance.
//!
//! A component exports any of `functions`, `actors`, `lifecycle` and
//! `driver`, with `metadata` beside the first two (see `wit/runtime.wit`,
//! world `guest`). Each present part's function indices are looked up (and
//! type-checked) once, against the pre-instantiated component; a task loads
//! only the part it calls.

use std::sync::Arc;

use wasmtime::component::{Instance, InstancePre, ResourceAny};
use wasmtime::Store;

use crate::bindings::{actors, driver, functions, lifecycle, metadata, types};
use crate::state::TaskState;

/// The interface names of the parts, as a component exports them.
pub const METADATA: &str = "wray:runtime/metadata@0.1.0";
/// See [`METADATA`].
pub const FUNCTIONS: &str = "wray:runtime/functions@0.1.0";
/// See [`METADATA`].
pub const ACTORS: &str = "wray:runtime/actors@0.1.0";
/// See [`METADATA`].
pub const LIFECYCLE: &str = "wray:runtime/lifecycle@0.1.0";
/// See [`METADATA`].
pub const DRIVER: &str = "wray:runtime/driver@0.1.0";

/// The parts a component exports, with their functions' indices.
pub struct Exports {
    metadata: Option<metadata::GuestIndices>,
    functions: Option<functions::GuestIndices>,
    actors: Option<actors::GuestIndices>,
    lifecycle: Option<lifecycle::GuestIndices>,
    driver: Option<driver::GuestIndices>,
}

/// A component whose exports the node cannot use: the deploy is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportsError {
    /// A part it exports without the WIT's types.
    #[error("its export `{part}` does not match wray:runtime 0.1.0: {reason}")]
    Mismatch {
        /// The part (`wray:runtime/functions@0.1.0`, ...).
        part: String,
        /// What wasmtime said.
        reason: String,
    },
    /// None of `functions`, `actors` and `driver`.
    #[error(
        "it exports none of `{FUNCTIONS}`, `{ACTORS}` and `{DRIVER}` (it exports {}): \
         build it with a wray SDK against wit/runtime.wit",
        .0.join(", ")
    )]
    NothingToRun(
        /// What it exports instead, each name in backticks (`nothing`
        /// when it exports nothing).
        Vec<String>,
    ),
    /// `functions` or `actors` without `metadata`.
    #[error(
        "it exports remote functions or actors but not `{METADATA}` (describe), so the node \
         cannot know their names"
    )]
    NoMetadata,
}

/// Part `name` of `pre`: `None` when the component does not export it, an
/// error when it does but not with the shape the WIT gives.
fn part<I>(
    pre: &InstancePre<TaskState>,
    name: &str,
    indices: impl FnOnce(&InstancePre<TaskState>) -> wasmtime::Result<I>,
) -> Result<Option<I>, ExportsError> {
    if pre.component().get_export_index(None, name).is_none() {
        return Ok(None);
    }
    indices(pre).map(Some).map_err(|e| ExportsError::Mismatch {
        part: name.to_string(),
        reason: format!("{e:#}"),
    })
}

impl Exports {
    /// Reads which parts `pre`'s component exports.
    ///
    /// # Errors
    /// [`ExportsError`], naming what is missing or malformed: none of `functions`,
    /// `actors` and `driver` (with the names the component does export),
    /// `functions` or `actors` without `metadata`, or a part whose
    /// functions do not have the WIT's types.
    pub fn of(pre: &InstancePre<TaskState>) -> Result<Self, ExportsError> {
        let exports = Exports {
            metadata: part(pre, METADATA, metadata::GuestIndices::new)?,
            functions: part(pre, FUNCTIONS, functions::GuestIndices::new)?,
            actors: part(pre, ACTORS, actors::GuestIndices::new)?,
            lifecycle: part(pre, LIFECYCLE, lifecycle::GuestIndices::new)?,
            driver: part(pre, DRIVER, driver::GuestIndices::new)?,
        };
        if exports.functions.is_none() && exports.actors.is_none() && exports.driver.is_none() {
            let component = pre.component();
            let ty = component.component_type();
            let mut names: Vec<String> = ty
                .exports(component.engine())
                .map(|(name, _)| format!("`{name}`"))
                .collect();
            if names.is_empty() {
                names.push("nothing".to_string());
            }
            return Err(ExportsError::NothingToRun(names));
        }
        if exports.metadata.is_none() && (exports.functions.is_some() || exports.actors.is_some()) {
            return Err(ExportsError::NoMetadata);
        }
        Ok(exports)
    }

    /// Whether it exports a driver `main`.
    pub fn has_main(&self) -> bool {
        self.driver.is_some()
    }
}

/// The error of a call into a part the component does not export (the
/// function table lists nothing of it, so only a bug or a forged spec
/// gets here).
fn missing(part: &str) -> wasmtime::Error {
    wasmtime::format_err!("the component does not export `{part}`")
}

/// One instance of a component, with the parts it exports. A part's
/// functions are looked up (and type-checked) on the instance the first
/// time it is called and kept: an actor's calls and a reused instance's
/// tasks pay the lookup once.
pub struct Guest {
    instance: Instance,
    exports: Arc<Exports>,
    functions: Option<functions::Guest>,
    actors: Option<actors::Guest>,
    lifecycle: Option<lifecycle::Guest>,
}

type Call<T> = wasmtime::Result<Result<T, types::TaskError>>;

/// The part in `slot`, loaded with `load` from its `indices` on first use.
///
/// # Errors
/// The component does not export part `name`, or loading it failed.
fn cached<'a, I, G>(
    slot: &'a mut Option<G>,
    indices: Option<&I>,
    name: &str,
    load: impl FnOnce(&I) -> wasmtime::Result<G>,
) -> wasmtime::Result<&'a G> {
    if slot.is_none() {
        let ix = indices.ok_or_else(|| missing(name))?;
        *slot = Some(load(ix)?);
    }
    slot.as_ref().ok_or_else(|| missing(name))
}

impl Guest {
    /// `instance`, exporting `exports`.
    pub fn new(instance: Instance, exports: Arc<Exports>) -> Self {
        Guest {
            instance,
            exports,
            functions: None,
            actors: None,
            lifecycle: None,
        }
    }

    /// `metadata.describe`; an empty table when the component exports no
    /// `metadata` (a driver alone).
    pub async fn describe(
        &self,
        store: &mut Store<TaskState>,
    ) -> wasmtime::Result<types::ComponentInfo> {
        match &self.exports.metadata {
            Some(ix) => {
                let part = ix.load(&mut *store, &self.instance)?;
                part.call_describe(store).await
            }
            None => Ok(types::ComponentInfo {
                functions: Vec::new(),
                sdk: String::new(),
            }),
        }
    }

    /// `functions.invoke`.
    pub async fn invoke(
        &mut self,
        store: &mut Store<TaskState>,
        name: &str,
        args: &[types::Arg],
        result_codec: Option<types::Codec>,
    ) -> Call<Vec<types::Payload>> {
        let (instance, indices) = (&self.instance, self.exports.functions.as_ref());
        let part = cached(&mut self.functions, indices, FUNCTIONS, |ix| {
            ix.load(&mut *store, instance)
        })?;
        part.call_invoke(store, name, args, result_codec).await
    }

    /// The `lifecycle` part, `None` when the component exports none.
    fn lifecycle(
        &mut self,
        store: &mut Store<TaskState>,
    ) -> wasmtime::Result<Option<&lifecycle::Guest>> {
        let Some(indices) = self.exports.lifecycle.as_ref() else {
            return Ok(None);
        };
        let instance = &self.instance;
        cached(&mut self.lifecycle, Some(indices), LIFECYCLE, |ix| {
            ix.load(&mut *store, instance)
        })
        .map(Some)
    }

    /// `lifecycle.init`; succeeds at once without `lifecycle`.
    pub async fn init(
        &mut self,
        store: &mut Store<TaskState>,
    ) -> wasmtime::Result<Result<(), String>> {
        match self.lifecycle(store)? {
            Some(part) => part.call_init(store).await,
            None => Ok(Ok(())),
        }
    }

    /// `lifecycle.reinit`; succeeds at once without `lifecycle`.
    pub(crate) async fn reinit(
        &mut self,
        store: &mut Store<TaskState>,
    ) -> wasmtime::Result<Result<(), String>> {
        match self.lifecycle(store)? {
            Some(part) => part.call_reinit(store).await,
            None => Ok(Ok(())),
        }
    }

    /// `driver.main`.
    pub async fn main(
        &self,
        store: &mut Store<TaskState>,
        args: &[String],
    ) -> wasmtime::Result<Result<(), String>> {
        let ix = self
            .exports
            .driver
            .as_ref()
            .ok_or_else(|| missing(DRIVER))?;
        ix.load(&mut *store, &self.instance)?
            .call_main(store, args)
            .await
    }

    /// The `actors` part of this instance.
    fn actors(&mut self, store: &mut Store<TaskState>) -> wasmtime::Result<&actors::Guest> {
        let (instance, indices) = (&self.instance, self.exports.actors.as_ref());
        cached(&mut self.actors, indices, ACTORS, |ix| {
            ix.load(store, instance)
        })
    }

    /// `actors.actor-instance.create`.
    pub async fn create_actor(
        &mut self,
        store: &mut Store<TaskState>,
        class: &str,
        args: &[types::Arg],
    ) -> Call<ResourceAny> {
        let part = self.actors(store)?;
        part.actor_instance().call_create(store, class, args).await
    }

    /// `actors.actor-instance.call` on `actor`.
    pub async fn call_actor(
        &mut self,
        store: &mut Store<TaskState>,
        actor: ResourceAny,
        method: &str,
        args: &[types::Arg],
        result_codec: Option<types::Codec>,
    ) -> Call<Vec<types::Payload>> {
        let part = self.actors(store)?;
        part.actor_instance()
            .call_call(store, actor, method, args, result_codec)
            .await
    }
}
