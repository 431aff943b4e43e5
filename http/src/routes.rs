//! The routes: each one declared once, in [`table`], with its method,
//! path pattern, summary, the [`Route`] it is matched to (and its path
//! parameters) and its OpenAPI description. The [`routes!`] macro makes
//! from that one list the route list ([`ROUTES`], which the metrics name
//! routes by), the [`Route`] enum, the router ([`route`]) and the OpenAPI
//! paths (one `#[utoipa::path]` each, gathered in `table::Api`). Adding a
//! route is one entry there and its arm in `dispatch`.
//!
//! Path parameters arrive percent-encoded (clients encode every segment:
//! `x%23y` for a component named `x#y`); [`route`] splits the path at
//! `/` first, then decodes each parameter once.

use std::borrow::Cow;

use hyper::{Method, StatusCode};
use wray_api::ErrorCode;

use crate::error::ApiError;

/// One route: `{name}` segments of `path` are parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteInfo {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path pattern, e.g. `/v1/functions/{component}/{function}`.
    pub path: &'static str,
    /// What it does, one line (the OpenAPI summary).
    pub summary: &'static str,
}

/// The HTTP method named by a route declaration's `get`, `post` or
/// `delete` (as utoipa names them).
macro_rules! method_name {
    (get) => {
        "GET"
    };
    (post) => {
        "POST"
    };
    (delete) => {
        "DELETE"
    };
}

/// Declares the routes (see the module docs). Each entry:
///
/// ```text
/// /// Summary (the OpenAPI summary, and the variant's doc).
/// post "/v1/things/{id}" => Thing(id) {
///     params(..), request_body(..), responses(..)   // utoipa's path attributes
/// },
/// ```
///
/// Entries are tried in order; a path parameter matches one non-empty
/// segment.
macro_rules! routes {
    ($(
        $(#[doc = $doc:literal])+
        $method:ident $path:tt => $variant:ident $(($($param:ident),+))? {
            $($openapi:tt)*
        },
    )+) => {
        /// A request matched to its route, with its path parameters
        /// (percent-decoded).
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Route<'a> {
            $(
                #[doc = concat!("`", method_name!($method), " ", $path, "`:")]
                $(#[doc = $doc])+
                $variant $(($(route_param!($param, 'a)),+))?,
            )+
        }

        /// The routes' rows, by number: a route's row of [`ROUTES`].
        #[derive(Clone, Copy)]
        #[allow(clippy::enum_variant_names)]
        enum Row {
            $($variant,)+
        }

        /// Every route the server answers, in the order [`route`] tries
        /// them.
        pub const ROUTES: &[RouteInfo] = &[$(
            RouteInfo {
                method: method_name!($method),
                path: $path,
                summary: summary(concat!($($doc),+)),
            },
        )+];

        impl<'a> Route<'a> {
            /// The route's row of [`ROUTES`] (its pattern names it in
            /// metrics).
            pub fn info(&self) -> &'static RouteInfo {
                let row = match self {
                    $(Route::$variant { .. } => Row::$variant,)+
                };
                &ROUTES[row as usize]
            }

            /// The route of row `row` of [`ROUTES`], with `params` (its
            /// pattern's, in order); `None` when their number is not the
            /// pattern's.
            pub(super) fn of_row(row: usize, params: Vec<Cow<'a, str>>) -> Option<Self> {
                let mut params = params.into_iter();
                $(
                    if row == Row::$variant as usize {
                        let route = Route::$variant $(($({
                            let _ = stringify!($param);
                            params.next()?
                        }),+))?;
                        return params.next().is_none().then_some(route);
                    }
                )+
                None
            }
        }

        /// The OpenAPI paths: one `#[utoipa::path]` per route, never
        /// called (their attributes are the document).
        pub(crate) mod openapi_paths {
            #[allow(clippy::wildcard_imports)]
            use super::*;
            $(
                #[utoipa::path($method, path = $path, $($openapi)*)]
                #[allow(non_snake_case, dead_code)]
                fn $variant() {}
            )+

            /// The API's routes and types, as utoipa derives them.
            #[derive(utoipa::OpenApi)]
            #[openapi(paths($($variant),+), components(schemas(wray_api::ErrorBody)))]
            pub(crate) struct Api;
        }
    };
}

/// A path parameter's type in [`Route`].
macro_rules! route_param {
    ($param:ident, $a:lifetime) => {
        Cow<$a, str>
    };
}

mod table;

pub(crate) use table::openapi_paths;
pub use table::{Route, ROUTES};

/// A route's summary: its doc comment without the space that begins it.
const fn summary(doc: &'static str) -> &'static str {
    match doc.as_bytes() {
        [b' ', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(s) => s,
            Err(_) => doc,
        },
        _ => doc,
    }
}

/// Longest request path served, in bytes (414 beyond).
pub const MAX_PATH: usize = 2048;

/// The route of `method` and `path` (no query): the first row of
/// [`ROUTES`] whose pattern and method match.
///
/// # Errors
/// 414 for a path over [`MAX_PATH`] bytes; 404 for a path no route has;
/// 405 (naming the methods it has) for a path with another method; 400
/// `bad_path` for a parameter that is not UTF-8 once percent-decoded.
pub fn route<'a>(method: &Method, path: &'a str) -> Result<Route<'a>, ApiError> {
    if path.len() > MAX_PATH {
        return Err(ApiError::new(
            StatusCode::URI_TOO_LONG,
            ErrorCode::PathTooLong,
            format!("the path has {} bytes, the most is {MAX_PATH}", path.len()),
        ));
    }
    let segments: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
    let mut allowed: Vec<&str> = Vec::new();
    for (row, info) in ROUTES.iter().enumerate() {
        let Some(params) = parameters(info.path, &segments) else {
            continue;
        };
        if info.method != method.as_str() {
            if !allowed.contains(&info.method) {
                allowed.push(info.method);
            }
            continue;
        }
        let params = params
            .into_iter()
            .map(decode)
            .collect::<Result<Vec<_>, _>>()?;
        // Every row's parameters are its pattern's (the unit test routes
        // each row to itself).
        return Route::of_row(row, params).ok_or_else(|| no_route(path));
    }
    if allowed.is_empty() {
        return Err(no_route(path));
    }
    Err(ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::MethodNotAllowed,
        format!(
            "{method} is not allowed on {path}; it takes {}",
            allowed.join(", ")
        ),
    ))
}

/// The path parameters of `segments` (still percent-encoded) when they
/// match `pattern`: its literal segments equal, a non-empty segment for
/// each `{param}`.
fn parameters<'a>(pattern: &str, segments: &[&'a str]) -> Option<Vec<&'a str>> {
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let mut params = Vec::new();
    let mut given = segments.iter();
    for part in pattern.split('/') {
        let segment = given.next()?;
        if part.starts_with('{') {
            if segment.is_empty() {
                return None;
            }
            params.push(*segment);
        } else if part != *segment {
            return None;
        }
    }
    given.next().is_none().then_some(params)
}

/// 404 `no_route` for `path`.
fn no_route(path: &str) -> ApiError {
    ApiError::not_found(
        ErrorCode::NoRoute,
        format!("no route {path} (see GET /v1/openapi.json)"),
    )
}

/// Path parameter `segment` percent-decoded (borrowed when it has no `%`).
///
/// # Errors
/// 400 `bad_path` when the decoded bytes are not UTF-8.
fn decode(segment: &str) -> Result<Cow<'_, str>, ApiError> {
    if !segment.contains('%') {
        return Ok(Cow::Borrowed(segment));
    }
    wray_api::decode(segment)
        .map(Cow::Owned)
        .map_err(|e| ApiError::bad_request(ErrorCode::BadPath, format!("a path parameter: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pattern` with each `{param}` replaced by `x`.
    fn example(pattern: &str) -> String {
        pattern
            .split('/')
            .map(|s| if s.starts_with('{') { "x" } else { s })
            .collect::<Vec<_>>()
            .join("/")
    }

    #[test]
    fn every_route_in_the_table_is_routed_to_its_own_row() {
        for info in ROUTES {
            let method: Method = info.method.parse().unwrap();
            let path = example(info.path);
            let route = route(&method, &path).unwrap_or_else(|e| panic!("{path}: {e:?}"));
            assert_eq!(route.info(), info, "{} {path}", info.method);
        }
    }

    #[test]
    fn unknown_paths_methods_and_long_paths_are_4xx_naming_them() {
        let e = route(&Method::GET, "/v2/nothing").unwrap_err();
        assert_eq!(
            (e.status, e.code),
            (StatusCode::NOT_FOUND, ErrorCode::NoRoute)
        );
        let e = route(&Method::PUT, "/v1/components").unwrap_err();
        assert_eq!(e.status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(e.message.contains("GET, POST"), "{}", e.message);
        let long = format!("/{}", "a".repeat(MAX_PATH));
        assert_eq!(
            route(&Method::GET, &long).unwrap_err().status,
            StatusCode::URI_TOO_LONG
        );
        assert!(route(&Method::POST, "/v1/functions//f").is_err());
        let e = route(&Method::GET, "/v1/components/%ff").unwrap_err();
        assert_eq!(
            (e.status, e.code),
            (StatusCode::BAD_REQUEST, ErrorCode::BadPath)
        );
    }

    #[test]
    fn parameters_are_percent_decoded_once() {
        let r = route(&Method::POST, "/v1/functions/x%23y/a%2526b").unwrap();
        assert_eq!(r, Route::Invoke("x#y".into(), "a%26b".into()));
        // An encoded `/` is part of the name (which the name rule refuses).
        let r = route(&Method::GET, "/v1/components/a%2Fb").unwrap();
        assert_eq!(r, Route::GetComponent("a/b".into()));
    }
}
