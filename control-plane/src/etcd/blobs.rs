//! Component bytes in etcd: stored in chunks once per content hash, read
//! back checked, and collected when nothing refers to them.

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, DeleteOptions, Txn, TxnOp};

use super::keys::{corrupt, encode, Manifest, CHUNK_BYTES};
use super::EtcdFunctionTable;
use crate::function_table::{content_hash, is_content_hash, WRITE_ATTEMPTS};
use crate::{Error, Result};

/// What a read reserves up front at most; the rest grows as chunks arrive
/// (so a manifest cannot make a reader reserve memory its chunks lack).
const MAX_RESERVE: u64 = 64 << 20;

impl EtcdFunctionTable {
    /// Makes sure blob `hash` (of `bytes`) is stored whole and returns its
    /// manifest's mod revision (a deploy's transaction requires it
    /// unchanged). Uploads the chunks under a fresh upload id unless a
    /// valid manifest is there; a damaged one is replaced.
    pub(super) async fn store_blob(&self, hash: &str, bytes: &[u8]) -> Result<i64> {
        let key = self.keys.manifest(hash);
        for _ in 0..WRITE_ATTEMPTS {
            let seen = match self.etcd.get(&key).await? {
                Some((value, rev)) if Manifest::decode(&key, hash, &value).is_ok() => {
                    return Ok(rev)
                }
                Some((_, rev)) => rev,
                None => 0,
            };
            let upload = upload_id();
            let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
            let manifest = Manifest::new(hash, size, upload.clone());
            if let Err(e) = self.put_chunks(hash, &manifest, bytes).await {
                let _ = self
                    .etcd
                    .delete_prefix(&self.keys.chunks(hash, &upload))
                    .await;
                return Err(e);
            }
            let txn = Txn::new()
                .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, seen)])
                .and_then([TxnOp::put(key.as_str(), encode(&manifest), None)]);
            let resp = self.etcd.txn(format!("store blob {hash}"), txn).await?;
            if resp.succeeded() {
                if let Some(rev) = resp.header().map(|h| h.revision()).filter(|r| *r > 0) {
                    return Ok(rev);
                }
            } else {
                // Another upload of the same bytes was published first.
                let _ = self
                    .etcd
                    .delete_prefix(&self.keys.chunks(hash, &upload))
                    .await;
            }
        }
        Err(Error::Conflict {
            name: format!("blob {hash}"),
            attempts: WRITE_ATTEMPTS,
        })
    }

    /// Writes the chunks of `manifest`'s upload, one request each.
    async fn put_chunks(&self, hash: &str, manifest: &Manifest, bytes: &[u8]) -> Result<()> {
        let chunk = usize::try_from(CHUNK_BYTES).unwrap_or(usize::MAX);
        for (index, part) in (0u64..).zip(bytes.chunks(chunk)) {
            let key = self.keys.chunk(hash, &manifest.upload, index);
            self.etcd.put(&key, part.to_vec()).await?;
        }
        Ok(())
    }

    /// The bytes of blob `hash`: its manifest checked, then each chunk
    /// (read at the manifest's revision, so a concurrent collection cannot
    /// mix versions) checked for length, then the whole for its digest.
    pub(super) async fn read_blob(&self, hash: &str) -> Result<Arc<[u8]>> {
        if !is_content_hash(hash) {
            return Err(Error::BlobNotFound(hash.to_string()));
        }
        let key = self.keys.manifest(hash);
        let (Some((value, _)), read_at) = self.etcd.get_at(&key, 0).await? else {
            return Err(Error::BlobNotFound(hash.to_string()));
        };
        let manifest = Manifest::decode(&key, hash, &value)?;
        let reserve = usize::try_from(manifest.size.min(MAX_RESERVE)).unwrap_or(0);
        let mut bytes = Vec::with_capacity(reserve);
        for index in 0..manifest.chunks {
            let chunk_key = self.keys.chunk(hash, &manifest.upload, index);
            let want = manifest
                .chunk_len(index)
                .ok_or_else(|| corrupt(&chunk_key, "it lies past the blob's size"))?;
            let Some((chunk, _)) = self.etcd.get_at(&chunk_key, read_at).await?.0 else {
                return Err(corrupt(&chunk_key, "the chunk is missing"));
            };
            if u64::try_from(chunk.len()).ok() != Some(want) {
                return Err(corrupt(
                    &chunk_key,
                    &format!(
                        "the chunk has {} bytes, its manifest says {want}",
                        chunk.len()
                    ),
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        let digest = content_hash(&bytes);
        if digest != hash {
            return Err(corrupt(
                &key,
                &format!("its chunks have digest {digest}, not the blob's own"),
            ));
        }
        Ok(Arc::from(bytes))
    }

    /// Deletes blob `hash` if no reference key to it exists and its
    /// manifest is still the one read (both checked in the deleting
    /// transaction, so a deploy racing with it either keeps the blob or
    /// sees it gone and uploads it again). A damaged manifest is left for
    /// the next deploy of those bytes to replace.
    pub(super) async fn collect_blob(&self, hash: &str) -> Result<()> {
        let key = self.keys.manifest(hash);
        let Some((value, rev)) = self.etcd.get(&key).await? else {
            return Ok(());
        };
        let Ok(manifest) = Manifest::decode(&key, hash, &value) else {
            return Ok(());
        };
        let txn = Txn::new()
            .when([
                // Over a range, etcd compares every key in it, and an empty
                // range as one key of version 0: "no reference exists".
                Compare::version(self.keys.refs(hash), CompareOp::Equal, 0).with_prefix(),
                Compare::mod_revision(key.as_str(), CompareOp::Equal, rev),
            ])
            .and_then([
                TxnOp::delete(key.as_str(), None),
                TxnOp::delete(
                    self.keys.chunks(hash, &manifest.upload),
                    Some(DeleteOptions::new().with_prefix()),
                ),
            ]);
        self.etcd
            .txn(format!("collect blob {hash}"), txn)
            .await
            .map(drop)
    }
}

/// A fresh upload id: 16 random hex digits.
fn upload_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = crate::function_table::now_ms();
        bytes = nanos.to_le_bytes();
    }
    hex::encode(bytes)
}
