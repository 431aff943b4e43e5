//! wray's HTTP API: a long-running node's front door (`wray start`).
//!
//! Deploy components, invoke their functions and actors with JSON, read
//! objects, and read the node's state, as a serverless platform does:
//!
//! - [`config`]: what the server accepts (bind address, token, body and
//!   queue bounds, timeouts).
//! - [`routes`]: the route table (method, path, summary), the one list the
//!   router, the metrics and the OpenAPI document are built from.
//! - [`server`]: the hyper server: connections, header and body read
//!   timeouts, graceful shutdown.
//! - [`tls`]: https: the certificate and key files, read into a rustls
//!   configuration; the server does each connection's handshake in that
//!   connection's task, under the header timeout.
//! - `handlers`: one function per route, each through a
//!   [`wray_host::Session`] of its own job, so one caller reaches another's
//!   objects and actors only when handed their ids.
//! - `jobs`: the Jobs API (submit with options, list, status, logs
//!   streamed, stop) over the host's [`wray_host::Jobs`].
//! - `versions`: calls to a kept version (`app@3`) and rollback.
//! - `kept`: the sessions an answer outlives (async invocations, actors),
//!   bounded in number and time.
//! - [`error`]: the JSON error every 4xx and 5xx answers with.
//! - `metrics`: Prometheus text for `GET /metrics`.
//! - [`openapi`]: the OpenAPI 3.1 document of the routes and of every
//!   deployed function's JSON Schemas.
//!
//! Nothing a client sends may crash the node: every number and id in a
//! path, query or body is parsed with a bound and answered with a 4xx
//! naming what was wrong.

pub mod config;
pub mod error;
mod handlers;
mod jobs;
mod kept;
mod metrics;
pub mod openapi;
pub mod routes;
pub mod server;
pub mod tls;
mod versions;

pub use config::HttpConfig;
pub use error::ApiError;
pub use jobs::SubmitJob;
pub use server::Server;
pub use tls::{TlsError, TlsFiles};
