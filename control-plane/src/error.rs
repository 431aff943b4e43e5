//! Control-plane errors.

/// What can go wrong in a control-plane call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No component is deployed under this name.
    #[error("component `{0}` is not deployed")]
    ComponentNotFound(String),
    /// The component is deployed, but not (or no longer) in this version:
    /// only the last [`MAX_VERSIONS_KEPT`](crate::MAX_VERSIONS_KEPT) are kept.
    #[error("component `{name}` has no version {version}")]
    VersionNotFound {
        /// The component's name.
        name: String,
        /// The version asked for.
        version: u64,
    },
    /// A blob (component bytes) with this content hash is not stored.
    #[error("component blob {0} is not stored")]
    BlobNotFound(String),
    /// A name a component cannot be deployed under.
    #[error("`{name}` cannot name a component: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A deploy whose record does not match its bytes, or is too large.
    #[error("cannot deploy component `{name}`: {reason}")]
    InvalidComponent {
        /// The name it was to be deployed under.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A deploy past one of the table's bounds ([`TableLimits`](crate::TableLimits)):
    /// nothing was written.
    #[error(
        "cannot deploy component `{name}`: the function table holds {held} {what}, \
         and may hold {limit}; undeploy some first"
    )]
    TableFull {
        /// The name it was to be deployed under.
        name: String,
        /// What the table counts: `names` or `bytes of components`.
        what: &'static str,
        /// How much of it the table holds now.
        held: u64,
        /// The bound.
        limit: u64,
    },
    /// Concurrent writers of one entry (deploys or undeploys of a
    /// component, state changes of a named actor) kept changing it under
    /// this call, which gave up after `attempts` tries (nothing was
    /// written by it; another writer's change stands).
    #[error("`{name}` kept changing under concurrent writes; gave up after {attempts} attempts")]
    Conflict {
        /// The component's or named actor's name.
        name: String,
        /// How many times the write was tried.
        attempts: u32,
    },
    /// What the backend holds under `key` is not what this crate writes
    /// there (bad encoding, impossible sizes or counts, a digest that does
    /// not match): damaged or written by someone else.
    #[error("control plane data at `{key}` is corrupt: {reason}")]
    Corrupt {
        /// The backend key (or blob) that failed the check.
        key: String,
        /// Which check failed.
        reason: String,
    },
    /// An argument a caller passed breaks a rule (a cluster name, a node
    /// record, registry options, an actor record): nothing was written.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// What was judged, with its value (`registry option lease_ttl`,
        /// `cluster name "a/b"`).
        what: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A put-if-absent found the key taken: a named actor's name held by
    /// another actor, a node id or job id already registered.
    #[error("{what} `{name}` already exists{holder}")]
    AlreadyExists {
        /// What kind of entry (`named actor`, `node`, `job`).
        what: &'static str,
        /// Its name or id.
        name: String,
        /// Who holds it, as ` (held by ...)`, or empty.
        holder: String,
    },
    /// A directory is at its bound (named actors, live jobs): nothing was
    /// written.
    #[error("the {what} holds {held} entries and may hold {limit}; remove some first")]
    DirectoryFull {
        /// Which directory (`actor directory`, `job table`).
        what: &'static str,
        /// How many entries it holds now.
        held: u64,
        /// The bound.
        limit: u64,
    },
    /// The backend could not be reached or answered with an error.
    #[error("control plane backend unavailable: {0}")]
    Unavailable(String),
}

impl Error {
    /// Whether the same call may succeed if retried later (a backend outage,
    /// a lost race with concurrent writers), as opposed to a definite answer
    /// (something does not exist, is invalid or is corrupt).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unavailable(_) | Error::Conflict { .. })
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
