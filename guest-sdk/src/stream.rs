//! Streaming a large value into the shared-memory store: the serializer's
//! output goes to the host in chunks (`mapping.reserve`, `write`, `seal`),
//! and a large contiguous run (a `Vec<u8>`'s or `Vec<f64>`'s elements, which
//! rkyv writes in one piece) goes straight from the value's own memory into
//! the store's pages: one copy in all, where encoding into a buffer and
//! handing that over costs two.

use rkyv::rancor;
use rkyv::ser::{Positional, Writer};

use crate::bindings::{mapping, types as wit};

/// Small writes are gathered into a buffer of this many bytes (64 KiB)
/// before they go to the host; writes at least this large go directly.
const STAGE: usize = 64 << 10;

/// An rkyv writer whose bytes land in an object being created by the host.
#[doc(hidden)]
pub struct HostWriter {
    id: wit::ObjectId,
    pos: usize,
    staged: Vec<u8>,
    staged_at: usize,
}

/// A host `write` that failed, as an rkyv error source.
#[derive(Debug)]
struct WriteFailed(String);

impl core::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WriteFailed {}

impl HostWriter {
    /// A writer into object `id` (from `mapping.reserve`), from byte 0.
    pub(crate) fn new(id: wit::ObjectId) -> Self {
        Self {
            id,
            pos: 0,
            staged: Vec::new(),
            staged_at: 0,
        }
    }

    /// Sends what is still staged and returns the bytes written in all.
    ///
    /// # Errors
    ///
    /// The host rejected the write.
    pub(crate) fn finish(mut self) -> Result<usize, rancor::Error> {
        self.flush()
            .map_err(|m| <rancor::Error as rancor::Source>::new(WriteFailed(m)))?;
        Ok(self.pos)
    }

    /// Sends what is staged; the writer is then empty.
    fn flush(&mut self) -> Result<(), String> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let r = mapping::write(self.id, self.staged_at as u64, &self.staged);
        self.staged.clear();
        r.map_err(|e| e.message)
    }
}

impl Positional for HostWriter {
    fn pos(&self) -> usize {
        self.pos
    }
}

impl<E: rancor::Source> Writer<E> for HostWriter {
    fn write(&mut self, bytes: &[u8]) -> Result<(), E> {
        if self.staged.len() + bytes.len() > STAGE {
            self.flush().map_err(|m| E::new(WriteFailed(m)))?;
        }
        if bytes.len() >= STAGE {
            mapping::write(self.id, self.pos as u64, bytes)
                .map_err(|e| E::new(WriteFailed(e.message)))?;
        } else {
            if self.staged.is_empty() {
                self.staged.reserve(STAGE);
                self.staged_at = self.pos;
            }
            self.staged.extend_from_slice(bytes);
        }
        self.pos += bytes.len();
        Ok(())
    }
}
