//! Deployed components: what a deploy answers, what the listings show.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/components`'s query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeployQuery {
    /// The name to deploy the component under: 1 to 128 bytes, no `/`,
    /// `@` or control character, not `.` or `..` (percent-encoded).
    pub name: String,
}

impl DeployQuery {
    /// The query string, `?name=..` (percent-encoded).
    pub fn to_query(&self) -> String {
        format!("?name={}", crate::encode(&self.name))
    }
}

/// Where an answer about deployed components comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// The function table (the control plane): the truth.
    ControlPlane,
    /// The node's own view of the table, answered because the control
    /// plane is unreachable: what this node runs, which may lag deploys
    /// made elsewhere. Versions and deploy times are not known there.
    Node,
}

/// One deployed version of a component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ComponentInfo {
    /// Its version: 1 for a name's first deploy, then one more per deploy
    /// (absent in the node's own view, [`View::Node`]).
    #[serde(default)]
    pub version: Option<u64>,
    /// When it was deployed, in milliseconds since the Unix epoch (absent
    /// in the node's own view).
    #[serde(default)]
    pub deployed_ms: Option<u64>,
    /// Its row: digest, size, exports with their schemas.
    pub record: ComponentRecord,
    /// Where this answer comes from.
    #[serde(default = "control_plane")]
    pub view: View,
    /// In a deploy's answer only: whether the deploy made a new version.
    /// `false`: the bytes had the content digest of a kept version of the
    /// name, which is current now with its own number (the answer is then
    /// `200`, not `201`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<bool>,
}

fn control_plane() -> View {
    View::ControlPlane
}

/// One kept version of a component (`GET /v1/components/{name}/versions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct VersionInfo {
    /// Its number: 1 for the name's first deploy, one more per deploy.
    pub version: u64,
    /// When it was deployed, in milliseconds since the Unix epoch.
    pub deployed_ms: u64,
    /// Its content hash.
    pub hash: String,
    /// Bytes of its component file.
    pub size: u64,
    /// Its exports (functions, actor classes and methods), by name.
    pub exports: Vec<String>,
}

/// `GET /v1/components/{name}/versions`: the versions the function table
/// keeps, oldest first (the newest is current unless a rollback made an
/// older one current: `GET /v1/components/{name}` says which).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct VersionList {
    /// The component's name.
    pub name: String,
    /// Its kept versions, oldest first.
    pub versions: Vec<VersionInfo>,
    /// Damaged version records left out (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ListError>,
}

/// An entry a listing left out because it could not be read (a damaged
/// record in the control plane, written there by something else): the rest
/// are listed. `wray undeploy` of the name removes a damaged component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ListError {
    /// The name it is listed under.
    pub name: String,
    /// Its key in the control plane.
    pub key: String,
    /// Why it could not be read.
    pub error: String,
}
/// A page of `GET /v1/components`: deployed components by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ComponentList {
    /// The components, ordered by name.
    pub components: Vec<ComponentInfo>,
    /// The cursor of the next page (`?after=`); absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Where this answer comes from.
    pub view: View,
    /// Damaged entries of the function table left out of this page, by
    /// name (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ListError>,
}

/// A deployed component's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ComponentRecord {
    /// The name it is deployed under.
    pub name: String,
    /// Hex SHA-256 of its bytes.
    pub hash: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether it has a driver entry point (`main`): it can run as a job.
    pub has_main: bool,
    /// The SDK that built it (`wray-rust 0.1.0`); empty when unsaid.
    #[serde(default)]
    pub sdk: String,
    /// Its remote functions, actor classes and methods.
    pub functions: Vec<FunctionExport>,
}

/// What kind of export a [`FunctionExport`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum ExportKind {
    /// A remote function: `POST /v1/functions/{component}/{name}`.
    Function,
    /// An actor class (its constructor): `POST /v1/actors`.
    ActorClass,
    /// A method of an actor class: `POST /v1/actors/{id}/{name}`.
    ActorMethod,
}

/// One export of a component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FunctionExport {
    /// Function, actor class or method.
    pub kind: ExportKind,
    /// The function's, class's or method's name.
    pub name: String,
    /// The class of a method.
    #[serde(default)]
    pub class: Option<String>,
    /// Objects each call returns.
    pub num_returns: u32,
    /// Its parameters, with their JSON Schemas.
    #[serde(default)]
    pub params: Vec<Param>,
    /// The JSON Schema (JSON text) of each return object (empty for a
    /// constructor).
    #[serde(default)]
    pub returns: Vec<String>,
    /// Resources and limits it declares.
    #[serde(default)]
    pub declared: Declared,
}

/// One parameter of a function or method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Param {
    /// Its name in the guest's source.
    pub name: String,
    /// The JSON Schema (draft 2020-12) of its JSON form, as JSON text
    /// (`{}`: anything).
    pub schema: String,
}

/// What an export declares it needs and may use; absent: the node's
/// default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct Declared {
    /// CPUs per call.
    #[serde(default)]
    pub num_cpus: Option<f64>,
    /// GPUs per call.
    #[serde(default)]
    pub num_gpus: Option<f64>,
    /// Bytes of memory reserved per call.
    #[serde(default)]
    pub memory: Option<u64>,
    /// Custom resources per call: (name, amount).
    #[serde(default)]
    #[schema(value_type = Vec<(String, f64)>)]
    pub resources: Vec<(String, f64)>,
    /// Memory limit in bytes.
    #[serde(default)]
    pub max_memory: Option<u64>,
    /// Time limit in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Fuel limit.
    #[serde(default)]
    pub fuel: Option<u64>,
    /// Runs on a long-lived instance reused across calls.
    #[serde(default)]
    pub reuse: bool,
}

/// `DELETE /v1/components/{name}`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Undeployed {
    /// The name undeployed.
    pub undeployed: String,
}
