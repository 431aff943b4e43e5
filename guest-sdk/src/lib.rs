//! The wray guest SDK: remote functions, actors and objects for WebAssembly
//! components run by wray, with Ray's API in Rust.
//!
//! A component is a `cdylib` crate built with `cargo component build`. It
//! marks its remote functions with [`#[wray::remote]`](macro@remote), its
//! actor classes with [`#[wray::actor]`](macro@actor), optionally a driver
//! entry point with [`#[wray::main]`](macro@main), and lists all of them
//! once with [`wray::export!`](export!):
//!
//! ```ignore
//! use wray::{ActorHandle, ObjectRef};
//!
//! #[wray::remote]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! #[wray::actor]
//! pub struct Counter {
//!     n: i64,
//! }
//!
//! #[wray::actor]
//! impl Counter {
//!     pub fn new(start: i64) -> Self {
//!         Counter { n: start }
//!     }
//!     pub fn increment(&mut self) -> i64 {
//!         self.n += 1;
//!         self.n
//!     }
//! }
//!
//! #[wray::main]
//! fn main(_args: Vec<String>) -> Result<(), wray::Error> {
//!     let x: ObjectRef<i64> = add.remote(1, 2); // a task; returns at once
//!     let y = add.remote(&x, 10); // depends on x: runs once x exists
//!     assert_eq!(y.get()?, 13);
//!
//!     let c: ActorHandle<Counter> = Counter::remote(0);
//!     let r = c.increment().remote();
//!     assert_eq!(wray::get(&r)?, 1);
//!     Ok(())
//! }
//!
//! wray::export! {
//!     main: main,
//!     functions: [add],
//!     actors: [Counter],
//! }
//! ```
//!
//! # Concepts
//!
//! - **Remote function**: `#[wray::remote] fn f(..)` turns `f` into a value
//!   with `f.remote(args..)` (submit a task, get [`ObjectRef`]s back at once)
//!   and `f.local(args..)` (a plain call). `#[wray::remote(num_returns = 2)]`
//!   on a function returning a pair gives a pair of refs; `num_returns = N`
//!   on a function returning `Vec<T>` gives a `Vec<ObjectRef<T>>` of N refs
//!   (a vector of another length fails the task), up to the node's bound of
//!   16,384 returns. A function returning
//!   `Result<T, E>` gives an `ObjectRef<T>`; its `Err(e)` becomes an error of
//!   kind [`Application`](ErrorKind::Application) with message `e.to_string()`.
//! - **Arguments**: where a function takes a `T` you may pass a `T`, an
//!   `ObjectRef<T>` or an `&ObjectRef<T>` (see [`IntoArg`]). Refs are
//!   dependencies: the host runs the task once they exist and resolves them.
//!   Refs inside values (`Vec<ObjectRef<T>>`) are passed as refs.
//! - **Objects**: [`put`], [`get`], [`get_all`], [`get_timeout`] and
//!   [`wait`] talk to the node's object store. [`ObjectRef::map`] maps an
//!   object into the instance's memory and reads its archived value in place
//!   (zero-copy, whatever its size); large `put`s go straight into the
//!   node's shared memory; with [`ZeroPages`] as the global allocator, a
//!   large `vec![0; n]` gets fresh zero pages from the host instead of
//!   being written with zeros. A `get` on the result of a
//!   failed task returns that task's [`Error`], unchanged however many tasks
//!   it went through.
//! - **Actors**: `A::remote(args..)` runs `A::new(args..)` in a new actor and
//!   returns an [`ActorHandle<A>`]; `handle.method().remote(args..)` submits a
//!   call. Calls on one actor run one at a time, in submission order.
//!   Inside its constructor or a method, an actor names itself with
//!   [`current_actor_id`] or [`ActorHandle::current`] (a handle to itself to
//!   pass to tasks and other actors, for callbacks).
//! - **Other components**: [`wray::deployed!`](deployed!) declares the
//!   functions and actor classes of another deployed component, typed;
//!   `other::f.remote(args..)` then submits `other/f` (the qualified name,
//!   resolved through the node's function table when called), and
//!   `other::A::remote(args..)` creates its actor. Values cross as rkyv, so
//!   both sides must agree on the types:
//!
//!   ```ignore
//!   wray::deployed! {
//!       /// The `nested` example, deployed beside this component.
//!       pub mod nested = "nested" {
//!           pub fn sub_experiment(i: i64, j: i64) -> i64;
//!           #[wray(num_returns = 2)]
//!           pub fn split(v: Vec<i64>) -> (Vec<i64>, Vec<i64>);
//!           pub actor Counter {
//!               pub fn new(start: i64);
//!               pub fn add(&mut self, k: i64) -> i64;
//!           }
//!       }
//!   }
//!   let r: wray::ObjectRef<i64> = nested::sub_experiment.remote(1, 2);
//!   ```
//! - **Values**: anything that implements [`Value`], i.e. anything rkyv can
//!   serialize and check; derive it for your own types with
//!   [`#[wray::value]`](macro@value).
//! - **Resources and limits**: `#[wray::remote(num_cpus = 0.5, num_gpus =
//!   1, resources = {"accelerator": 1}, max_memory = 1 << 26, timeout_ms =
//!   1000)]` (on `#[wray::actor(..)]` too: held for the actor's lifetime);
//!   per call, `f.options(Options::new().num_gpus(1.0)).remote(..)`.
//!   [`get_gpu_ids`] and [`get_resource_ids`] say which units a task got.
//! - **Control**: [`cancel`] a task, [`kill`] an actor, [`profile`] a span of
//!   the timeline.
//! - **Failures**: a panic, a trap, a memory or time limit ends the task with
//!   an [`Error`] of the matching [`ErrorKind`]; the caller sees it from `get`.

mod actor;
mod alloc;
mod args;
mod codec;
mod control;
mod error;
mod export;
mod ids;
mod json;
mod mapped;
mod object_ref;
mod objects;
mod options;
mod panic;
mod refs;
mod runtime;
mod schema;
mod stream;
mod submit;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
use __private::bindings;

pub use actor::{Actor, ActorHandle, ActorMethods};
pub use alloc::{ZeroPages, ZERO_PAGES_MIN};
pub use args::IntoArg;
pub use codec::{Format, Value};
pub use control::{cancel, get_actor, get_gpu_ids, get_resource_ids, kill, profile, ProfileSpan};
pub use error::{Error, ErrorKind, Result};
pub use ids::{ActorId, ObjectId, TaskId};
pub use mapped::{Mapped, Primitive};
pub use object_ref::ObjectRef;
pub use objects::{get, get_all, get_timeout, put, put_bytes, put_in_place, wait};
pub use options::{Options, Scheduling};
pub use runtime::{current_actor_id, log, node_id, task_id, LogLevel};
pub use wray_macros::{actor, deployed, export, main, remote, value};

/// The rkyv crate wray encodes values with, for `#[rkyv(..)]` attributes and
/// hand-written impls.
pub use rkyv;
/// The schemars crate `describe`'s JSON Schemas come from
/// (`#[schemars(..)]` attributes).
pub use schemars;
/// The serde crate wray encodes JSON values with (`#[serde(..)]` attributes
/// on a `#[wray::value]` type go through it).
pub use serde;
