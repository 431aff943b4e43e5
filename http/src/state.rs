//! [`State`]: what every request's handler reaches (the node, the
//! server's configuration, the sessions kept for later answers, the
//! metrics and the jobs).

use std::sync::Arc;
use tokio::sync::Semaphore;
use wray_host::{Jobs, Node};

use crate::config::HttpConfig;
use crate::kept::Kept;
use crate::metrics::Metrics;

/// What every request's handler reaches.
pub(crate) struct State {
    pub(crate) node: Arc<Node>,
    pub(crate) config: HttpConfig,
    /// Shared: a read-once object is marked read once its answer was
    /// delivered, after the handler returned.
    pub(crate) kept: Arc<Kept>,
    pub(crate) inflight: Semaphore,
    pub(crate) metrics: Metrics,
    /// Jobs submitted over HTTP.
    pub(crate) jobs: Jobs,
}

impl State {
    pub(crate) fn new(node: Arc<Node>, config: HttpConfig) -> Self {
        State {
            node,
            kept: Arc::new(Kept::new(config.max_kept, config.kept_ttl)),
            inflight: Semaphore::new(config.max_inflight),
            metrics: Metrics::default(),
            jobs: Jobs::new(config.jobs.clone()),
            config,
        }
    }
}
