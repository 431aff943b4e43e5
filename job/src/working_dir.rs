//! A job's working directory (Ray's `runtime_env.working_dir`): a local
//! directory that every guest of the job sees read-only, on every node
//! its tasks reach.
//!
//! - `pack` ([`pack`]): the client packs the directory into a package, a
//!   plain tar archive made the same way every time (entries sorted,
//!   times, owners and modes fixed), so the same files give the same
//!   package; `.git` and the caller's glob patterns are left out, and the
//!   package is bounded ([`PackOptions::max_bytes`]). Its id is
//!   `sha256:` and the hex of its SHA-256 ([`PackageId`]).
//! - `unpack`: a node unpacks a package into a fresh directory, holding
//!   it to what a package may hold: regular files, directories and
//!   symbolic links that stay inside it; no absolute path, no `..`, no
//!   device, no hard link; every byte and entry counted against bounds
//!   while it unpacks.
//! - `cache` ([`WorkingDirs`]): each node keeps packages by id, once
//!   each, with what they unpack to, verified by hash before they are
//!   unpacked; bounded in bytes, the least recently used package that no
//!   running job holds given back first. The job's node stores what its
//!   client uploads (`POST /v1/packages`); another node fetches a package
//!   from the node that sent it a task of the job, once
//!   (`cluster::working_dirs`).

mod cache;
mod pack;
mod unpack;

pub use cache::{KeptPackage, Pinned, WorkingDirs};
pub use pack::{pack, PackOptions, Packed, ALWAYS_EXCLUDED};

use std::fmt;

/// Why a working directory could not be packed, stored or fetched.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkingDirError {
    /// The package (or what it unpacks to) is past a bound.
    #[error("{0}")]
    TooLarge(String),
    /// No package with this id is kept here.
    #[error("no package {0} on this node: upload it first (POST /v1/packages)")]
    NotFound(PackageId),
    /// A package id is not `sha256:` and 64 hex digits.
    #[error("{0:?} is not a package id: it is `sha256:` and 64 lowercase hex digits")]
    BadId(String),
    /// The package is not what a package may be (the message says why).
    #[error("{0}")]
    Refused(String),
    /// Reading or writing files failed.
    #[error("{0}")]
    Io(String),
}

/// A package's id: the SHA-256 of its bytes, written `sha256:<64 hex>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PackageId(pub [u8; 32]);

impl PackageId {
    /// The id of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        use sha2::Digest;
        PackageId(sha2::Sha256::digest(bytes).into())
    }

    /// `text` as an id.
    ///
    /// # Errors
    /// [`WorkingDirError::BadId`] naming it.
    pub fn parse(text: &str) -> Result<Self, WorkingDirError> {
        let bad = || WorkingDirError::BadId(crate::bounds::truncate(text.to_string(), 80));
        let hex_part = text.strip_prefix("sha256:").ok_or_else(bad)?;
        if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(bad());
        }
        let mut id = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut id).map_err(|_| bad())?;
        Ok(PackageId(id))
    }

    /// The 64 hex digits alone (the name of its files in a cache).
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for PackageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for PackageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackageId({self})")
    }
}

impl serde::Serialize for PackageId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for PackageId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <[u8; 32]>::deserialize(d).map(PackageId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_sha256_and_64_lowercase_hex_digits() {
        let id = PackageId::of(b"abc");
        assert_eq!(
            id.to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(PackageId::parse(&id.to_string()).unwrap(), id);
        for bad in [
            "",
            "sha256:",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
            "sha256:zz7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "sha256:ba7816bf",
        ] {
            let err = PackageId::parse(bad).unwrap_err().to_string();
            assert!(err.contains("not a package id"), "{bad}: {err}");
        }
    }
}
