//! The JSON forms of refs (serde and schemars impls): an [`ObjectRef`] is
//! `{"$object": "<40 hex digits>"}` and an [`ActorHandle`] is
//! `{"$actor": "<32 hex digits>"}` (`wit/runtime.wit`, codec `json`), so a
//! ref passes through a guest in any language and comes back a ref.
//! Serializing one notes its id (the payload lists it in `refs`), as the
//! rkyv form does; deserializing one counts a new live ref.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::actor::{handle_object, Actor, ActorHandle};
use crate::ids::{ObjectId, TaskId};
use crate::object_ref::ObjectRef;
use crate::refs;

/// The key of an object ref's JSON form.
const OBJECT_KEY: &str = "$object";
/// The key of an actor handle's JSON form.
const ACTOR_KEY: &str = "$actor";

/// At most the first 64 characters of `text`, for an error message.
fn clip(text: &str) -> String {
    text.chars().take(64).collect()
}

/// `{key: text}`.
fn one_entry<S: Serializer>(serializer: S, key: &str, text: &str) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry(key, text)?;
    map.end()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectForm {
    #[serde(rename = "$object")]
    object: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActorForm {
    #[serde(rename = "$actor")]
    actor: String,
}

impl<T> Serialize for ObjectRef<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        refs::note_serialized(self.id());
        one_entry(serializer, OBJECT_KEY, &self.id().to_string())
    }
}

impl<'de, T> Deserialize<'de> for ObjectRef<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = ObjectForm::deserialize(deserializer)?;
        let id = ObjectId::from_hex(&form.object).ok_or_else(|| {
            D::Error::custom(format!(
                "`$object` must be 40 hex digits, not {:?}",
                clip(&form.object)
            ))
        })?;
        Ok(ObjectRef::from_id(id))
    }
}

impl<T> JsonSchema for ObjectRef<T> {
    fn schema_name() -> Cow<'static, str> {
        "ObjectRef".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A reference to an object in the store.",
            "type": "object",
            "properties": { "$object": { "type": "string", "pattern": "^[0-9a-f]{40}$" } },
            "required": ["$object"],
            "additionalProperties": false
        })
    }
}

impl<A: Actor> Serialize for ActorHandle<A> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        refs::note_serialized(handle_object(self.id()));
        one_entry(serializer, ACTOR_KEY, &self.id().to_string())
    }
}

impl<'de, A: Actor> Deserialize<'de> for ActorHandle<A> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = ActorForm::deserialize(deserializer)?;
        let id = TaskId::from_hex(&form.actor).ok_or_else(|| {
            D::Error::custom(format!(
                "`$actor` must be 32 hex digits, not {:?}",
                clip(&form.actor)
            ))
        })?;
        Ok(ActorHandle::from_id(id))
    }
}

impl<A: Actor> JsonSchema for ActorHandle<A> {
    fn schema_name() -> Cow<'static, str> {
        "ActorHandle".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A handle of an actor.",
            "type": "object",
            "properties": { "$actor": { "type": "string", "pattern": "^[0-9a-f]{32}$" } },
            "required": ["$actor"],
            "additionalProperties": false
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::bindings::types::Codec;
    use crate::codec::{encode_as, from_payload};
    use crate::ids::{ObjectId, TaskId};
    use crate::object_ref::ObjectRef;

    #[test]
    fn a_ref_inside_a_json_value_round_trips_and_is_listed() {
        let id = ObjectId {
            task: TaskId { hi: 3, lo: 4 },
            index: 1,
        };
        let value = vec![ObjectRef::<i64>::from_id(id)];
        let payload = encode_as(&value, Codec::Json).expect("json");
        let text = String::from_utf8(payload.data.clone()).expect("utf-8");
        assert_eq!(text, format!(r#"[{{"$object":"{id}"}}]"#));
        assert_eq!(payload.refs.len(), 1);
        let back: Vec<ObjectRef<i64>> = from_payload(payload.clone()).expect("decode");
        assert_eq!(back[0].id(), id);
        let forged = crate::bindings::types::Payload {
            codec: Codec::Json,
            data: br#"[{"$object":"nothex"}]"#.to_vec(),
            refs: Vec::new(),
        };
        let err = from_payload::<Vec<ObjectRef<i64>>>(forged).unwrap_err();
        assert!(err.contains("40 hex digits"), "{err}");
    }
}
