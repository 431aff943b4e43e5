//! Integration tests of the control plane (one binary): the function
//! table's behaviour, written once and run against every backend (the
//! embedded one, and etcd started on loopback by [`etcd_server`]), and the
//! etcd backend's own failure cases; the cluster's state on etcd (node
//! registry, actor directory, job table).

// The behaviours in `function_table` are test bodies that a macro runs once
// per backend, so clippy does not see them as tests.
#![allow(clippy::unwrap_used)]

mod function_table;

#[cfg(feature = "etcd")]
mod actors;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "etcd")]
mod etcd_server;
#[cfg(feature = "etcd")]
mod held_port;
#[cfg(feature = "etcd")]
mod jobs;
#[cfg(feature = "etcd")]
mod nodes;
