//! wray-scheduler: a node's local scheduler: a task runs when its object arguments exist and its
//! resource request fits in what is free, first come first served within
//! those gates.
//!
//! - `core`: `Scheduler`, the scheduling state of a node (its fields
//!   private to this module), what it is built with (`Outlets`: the
//!   layers it hands work to), and how a job ends; `door`: what the
//!   layers above read of it (the node's id, configuration, object store,
//!   tables and resources).
//! - `task`: a queued task (`Task`: a `TaskSpec` with what it holds
//!   on this node) and its dependency count.
//! - `task_table`: the task table (every task's state, times, error).
//! - `actor`: actor mailboxes: each actor's ordered queue, resources,
//!   death, and exit once its last handle is gone; `actor_table`: the live
//!   and recently dead actors.
//! - `dispatch`: submission, dependencies, starting work, sealing
//!   results; `exec`: the `Executor` interface work starts through.
//! - `queue`: the node's resources, the ready queue by scheduling class,
//!   blocked tasks resuming.
//! - `blocking`: waiting for objects (`get`, `wait`).
//! - `functions`: the deployed components by content hash and by name
//!   (`Callee`: what a submission names, its own component or another's),
//!   bounded (names, versions, bytes, compiled code), each version kept
//!   while a task, actor or driver uses it (`InUse`).
//! - `submit`: checking a submission against the function table;
//!   `placement`: the placement step (here or infeasible on a node of its
//!   own; in a cluster, once a function's arguments exist, the placement
//!   policy, `placement::policy`, over the cluster's `PlacementView`).
//! - `queue`'s tasks may leave for another node while they wait
//!   (`Movable`, spillback).
//! - `cancel`: cancelling tasks and killing actors.
//! - `remote`: the door to the other nodes of a cluster (`Remote`);
//!   `adopt`: actors another node created here, and stubs of actors
//!   living on other nodes (an actor's `Home`).
//! - `calls_out`: a forwarded task's calls on actors living elsewhere,
//!   awaited before it counts as finished (the order one node gives).
//! - `names`: the door to the actor directory (`ActorNames`): named
//!   actors' names freed as they die, moved as they restart.
//!
//! Submission registers the task's return objects as pending, subscribes to
//! each dependency, and queues the task when the last one is sealed: remote
//! functions and actor constructors in the resource queue, actor calls on
//! their actor's own queue (they run with the actor's resources). Work
//! that can start goes to the node's `Executor`: the scheduler knows no
//! wasmtime.

#![warn(unreachable_pub)]

pub mod actor;
pub mod actor_table;
pub mod adopt;
pub mod blocking;
pub mod calls_out;
pub mod cancel;
pub mod core;
pub mod dispatch;
mod door;
pub mod exec;
pub mod functions;
pub mod names;
pub mod placement;
pub mod queue;
pub mod remote;
pub mod submit;
pub mod task;
pub mod task_table;

pub use self::core::{Scheduler, StatsSnapshot};
pub use self::exec::Executor;
pub use self::functions::{Callee, ComponentUsage};
pub use self::task::{Actor, PendingTask, Task};

// The layers below, under the names this crate's modules use (as in
// `wray-host`).
use wray_config as config;
use wray_objects as objects;
use wray_objects::id_map;
use wray_proto as proto;
use wray_proto::{bounds, error};
use wray_resources as resources;
use wray_resources::{cancel_token, worker_pool};
