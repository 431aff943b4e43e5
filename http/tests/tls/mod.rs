//! The HTTP API over https ([`HttpConfig::tls`]): with the test-only
//! certificate of this folder (see `README.md`), clients that trust it and
//! clients that do not, plain http on the TLS port, a client that never
//! does its handshake, and certificate and key files that cannot be used.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use serde_json::json;
use wray_host::{Node, NodeConfig};
use wray_http::server::ServeError;
use wray_http::tls::read_certificates;
use wray_http::{HttpConfig, Server, TlsError, TlsFiles};

use super::{answer, code, components, spawn_server, TOKEN};

/// A file of this folder.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tls")
        .join(name)
}

/// The test certificate and its key.
fn files() -> TlsFiles {
    TlsFiles {
        cert: fixture("cert.pem"),
        key: fixture("key.pem"),
    }
}

/// How long the TLS server of these tests gives a handshake (its header
/// timeout).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// The https server of these tests, `microbench` deployed as `mb`; its
/// address.
fn tls_server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let addr = spawn_server(HttpConfig {
            tls: Some(files()),
            header_timeout: HANDSHAKE_TIMEOUT,
            ..HttpConfig::default()
        });
        let wasm = std::fs::read(components::component("microbench")).expect("microbench.wasm");
        let (s, v) = answer(
            agent_trusting("cert.pem")
                .post(&format!("https://{addr}/v1/components?name=mb"))
                .set("Authorization", &format!("Bearer {TOKEN}"))
                .set("Content-Type", "application/wasm")
                .send_bytes(&wasm),
        );
        assert_eq!(s, 201, "{v}");
        addr
    })
}

/// A rustls client configuration whose only root is the certificate in
/// the fixture `root`.
fn trusting(root: &str) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in read_certificates(&fixture(root)).expect("fixture certificate") {
        roots.add(cert).expect("a root certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// A ureq agent that trusts the fixture `root` only.
fn agent_trusting(root: &str) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .tls_config(trusting(root))
        .build()
}

/// `GET /healthz` over https, trusting the test certificate: the status.
fn healthz(addr: SocketAddr) -> u16 {
    answer(
        agent_trusting("cert.pem")
            .get(&format!("https://{addr}/healthz"))
            .call(),
    )
    .0
}

#[test]
fn https_answers_healthz_and_an_authenticated_call() {
    let addr = tls_server();
    assert_eq!(healthz(addr), 200);
    let agent = agent_trusting("cert.pem");
    let url = format!("https://{addr}/v1/functions/mb/noop");
    let (s, v) = answer(
        agent
            .post(&url)
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .send_string("[7]"),
    );
    assert_eq!((s, v), (200, json!(7)));
    // TLS does not replace the token.
    let (s, v) = answer(agent.post(&url).send_string("[7]"));
    assert_eq!((s, code(&v)), (401, "no_token"), "{v}");
}

#[test]
fn the_handshake_offers_http1_by_alpn() {
    let addr = tls_server();
    let mut config = (*trusting("cert.pem")).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let name = ServerName::IpAddress(addr.ip().into());
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("client connection");
    let tcp = TcpStream::connect(addr).expect("connects");
    tcp.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: wray\r\nConnection: close\r\n\r\n")
        .expect("request sent");
    let mut said = Vec::new();
    let _ = tls.read_to_end(&mut said);
    assert!(
        said.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&said)
    );
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
}

/// Reads `tcp` to its end (the server closes it): nothing, or a TLS alert
/// record (content type 21), never HTTP; a reset counts as closed.
fn assert_closed_without_http(tcp: &mut TcpStream) {
    let mut said = Vec::new();
    match tcp.read_to_end(&mut said) {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    assert!(said.is_empty() || said[0] == 21, "{said:?}");
}

#[test]
fn plain_http_on_the_tls_port_gets_no_http_answer_and_https_goes_on() {
    let addr = tls_server();
    let mut tcp = TcpStream::connect(addr).expect("connects");
    tcp.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: wray\r\n\r\n")
        .expect("request sent");
    assert_closed_without_http(&mut tcp);
    assert_eq!(healthz(addr), 200);
}

#[test]
fn a_client_that_does_not_trust_the_certificate_fails_the_handshake() {
    let addr = tls_server();
    let url = format!("https://{addr}/healthz");
    // The public roots (ureq's default), then only another certificate.
    for agent in [ureq::agent(), agent_trusting("other-cert.pem")] {
        match agent.get(&url).call() {
            Err(ureq::Error::Transport(e)) => {
                let said = e.to_string();
                assert!(said.contains("invalid peer certificate"), "{said}");
            }
            other => panic!("expected a handshake failure, got {other:?}"),
        }
    }
    assert_eq!(healthz(addr), 200);
}

#[test]
fn a_client_that_never_does_its_handshake_is_closed_after_the_header_timeout() {
    let addr = tls_server();
    let mut tcp = TcpStream::connect(addr).expect("connects");
    // Far longer than the handshake timeout: a read that times out means
    // the server kept the connection.
    tcp.set_read_timeout(Some(HANDSHAKE_TIMEOUT * 10))
        .expect("read timeout");
    assert_closed_without_http(&mut tcp);
    assert_eq!(healthz(addr), 200);
}

/// A node for the servers that are bound but not served, or served
/// briefly.
fn node() -> Arc<Node> {
    static NODE: OnceLock<Arc<Node>> = OnceLock::new();
    NODE.get_or_init(|| {
        Node::start(NodeConfig {
            num_cpus: 1,
            ..NodeConfig::default()
        })
        .expect("node starts")
    })
    .clone()
}

/// What [`Server::bind`] says of `config` on a loopback port, with a token
/// unless `config` has none.
fn bind_error(config: HttpConfig) -> ServeError {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match rt.block_on(Server::bind(node(), config)) {
        Ok(_) => panic!("bound"),
        Err(e) => e,
    }
}

/// The error of binding with the certificate `cert` and the key `key`.
fn tls_error(cert: &Path, key: &Path) -> TlsError {
    let e = bind_error(HttpConfig {
        bind: "127.0.0.1:0".parse().expect("address"),
        token: Some(TOKEN.into()),
        tls: Some(TlsFiles {
            cert: cert.to_owned(),
            key: key.to_owned(),
        }),
        ..HttpConfig::default()
    });
    match e {
        ServeError::Tls(e) => e,
        other => panic!("not a TLS error: {other}"),
    }
}

#[test]
fn certificate_and_key_files_that_cannot_be_used_are_typed_errors_naming_the_file() {
    let (cert, key) = (fixture("cert.pem"), fixture("key.pem"));
    let dir = tempfile::tempdir().expect("temporary directory");
    let shows = |e: &TlsError, path: &Path| {
        let said = e.to_string();
        assert!(said.contains(&path.display().to_string()), "{said}");
    };

    let missing = dir.path().join("missing.pem");
    let e = tls_error(&missing, &key);
    assert!(
        matches!(&e, TlsError::Read { path, .. } if *path == missing),
        "{e}"
    );
    shows(&e, &missing);

    let e = tls_error(&key, &key);
    assert!(
        matches!(&e, TlsError::NoCertificate { path } if *path == key),
        "{e}"
    );
    shows(&e, &key);

    let e = tls_error(&cert, &cert);
    assert!(
        matches!(&e, TlsError::NoKey { path } if *path == cert),
        "{e}"
    );
    shows(&e, &cert);

    let other_key = fixture("other-key.pem");
    let e = tls_error(&cert, &other_key);
    assert!(matches!(&e, TlsError::KeyMismatch { .. }), "{e}");
    shows(&e, &cert);
    shows(&e, &other_key);

    let broken = dir.path().join("broken.pem");
    std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nnot base64 %%%\n").expect("write");
    let e = tls_error(&broken, &key);
    assert!(
        matches!(&e, TlsError::Pem { path, .. } if *path == broken),
        "{e}"
    );
    shows(&e, &broken);

    let big = dir.path().join("big.pem");
    let pem = std::fs::read(&cert).expect("cert");
    std::fs::write(&big, pem.repeat((2 << 20) / pem.len())).expect("write");
    let e = tls_error(&cert, &big);
    assert!(
        matches!(&e, TlsError::TooLarge { path, .. } if *path == big),
        "{e}"
    );
    shows(&e, &big);
}

#[test]
fn no_auth_off_loopback_is_refused_with_tls_too() {
    let e = bind_error(HttpConfig {
        bind: "0.0.0.0:0".parse().expect("address"),
        token: None,
        tls: Some(files()),
        ..HttpConfig::default()
    });
    assert!(matches!(e, ServeError::NoAuthOffLoopback(_)), "{e}");
}

#[test]
fn shutdown_does_not_wait_for_a_handshake_under_way() {
    let config = HttpConfig {
        bind: "127.0.0.1:0".parse().expect("address"),
        token: Some(TOKEN.into()),
        tls: Some(files()),
        // Far longer than the test waits below.
        header_timeout: Duration::from_secs(600),
        ..HttpConfig::default()
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let server = Server::bind(node(), config).await.expect("binds");
            addr_tx
                .send(server.local_addr().expect("address"))
                .expect("send");
            server
                .serve(async move {
                    let _ = stop_rx.await;
                })
                .await;
        });
        let _ = done_tx.send(());
    });
    let addr = addr_rx.recv().expect("server address");
    let _silent = TcpStream::connect(addr).expect("connects");
    // Let the server accept it and start the handshake.
    assert_eq!(healthz(addr), 200);
    stop_tx.send(()).expect("server running");
    assert!(
        done_rx.recv_timeout(Duration::from_secs(60)).is_ok(),
        "the server still waits for the handshake"
    );
}
