#![allow(missing_docs)] // generated code
//! Host bindings of the `wray:runtime` world, generated from `wit/` by
//! wasmtime's `bindgen!`.
//!
//! Every import is `trappable`: a host function may end the task with a trap
//! (its time limit passed while it was blocked in `get`, say).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "wray:runtime/guest",
    imports: { default: trappable },
});

pub use exports::wray::runtime::app;
pub use wray::runtime::types;
