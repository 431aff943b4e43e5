//! Host errors: what can go wrong starting a node, deploying a component or
//! running a driver. A task's own failures are [`TaskError`]s (error
//! objects), defined in [`proto`](crate::proto).

pub use crate::proto::error::{DeployBound, DeployLimit, Error, ErrorKind, Result, TaskError};
