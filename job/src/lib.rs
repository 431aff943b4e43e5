//! wray-job: what a job carries with it to every node its tasks reach
//! (Ray's `runtime_env`, and its Jobs API's log). The layer above
//! `wray-config`, below the scheduler; the executor, the cluster and the
//! node's jobs use it, and `wray-host` names its modules as it did when
//! they were its own (`crate::job_env`, `crate::job_log`,
//! `crate::job_outbox`, and the public `wray_host::working_dir`).
//!
//! - [`working_dir`]: a job's working directory, packed by the client,
//!   unpacked and kept by id on each node ([`working_dir::WorkingDirs`]);
//! - [`env`]: [`env::JobEnv`], the directories and environment variables
//!   a job's guests get, and what of them travels with its tasks;
//! - [`log`]: [`log::JobLog`], a job's bounded output, followed by byte
//!   offset;
//! - [`outbox`]: [`outbox::Outbox`], a job's output on a node other than
//!   its own, on its way back.

#![warn(unreachable_pub)]

pub mod env;
pub mod log;
pub mod outbox;
pub mod working_dir;

// The layers below, under the names this crate's modules use (as in
// `wray-host`).
use wray_config::task_output;
use wray_objects::id_map;
use wray_proto::bounds;
