//! The proofs of the handshake: each side shows it holds the cluster
//! token with HMAC-SHA256 (RFC 2104; the `hmac` and `sha2` crates) keyed
//! by the token, over a transcript of the whole exchange, without sending
//! the token:
//!
//! ```text
//! HMAC-SHA256(token, label || hello length u32 || hello body || challenge fields)
//! label = "wray-peer client proof\0" | "wray-peer server proof\0"
//! ```
//!
//! The hello carries the client's nonce, node id and versions; the
//! challenge fields the agreed version, the server's versions, node id
//! and nonce. So a proof holds for one connection only (both nonces), for
//! those two node ids and that version, and for one direction (the labels
//! differ: a server's proof cannot be sent back as a client's).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::Token;

/// The bytes of a nonce: 256 random bits from the OS (`getrandom`).
pub(crate) const NONCE_LEN: usize = 32;
/// The bytes of a proof (an HMAC-SHA256 tag).
pub(crate) const PROOF_LEN: usize = 32;

/// Whose proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Server,
}

impl Side {
    fn label(self) -> &'static [u8] {
        match self {
            Side::Client => b"wray-peer client proof\0",
            Side::Server => b"wray-peer server proof\0",
        }
    }
}

/// A fresh nonce.
///
/// # Errors
/// When the OS has no randomness to give.
pub(crate) fn nonce() -> std::io::Result<[u8; NONCE_LEN]> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::fill(&mut n)
        .map_err(|e| std::io::Error::other(format!("no randomness for a nonce: {e}")))?;
    Ok(n)
}

/// The MAC of the transcript, ready to finish or verify.
///
/// # Errors
/// None in practice: HMAC takes a key of any length (RFC 2104 §2), and
/// `hmac` returns `InvalidLength` only for fixed-size MACs.
fn mac(token: &Token, side: Side, hello: &[u8], challenge: &[u8]) -> Result<Hmac<Sha256>, String> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(token.as_bytes())
        .map_err(|e| format!("cannot key HMAC-SHA256 with the token: {e}"))?;
    m.update(side.label());
    // A hello is at most MAX_HELLO (512) bytes: its length fits.
    m.update(&u32::try_from(hello.len()).unwrap_or(u32::MAX).to_be_bytes());
    m.update(hello);
    m.update(challenge);
    Ok(m)
}

/// `side`'s proof of `token` over `hello` (its whole body) and
/// `challenge` (the challenge's fields, without the proof).
///
/// # Errors
/// As [`mac`] (none in practice).
pub(crate) fn prove(
    token: &Token,
    side: Side,
    hello: &[u8],
    challenge: &[u8],
) -> Result<[u8; PROOF_LEN], String> {
    Ok(mac(token, side, hello, challenge)?
        .finalize()
        .into_bytes()
        .into())
}

/// Whether `proof` is `side`'s proof of `token` over `hello` and
/// `challenge` (compared in constant time).
pub(crate) fn verify(
    token: &Token,
    side: Side,
    hello: &[u8],
    challenge: &[u8],
    proof: &[u8],
) -> bool {
    mac(token, side, hello, challenge).is_ok_and(|m| m.verify_slice(proof).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(b: u8) -> Token {
        Token::new(vec![b; 20]).unwrap()
    }

    #[test]
    fn a_proof_holds_for_its_token_side_and_transcript_only() {
        let t = token(1);
        let p = prove(&t, Side::Client, b"hello", b"challenge").unwrap();
        assert!(verify(&t, Side::Client, b"hello", b"challenge", &p));
        // Reflected: a client's proof is no server's.
        assert!(!verify(&t, Side::Server, b"hello", b"challenge", &p));
        assert!(!verify(&token(2), Side::Client, b"hello", b"challenge", &p));
        assert!(!verify(&t, Side::Client, b"hellO", b"challenge", &p));
        assert!(!verify(&t, Side::Client, b"hello", b"challengE", &p));
        // The boundary between hello and challenge is bound too.
        assert!(!verify(&t, Side::Client, b"hello", b"challeng", &p[..31]));
        assert!(!verify(&t, Side::Client, b"hellochallenge", b"", &p));
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce().unwrap(), nonce().unwrap());
    }
}
