//! Jobs' working directories, as Ray's Jobs API uploads a `working_dir`
//! package before the job that names it: `POST /v1/packages` keeps a tar
//! archive (checked, unpacked, once by its SHA-256) and answers its id,
//! which a job's `working_dir.package` names; `GET /v1/packages/{id}`
//! says whether the node keeps one (the CLI skips the upload then).

use bytes::Bytes;
use hyper::StatusCode;
use wray_api::PackageInfo;
use wray_host::working_dir::{KeptPackage, PackageId, WorkingDirError};
use wray_host::Node;

use crate::body::{json, Answer};
use crate::error::ApiError;
use wray_api::ErrorCode;

/// The API's form of a kept package.
fn info(kept: &KeptPackage) -> PackageInfo {
    PackageInfo {
        package: kept.id.to_string(),
        bytes: kept.bytes,
        unpacked_bytes: kept.unpacked,
        entries: kept.entries,
    }
}

/// The answer for a package the node refused or does not keep.
pub(crate) fn package_error(e: WorkingDirError) -> ApiError {
    let message = e.to_string();
    match e {
        WorkingDirError::NotFound(_) => ApiError::not_found(ErrorCode::UnknownPackage, message),
        WorkingDirError::BadId(_) => ApiError::bad_request(ErrorCode::BadId, message),
        WorkingDirError::TooLarge(_) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PackageTooLarge,
            message,
        ),
        WorkingDirError::Refused(_) => ApiError::bad_request(ErrorCode::InvalidPackage, message),
        WorkingDirError::Io(_) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::PackageIo,
            message,
        ),
    }
}

/// `POST /v1/packages`: keeps `body` (201 with its info; 200 when it was
/// kept already).
///
/// # Errors
/// As [`package_error`].
pub(crate) async fn upload(node: &Node, body: Bytes) -> Answer {
    let (kept, new) = node.store_package(body).await.map_err(package_error)?;
    let status = if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    json(status, &info(&kept))
}

/// `GET /v1/packages/{id}`.
///
/// # Errors
/// 400 `bad_id`; 404 `unknown_package`.
pub(crate) fn get(node: &Node, id: &str) -> Answer {
    let id = PackageId::parse(id).map_err(package_error)?;
    let kept = node
        .package(id)
        .ok_or(WorkingDirError::NotFound(id))
        .map_err(package_error)?;
    json(StatusCode::OK, &info(&kept))
}
