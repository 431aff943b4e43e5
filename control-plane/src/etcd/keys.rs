//! The etcd key layout of the function table and the values stored there,
//! each checked when read back (etcd is shared: a value may be damaged or
//! written by something else, so every number in it is untrusted).
//!
//! Under the prefix (`/wray/` by default):
//!
//! ```text
//! functions/<name>                   Head: the current version's record (the newest, or a rollback's) and the kept versions' numbers and digests
//! versions/<name>/<version:020>      ComponentVersion of each kept version
//! refs/<sha256>/<name>/<version:020> empty: that version refers to that blob
//! blobs/<sha256>                     Manifest: size, chunk size and count, upload id
//! blobs/<sha256>/<upload>/<i:06>     chunk i of the bytes (1 MiB each, the last shorter)
//! ```

use serde::{Deserialize, Serialize};

use crate::function_table::{
    check_name, is_content_hash, ComponentVersion, MAX_COMPONENT_BYTES, MAX_RECORD_BYTES,
    MAX_VERSIONS_KEPT,
};
use crate::{Error, Result};

/// Bytes per chunk this crate writes (etcd refuses requests over 1.5 MiB by
/// default: `--max-request-bytes`).
pub(crate) const CHUNK_BYTES: u64 = 1 << 20;

/// The largest chunk a manifest may declare (etcd's default request limit).
const MAX_CHUNK_BYTES: u64 = 3 << 19;

/// The most chunks a manifest may declare (a 1 GiB blob in 16 KiB chunks).
const MAX_CHUNKS: u64 = 1 << 16;

/// The largest head value: a record plus the kept versions' list.
pub(crate) const MAX_HEAD_BYTES: usize = MAX_RECORD_BYTES + 64 * 1024;

/// Where everything lives, under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    /// The layout under `prefix` (made to end with `/`).
    pub(crate) fn new(prefix: &str) -> Self {
        let mut prefix = prefix.to_string();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Self { prefix }
    }

    /// Prefix of every head key.
    pub(crate) fn heads(&self) -> String {
        format!("{}functions/", self.prefix)
    }

    /// The head of `name`: the key whose revision serializes its writes.
    pub(crate) fn head(&self, name: &str) -> String {
        format!("{}functions/{name}", self.prefix)
    }

    /// The name of a head key, if it is one (and a valid name).
    pub(crate) fn name_of_head<'k>(&self, key: &'k [u8]) -> Option<&'k str> {
        let rest = key.strip_prefix(self.heads().as_bytes())?;
        let name = std::str::from_utf8(rest).ok()?;
        check_name(name).is_ok().then_some(name)
    }

    /// Prefix of `name`'s version records.
    pub(crate) fn versions(&self, name: &str) -> String {
        format!("{}versions/{name}/", self.prefix)
    }

    /// The record of version `version` of `name`.
    pub(crate) fn version(&self, name: &str, version: u64) -> String {
        format!("{}versions/{name}/{version:020}", self.prefix)
    }

    /// Prefix of every reference to blob `hash`.
    pub(crate) fn refs(&self, hash: &str) -> String {
        format!("{}refs/{hash}/", self.prefix)
    }

    /// Prefix of `name`'s references to blob `hash`.
    pub(crate) fn refs_by(&self, hash: &str, name: &str) -> String {
        format!("{}refs/{hash}/{name}/", self.prefix)
    }

    /// The reference of version `version` of `name` to blob `hash`.
    pub(crate) fn reference(&self, hash: &str, name: &str, version: u64) -> String {
        format!("{}refs/{hash}/{name}/{version:020}", self.prefix)
    }

    /// The manifest of blob `hash`.
    pub(crate) fn manifest(&self, hash: &str) -> String {
        format!("{}blobs/{hash}", self.prefix)
    }

    /// Prefix of the chunks of upload `upload` of blob `hash`.
    pub(crate) fn chunks(&self, hash: &str, upload: &str) -> String {
        format!("{}blobs/{hash}/{upload}/", self.prefix)
    }

    /// Chunk `index` of upload `upload` of blob `hash`.
    pub(crate) fn chunk(&self, hash: &str, upload: &str, index: u64) -> String {
        format!("{}blobs/{hash}/{upload}/{index:06}", self.prefix)
    }
}

/// One kept version, as the head lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Kept {
    /// Its version number.
    pub version: u64,
    /// Its blob's content hash.
    pub hash: String,
}

/// The value at `functions/<name>`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Head {
    /// The current version: the last of `kept`, or the one a rollback
    /// chose.
    pub current: ComponentVersion,
    /// The kept versions, oldest first.
    pub kept: Vec<Kept>,
}

impl Head {
    /// Decodes and checks the head of `name` found at `key`.
    pub(crate) fn decode(key: &str, name: &str, value: &[u8]) -> Result<Self> {
        let head: Head = decode(key, value, MAX_HEAD_BYTES)?;
        let bad = |reason: &str| corrupt(key, reason);
        check_version(key, name, &head.current)?;
        if head.kept.is_empty() || head.kept.len() > MAX_VERSIONS_KEPT {
            return Err(bad("it lists no kept versions, or more than are kept"));
        }
        if !head.kept.windows(2).all(|w| w[0].version < w[1].version) {
            return Err(bad("its kept versions are not in increasing order"));
        }
        if !head.kept.iter().all(|k| is_content_hash(&k.hash)) {
            return Err(bad("a kept version's digest is not a sha-256"));
        }
        let current = (head.current.version, head.current.record.hash.as_str());
        if !head
            .kept
            .iter()
            .any(|k| (k.version, k.hash.as_str()) == current)
        {
            return Err(bad("its current version is not one of its kept ones"));
        }
        Ok(head)
    }
}

/// Decodes and checks version `version` of `name` found at `key`.
pub(crate) fn decode_version(
    key: &str,
    name: &str,
    version: Option<u64>,
    value: &[u8],
) -> Result<ComponentVersion> {
    let decoded: ComponentVersion = decode(key, value, MAX_RECORD_BYTES)?;
    check_version(key, name, &decoded)?;
    if version.is_some_and(|v| v != decoded.version) {
        return Err(corrupt(key, "it holds another version"));
    }
    Ok(decoded)
}

/// Checks a version record read back for `name`.
fn check_version(key: &str, name: &str, version: &ComponentVersion) -> Result<()> {
    let record = &version.record;
    if record.name != name {
        return Err(corrupt(key, "it names another component"));
    }
    if version.version == 0 {
        return Err(corrupt(key, "its version is 0"));
    }
    if !is_content_hash(&record.hash) {
        return Err(corrupt(key, "its digest is not a sha-256"));
    }
    if record.size > MAX_COMPONENT_BYTES {
        return Err(corrupt(key, "its size is over the largest component"));
    }
    Ok(())
}

/// The value at `blobs/<sha256>`, written once every chunk is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// The content hash (the key's own).
    pub sha256: String,
    /// Size of the bytes.
    pub size: u64,
    /// Bytes per chunk (the last chunk holds the rest).
    pub chunk_size: u64,
    /// Number of chunks: `size` / `chunk_size`, rounded up.
    pub chunks: u64,
    /// The upload whose chunks these are (16 hex digits).
    pub upload: String,
}

/// The largest manifest value.
const MAX_MANIFEST_BYTES: usize = 1024;

impl Manifest {
    /// The manifest of an upload of `size` bytes with hash `sha256`.
    pub(crate) fn new(sha256: &str, size: u64, upload: String) -> Self {
        Self {
            sha256: sha256.to_string(),
            size,
            chunk_size: CHUNK_BYTES,
            chunks: size.div_ceil(CHUNK_BYTES),
            upload,
        }
    }

    /// Decodes and checks the manifest of blob `hash` found at `key`:
    /// sizes and counts within bounds and consistent, so that reading it
    /// sizes nothing from an unchecked number.
    pub(crate) fn decode(key: &str, hash: &str, value: &[u8]) -> Result<Self> {
        let m: Manifest = decode(key, value, MAX_MANIFEST_BYTES)?;
        let reason = if m.sha256 != hash {
            "it names another digest"
        } else if m.size > MAX_COMPONENT_BYTES {
            "its size is over the largest component"
        } else if m.chunk_size == 0 || m.chunk_size > MAX_CHUNK_BYTES {
            "its chunk size is 0 or over 1.5 MiB"
        } else if m.chunks > MAX_CHUNKS || m.chunks != m.size.div_ceil(m.chunk_size) {
            "its chunk count does not match its size"
        } else if m.upload.is_empty()
            || m.upload.len() > 32
            || !m.upload.bytes().all(|b| b.is_ascii_hexdigit())
        {
            "its upload id is not hex"
        } else {
            return Ok(m);
        };
        Err(corrupt(key, reason))
    }

    /// The length of chunk `index`: `chunk_size`, or the rest for the last.
    pub(crate) fn chunk_len(&self, index: u64) -> Option<u64> {
        let start = index.checked_mul(self.chunk_size)?;
        let left = self.size.checked_sub(start)?;
        Some(left.min(self.chunk_size))
    }
}

pub(crate) use crate::codec::{decode_json as decode, encode_json as encode};

/// An [`Error::Corrupt`] for `key`.
pub(crate) fn corrupt(key: &str, reason: &str) -> Error {
    Error::Corrupt {
        key: key.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn manifests_with_impossible_numbers_are_corrupt_not_panics() {
        let good = Manifest::new(HASH, 3 * CHUNK_BYTES + 5, "00ff".into());
        assert_eq!(good.chunks, 4);
        assert_eq!(good.chunk_len(3), Some(5));
        assert_eq!(good.chunk_len(4), None);
        assert_eq!(good.chunk_len(u64::MAX), None);
        let ok = Manifest::decode("k", HASH, &encode(&good)).unwrap();
        assert_eq!(ok, good);
        let bad = [
            Manifest {
                size: u64::MAX,
                ..good.clone()
            },
            Manifest {
                chunk_size: 0,
                ..good.clone()
            },
            Manifest {
                chunks: u64::MAX,
                ..good.clone()
            },
            Manifest {
                chunk_size: 1,
                chunks: good.size,
                ..good.clone()
            },
            Manifest {
                upload: "../x".into(),
                ..good.clone()
            },
            Manifest {
                sha256: "b".repeat(64),
                ..good.clone()
            },
        ];
        for m in bad {
            let err = Manifest::decode("k", HASH, &encode(&m)).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{m:?}: {err}");
        }
        assert!(Manifest::decode("k", HASH, b"{not json").is_err());
        assert!(Manifest::decode("k", HASH, &vec![b' '; 4096]).is_err());
    }

    #[test]
    fn head_keys_give_back_their_names() {
        let keys = Keys::new("/t");
        assert_eq!(keys.head("app"), "/t/functions/app");
        assert_eq!(keys.name_of_head(b"/t/functions/app"), Some("app"));
        assert_eq!(keys.name_of_head(b"/t/functions/a/b"), None);
        assert_eq!(keys.name_of_head(b"/t/versions/app"), None);
        assert_eq!(
            keys.version("app", 7),
            "/t/versions/app/00000000000000000007"
        );
    }
}
