//! Versioned calls and rollback over HTTP: `POST
//! /v1/functions/app@3/add` calls a version the function table keeps,
//! and `POST /v1/components/{name}/rollback?version=N` makes one current
//! again. A version pruned or never deployed is a 404 `unknown_version`
//! naming the versions kept.

use std::sync::Arc;

use hyper::StatusCode;
use wray_host::{ComponentRecord, ComponentVersion, Node};

use crate::error::ApiError;
use wray_api::ErrorCode;

/// The record of the component a call names: `name` (what the node runs
/// for it now, no control-plane round trip) or `name@version` (read from
/// the function table, and loaded here so that the call can run it).
///
/// # Errors
/// 404 `unknown_component` or `unknown_version`; 400 `bad_version` for
/// what follows `@` not being a version number; 503 when the function
/// table cannot be read.
pub(crate) async fn record_of(
    node: &Node,
    component: &str,
) -> Result<Arc<ComponentRecord>, ApiError> {
    let unknown = || {
        ApiError::not_found(
            ErrorCode::UnknownComponent,
            format!("no component is deployed as `{component}`"),
        )
    };
    let (name, version) = wray_host::split_version(component)
        .map_err(|e| ApiError::bad_request(ErrorCode::BadVersion, e.to_string()))?;
    match version {
        None => node.deployed(name).ok_or_else(unknown),
        // Reading the table may compile the version (on the node's compile
        // pool, which this future awaits).
        Some(v) => node.component_at(name, v).await.map_err(version_error),
    }
}

/// `GET /v1/components/{name}/versions`: the versions the function table
/// keeps, oldest first.
///
/// # Errors
/// 404 `unknown_component`; 503 when the function table cannot be read.
pub(crate) async fn kept(node: &Node, name: &str) -> Result<wray_api::VersionList, ApiError> {
    let listed = node.versions_checked(name).await.map_err(version_error)?;
    Ok(wray_api::VersionList {
        name: name.to_string(),
        errors: crate::wire::list_errors(&listed.skipped),
        versions: listed
            .entries
            .iter()
            .map(|v| wray_api::VersionInfo {
                version: v.version,
                deployed_ms: v.deployed_ms,
                hash: v.record.hash.clone(),
                size: v.record.size,
                exports: v.record.functions.iter().map(|f| f.name.clone()).collect(),
            })
            .collect(),
    })
}

/// `POST /v1/components/{name}/rollback?version=N`: the version now
/// current.
///
/// # Errors
/// 400 `no_version` without `?version=`; as [`record_of`].
pub(crate) async fn rollback(
    node: &Node,
    name: &str,
    version: Option<u64>,
) -> Result<ComponentVersion, ApiError> {
    let version = version.ok_or_else(|| {
        ApiError::bad_request(
            ErrorCode::NoVersion,
            format!(
                "name the version to make current: POST /v1/components/{name}/rollback?version=N"
            ),
        )
    })?;
    node.rollback(name, version).await.map_err(version_error)
}

/// The answer for a failed version lookup or rollback.
fn version_error(e: wray_host::Error) -> ApiError {
    use wray_host::Error;
    match &e {
        Error::NotDeployed(_) => ApiError::not_found(ErrorCode::UnknownComponent, e.to_string()),
        Error::VersionNotFound { .. } => {
            ApiError::not_found(ErrorCode::UnknownVersion, e.to_string())
        }
        Error::DeployLimit(limit) => ApiError::deploy_limit(limit),
        Error::Component { .. } => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::LoadFailed,
            e.to_string(),
        ),
        _ => ApiError::busy(format!("the function table: {e}")),
    }
}
