//! Control-plane errors.

/// What can go wrong in a control-plane call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No component is deployed under this name.
    #[error("component `{0}` is not deployed")]
    ComponentNotFound(String),
    /// A blob (component bytes) with this content hash is not stored.
    #[error("component blob {0} is not stored")]
    BlobNotFound(String),
    /// The backend could not be reached or answered with an error.
    #[error("control plane backend unavailable: {0}")]
    Unavailable(String),
}

impl Error {
    /// Whether the same call may succeed if retried later (a backend outage),
    /// as opposed to a definite answer (something does not exist).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
