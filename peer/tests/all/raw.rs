//! A client and a server of the wire written here from
//! `docs/peer-protocol.md`, not the crate's own: frames by hand, the
//! handshake's proofs with `hmac` + `sha2`. Hostile tests drive a real
//! server with it, and stand it in for a server a real client meets.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::common::TOKEN;

/// Frame kinds of `docs/peer-protocol.md`.
pub const HELLO: u8 = 1;
pub const HELLO_OK: u8 = 2;
pub const AUTH_FAILED: u8 = 3;
pub const CALL: u8 = 4;
pub const READ: u8 = 6;
pub const PROTOCOL_ERROR: u8 = 9;
pub const CHALLENGE: u8 = 10;
pub const INCOMPATIBLE: u8 = 11;
pub const PROOF: u8 = 12;

pub fn header(len: u32, kind: u8, id: u64) -> Vec<u8> {
    let mut h = len.to_be_bytes().to_vec();
    h.extend_from_slice(&[kind, 0, 0, 0]);
    h.extend_from_slice(&id.to_be_bytes());
    h
}

pub fn frame(kind: u8, id: u64, body: &[u8]) -> Vec<u8> {
    let mut f = header(body.len() as u32, kind, id);
    f.extend_from_slice(body);
    f
}

/// A hello body: magic, versions, node id, wray version, nonce.
pub fn hello_body(min: u16, max: u16, node_id: &str, nonce: [u8; 32]) -> Vec<u8> {
    let mut b = b"WRAYPEER".to_vec();
    b.extend_from_slice(&min.to_be_bytes());
    b.extend_from_slice(&max.to_be_bytes());
    b.push(node_id.len() as u8);
    b.extend_from_slice(node_id.as_bytes());
    b.push(5);
    b.extend_from_slice(b"0.0.0");
    b.extend_from_slice(&nonce);
    b
}

/// A protocol-1 hello: magic, version 1, node id, the token itself.
pub fn hello_v1(token: &[u8]) -> Vec<u8> {
    let mut b = b"WRAYPEER".to_vec();
    b.extend_from_slice(&1u16.to_be_bytes());
    b.push(6);
    b.extend_from_slice(b"old-v1");
    b.extend_from_slice(&(token.len() as u16).to_be_bytes());
    b.extend_from_slice(token);
    frame(HELLO, 0, &b)
}

/// HMAC-SHA256(token, label || u32 len(hello) || hello || challenge).
pub fn proof(token: &[u8], server: bool, hello: &[u8], challenge: &[u8]) -> [u8; 32] {
    let mut m = Hmac::<Sha256>::new_from_slice(token).unwrap();
    let label: &[u8] = if server {
        b"wray-peer server proof\0"
    } else {
        b"wray-peer client proof\0"
    };
    m.update(label);
    m.update(&(hello.len() as u32).to_be_bytes());
    m.update(hello);
    m.update(challenge);
    m.finalize().into_bytes().into()
}

/// A frame read whole: (kind, body); `None` at a close before a header.
pub async fn read_frame(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 16];
    s.read_exact(&mut h).await.ok()?;
    let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    assert!(len <= 1 << 16, "a handshake frame of {len} bytes");
    let mut body = vec![0u8; len as usize];
    s.read_exact(&mut body).await.ok()?;
    Some((h[4], body))
}

/// A connection to `addr` from the loopback address `from` (127.0.0.x).
pub async fn connect_from(from: [u8; 4], addr: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::from((from, 0))).unwrap();
    socket.connect(addr.parse().unwrap()).await.unwrap()
}

/// The parts of a challenge body: (fields, proof).
pub fn split_challenge(body: &[u8]) -> (&[u8], &[u8]) {
    body.split_at(body.len() - 32)
}

/// Sends a hello as `node_id` and reads the challenge: (hello body,
/// challenge fields, server proof).
pub async fn hello(s: &mut TcpStream, node_id: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let v = wray_peer::PROTOCOL_VERSION;
    let body = hello_body(v, v, node_id, [0x42; 32]);
    s.write_all(&frame(HELLO, 0, &body)).await.unwrap();
    let (kind, got) = read_frame(s).await.expect("a challenge");
    assert_eq!(kind, CHALLENGE, "{}", String::from_utf8_lossy(&got));
    let (fields, server) = split_challenge(&got);
    (body, fields.to_vec(), server.to_vec())
}

/// A raw connection to `addr` past the handshake with the test token.
pub async fn authenticated(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let (hello, fields, server) = hello(&mut s, "rawpeer").await;
    assert_eq!(
        server,
        proof(TOKEN, true, &hello, &fields),
        "the server's proof"
    );
    let mine = proof(TOKEN, false, &hello, &fields);
    s.write_all(&frame(PROOF, 0, &mine)).await.unwrap();
    let (kind, _) = read_frame(&mut s).await.expect("a welcome");
    assert_eq!(kind, HELLO_OK);
    s
}
