//! The dashboard's static files (`dashboard/dist/`, built by `npm run build`
//! there and committed), embedded in the binary and served at `/` and
//! `/dashboard/...` without the token: they hold no data. The page asks for
//! the token and sends it with every `/v1/...` request it makes, like any
//! other client.
//!
//! Every answer carries a Content-Security-Policy that allows scripts,
//! styles and connections to this origin only (no inline script), and
//! `X-Content-Type-Options: nosniff`.

use bytes::Bytes;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS};
use hyper::{Method, Response, StatusCode};

use crate::body::{body_response, ResponseBody};

/// The page's policy: everything from this origin only; no inline script,
/// no plugins, no framing by other sites, forms posted to this origin.
pub const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// One embedded file: its path under `/dashboard/`, content type, bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

/// The built bundle (`dashboard/dist/`).
const ASSETS: &[Asset] = &[
    Asset {
        path: "index.html",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../../dashboard/dist/index.html"),
    },
    Asset {
        path: "app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../dashboard/dist/app.js"),
    },
    Asset {
        path: "app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../dashboard/dist/app.css"),
    },
    Asset {
        path: "LICENSES.txt",
        content_type: "text/plain; charset=utf-8",
        bytes: include_bytes!("../../dashboard/dist/LICENSES.txt"),
    },
];

/// The pattern the dashboard's requests are counted under in `/metrics`.
pub(crate) const METRICS_ROUTE: &str = "/dashboard";

/// Whether `path` is the dashboard's (`/`, `/dashboard`, `/dashboard/...`).
pub(crate) fn is_dashboard(path: &str) -> bool {
    path == "/" || path == "/dashboard" || path.starts_with("/dashboard/")
}

/// The answer to `method` on the dashboard's `path` ([`is_dashboard`]):
/// the file, 404 for a name the bundle lacks, 405 for a method other than
/// `GET` and `HEAD`.
pub(crate) fn serve(method: &Method, path: &str) -> Response<ResponseBody> {
    let name = match path.strip_prefix("/dashboard") {
        None | Some("") | Some("/") => "index.html",
        Some(rest) => rest.trim_start_matches('/'),
    };
    let mut response = if *method != Method::GET && *method != Method::HEAD {
        let mut r = body_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"the dashboard's files take GET and HEAD\n"),
        );
        r.headers_mut()
            .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        r
    } else {
        match ASSETS.iter().find(|a| a.path == name) {
            Some(a) => body_response(StatusCode::OK, a.content_type, Bytes::from_static(a.bytes)),
            None => body_response(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                Bytes::from_static(b"no such file in the dashboard\n"),
            ),
        }
    };
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Revalidated each time, so a new binary's page is never mixed with an old one's.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        hyper::header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_files_are_served_with_their_types_and_the_policy() {
        for (path, kind) in [
            ("/", "text/html"),
            ("/dashboard", "text/html"),
            ("/dashboard/", "text/html"),
            ("/dashboard/app.js", "text/javascript"),
            ("/dashboard/app.css", "text/css"),
        ] {
            assert!(is_dashboard(path), "{path}");
            let r = serve(&Method::GET, path);
            assert_eq!(r.status(), StatusCode::OK, "{path}");
            let h = r.headers();
            assert!(
                h["content-type"].to_str().unwrap().starts_with(kind),
                "{path}"
            );
            let csp = h["content-security-policy"].to_str().unwrap();
            assert!(csp.contains("default-src 'self'") && !csp.contains("unsafe-inline"));
        }
        assert_eq!(
            serve(&Method::GET, "/dashboard/nope.js").status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            serve(&Method::POST, "/").status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert!(!is_dashboard("/v1/nodes") && !is_dashboard("/dashboards"));
    }

    #[test]
    fn the_page_has_no_inline_script() {
        let html = std::str::from_utf8(ASSETS[0].bytes).unwrap();
        for tag in html.split("<script").skip(1) {
            assert!(
                tag.trim_start().starts_with("defer src=") || tag.contains("src="),
                "{tag}"
            );
            assert!(tag.contains("></script>"), "an inline script: {tag}");
        }
        assert!(!html.contains(" on"), "an inline event handler");
    }
}
