//! The etcd key layout of one cluster's state, under the prefix (`/wray/`
//! by default):
//!
//! ```text
//! <cluster>/nodes/<node id>      NodeRecord (JSON), under the node's lease
//! <cluster>/actors/<name>        ActorRecord of a named actor (JSON)
//! <cluster>/jobs/<job id, hex>   JobRecord of a live job (JSON)
//! ```

use crate::cluster::check_cluster;
use crate::nodes::NodeId;
use crate::{JobId, Result};

/// Where one cluster's keys live.
#[derive(Debug, Clone)]
pub(crate) struct ClusterKeys {
    /// `<prefix><cluster>/`.
    base: String,
    cluster: String,
}

impl ClusterKeys {
    /// The keys of `cluster` under `prefix` (made to end with `/`).
    ///
    /// # Errors
    /// [`Error::Invalid`](crate::Error::Invalid) for a bad cluster name.
    pub(crate) fn new(prefix: &str, cluster: &str) -> Result<Self> {
        check_cluster(cluster)?;
        let mut base = prefix.to_string();
        if !base.ends_with('/') {
            base.push('/');
        }
        base.push_str(cluster);
        base.push('/');
        Ok(Self {
            base,
            cluster: cluster.to_string(),
        })
    }

    /// The cluster's name.
    pub(crate) fn cluster(&self) -> &str {
        &self.cluster
    }

    /// Prefix of every node record.
    pub(crate) fn nodes(&self) -> String {
        format!("{}nodes/", self.base)
    }

    /// The record of node `id`.
    pub(crate) fn node(&self, id: &str) -> String {
        format!("{}nodes/{id}", self.base)
    }

    /// The node id of a node key, if it is one (and a valid id).
    pub(crate) fn node_of<'k>(&self, key: &'k [u8]) -> Option<&'k str> {
        let rest = key.strip_prefix(self.nodes().as_bytes())?;
        let id = std::str::from_utf8(rest).ok()?;
        NodeId::parse(id).is_ok().then_some(id)
    }

    /// Prefix of every named actor.
    pub(crate) fn actors(&self) -> String {
        format!("{}actors/", self.base)
    }

    /// The record of the actor named `name`.
    pub(crate) fn actor(&self, name: &str) -> String {
        format!("{}actors/{name}", self.base)
    }

    /// Prefix of every live job.
    pub(crate) fn jobs(&self) -> String {
        format!("{}jobs/", self.base)
    }

    /// The record of job `id`.
    pub(crate) fn job(&self, id: JobId) -> String {
        format!("{}jobs/{id}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sit_under_the_cluster() {
        let keys = ClusterKeys::new("/wray", "prod").unwrap();
        assert_eq!(
            keys.node("node-00000000000000ff"),
            "/wray/prod/nodes/node-00000000000000ff"
        );
        assert_eq!(
            keys.node_of(b"/wray/prod/nodes/node-00000000000000ff"),
            Some("node-00000000000000ff")
        );
        assert_eq!(keys.node_of(b"/wray/prod/nodes/x"), None);
        assert_eq!(
            keys.node_of(b"/wray/other/nodes/node-00000000000000ff"),
            None
        );
        assert_eq!(keys.actor("a"), "/wray/prod/actors/a");
        assert_eq!(keys.job(JobId(255)), "/wray/prod/jobs/00000000000000ff");
        assert!(ClusterKeys::new("/wray/", "a/b").is_err());
    }
}
