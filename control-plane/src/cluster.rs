//! Cluster names: every node started with the same `--etcd` and the same
//! `--cluster NAME` (default [`DEFAULT_CLUSTER`]) is one cluster, whose
//! keys live under `<prefix><cluster>/`.

use crate::{Error, Result};

/// The cluster a node joins when it is not told which.
pub const DEFAULT_CLUSTER: &str = "default";

/// The longest cluster name, in bytes.
pub const MAX_CLUSTER_BYTES: usize = 64;

/// What a cluster name may be ([`check_cluster`]).
pub const CLUSTER_RULE: &str = "1 to 64 ASCII letters, digits, `-` or `_`, \
     not `functions`, `versions`, `refs` or `blobs` (the function table's key segments)";

/// Names the function table uses as the first key segment under the
/// prefix: a cluster so named would put its keys inside the table's.
const RESERVED: [&str; 4] = ["functions", "versions", "refs", "blobs"];

/// Checks that `name` can name a cluster ([`CLUSTER_RULE`]): it is a key
/// segment in etcd and a flag value, so stricter than a component name.
///
/// # Errors
/// [`Error::Invalid`] naming the name and the rule it breaks.
pub fn check_cluster(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "it is empty".to_string()
    } else if name.len() > MAX_CLUSTER_BYTES {
        format!("it has {} bytes, more than {MAX_CLUSTER_BYTES}", name.len())
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        format!("it contains {c:?}; a cluster name is {CLUSTER_RULE}")
    } else if RESERVED.contains(&name) {
        format!("it is reserved; a cluster name is {CLUSTER_RULE}")
    } else {
        return Ok(());
    };
    Err(Error::Invalid {
        what: format!("cluster name {name:?}"),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_checked() {
        for good in [DEFAULT_CLUSTER, "prod-1", "a_b", "X"] {
            check_cluster(good).unwrap();
        }
        let long = "a".repeat(MAX_CLUSTER_BYTES + 1);
        for bad in ["", "a/b", "a b", "é", "functions", "blobs", long.as_str()] {
            let err = check_cluster(bad).unwrap_err().to_string();
            assert!(err.contains("cluster name"), "{err}");
        }
    }
}
