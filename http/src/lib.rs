//! wray's HTTP API: a long-running node's front door (`wray start`).
//!
//! Deploy components, invoke their functions and actors with JSON, read
//! objects, and read the node's state, as a serverless platform does. The
//! wire contract (every body and query) is the `wray-api` crate's types,
//! shared with the clients:
//!
//! - [`config`]: what the server accepts (bind address, token, body,
//!   answer and queue bounds, timeouts).
//! - [`routes`]: each route declared once (method, path, summary, its
//!   [`routes::Route`] and its OpenAPI description), from which the route
//!   list (the metrics' labels), the router and the OpenAPI paths come;
//!   path parameters percent-decoded.
//! - `browser`: what a web page of another site could make a browser
//!   send (cross-origin writes, rebound names), refused first.
//! - `query`: each route's query parameters, bounded.
//! - [`server`]: the hyper server: connections, header and body read
//!   timeouts, graceful shutdown.
//! - [`tls`]: https: the certificate and key files, read into a rustls
//!   configuration; the server does each connection's handshake in that
//!   connection's task, under the header timeout.
//! - `handlers`: the token check and the in-flight bound; `dispatch`: one
//!   arm per route, and the small routes, each
//!   call through a [`wray_host::Session`] of its own job, so one caller
//!   reaches another's objects and actors only when handed their ids.
//! - `calls`: function calls, actors and objects: arguments passed as
//!   written, results answered from the store without a copy.
//! - `listings`: the function table's routes (falling back to the node's
//!   own view when the control plane is unreachable) and this node's pages
//!   of the listings of the cluster's state (tasks, actors, jobs, objects,
//!   errors), in the order `rows` keeps (newest first, a cursor that never
//!   goes stale).
//! - `gather`: in a cluster, those listings, the timeline and another
//!   node's log gathered from every node over the node-to-node channel,
//!   with a deadline per node, and merged; `node_logs`: the end of the
//!   node's log and the tasks whose output it keeps.
//! - `jobs`: the Jobs API (submit with options, list, status, logs
//!   streamed, stop) over the host's [`wray_host::Jobs`].
//! - `versions`: calls to a kept version (`app@3`) and rollback.
//! - `packages`: jobs' working directories, uploaded before the jobs
//!   that name them.
//! - `relayed`: another node's answer as this node's (`Wray-Node`).
//! - `relay`: in a cluster, a job, object or actor this node does not
//!   have is asked of the other nodes over the node-to-node channel, and
//!   their relayed requests are answered here.
//! - `kept`: the sessions an answer outlives (async invocations, actors),
//!   bounded in number and time.
//! - `state`: what every handler reaches (the node, the configuration,
//!   the kept sessions, the metrics, the jobs).
//! - `body`: answers' bodies: whole, in pieces, a log as it grows
//!   (`log_stream`), or one whose delivery matters (`delivery`: a
//!   read-once object's, marked read once sent whole; a relayed answer
//!   pulled from its node as it is sent); a JSON answer; a request's body
//!   read within bounds.
//! - `wire`: the function table's stored records as the API's views (the
//!   node's state the host makes as the API's types itself).
//! - [`error`]: the JSON error every 4xx and 5xx answers with, its code a
//!   [`wray_api::ErrorCode`].
//! - `metrics`: Prometheus text for `GET /metrics`.
//! - `dashboard`: the dashboard's files (`dashboard/dist/`, embedded),
//!   served at `/` and `/dashboard/...` with a Content-Security-Policy;
//!   the page reads the API above with the token like any client.
//! - [`openapi`]: the OpenAPI 3.1 documents: the API's, and one per
//!   deployed component of its functions' JSON Schemas.
//!
//! Nothing a client sends may crash the node: every number and id in a
//! path, query or body is parsed with a bound and answered with a 4xx
//! naming what was wrong.

mod body;
mod browser;
mod calls;
pub mod config;
mod dashboard;
mod delivery;
mod dispatch;
pub mod error;
mod gather;
mod handlers;
mod jobs;
mod kept;
mod listings;
mod log_stream;
mod metrics;
mod node_logs;
pub mod openapi;
mod packages;
mod query;
mod relay;
mod relayed;
pub mod routes;
mod rows;
pub mod server;
mod state;
pub mod tls;
mod versions;
mod wire;

pub use config::HttpConfig;
pub use error::ApiError;
pub use server::Server;
pub use tls::{TlsError, TlsFiles};
