//! The handshake's messages (`docs/peer-protocol.md`, "Handshake"): the
//! client's [`Hello`], the server's [`Challenge`] or [`Incompatible`]
//! answer, the version both sides agree on ([`agree`]), and the proofs of
//! the token over both ([`proof`]).
//!
//! The hello's layout up to its nonce, and the `Incompatible` frame, are
//! the same in every protocol version from 2 on, so that two releases
//! that share no version still tell each other which they speak; a later
//! version may only append fields to the hello (an older node ignores
//! them; the proofs cover them).

mod proof;

use std::fmt;

pub(crate) use proof::{nonce, prove, verify, Side, NONCE_LEN, PROOF_LEN};

use crate::config::{MAX_NODE_ID, MAX_WRAY_VERSION};
use crate::frame::Cursor;

/// The bytes every hello starts with.
pub(crate) const MAGIC: &[u8; 8] = b"WRAYPEER";
/// The most bytes of a hello's body: its fields take at most 142; the
/// rest is room for fields a later version appends.
pub(crate) const MAX_HELLO: u32 = 512;
/// The most bytes of a challenge's body: version, versions, node id,
/// wray version, nonce, proof.
pub(crate) const MAX_CHALLENGE: u32 =
    (2 + 4 + 1 + MAX_NODE_ID + 1 + MAX_WRAY_VERSION + NONCE_LEN + PROOF_LEN) as u32;
/// The most bytes of an `Incompatible` body: versions, wray version, node
/// id.
pub(crate) const MAX_INCOMPATIBLE: u32 = (4 + 1 + MAX_WRAY_VERSION + 1 + MAX_NODE_ID) as u32;

/// A range of protocol versions a node speaks, `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions {
    pub min: u16,
    pub max: u16,
}

impl Versions {
    pub fn of(range: &std::ops::RangeInclusive<u16>) -> Versions {
        Versions {
            min: *range.start(),
            max: *range.end(),
        }
    }

    fn decode(c: &mut Cursor<'_>) -> Result<Versions, String> {
        let (min, max) = (c.u16()?, c.u16()?);
        if min > max {
            return Err(format!("protocol versions {min}..={max} are no range"));
        }
        Ok(Versions { min, max })
    }

    fn encode(&self, b: &mut Vec<u8>) {
        b.extend_from_slice(&self.min.to_be_bytes());
        b.extend_from_slice(&self.max.to_be_bytes());
    }
}

impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..={}", self.min, self.max)
    }
}

/// The version two nodes speak: the highest both speak, if any.
pub(crate) fn agree(ours: Versions, theirs: Versions) -> Option<u16> {
    let low = ours.min.max(theirs.min);
    let high = ours.max.min(theirs.max);
    (low <= high).then_some(high)
}

/// The sentence naming both sides' versions when they share none.
pub(crate) fn mismatch(
    them: &str,
    theirs: Versions,
    their_wray: &str,
    ours: Versions,
    our_wray: &str,
) -> String {
    format!(
        "node {them} speaks protocol {theirs} (wray {their_wray}); this node speaks {ours} (wray {our_wray})"
    )
}

/// A string of `u8` length and at most `max` bytes of UTF-8.
fn string<'a>(c: &mut Cursor<'a>, what: &str, min: usize, max: usize) -> Result<&'a str, String> {
    let len = usize::from(c.u8()?);
    if len < min || len > max {
        return Err(format!("{what} of {len} bytes ({min}..={max})"));
    }
    std::str::from_utf8(c.take(len)?).map_err(|_| format!("{what} is not UTF-8"))
}

/// Appends `s`, cut to `max` bytes (callers check lengths first), with
/// its `u8` length.
fn put_string(b: &mut Vec<u8>, s: &str, max: usize) {
    let s = &s.as_bytes()[..s.len().min(max).min(usize::from(u8::MAX))];
    b.push(s.len() as u8);
    b.extend_from_slice(s);
}

/// The client's first frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Hello<'a> {
    pub versions: Versions,
    pub node_id: &'a str,
    pub wray_version: &'a str,
    pub nonce: [u8; NONCE_LEN],
}

/// What a hello's body turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decoded<'a> {
    /// A hello of protocol 2 or later.
    Hello(Hello<'a>),
    /// A hello of protocol 1 (version 1 where 2.. has its least version),
    /// with its node id when it reads as one.
    Legacy { node_id: Option<&'a str> },
}

impl Hello<'_> {
    /// The body (caller has checked the lengths).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(MAX_HELLO as usize);
        b.extend_from_slice(MAGIC);
        self.versions.encode(&mut b);
        put_string(&mut b, self.node_id, MAX_NODE_ID);
        put_string(&mut b, self.wray_version, MAX_WRAY_VERSION);
        b.extend_from_slice(&self.nonce);
        b
    }

    /// Decodes a hello body (at most [`MAX_HELLO`] bytes), checking the
    /// magic and every length; bytes after the nonce are ignored.
    pub fn decode(body: &[u8]) -> Result<Decoded<'_>, String> {
        let mut c = Cursor::new(body);
        if c.take(MAGIC.len())? != MAGIC {
            return Err("not a wray peer hello (bad magic)".into());
        }
        let mut first = Cursor::new(c.rest_ref());
        if first.u16()? == 1 {
            // Version 1: version u16, node id, token (never looked at).
            let node_id = string(&mut first, "node id", 1, MAX_NODE_ID).ok();
            return Ok(Decoded::Legacy { node_id });
        }
        let versions = Versions::decode(&mut c)?;
        let node_id = string(&mut c, "node id", 1, MAX_NODE_ID)?;
        let wray_version = string(&mut c, "wray version", 0, MAX_WRAY_VERSION)?;
        let nonce = c.array()?;
        Ok(Decoded::Hello(Hello {
            versions,
            node_id,
            wray_version,
            nonce,
        }))
    }
}

/// The server's answer to a hello it can speak with; its body is the
/// fields, then the server's proof over the hello and them.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Challenge<'a> {
    /// The version agreed on.
    pub version: u16,
    pub versions: Versions,
    pub node_id: &'a str,
    pub wray_version: &'a str,
    pub nonce: [u8; NONCE_LEN],
}

impl<'a> Challenge<'a> {
    /// The fields, without the proof (what the proofs cover).
    pub fn encode_fields(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(MAX_CHALLENGE as usize);
        b.extend_from_slice(&self.version.to_be_bytes());
        self.versions.encode(&mut b);
        put_string(&mut b, self.node_id, MAX_NODE_ID);
        put_string(&mut b, self.wray_version, MAX_WRAY_VERSION);
        b.extend_from_slice(&self.nonce);
        b
    }

    /// Decodes a challenge body: the fields, their bytes, and the proof.
    pub fn decode(body: &'a [u8]) -> Result<(Challenge<'a>, &'a [u8], [u8; PROOF_LEN]), String> {
        let Some(split) = body.len().checked_sub(PROOF_LEN) else {
            return Err(format!("a challenge of {} bytes", body.len()));
        };
        let (fields, proof) = body.split_at(split);
        let mut c = Cursor::new(fields);
        let version = c.u16()?;
        let versions = Versions::decode(&mut c)?;
        let node_id = string(&mut c, "node id", 1, MAX_NODE_ID)?;
        let wray_version = string(&mut c, "wray version", 0, MAX_WRAY_VERSION)?;
        let nonce = c.array()?;
        c.finish()?;
        let mut p = [0u8; PROOF_LEN];
        p.copy_from_slice(proof);
        let challenge = Challenge {
            version,
            versions,
            node_id,
            wray_version,
            nonce,
        };
        Ok((challenge, fields, p))
    }
}

/// The server's answer to a hello it shares no version with (the same in
/// every version): its versions, wray version and node id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Incompatible<'a> {
    pub versions: Versions,
    pub wray_version: &'a str,
    pub node_id: &'a str,
}

impl<'a> Incompatible<'a> {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(MAX_INCOMPATIBLE as usize);
        self.versions.encode(&mut b);
        put_string(&mut b, self.wray_version, MAX_WRAY_VERSION);
        put_string(&mut b, self.node_id, MAX_NODE_ID);
        b
    }

    /// Decodes the body; bytes past the node id are ignored.
    pub fn decode(body: &'a [u8]) -> Result<Incompatible<'a>, String> {
        let mut c = Cursor::new(body);
        let versions = Versions::decode(&mut c)?;
        let wray_version = string(&mut c, "wray version", 0, MAX_WRAY_VERSION)?;
        let node_id = string(&mut c, "node id", 1, MAX_NODE_ID)?;
        Ok(Incompatible {
            versions,
            wray_version,
            node_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello<'static> {
        Hello {
            versions: Versions { min: 2, max: 3 },
            node_id: "n1",
            wray_version: "0.9.0",
            nonce: [7; NONCE_LEN],
        }
    }

    #[test]
    fn the_highest_common_version_is_agreed() {
        let v = |min, max| Versions { min, max };
        assert_eq!(agree(v(2, 3), v(3, 4)), Some(3));
        assert_eq!(agree(v(2, 5), v(2, 9)), Some(5));
        assert_eq!(agree(v(2, 2), v(3, 3)), None);
    }

    #[test]
    fn a_hello_round_trips_and_every_length_is_checked() {
        let body = hello().encode();
        assert!(body.len() <= 142);
        assert_eq!(Hello::decode(&body), Ok(Decoded::Hello(hello())));
        for cut in 0..body.len() {
            assert!(Hello::decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        // A later version's fields after the nonce are ignored.
        let mut longer = body.clone();
        longer.extend_from_slice(b"more");
        assert_eq!(Hello::decode(&longer), Ok(Decoded::Hello(hello())));
        let mut no_range = body;
        no_range[8..12].copy_from_slice(&[0, 4, 0, 3]);
        assert!(Hello::decode(&no_range).is_err());
    }

    #[test]
    fn a_version_1_hello_is_told_apart() {
        let mut v1 = MAGIC.to_vec();
        v1.extend_from_slice(&1u16.to_be_bytes());
        v1.push(2);
        v1.extend_from_slice(b"n9");
        v1.extend_from_slice(&16u16.to_be_bytes());
        v1.extend_from_slice(&[b't'; 16]);
        assert_eq!(
            Hello::decode(&v1),
            Ok(Decoded::Legacy {
                node_id: Some("n9")
            })
        );
    }

    #[test]
    fn a_challenge_and_a_refusal_round_trip() {
        let ch = Challenge {
            version: 3,
            versions: Versions { min: 3, max: 4 },
            node_id: "server-node",
            wray_version: "1.0.0",
            nonce: [9; NONCE_LEN],
        };
        let mut body = ch.encode_fields();
        body.extend_from_slice(&[5; PROOF_LEN]);
        assert!(body.len() <= MAX_CHALLENGE as usize);
        let (back, fields, proof) = Challenge::decode(&body).unwrap();
        assert_eq!((back, proof), (ch, [5; PROOF_LEN]));
        assert_eq!(fields.len(), body.len() - PROOF_LEN);
        for cut in 0..body.len() {
            assert!(Challenge::decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        let inc = Incompatible {
            versions: Versions { min: 2, max: 2 },
            wray_version: "0.8.0",
            node_id: "old",
        };
        assert_eq!(Incompatible::decode(&inc.encode()), Ok(inc));
    }
}
