//! `GET /v1/logs`: the end of this node's log file (`node.log`, when the
//! node keeps one: [`HttpConfig::node_log`](crate::HttpConfig::node_log)),
//! at most [`MAX_LOG_BYTES`] from its first whole line, and the tasks whose
//! output the node keeps (each read with `GET /v1/tasks/{id}/logs`). In a
//! cluster, `?node=` reads another node's (`gather`).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use hyper::StatusCode;
use wray_api::NodeLogs;

use crate::body::{json, Answer};
use crate::error::ApiError;
use crate::query::{Query, MAX_LOG_BYTES};
use crate::rows::unknown_node;
use crate::state::State;
use wray_api::ErrorCode;

/// Bytes of the log's end answered when the query names none.
pub(crate) const DEFAULT_LOG_BYTES: u64 = 64 << 10;

/// The most tasks with kept output listed.
const MAX_LISTED_OUTPUTS: usize = 1000;

/// The end of this node's log and its kept task outputs.
///
/// # Errors
/// 404 `unknown_node` for a `?node=` that is not this node; 500 when the
/// log file cannot be read.
pub(crate) async fn local(state: &State, query: &Query) -> Answer {
    let node = &state.node;
    if let Some(other) = query.node.as_deref().filter(|n| *n != node.id()) {
        return Err(unknown_node(other));
    }
    let want = query.bytes.unwrap_or(DEFAULT_LOG_BYTES).min(MAX_LOG_BYTES);
    let (file, size, offset, text) = match &state.config.node_log {
        None => (None, 0, 0, String::new()),
        Some(path) => {
            let path = path.clone();
            let read = tokio::task::spawn_blocking(move || tail(&path, want).map(|t| (path, t)))
                .await
                .map_err(|e| log_error(&e.to_string()))?;
            let (path, (size, offset, text)) = read.map_err(|e| log_error(&e.to_string()))?;
            (Some(path.display().to_string()), size, offset, text)
        }
    };
    let tasks = match &node.config().stdio {
        wray_host::Stdio::Capture(outputs) => outputs.recent(MAX_LISTED_OUTPUTS),
        _ => Vec::new(),
    };
    json(
        StatusCode::OK,
        &NodeLogs {
            node_id: node.id().to_string(),
            file,
            size,
            offset,
            text,
            tasks,
        },
    )
}

fn log_error(e: &str) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::LogUnreadable,
        format!("reading the node's log: {e}"),
    )
}

/// The last `want` bytes of the file at `path`, from the first whole line
/// among them (all of them when they begin the file): its size, where the
/// text begins, and the text (invalid UTF-8 replaced).
///
/// # Errors
/// The file cannot be opened or read (a missing file is an empty log).
fn tail(path: &Path, want: u64) -> std::io::Result<(u64, u64, String)> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0, String::new())),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    let from = size.saturating_sub(want);
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity(usize::try_from(size.saturating_sub(from)).unwrap_or(0));
    file.take(want).read_to_end(&mut bytes)?;
    let mut start = 0;
    if from > 0 {
        // A line cut by the start: from the next one.
        if let Some(newline) = bytes.iter().position(|b| *b == b'\n') {
            start = newline + 1;
        }
    }
    let offset = from.saturating_add(u64::try_from(start).unwrap_or(0));
    let text = String::from_utf8_lossy(&bytes[start..]).into_owned();
    Ok((size, offset, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_begins_at_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.log");
        std::fs::write(&path, "first line\nsecond line\nthird\n").unwrap();
        let (size, offset, text) = tail(&path, 12).unwrap();
        assert_eq!((size, offset, text.as_str()), (29, 23, "third\n"));
        let (_, offset, text) = tail(&path, 1000).unwrap();
        assert_eq!(
            (offset, text.as_str()),
            (0, "first line\nsecond line\nthird\n")
        );
        let (size, _, text) = tail(&dir.path().join("none"), 10).unwrap();
        assert_eq!((size, text.as_str()), (0, ""));
    }
}
