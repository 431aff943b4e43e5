#![allow(missing_docs)] // generated code
//! Host bindings of the `wray:runtime` world, generated from `wit/` by
//! wasmtime's `bindgen!`.
//!
//! Every import is `trappable`: a host function may end the task with a trap
//! (a limit was passed, say). The imports that block until objects exist
//! (`objects.get`, `objects.wait`) or on the actor directory
//! (`tasks.create-actor-with`, `tasks.get-actor`) are `async`, and so is every export: a
//! task runs as a future on a fiber, so that its time limit, `cancel` and the
//! node's shutdown can stop it wherever it is, blocked in a host call (a WASI
//! sleep, a `get`) or running wasm (`executor/src/run.rs`).
//!
//! The world's exports are optional parts: the generated world-level
//! `Guest` would demand all of them, so the host loads each part's
//! interface on its own ([`super::exports`]).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "wray:runtime/guest",
    imports: {
        "wray:runtime/objects.get": async | trappable,
        "wray:runtime/objects.wait": async | trappable,
        "wray:runtime/tasks.create-actor-with": async | trappable,
        "wray:runtime/tasks.create-actor-placed": async | trappable,
        "wray:runtime/tasks.get-actor": async | trappable,
        default: trappable,
    },
    exports: { default: async },
});

pub use exports::wray::runtime::{actors, driver, functions, lifecycle, metadata};
pub use wray::runtime::types;
