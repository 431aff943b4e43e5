//! [`HeldPort`]: what the tests that start servers on loopback rely on. A
//! held port refuses connections, no other listener and no port-0 bind can
//! take it, and the etcd a test starts on ports held for it listens there.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use crate::etcd_server::{EtcdServer, HeldPort};

/// `IP_LOCAL_PORT_RANGE` (`linux/in.h`, Linux 6.3): confines one socket's
/// port-0 choice to `[low, high]`, packed as `high << 16 | low`. Not in the
/// `libc` crate yet.
const IP_LOCAL_PORT_RANGE: libc::c_int = 51;

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// What a port-0 bind confined to `port` alone gets (`SO_REUSEADDR` set or
/// not, as `reuse_address` says): `None` where the kernel cannot confine it
/// (before Linux 6.3).
fn port_zero_bind_confined_to(port: u16, reuse_address: bool) -> Option<std::io::Result<u16>> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .expect("a TCP socket");
    socket
        .set_reuse_address(reuse_address)
        .expect("SO_REUSEADDR");
    let range: u32 = (u32::from(port) << 16) | u32::from(port);
    // SAFETY: a live socket, and a pointer to a u32 of the length passed.
    let set = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            IP_LOCAL_PORT_RANGE,
            std::ptr::from_ref(&range).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    if set != 0 {
        eprintln!(
            "this kernel cannot confine a port-0 bind (IP_LOCAL_PORT_RANGE: {}): check skipped",
            std::io::Error::last_os_error()
        );
        return None;
    }
    Some(socket.bind(&loopback(0).into()).map(|()| {
        socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map_or(0, |a| a.port())
    }))
}

/// Asserts that no port-0 bind is handed `port` (where the kernel can tell).
fn never_handed_out(port: u16) {
    for reuse_address in [false, true] {
        if let Some(got) = port_zero_bind_confined_to(port, reuse_address) {
            let err = got.expect_err("a port-0 bind was handed a held port");
            assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
        }
    }
}

#[test]
fn a_held_port_refuses_connections_and_no_listener_or_port_zero_bind_gets_it() {
    let held = HeldPort::closed();
    let port = held.port();

    let err = TcpStream::connect(loopback(port)).expect_err("nothing listens there");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    // std's listener sets SO_REUSEADDR, as etcd's (Go) does.
    let err = TcpListener::bind(loopback(port)).expect_err("the port is held");
    assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
    never_handed_out(port);

    // Given back once dropped: a port-0 bind confined to it gets it.
    drop(held);
    if let Some(got) = port_zero_bind_confined_to(port, true) {
        assert_eq!(got.expect("the port is free again"), port);
    }
}

#[test]
fn a_port_held_for_a_server_is_kept_from_every_other_socket_until_that_server_listens() {
    let held = HeldPort::for_server();
    let port = held.port();

    let err = TcpStream::connect(loopback(port)).expect_err("nothing listens yet");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    let plain = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .expect("a TCP socket");
    let err = plain
        .bind(&loopback(port).into())
        .expect_err("a socket without SO_REUSEADDR cannot bind a held port");
    assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
    never_handed_out(port);

    // The server it is held for binds and listens beside the holder, with
    // SO_REUSEADDR (std's listener, as etcd's).
    let server = TcpListener::bind(loopback(port)).expect("the server binds its held port");
    TcpStream::connect(loopback(port)).expect("the server listens");
    drop(server);
}

#[test]
fn etcd_listens_on_the_ports_held_for_it_and_they_stay_held_while_it_is_stopped() {
    let mut etcd = EtcdServer::start();
    let port = etcd.client_port();
    never_handed_out(port);

    etcd.stop();
    let err = TcpStream::connect(loopback(port)).expect_err("etcd is stopped");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    never_handed_out(port);

    // Back on the same port.
    etcd.restart();
    TcpStream::connect(loopback(port)).expect("etcd listens again");
}
