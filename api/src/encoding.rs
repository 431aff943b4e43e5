//! Names and values in paths and queries. Clients percent-encode every
//! path segment and query value they send ([`encode`]: all but the
//! unreserved characters of RFC 3986, so `x#y` travels as `x%23y` and
//! `a&b` as `a%26b`); the server decodes each segment and value once
//! ([`decode`]) before it judges it. `+` is a plus sign, not a space.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// What [`encode`] leaves as it is: RFC 3986's unreserved characters.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `value` as one path segment or query value: every byte but
/// `A-Z a-z 0-9 - . _ ~` percent-encoded.
pub fn encode(value: &str) -> String {
    utf8_percent_encode(value, UNRESERVED).to_string()
}

/// The query string of the `(name, value)` pairs whose value is set
/// (`?a=1&b=x%26y`, each value [`encode`]d); empty when none is.
pub(crate) fn query_string<const N: usize>(pairs: [(&str, Option<String>); N]) -> String {
    let set: Vec<String> = pairs
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| format!("{name}={}", encode(&v))))
        .collect();
    if set.is_empty() {
        String::new()
    } else {
        format!("?{}", set.join("&"))
    }
}

/// A path segment or query value that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not UTF-8 once percent-decoded")]
pub struct DecodeError(pub String);

/// `value` percent-decoded (`%23` is `#`; a `%` not followed by two hex
/// digits is itself).
///
/// # Errors
/// [`DecodeError`] (naming the value, cut to 64 characters) when the
/// decoded bytes are not UTF-8.
pub fn decode(value: &str) -> Result<String, DecodeError> {
    percent_decode_str(value)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| DecodeError(value.chars().take(64).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_a_segment() {
        for name in [
            "x#y",
            "a&b",
            "a b",
            "100%",
            "ünï",
            "a+b",
            "q?=1",
            "plain-name_1.2~",
        ] {
            let encoded = encode(name);
            assert!(
                encoded
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)),
                "{encoded}"
            );
            assert_eq!(decode(&encoded).as_deref(), Ok(name));
        }
        assert_eq!(encode("plain-name_1.2~"), "plain-name_1.2~");
        assert_eq!(decode("a+b").as_deref(), Ok("a+b"));
        assert!(decode("%ff").is_err());
    }
}
