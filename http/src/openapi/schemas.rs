//! A deployed function's JSON Schemas, made fit to embed in an OpenAPI
//! document. `describe` (schemars) gives each schema its own `$defs` and
//! refers to them as `#/$defs/Name`, which inside a document resolves
//! against the document's root, where there are none (openapi-spec-validator
//! refuses it once a function takes an `ObjectRef` or `ActorHandle`).
//! Each schema's definitions are moved into `components/schemas` under
//! names unique in the document, and every ref rewritten to them; a ref
//! to the schema itself (`#`, a recursive type) points at a hoisted copy.

use serde_json::{json, Map, Value};

/// Where hoisted schemas are referred to from.
const PREFIX: &str = "#/components/schemas/";

/// The `components/schemas` of one document being built.
#[derive(Default)]
pub(super) struct Hoisted {
    /// Name -> schema.
    pub(super) schemas: Map<String, Value>,
}

impl Hoisted {
    /// The schema `text` (JSON, as `describe` gave it; `{}` when it is
    /// not JSON) ready to embed: its definitions hoisted under names
    /// starting with `owner` (e.g. `add.x`), its refs rewritten.
    pub(super) fn embed(&mut self, owner: &str, text: &str) -> Value {
        let mut schema: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
        let Value::Object(map) = &mut schema else {
            return schema;
        };
        map.remove("$schema");
        map.remove("$id");
        let mut defs: Vec<(String, Value)> = Vec::new();
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(d)) = map.remove(key) {
                defs.extend(
                    d.into_iter()
                        .map(|(name, def)| (format!("{key}/{name}"), def)),
                );
            }
        }
        // Old location (`$defs/Name`) -> new name.
        let renames: Vec<(String, String)> = defs
            .iter()
            .map(|(old, _)| {
                let short = old.split_once('/').map_or(old.as_str(), |(_, n)| n);
                (old.clone(), self.unique(&format!("{owner}.{short}")))
            })
            .collect();
        let root = self.unique(owner);
        let mut uses_root = false;
        for ((_, mut def), (_, name)) in defs.into_iter().zip(&renames) {
            rewrite(&mut def, &renames, &root, &mut uses_root);
            self.schemas.insert(name.clone(), def);
        }
        rewrite(&mut schema, &renames, &root, &mut uses_root);
        if uses_root {
            self.schemas.insert(root.clone(), schema);
            return json!({ "$ref": format!("{PREFIX}{root}") });
        }
        self.schemas.remove(&root);
        schema
    }

    /// `wanted` made a valid component name (`[A-Za-z0-9._-]`, others
    /// `_`) not used yet in this document.
    fn unique(&mut self, wanted: &str) -> String {
        let base: String = wanted
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut name = base.clone();
        let mut n = 1u32;
        while self.schemas.contains_key(&name) {
            n = n.saturating_add(1);
            name = format!("{base}.{n}");
        }
        // Reserve it (filled in by the caller).
        self.schemas.insert(name.clone(), Value::Bool(true));
        name
    }
}

/// Rewrites every `$ref` in `value` that points into the schema's own
/// definitions (per `renames`) or at the schema itself (`#`: to `root`,
/// setting `uses_root`).
fn rewrite(value: &mut Value, renames: &[(String, String)], root: &str, uses_root: &mut bool) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(new) = target(r, renames, root, uses_root) {
                    *r = new;
                }
            }
            for (key, v) in map.iter_mut() {
                if key != "$ref" {
                    rewrite(v, renames, root, uses_root);
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                rewrite(v, renames, root, uses_root);
            }
        }
        _ => {}
    }
}

/// Where ref `r` points once hoisted, if it is the schema's own.
fn target(
    r: &str,
    renames: &[(String, String)],
    root: &str,
    uses_root: &mut bool,
) -> Option<String> {
    let pointer = r.strip_prefix('#')?;
    if pointer.is_empty() {
        *uses_root = true;
        return Some(format!("{PREFIX}{root}"));
    }
    let pointer = pointer.strip_prefix('/')?;
    let (key, rest) = pointer.split_once('/')?;
    let (name, deeper) = rest.split_once('/').map_or((rest, ""), |(n, d)| (n, d));
    let name = name.replace("~1", "/").replace("~0", "~");
    let old = format!("{key}/{name}");
    let (_, new) = renames.iter().find(|(o, _)| *o == old)?;
    Some(if deeper.is_empty() {
        format!("{PREFIX}{new}")
    } else {
        format!("{PREFIX}{new}/{deeper}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_move_to_components_and_refs_follow() {
        let mut h = Hoisted::default();
        let text = r##"{"$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "array", "items": {"$ref": "#/$defs/ObjectRef"},
            "$defs": {"ObjectRef": {"type": "object", "properties": {"$object": {"type": "string"}}},
                      "Pair<A, B>": {"prefixItems": [{"$ref": "#/$defs/ObjectRef"}]}}}"##;
        let s = h.embed("f.refs", text);
        assert_eq!(s["items"]["$ref"], "#/components/schemas/f.refs.ObjectRef");
        assert!(
            s.get("$defs").is_none() && s.get("$schema").is_none(),
            "{s}"
        );
        let pair = &h.schemas["f.refs.Pair_A__B_"];
        assert_eq!(
            pair["prefixItems"][0]["$ref"],
            "#/components/schemas/f.refs.ObjectRef"
        );
        // Another function's definition of the same name gets its own.
        let again = h.embed("f.refs", text);
        assert_eq!(
            again["items"]["$ref"],
            "#/components/schemas/f.refs.ObjectRef.2"
        );
    }

    #[test]
    fn a_recursive_schema_is_hoisted_whole() {
        let mut h = Hoisted::default();
        let s = h.embed(
            "t",
            r##"{"type": "object", "properties": {"next": {"$ref": "#"}}}"##,
        );
        assert_eq!(s["$ref"], "#/components/schemas/t");
        assert_eq!(
            h.schemas["t"]["properties"]["next"]["$ref"],
            "#/components/schemas/t"
        );
    }
}
