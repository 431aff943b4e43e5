//! JSON integers checked exactly against the `format` their parameter's
//! schema gives them (`int64`, `uint32`, ... as schemars writes them for
//! Rust's integer types), before the guest sees them.
//!
//! JSON numbers have no size, and a caller may send any integer; a schema
//! validator reads them as `f64` past 64 bits, where `2^64` and `2^64 + 1`
//! are one number and an `int64` parameter's bound cannot be told apart
//! from what passes it. This check reads each integer's text, exactly, and
//! says "out of range for int64" where the guest would otherwise fail to
//! decode a float. It follows the schema through `$ref` (to the schema's
//! own `$defs`), `items`, `prefixItems`, `properties`,
//! `additionalProperties`, `allOf`, and the one non-null branch of an
//! `anyOf`/`oneOf` (an `Option`); other shapes are left to the validator
//! and the guest.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

/// Deepest nesting of schema and value followed.
const MAX_DEPTH: u32 = 64;

/// The integer range of a `format`: (least, greatest). `int` and `uint`
/// are a wasm32 guest's `isize` and `usize`.
fn range(format: &str) -> Option<(i128, u128)> {
    Some(match format {
        "int8" => (i128::from(i8::MIN), 127),
        "int16" => (i128::from(i16::MIN), 32_767),
        "int32" | "int" => (i128::from(i32::MIN), 2_147_483_647),
        "int64" => (i128::from(i64::MIN), 9_223_372_036_854_775_807),
        "int128" => (i128::MIN, u128::MAX >> 1),
        "uint8" => (0, u128::from(u8::MAX)),
        "uint16" => (0, u128::from(u16::MAX)),
        "uint32" | "uint" => (0, u128::from(u32::MAX)),
        "uint64" => (0, u128::from(u64::MAX)),
        "uint128" => (0, u128::MAX),
        _ => return None,
    })
}

/// Whether `schema` (JSON text) names an integer format anywhere: only
/// then is [`check`] worth running.
pub(crate) fn names_integer_format(schema: &str) -> bool {
    schema.contains("\"format\"") && schema.contains("int")
}

/// An integer outside the range of the `format` its schema gives it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{shown}{} is out of range for {format} ({least} to {greatest})", place(.at))]
pub struct OutOfRange {
    /// The integer's first 40 characters, `...` after them when it has more.
    shown: String,
    /// Where in the value it is (a JSON pointer; empty at the top).
    at: String,
    /// The `format` (`int64`, `uint32`, ...).
    format: String,
    /// The format's least value.
    least: i128,
    /// The format's greatest value.
    greatest: u128,
}

/// ` at {at}`, or nothing at the top of the value.
pub fn place(at: &str) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!(" at {at}")
    }
}

/// Checks every integer in `value` (JSON text) against the format its
/// place in `schema` gives it.
///
/// # Errors
/// [`OutOfRange`], naming the integer (its first 40 characters), the
/// format and its range, and where in the value it is (a JSON pointer).
pub fn check(schema: &Value, value: &[u8]) -> Result<(), OutOfRange> {
    let Ok(raw) = serde_json::from_slice::<&RawValue>(value) else {
        // Not JSON: the validator says so.
        return Ok(());
    };
    walk(schema, schema, raw, &mut String::new(), 0)
}

fn walk(
    schema: &Value,
    root: &Value,
    raw: &RawValue,
    at: &mut String,
    depth: u32,
) -> Result<(), OutOfRange> {
    let Value::Object(s) = schema else {
        return Ok(());
    };
    if depth > MAX_DEPTH {
        return Ok(());
    }
    if let Some(target) = s
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        walk(target, root, raw, at, depth + 1)?;
    }
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => {
            if let Some(format) = s.get("format").and_then(Value::as_str) {
                if let Some(bounds) = range(format) {
                    in_range(text, format, bounds, at)?;
                }
            }
        }
        Some(b'[') => {
            let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
                return Ok(());
            };
            let prefix = s.get("prefixItems").and_then(Value::as_array);
            for (i, item) in items.iter().enumerate() {
                let item_schema = prefix.and_then(|p| p.get(i)).or_else(|| s.get("items"));
                if let Some(item_schema) = item_schema {
                    let len = at.len();
                    at.push_str(&format!("/{i}"));
                    walk(item_schema, root, item, at, depth + 1)?;
                    at.truncate(len);
                }
            }
        }
        Some(b'{') => {
            let Ok(fields) = serde_json::from_str::<BTreeMap<String, &RawValue>>(text) else {
                return Ok(());
            };
            let properties = s.get("properties").and_then(Value::as_object);
            for (key, field) in &fields {
                let field_schema = properties
                    .and_then(|p| p.get(key))
                    .or_else(|| s.get("additionalProperties"));
                if let Some(field_schema) = field_schema {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    walk(field_schema, root, field, at, depth + 1)?;
                    at.truncate(len);
                }
            }
        }
        _ => {}
    }
    for branch in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        walk(branch, root, raw, at, depth + 1)?;
    }
    for key in ["anyOf", "oneOf"] {
        let Some(branches) = s.get(key).and_then(Value::as_array) else {
            continue;
        };
        let null = serde_json::json!({ "type": "null" });
        let mut not_null = branches.iter().filter(|b| **b != null);
        if let (Some(only), None) = (not_null.next(), not_null.next()) {
            walk(only, root, raw, at, depth + 1)?;
        }
    }
    Ok(())
}

/// Checks the integer literal `text` against `format`'s `(least,
/// greatest)`; a number with a fraction or exponent is not an integer
/// literal and is left to the validator.
fn in_range(
    text: &str,
    format: &str,
    (least, greatest): (i128, u128),
    at: &str,
) -> Result<(), OutOfRange> {
    if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return Ok(());
    }
    let fits = match text.strip_prefix('-') {
        Some(_) => text.parse::<i128>().is_ok_and(|n| n >= least),
        None => text.parse::<u128>().is_ok_and(|n| n <= greatest),
    };
    if fits {
        return Ok(());
    }
    let shown: String = text.chars().take(40).collect();
    let cut = if shown.len() < text.len() { "..." } else { "" };
    Err(OutOfRange {
        shown: format!("{shown}{cut}"),
        at: at.to_string(),
        format: format.to_string(),
        least,
        greatest,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check_text(schema: Value, value: &str) -> Result<(), OutOfRange> {
        check(&schema, value.as_bytes())
    }

    #[test]
    fn integers_past_their_format_are_refused_exactly() {
        let i64_ = json!({ "type": "integer", "format": "int64" });
        assert_eq!(check_text(i64_.clone(), "9223372036854775807"), Ok(()));
        assert_eq!(check_text(i64_.clone(), "-9223372036854775808"), Ok(()));
        let e = check_text(i64_.clone(), "9223372036854775808")
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range for int64"), "{e}");
        let e = check_text(i64_.clone(), "18446744073709551616")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("18446744073709551616 is out of range"), "{e}");
        assert!(check_text(i64_, "-9223372036854775809").is_err());
        let u128_ = json!({ "type": "integer", "format": "uint128", "minimum": 0 });
        assert_eq!(check_text(u128_.clone(), "1180591620717411303424"), Ok(()));
        assert!(check_text(u128_, &"9".repeat(60))
            .unwrap_err()
            .to_string()
            .contains("..."));
        // Not an integer literal: the validator's business.
        let u8_ = json!({ "type": "integer", "format": "uint8" });
        assert_eq!(check_text(u8_.clone(), "1e9"), Ok(()));
        assert!(check_text(u8_, "256").is_err());
    }

    #[test]
    fn the_check_follows_arrays_objects_refs_and_options() {
        let schema = json!({
            "type": "object",
            "properties": {
                "xs": { "type": "array", "items": { "$ref": "#/$defs/Small" } },
                "pair": { "prefixItems": [{ "type": "string" }, { "format": "uint16" }] },
                "maybe": { "anyOf": [{ "$ref": "#/$defs/Small" }, { "type": "null" }] },
            },
            "$defs": { "Small": { "type": "integer", "format": "int8" } },
        });
        let ok = r#"{"xs": [1, -128], "pair": ["a", 65535], "maybe": null}"#;
        assert_eq!(check_text(schema.clone(), ok), Ok(()));
        let e = check_text(schema.clone(), r#"{"xs": [1, 128]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at /xs/1") && e.contains("int8"), "{e}");
        let e = check_text(schema.clone(), r#"{"pair": ["a", 65536]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at /pair/1"), "{e}");
        assert!(check_text(schema, r#"{"maybe": 300}"#).is_err());
    }
}
