//! One version per content over HTTP: deploying the bytes of a version
//! the name keeps answers 200 with that version, current, `new: false`;
//! only other bytes make a new version (201). Redeploys of a version an
//! actor uses never pile up into the node's bound on versions.

use serde_json::{json, Value};
use wray_http::HttpConfig;

use super::{components, get_at, post, spawn_server};

/// `bytes` (a component) with a custom section of its own appended
/// (named `wray-test`, holding `n`): other bytes (another digest), the
/// same component.
pub fn variant(bytes: &[u8], n: u8) -> Vec<u8> {
    const NAME: &[u8] = b"wray-test";
    // Section id 0 (custom), its size, the name's length and bytes, then
    // the payload: every length under 128, one LEB128 byte each.
    let size = u8::try_from(1 + NAME.len() + 1).expect("small");
    let name_len = u8::try_from(NAME.len()).expect("small");
    let mut out = bytes.to_vec();
    out.extend_from_slice(&[0, size, name_len]);
    out.extend_from_slice(NAME);
    out.push(n);
    out
}

/// `POST {url}/v1/components?name={name}` of `bytes`.
fn deploy_bytes(url: &str, name: &str, bytes: &[u8]) -> (u16, Value) {
    post(
        &format!("{url}/v1/components?name={name}"),
        "application/wasm",
        bytes,
    )
}

/// (status, version, new) of a deploy's answer.
fn said(answer: &(u16, Value)) -> (u16, Value, Value) {
    let (s, v) = answer;
    (*s, v["version"].clone(), v["new"].clone())
}

#[test]
fn deploying_the_bytes_of_a_kept_version_makes_it_current_without_a_new_number() {
    let url = format!("http://{}", spawn_server(HttpConfig::default()));
    let read = |name: &str| std::fs::read(components::component(name)).expect("a built component");
    let (counter, mb) = (read("counter"), read("microbench"));
    let first = deploy_bytes(&url, "app", &counter);
    assert_eq!(said(&first), (201, json!(1), json!(true)), "{:?}", first.1);

    // An actor of version 1, alive: it uses the version.
    let (s, v) = post(
        &format!("{url}/v1/actors"),
        "application/json",
        br#"{"component": "app", "class": "Counter", "args": [1]}"#,
    );
    assert_eq!(s, 201, "{v}");
    let actor = v["actor"].as_str().expect("an actor id").to_string();

    // The same bytes, more times than the node keeps versions of a name
    // (10): the same version each time, never refused.
    for _ in 0..12 {
        let again = deploy_bytes(&url, "app", &counter);
        assert_eq!(said(&again), (200, json!(1), json!(false)), "{:?}", again.1);
        assert_eq!(again.1["record"]["hash"], first.1["record"]["hash"]);
    }
    let versions = |url: &str| -> Vec<u64> {
        let (s, v) = get_at(url, "/v1/components/app/versions");
        assert_eq!(s, 200, "{v}");
        v["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .filter_map(|v| v["version"].as_u64())
            .collect()
    };
    assert_eq!(versions(&url), [1]);

    // Other bytes: version 2, current.
    assert_eq!(
        said(&deploy_bytes(&url, "app", &mb)),
        (201, json!(2), json!(true))
    );
    // The first bytes again: version 1 is current again (as a rollback
    // would make it), and there is no version 3.
    assert_eq!(
        said(&deploy_bytes(&url, "app", &counter)),
        (200, json!(1), json!(false))
    );
    let (s, current) = get_at(&url, "/v1/components/app");
    assert_eq!((s, &current["version"]), (200, &json!(1)), "{current}");
    assert_eq!(versions(&url), [1, 2]);
    // The actor still answers.
    let (s, v) = post(
        &format!("{url}/v1/actors/{actor}/increment"),
        "application/json",
        b"[]",
    );
    assert_eq!((s, v), (200, json!(2)));
}
