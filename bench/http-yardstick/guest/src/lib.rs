//! The trivial `wasi:http/proxy` guest: every request gets `200` with the body
//! `1` (what wray's `microbench/noop` answers to `[1]`), as `application/json`.

use wasi::http::types::{
    Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

struct Trivial;

const BODY: &[u8] = b"1";

impl wasi::exports::http::incoming_handler::Guest for Trivial {
    fn handle(_request: IncomingRequest, out: ResponseOutparam) {
        let headers = Fields::from_list(&[
            ("content-type".to_string(), b"application/json".to_vec()),
            (
                "content-length".to_string(),
                BODY.len().to_string().into_bytes(),
            ),
        ])
        .expect("valid headers");
        let response = OutgoingResponse::new(headers);
        let body = response.body().expect("the body, once");
        ResponseOutparam::set(out, Ok(response));
        let stream = body.write().expect("the body's stream, once");
        stream
            .blocking_write_and_flush(BODY)
            .expect("write the body");
        drop(stream);
        OutgoingBody::finish(body, None).expect("finish the body");
    }
}

wasi::http::proxy::export!(Trivial);
