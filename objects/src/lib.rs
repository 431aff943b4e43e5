//! wray-objects: the node's object store, immutable objects by
//! [`ObjectId`], with readiness notification; the layer above `wray-proto`
//! that the scheduler, the executor and the cluster share (in `wray-host`
//! it is the module `objects`).
//!
//! - `store`: [`ObjectStore`], its [`Object`]s, subscriptions and rows;
//! - [`arena`]: the shared-memory file large values live in;
//! - [`data`]: where one value's bytes live, and the budgets of each place;
//! - [`holds`]: what one holder (an instance, a session) holds
//!   ([`Holds`]);
//! - [`sizing`]: how large a store is by default;
//! - `slots`: the table of ids, holders and what a free frees in turn;
//! - [`id_map`]: the tables keyed by task, object and actor ids, which
//!   every layer above uses too.
//!
//! This is the store of a single node. An object is created *pending* when
//! the task that will produce it is submitted (or when a task starts making
//! it), and *sealed* once (with a value or an error); sealing wakes
//! everything subscribed to it (tasks waiting for their arguments, guests
//! blocked in `get`/`wait`). Objects are never changed after sealing, and
//! only an object the store expects can be sealed.
//!
//! Reference counting (Ray's ownership model on one node): every slot counts
//! its holders: holders ([`Holds`]: instances, sessions),
//! queued tasks (their arguments) and sealed objects whose value contains
//! its id. When the count drops to zero the object is freed, and the refs
//! inside its value are released in turn. When a job ends, whatever of it is
//! left is freed at once (Ray frees a job's objects when its driver exits),
//! so that nothing a job made, reference cycles included, outlives it.

#![warn(unreachable_pub)]

pub mod arena;
pub mod data;
pub mod holds;
pub mod id_map;
pub mod sizing;
mod slots;
mod store;

// The layer below, under the names this crate's modules use (as in
// `wray-host`).
use wray_proto as proto;
use wray_proto::{bounds, error};

pub use crate::proto::Codec;
pub use data::{Budget, Charge, Data, Refs};
pub use holds::{Holds, TooManyHolds};
pub use store::{
    default_spill_limit, FreeHook, Object, ObjectRow, ObjectStore, StoreFull, StoreLimits,
    StoreStats, Subscription, Waiter, GIVE_BACK_AFTER,
};

pub(crate) use crate::bounds::OBJECT_OVERHEAD;

/// Values smaller than this (bytes) stay on the host's heap and travel
/// inline with tasks; larger ones go to the shared-memory arena, from where
/// guests can map them without a copy. One definition for the host and the
/// guest SDK (`wray-abi`, which says where 100 KiB comes from).
pub use wray_abi::INLINE_MAX;
