//! Hostile peers on node 1's peer port (`docs/peer-protocol.md`): bytes
//! that are no hello, a hello claiming 4 GiB, a hello with a wrong token,
//! and with the right token calls to run a task whose body is garbage or
//! a well-formed message of out-of-bounds values (written by hand here:
//! protobuf, `wire::RunTask`), a call of a method no node has, and a read
//! of an object no one has. Each is refused with an error; node 1 still
//! lists the cluster and runs a plain call afterwards.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;
use wray_peer::{PeerClient, PeerConfig, PeerError, Token};

use super::harness::Cluster;
use super::placement::post;
use crate::support::{component, success_stdout};

/// The peer method that runs a task on the receiving node.
const RUN_TASK: u16 = 1;
/// Error codes of a node's refusals (`protocol::code`).
const BAD_REQUEST: u16 = 400;
const UNKNOWN_METHOD: u16 = 501;

/// A `RunTask` body holding a task message whose fields are `task`
/// (protobuf: field 1, length-delimited).
fn run_task_body(task: &[u8]) -> Bytes {
    let len = u8::try_from(task.len()).expect("a short task");
    let mut body = vec![0x0A, len];
    body.extend_from_slice(task);
    Bytes::from(body)
}
/// Frame kinds a server may answer a bad client with before closing.
const AUTH_FAILED: u8 = 3;
const PROTOCOL_ERROR: u8 = 9;

/// Sends `bytes` on a fresh connection to `addr` and reads until the
/// server closes it (10 s at most: twice its handshake timeout); what it
/// sent back.
fn send_raw(addr: &str, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("the peer port accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    // The server may close before reading it all: a failed write is fine.
    let _ = stream.write_all(bytes);
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return answer,
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                assert!(answer.len() <= 64 << 10, "the server keeps sending");
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return answer,
            Err(e) => panic!("the server kept the connection from {bytes:?} open: {e}"),
        }
    }
}

/// Checks that what a refused client was sent is nothing, or one
/// `AuthFailed` or `ProtocolError` frame.
fn assert_refusal(what: &str, answer: &[u8]) {
    if answer.is_empty() {
        return;
    }
    assert!(answer.len() >= 16, "{what}: a short frame {answer:?}");
    let kind = answer[4];
    assert!(
        kind == AUTH_FAILED || kind == PROTOCOL_ERROR,
        "{what}: answered a frame of kind {kind}: {answer:?}"
    );
    eprintln!(
        "{what}: refused with {:?}",
        String::from_utf8_lossy(&answer[16..])
    );
}

/// A hello header (kind 1, request id 0) claiming a body of `len` bytes.
fn hello_header(len: u32) -> Vec<u8> {
    let mut header = len.to_be_bytes().to_vec();
    header.extend_from_slice(&[1, 0, 0, 0]);
    header.extend_from_slice(&0u64.to_be_bytes());
    header
}

#[test]
fn hostile_peers_are_refused() {
    let cluster = Cluster::start(3, &[]);
    cluster.wait_all_alive(Duration::from_secs(30));
    let first = cluster.node(1);
    success_stdout(&first.run(&["deploy", component("api").to_str().expect("UTF-8")]));
    assert_eq!(
        post(first, "/v1/functions/api/inc", &json!([41])).1,
        json!(42)
    );
    let addr = cluster.peer_address(1);

    let http = b"GET /v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    assert_refusal("an HTTP request", &send_raw(&addr, http));
    assert_refusal("a 4 GiB hello", &send_raw(&addr, &hello_header(u32::MAX)));
    let mut junk = hello_header(40);
    junk.extend_from_slice(&[0xAB; 40]);
    assert_refusal("a hello of junk", &send_raw(&addr, &junk));

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let wrong = Token::new(b"not-the-cluster-token-0123456789".to_vec()).expect("a token");
        let intruder =
            PeerClient::new(PeerConfig::new(wrong), "node-00000000deadbeef").expect("a client");
        let err = intruder
            .call(&addr, RUN_TASK, Bytes::from_static(b"[]"))
            .await
            .expect_err("a wrong token is refused");
        assert!(matches!(err, PeerError::Auth { .. }), "{err}");
        eprintln!("a wrong token: {err}");

        let token = PeerConfig::token_from_file(cluster.token_file()).expect("the token");
        let insider =
            PeerClient::new(PeerConfig::new(token), "node-00000000deadbeef").expect("a client");
        let garbage: [Bytes; 3] = [
            Bytes::new(),
            Bytes::from_static(b"\xff\xff\xff\xff\xff\xff\xff\xff garbage"),
            Bytes::from(vec![0x5A; 1 << 20]),
        ];
        for body in garbage {
            let len = body.len();
            let err = insider
                .call(&addr, RUN_TASK, body)
                .await
                .expect_err("a garbage task is refused");
            assert!(
                matches!(err, PeerError::Remote { .. } | PeerError::Protocol { .. }),
                "a task of {len} garbage bytes: {err}"
            );
            eprintln!("a task of {len} garbage bytes: {err}");
        }
        // Well-formed, but hostile: a task message of a version from the
        // future, and one whose id is 15 bytes.
        let future = run_task_body(&[0x08, 99]);
        let mut short_id = vec![0x08, 1, 0x12, 15];
        short_id.extend_from_slice(&[0xAA; 15]);
        for (what, body, says) in [
            (
                "a task of version 99",
                future,
                "a task message of version 99",
            ),
            ("a task id of 15 bytes", run_task_body(&short_id), "task."),
        ] {
            match insider.call(&addr, RUN_TASK, body).await {
                Err(PeerError::Remote { code, message, .. }) => {
                    assert_eq!(code, BAD_REQUEST, "{what}: {message}");
                    assert!(message.contains(says), "{what}: {message}");
                    eprintln!("{what}: {message}");
                }
                other => panic!("{what}: {other:?}"),
            }
        }
        // A method no node has: a typed refusal, counted; the connection
        // and the node stay.
        match insider.call(&addr, 999, Bytes::new()).await {
            Err(PeerError::Remote { code, message, .. }) => {
                assert_eq!(code, UNKNOWN_METHOD, "{message}");
                assert!(message.contains("has no peer method 999"), "{message}");
                eprintln!("an unknown method: {message}");
            }
            other => panic!("an unknown method: {other:?}"),
        }
        let mut slot = vec![0u8; 4096];
        let err = insider
            .read(&addr, &[0xEE; 20], 0, &mut slot)
            .await
            .expect_err("no one has that object");
        assert!(!matches!(err, PeerError::Auth { .. }), "{err}");
        eprintln!("a read of an unknown object: {err}");
    });

    // Node 1 is unhurt: it lists the cluster and runs a call.
    assert!(first.alive());
    assert_eq!(first.metric("wray_peer_unknown_methods_total"), Some(1.0));
    let nodes = cluster.nodes_seen_by(1);
    assert!(
        nodes.len() == 3 && nodes.iter().all(|n| n["state"] == "ALIVE"),
        "{nodes:?}"
    );
    assert_eq!(
        post(first, "/v1/functions/api/inc", &json!([1])).1,
        json!(2)
    );
}
