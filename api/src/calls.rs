//! Function calls, actors and objects.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/functions/{component}/{function}`'s query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InvokeQuery {
    /// Seconds, above 0 and at most 3,600 (default 60): how long a
    /// synchronous call waits, and the call's task's time limit (a
    /// function's own shorter limit stays). With `async`, the task's time
    /// limit only.
    #[param(exclusive_minimum = 0, maximum = 3600)]
    pub timeout: Option<f64>,
    /// Answer 202 at once with the ids of the results (`true`, `1`, or
    /// no value), read later with `GET /v1/objects/{id}`.
    #[serde(rename = "async")]
    #[param(rename = "async")]
    pub asynchronous: Option<bool>,
}

impl InvokeQuery {
    /// The query string (empty when nothing is set).
    pub fn to_query(&self) -> String {
        crate::encoding::query_string([
            ("timeout", self.timeout.map(|t| t.to_string())),
            ("async", self.asynchronous.map(|a| a.to_string())),
        ])
    }
}

/// `GET /v1/objects/{id}`'s and `POST /v1/actors/{id}/{method}`'s query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ObjectQuery {
    /// Seconds to wait for the value, above 0 and at most 3,600 (default
    /// 60); a 504 when it is not ready by then (ask again later).
    #[param(exclusive_minimum = 0, maximum = 3600)]
    pub timeout: Option<f64>,
}

/// An async call's answer (202): the ids of its results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Accepted {
    /// One object id (40 hex digits) per result, each read once with
    /// `GET /v1/objects/{id}`.
    pub objects: Vec<String>,
}

/// `POST /v1/actors`'s body.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewActor {
    /// The deployed component.
    pub component: String,
    /// Its actor class.
    pub class: String,
    /// The constructor's arguments, passed as their JSON text (numbers
    /// exactly as written).
    #[serde(default)]
    #[schema(value_type = Vec<serde_json::Value>)]
    pub args: Vec<Box<RawValue>>,
}

/// An actor created over HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ActorInfo {
    /// Its id (32 hex digits).
    pub actor: String,
    /// The component it was created from.
    pub component: String,
    /// Its class.
    pub class: String,
}

/// One actor of the cluster, as `GET /v1/actors` lists it (Ray's
/// `list_actors()` row), alive or recently dead, as the node it lives on
/// says; an actor whose node died is listed by the node that owns it,
/// `DEAD` (or `RESTARTING` while it has restarts left).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ActorState {
    /// Its id (32 hex digits).
    pub actor: String,
    /// Its class.
    pub class: String,
    /// The component it was created from: the name it was deployed or
    /// loaded under, or its content hash when this node never loaded it.
    pub component: String,
    /// The job it belongs to (16 hex digits).
    pub job: String,
    /// `PENDING_CREATION` (its constructor has not ended), `ALIVE`,
    /// `RESTARTING` (its node died; its owner makes it again elsewhere) or
    /// `DEAD`.
    pub state: String,
    /// Why it died, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub death_cause: Option<String>,
    /// The node its instance lives on (or lived on, when that node died).
    pub node_id: String,
    /// Whether the row comes from a stub on another node than its own
    /// (its owner's, once its own node died).
    pub stub: bool,
    /// Its name in the actor directory, if it took one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Created detached: it outlives its job and its handles.
    pub detached: bool,
    /// Created over HTTP: its methods are called at
    /// `POST /v1/actors/{id}/{method}`.
    pub http: bool,
    /// Calls it has taken to run here, its constructor's runs included (a
    /// stub counts the calls it sent).
    pub calls: u64,
    /// Calls waiting in its queue here.
    pub queued: u64,
    /// Whether a call runs now.
    pub running: bool,
    /// Times it was restarted on another node after its node died.
    pub restarts: u32,
    /// When the node listing it made it, in seconds since the Unix epoch
    /// (0 when unknown): the listings' order.
    #[serde(default)]
    pub created_at: f64,
}

/// A page of `GET /v1/actors`: the cluster's actors, newest first
/// (`?order=oldest`: oldest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ActorList {
    /// The actors.
    pub actors: Vec<ActorState>,
    /// The cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The nodes whose actors are not in it (no answer in time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<crate::Unreachable>,
}

/// `DELETE /v1/actors/{id}`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Killed {
    /// The actor killed.
    pub killed: String,
}
