//! What a web page of another site could make a browser send the node:
//! refused before anything else is read ([`check`]).
//!
//! A page may make a browser send a *simple* request (RFC 6454 origins;
//! the Fetch standard's CORS-safelisted methods, headers and content
//! types) to any address, reading nothing back: a `POST` with `text/plain`
//! is enough to deploy or submit on a node without a token. And a name the
//! page's site controls may resolve to `127.0.0.1` (DNS rebinding), which
//! makes even a read same-origin. A node with a token is safe from both
//! (a page cannot send the token it does not have, nor a header without a
//! preflight); so, on a node started without one (`--no-auth`):
//!
//! - **`Host`** must be an address (an IP literal, which no one can
//!   rebind), `localhost` (or a name under it), this machine's host name,
//!   or a name given with `wray start --allow-host` (421 `host_not_allowed`
//!   otherwise);
//! - a request that changes state (any method but `GET`, `HEAD` and
//!   `OPTIONS`) with an **`Origin`** must come from the node's own origin
//!   (its host and port as the client reached it), else 403
//!   `cross_origin`;
//! - such a request must also carry something a page cannot send without
//!   the node's consent (a CORS preflight, which the node never grants): the
//!   token (`Authorization`), an `X-Wray-Request` header, or a
//!   `Content-Type` that is not one of the three a form can send
//!   (`application/json`, `application/wasm`, ...), else 403
//!   `simple_request`.
//!
//! Ray added a check of this kind to its jobs API after the same report
//! (browsers driving a local dashboard).

use std::net::IpAddr;
use std::sync::OnceLock;

use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Method, Request, StatusCode};

use crate::config::HttpConfig;
use crate::error::ApiError;
use wray_api::ErrorCode;

/// The header a client of the API may send on a request that changes
/// state, when it has no token to send and no JSON body.
pub const REQUEST_HEADER: &str = "x-wray-request";

/// The content types an HTML form (or a `no-cors` fetch) can send without
/// a preflight (the Fetch standard's CORS-safelisted request-header
/// `Content-Type` values).
const SIMPLE_TYPES: [&str; 3] = [
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
];

/// Refuses what a page of another site could make a browser send (see the
/// module docs).
///
/// # Errors
/// 421 `host_not_allowed`, 403 `cross_origin`, 403 `simple_request`.
pub(crate) fn check<B>(config: &HttpConfig, req: &Request<B>) -> Result<(), ApiError> {
    if config.token.is_some() {
        return Ok(());
    }
    let host = req
        .headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_string()));
    if let Some(host) = &host {
        if !allowed_host(config, host_name(host)) {
            return Err(ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                ErrorCode::HostNotAllowed,
                format!(
                    "`Host: {}` is not this node's address or name: use its address, \
                     `localhost`, or start the node with `--allow-host NAME`",
                    shorten(host)
                ),
            ));
        }
    }
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    if let Some(origin) = req.headers().get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let own = host.as_deref().is_some_and(|h| same_origin(origin, h));
        if !own {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::CrossOrigin,
                format!(
                    "a request from `Origin: {}`, not this node's own, may not change \
                     anything here",
                    shorten(origin)
                ),
            ));
        }
    }
    let headers = req.headers();
    let marked = headers.contains_key(AUTHORIZATION) || headers.contains_key(REQUEST_HEADER);
    let typed = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .is_some_and(|t| !t.is_empty() && !SIMPLE_TYPES.contains(&t.as_str()));
    if marked || typed {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorCode::SimpleRequest,
        "a request that changes state needs the token (`Authorization: Bearer ...`), an \
         `X-Wray-Request` header, or a `Content-Type` a web form cannot send (such as \
         `application/json`)",
    ))
}

/// The host of a `Host` value (`name`, `name:port`, `[v6]:port`), without
/// its port or brackets.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        // One colon: a port. More: a bare IPv6 address.
        Some((name, _)) if !name.contains(':') => name,
        _ => host,
    }
}

/// Whether `name` (a `Host`'s host) names this node.
fn allowed_host(config: &HttpConfig, name: &str) -> bool {
    let name = name.trim_end_matches('.');
    name.parse::<IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || config
            .allowed_hosts
            .iter()
            .chain(machine_names())
            .any(|n| n.eq_ignore_ascii_case(name))
}

/// This machine's host name, and its first label (read once).
fn machine_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .unwrap_or_default();
        let name = name.trim().to_string();
        let mut names = Vec::new();
        if !name.is_empty() {
            if let Some((first, _)) = name.split_once('.') {
                names.push(first.to_string());
            }
            names.push(name);
        }
        names
    })
}

/// Whether `origin` (`scheme://host[:port]`) is the node's own, as the
/// client reached it (`host`, the request's `Host`).
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    if !matches!(scheme, "http" | "https") {
        return false;
    }
    let authority = rest.split('/').next().unwrap_or("");
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    let strip = |a: &str| {
        a.strip_suffix(default_port)
            .unwrap_or(a)
            .to_ascii_lowercase()
    };
    strip(authority) == strip(host)
}

/// `s` cut to 100 characters, for an error message.
fn shorten(s: &str) -> String {
    s.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut r = Request::builder().method(method).uri("/v1/jobs");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.body(()).unwrap()
    }

    fn code(method: &str, headers: &[(&str, &str)]) -> Option<&'static str> {
        check(&HttpConfig::default(), &request(method, headers))
            .err()
            .map(|e| e.code.as_str())
    }

    #[test]
    fn a_page_of_another_site_cannot_change_anything() {
        let host = ("host", "127.0.0.1:8265");
        // The simple requests a page can send.
        assert_eq!(
            code("POST", &[host, ("content-type", "text/plain")]),
            Some("simple_request")
        );
        assert_eq!(code("POST", &[host]), Some("simple_request"));
        assert_eq!(
            code(
                "POST",
                &[host, ("content-type", "multipart/form-data; boundary=x")]
            ),
            Some("simple_request")
        );
        // Another origin, whatever else it sends.
        let evil = ("origin", "http://evil.example");
        assert_eq!(
            code("POST", &[host, evil, ("content-type", "application/json")]),
            Some("cross_origin")
        );
        assert_eq!(
            code("DELETE", &[host, ("origin", "null")]),
            Some("cross_origin")
        );
        // A rebound name.
        assert_eq!(
            code("GET", &[("host", "evil.example:8265")]),
            Some("host_not_allowed")
        );
    }

    #[test]
    fn clients_and_the_nodes_own_pages_pass() {
        let host = ("host", "127.0.0.1:8265");
        assert_eq!(code("GET", &[host]), None);
        assert_eq!(code("GET", &[("host", "localhost:8265")]), None);
        assert_eq!(code("GET", &[("host", "[::1]:8265")]), None);
        assert_eq!(code("GET", &[("host", "10.1.2.3")]), None);
        assert_eq!(
            code("POST", &[host, ("content-type", "application/json")]),
            None
        );
        assert_eq!(
            code("POST", &[host, ("content-type", "application/wasm")]),
            None
        );
        assert_eq!(code("POST", &[host, ("x-wray-request", "1")]), None);
        assert_eq!(code("POST", &[host, ("authorization", "Bearer x")]), None);
        // The dashboard, served by the node itself.
        assert_eq!(
            code(
                "POST",
                &[
                    host,
                    ("origin", "http://127.0.0.1:8265"),
                    ("content-type", "application/json")
                ]
            ),
            None
        );
        let named = HttpConfig {
            allowed_hosts: vec!["wray.internal".into()],
            ..HttpConfig::default()
        };
        let r = request("GET", &[("host", "WRAY.internal:8265")]);
        assert!(check(&named, &r).is_ok());
    }

    #[test]
    fn a_node_with_a_token_leaves_it_to_the_token() {
        let with = HttpConfig {
            token: Some("t".into()),
            ..HttpConfig::default()
        };
        let r = request(
            "POST",
            &[("host", "evil.example"), ("content-type", "text/plain")],
        );
        assert!(check(&with, &r).is_ok());
    }

    #[test]
    fn a_hosts_port_and_brackets_are_not_its_name() {
        assert_eq!(host_name("a.b:80"), "a.b");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("::1"), "::1");
        assert_eq!(host_name("a.b"), "a.b");
        assert!(same_origin("http://a.b:80", "a.b"));
        assert!(same_origin("https://a.b", "a.b:443"));
        assert!(!same_origin("http://a.b:81", "a.b:80"));
        assert!(!same_origin("file://a.b", "a.b"));
    }
}
