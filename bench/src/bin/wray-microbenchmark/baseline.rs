//! The bare-wasmtime baseline of a task's cost: instantiate a component from
//! its [`InstancePre`](wasmtime::component::InstancePre) and call one export,
//! with none of wray around it (no scheduler, no object store, no worker
//! threads). `wray-microbenchmark` reports its rate beside
//! "single client tasks async", so the gap is what wray itself adds.
//!
//! The engine is the node's ([`build_engine`]: Cranelift, epoch
//! interruption, the pooling allocator with the same limits). The store data
//! is minimal: a default WASI context (what every component links), and the
//! `wray:runtime` imports are stubs that trap if called. The node's own
//! linker cannot serve here: it is typed over the node's task state, which
//! only a running node can build. The export called
//! is `lifecycle.init`, which the microbench component implements as a
//! no-op that calls no import.
//!
//! A yardstick of the benchmark, not part of a node: it lives here, in the
//! benchmark program, and the node's library stays free of it.

use wasmtime::component::{Component, InstancePre, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use wray_host::{build_engine, Error, NodeConfig, Result};

/// Bindings of the same world with synchronous exports, as a bare wasmtime
/// embedding would call them.
mod bare {
    #![allow(missing_docs)] // generated code
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "wray:runtime/guest",
    });
}

/// Bindings with async exports, as the node's own
/// (`executor/src/bindings.rs`) call them.
mod async_bare {
    #![allow(missing_docs)] // generated code
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "wray:runtime/guest",
        exports: { default: async },
    });
}

use async_bare::exports::wray::runtime::lifecycle::GuestIndices as AsyncInit;
use bare::exports::wray::runtime::lifecycle::GuestIndices as BareInit;

/// A component pre-instantiated on its own engine, ready to be instantiated
/// and called as bare wasmtime would.
///
/// ```ignore
/// let bytes = std::fs::read("target/wasm/microbench.wasm")?;
/// let bare = BareComponent::new(&NodeConfig::default(), "microbench", &bytes)?;
/// bare.instantiate_and_init()?; // one fresh instance, one call
/// ```
pub struct BareComponent {
    name: String,
    engine: Engine,
    pre: InstancePre<BareState>,
    init: BareInit,
    /// The same component linked with WASI's async imports, called with
    /// wasmtime's async API as a node calls it (see [`Self::instantiate_and_init_async`]).
    async_pre: InstancePre<BareState>,
    async_init: AsyncInit,
}

/// Store data: WASI only.
struct BareState {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for BareState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl BareComponent {
    /// Compiles component `name` from `bytes` on an engine built from
    /// `config` exactly as a node builds its own, and pre-instantiates it.
    ///
    /// # Errors
    /// [`Error::Engine`] when the engine or the linker cannot be set up;
    /// [`Error::Component`] when `bytes` is not a component exporting
    /// `wray:runtime/lifecycle`.
    pub fn new(config: &NodeConfig, name: &str, bytes: &[u8]) -> Result<Self> {
        let component_error = |reason: String| Error::Component {
            name: name.to_string(),
            reason,
        };
        let engine = build_engine(config)?;
        let component = Component::from_binary(&engine, bytes)
            .map_err(|e| component_error(format!("{e:#}")))?;
        let pre = instance_pre(
            name,
            &engine,
            &component,
            wasmtime_wasi::p2::add_to_linker_sync,
        )?;
        let init = BareInit::new(&pre).map_err(|e| component_error(format!("{e:#}")))?;
        let async_pre = instance_pre(
            name,
            &engine,
            &component,
            wasmtime_wasi::p2::add_to_linker_async,
        )?;
        let async_init =
            AsyncInit::new(&async_pre).map_err(|e| component_error(format!("{e:#}")))?;
        Ok(Self {
            name: name.to_string(),
            engine,
            pre,
            init,
            async_pre,
            async_init,
        })
    }

    /// Like [`Self::instantiate_and_init`], with wasmtime's async API driven
    /// by `io`'s `block_on` on the calling thread: what a node does for
    /// every task (so that a time limit or a cancel can stop a guest inside
    /// a blocking host call), minus wray.
    ///
    /// # Errors
    /// As [`Self::instantiate_and_init`].
    pub fn instantiate_and_init_async(&self, io: &tokio::runtime::Handle) -> Result<()> {
        let mut store = self.fresh_store();
        io.block_on(async {
            let instance = self
                .async_pre
                .instantiate_async(&mut store)
                .await
                .map_err(|e| self.component_error(format!("instantiate: {e:#}")))?;
            let init = match self.async_init.load(&mut store, &instance) {
                Ok(part) => part.call_init(&mut store).await,
                Err(e) => Err(e),
            };
            self.init_result(init)
        })
    }

    /// Makes a fresh store and instance and calls the component's `init`
    /// once: the work a node does for every task, minus wray.
    ///
    /// # Errors
    /// [`Error::Component`] when instantiation fails, the call traps or
    /// `init` returns an error.
    pub fn instantiate_and_init(&self) -> Result<()> {
        let mut store = self.fresh_store();
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| self.component_error(format!("instantiate: {e:#}")))?;
        let init = self
            .init
            .load(&mut store, &instance)
            .and_then(|part| part.call_init(&mut store));
        self.init_result(init)
    }

    /// A store with an empty WASI context whose epoch deadline never passes
    /// (the engine checks epochs; nothing ticks this one).
    fn fresh_store(&self) -> Store<BareState> {
        let state = BareState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(&self.engine, state);
        store.set_epoch_deadline(u64::MAX / 2);
        store
    }

    /// The outcome of a call to `init`: a trap or the guest's own error.
    fn init_result(&self, init: wasmtime::Result<std::result::Result<(), String>>) -> Result<()> {
        init.map_err(|e| self.component_error(format!("init trapped: {e:#}")))?
            .map_err(|e| self.component_error(format!("init failed: {e}")))
    }

    fn component_error(&self, reason: String) -> Error {
        Error::Component {
            name: self.name.clone(),
            reason,
        }
    }
}

/// `component` (called `name` in errors) pre-instantiated on a linker with WASI (added by `add_wasi`,
/// sync or async) and every `wray:runtime` import a trap.
fn instance_pre(
    name: &str,
    engine: &Engine,
    component: &Component,
    add_wasi: fn(&mut Linker<BareState>) -> wasmtime::Result<()>,
) -> Result<InstancePre<BareState>> {
    let mut linker = Linker::new(engine);
    add_wasi(&mut linker).map_err(|e| Error::Engine(format!("linking WASI: {e:#}")))?;
    linker
        .define_unknown_imports_as_traps(component)
        .map_err(|e| Error::Engine(format!("stubbing wray:runtime: {e:#}")))?;
    linker
        .instantiate_pre(component)
        .map_err(|e| Error::Component {
            name: name.to_string(),
            reason: format!("{e:#}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bytes_that_are_not_a_component() {
        let config = NodeConfig {
            max_instances: 4,
            ..NodeConfig::default()
        };
        let err = BareComponent::new(&config, "junk", b"not wasm")
            .err()
            .expect("junk is refused");
        assert!(err.to_string().contains("junk"), "{err}");
    }
}
