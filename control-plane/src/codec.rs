//! JSON of the records a backend stores, and the bounded decoding of what
//! it gives back (a backend is shared: a value may be damaged or written by
//! something else, so its size is checked before it is parsed).

use serde::{de::DeserializeOwned, Serialize};

use crate::{Error, Result};

/// Decodes JSON `value` read at `key`, refusing one over `max` bytes.
///
/// # Errors
/// [`Error::Corrupt`] naming `key`: too large, or not the JSON of a `T`.
pub(crate) fn decode_json<T: DeserializeOwned>(key: &str, value: &[u8], max: usize) -> Result<T> {
    if value.len() > max {
        return Err(Error::Corrupt {
            key: key.to_string(),
            reason: format!("its value has {} bytes, more than {max}", value.len()),
        });
    }
    serde_json::from_slice(value).map_err(|e| Error::Corrupt {
        key: key.to_string(),
        reason: format!("cannot decode it: {e}"),
    })
}

/// JSON of `value` (the records of this crate always encode).
pub(crate) fn encode_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
