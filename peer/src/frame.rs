//! The wire format (`docs/peer-protocol.md`): a 16-byte header, then a
//! body of exactly `len` bytes. All integers are big-endian.
//!
//! ```text
//! 0       4    5         8                16
//! | len u32 | kind u8 | 0 0 0 | request id u64 | body (len bytes) ...
//! ```
//!
//! A header is decoded and checked (kind known, reserved bytes zero,
//! length within the bound of its kind) before any body byte is read or
//! any buffer for it allocated.

use crate::config::{MAX_ERROR_MESSAGE, MAX_KEY};

/// The size of a header, in bytes.
pub(crate) const HEADER_LEN: usize = 16;
/// The most bytes of a read request's body: key length, key, offset, len.
pub(crate) const MAX_READ_REQUEST: u32 = (2 + MAX_KEY + 8 + 4) as u32;
/// The most bytes of an error frame's body: code and message.
pub(crate) const MAX_ERROR_BODY: u32 = (2 + MAX_ERROR_MESSAGE) as u32;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// Client → server, first frame: magic, protocol versions, node id,
    /// wray version, nonce (`crate::handshake::Hello`).
    Hello = 1,
    /// Server → client: the proof is accepted; body: the agreed version.
    HelloOk = 2,
    /// Server → client: the hello or the proof is refused; body: a
    /// message. Then close.
    AuthFailed = 3,
    /// Client → server: method u16, then the opaque body.
    Call = 4,
    /// Server → client: the opaque answer of a call.
    CallOk = 5,
    /// Client → server: key length u16, key, offset u64, len u32.
    Read = 6,
    /// Server → client: the bytes of a read (body length = bytes sent).
    ReadData = 7,
    /// Server → client: the handler's error: code u16, message.
    RemoteError = 8,
    /// Either way: the other side broke the protocol; body: a message.
    /// Then close.
    ProtocolError = 9,
    /// Server → client, answering the hello: the agreed version, the
    /// server's versions, node id, wray version, nonce and proof
    /// (`crate::handshake::Challenge`).
    Challenge = 10,
    /// Server → client, answering the hello: no protocol version in
    /// common; the server's versions, wray version and node id. Then
    /// close.
    Incompatible = 11,
    /// Client → server, answering the challenge: the client's proof.
    Proof = 12,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Hello,
            2 => Kind::HelloOk,
            3 => Kind::AuthFailed,
            4 => Kind::Call,
            5 => Kind::CallOk,
            6 => Kind::Read,
            7 => Kind::ReadData,
            8 => Kind::RemoteError,
            9 => Kind::ProtocolError,
            10 => Kind::Challenge,
            11 => Kind::Incompatible,
            12 => Kind::Proof,
            _ => return None,
        })
    }
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Body length, in bytes.
    pub len: u32,
    /// What the frame is.
    pub kind: Kind,
    /// The request it belongs to (echoed by the answer); 0 for the hello.
    pub id: u64,
}

impl Header {
    /// The 16 bytes of this header.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&self.len.to_be_bytes());
        b[4] = self.kind as u8;
        b[8..16].copy_from_slice(&self.id.to_be_bytes());
        b
    }

    /// Decodes a header.
    ///
    /// # Errors
    /// A message for an unknown kind or nonzero reserved bytes.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, String> {
        let [l0, l1, l2, l3, kind, r0, r1, r2, i @ ..] = *b;
        let kind = Kind::from_u8(kind).ok_or_else(|| format!("unknown frame kind {kind}"))?;
        if [r0, r1, r2] != [0, 0, 0] {
            return Err("nonzero reserved header bytes".into());
        }
        Ok(Header {
            len: u32::from_be_bytes([l0, l1, l2, l3]),
            kind,
            id: u64::from_be_bytes(i),
        })
    }
}

/// A cursor over a body that refuses to read past its end.
pub(crate) struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Cursor(b)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.0.len() {
            return Err(format!(
                "body ends early: {} bytes wanted, {} left",
                n,
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }
    pub fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    pub fn rest(self) -> &'a [u8] {
        self.0
    }

    /// The bytes not read yet, leaving the cursor where it is.
    pub fn rest_ref(&self) -> &'a [u8] {
        self.0
    }

    /// Errors unless every byte was read.
    pub fn finish(self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("{} bytes past the end of the body", self.0.len()))
        }
    }
}

/// A read request's fields.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ReadRequest<'a> {
    pub key: &'a [u8],
    pub offset: u64,
    pub len: u32,
}

impl ReadRequest<'_> {
    /// The body (caller has checked the key length).
    pub fn encode(&self) -> Vec<u8> {
        let key = &self.key[..self.key.len().min(MAX_KEY)];
        let mut b = Vec::with_capacity(2 + key.len() + 12);
        b.extend_from_slice(&(key.len() as u16).to_be_bytes());
        b.extend_from_slice(key);
        b.extend_from_slice(&self.offset.to_be_bytes());
        b.extend_from_slice(&self.len.to_be_bytes());
        b
    }

    pub fn decode(body: &[u8]) -> Result<ReadRequest<'_>, String> {
        let mut c = Cursor::new(body);
        let key_len = usize::from(c.u16()?);
        if key_len > MAX_KEY {
            return Err(format!("key of {key_len} bytes (at most {MAX_KEY})"));
        }
        let key = c.take(key_len)?;
        let offset = c.u64()?;
        let len = c.u32()?;
        c.finish()?;
        Ok(ReadRequest { key, offset, len })
    }
}

/// `message` cut to at most [`MAX_ERROR_MESSAGE`] bytes at a character
/// boundary.
pub(crate) fn clip(message: &str) -> &str {
    if message.len() <= MAX_ERROR_MESSAGE {
        return message;
    }
    let mut end = MAX_ERROR_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

/// A remote error's body: code, then the (clipped) message.
pub(crate) fn encode_error(code: u16, message: &str) -> Vec<u8> {
    let m = clip(message);
    let mut b = Vec::with_capacity(2 + m.len());
    b.extend_from_slice(&code.to_be_bytes());
    b.extend_from_slice(m.as_bytes());
    b
}

/// Decodes a remote error's body.
pub(crate) fn decode_error(body: &[u8]) -> Result<(u16, String), String> {
    let mut c = Cursor::new(body);
    let code = c.u16()?;
    Ok((code, String::from_utf8_lossy(c.rest()).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_unknown_kinds_are_refused() {
        let h = Header {
            len: 7,
            kind: Kind::Read,
            id: u64::MAX,
        };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let mut b = h.encode();
        b[4] = 200;
        assert!(Header::decode(&b).unwrap_err().contains("200"));
        let mut b = h.encode();
        b[6] = 1;
        assert!(Header::decode(&b).is_err());
    }

    #[test]
    fn a_read_request_round_trips_and_truncations_are_errors() {
        let r = ReadRequest {
            key: b"obj",
            offset: 1 << 40,
            len: 4096,
        };
        let body = r.encode();
        assert_eq!(ReadRequest::decode(&body), Ok(r));
        for cut in 0..body.len() {
            assert!(ReadRequest::decode(&body[..cut]).is_err());
        }
    }

    #[test]
    fn messages_are_clipped_at_a_char_boundary() {
        let long = "é".repeat(MAX_ERROR_MESSAGE);
        let c = clip(&long);
        assert!(c.len() <= MAX_ERROR_MESSAGE && c.len() >= MAX_ERROR_MESSAGE - 1);
        let (code, m) = decode_error(&encode_error(3, &long)).unwrap();
        assert_eq!((code, m.as_str()), (3, c));
    }
}
