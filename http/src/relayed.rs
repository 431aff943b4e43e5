//! Another node's answer as this node's: its status, headers and body
//! (whole, or pulled from that node as it is sent), and `Wray-Node`
//! naming the node that gave it. Shared by `relay` (a request relayed to
//! the first node that has what it names) and `gather` (a node's log).

use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use wray_host::RelayResponse;

use crate::body::ResponseBody;
use crate::delivery::Delivering;

/// `Wray-Node`: the node that answered a relayed request.
pub(crate) const NODE: HeaderName = HeaderName::from_static("wray-node");

/// `response`, relayed from node `node`, as this node's answer: its body
/// whole, or pulled from that node as it is sent.
pub(crate) fn response_of(node: &str, response: RelayResponse) -> Response<ResponseBody> {
    let body = match response.rest {
        None => ResponseBody::from(Full::new(response.body)),
        Some(rest) => ResponseBody::from(Delivering::relayed(response.body, rest)),
    };
    let mut answer = Response::new(body);
    *answer.status_mut() = StatusCode::from_u16(response.status).unwrap_or(StatusCode::BAD_GATEWAY);
    copy_headers(&mut answer, &response.headers);
    if let Ok(v) = HeaderValue::from_str(node) {
        answer.headers_mut().insert(NODE, v);
    }
    answer
}

/// Puts `headers` (a relayed answer's) on `answer`, skipping any that is
/// not a valid header.
pub(crate) fn copy_headers(answer: &mut Response<ResponseBody>, headers: &[(String, String)]) {
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            answer.headers_mut().insert(name, value);
        }
    }
}
