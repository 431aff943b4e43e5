//! JSON Schemas of remote functions' parameters and return values, as
//! `describe` reports them: made by schemars from the Rust types (draft
//! 2020-12), one function per schema so a component's table stays a
//! constant and a schema is built only when `describe` is called.

use crate::bindings::types as wit;

/// The JSON Schema of `T`'s JSON form, as JSON text (what `describe`
/// reports for a parameter or return value of type `T`).
pub fn schema_of<T: schemars::JsonSchema>() -> String {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    serde_json::to_string(&schema).unwrap_or_else(|_| "{}".to_string())
}

/// Makes the JSON Schema of one parameter or return value.
#[doc(hidden)]
pub type SchemaFn = fn() -> String;

/// One parameter of a remote function or method: its name and schema.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct ParamSchema {
    /// The parameter's name in the source (`arg{i}` for a pattern).
    pub name: &'static str,
    /// Its type's JSON Schema.
    pub schema: SchemaFn,
}

/// `describe`'s `params` of `params`.
pub(crate) fn params_wit(params: &[ParamSchema]) -> Vec<wit::ParamInfo> {
    params
        .iter()
        .map(|p| wit::ParamInfo {
            name: p.name.to_string(),
            schema: (p.schema)(),
        })
        .collect()
}

/// `describe`'s `returns` of `returns`.
pub(crate) fn returns_wit(returns: &[SchemaFn]) -> Vec<String> {
    returns.iter().map(|f| f()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_json_schema_text() {
        let schema: serde_json::Value =
            serde_json::from_str(&schema_of::<Vec<i64>>()).expect("json");
        assert_eq!(schema["type"], "array");
        assert_eq!(schema["items"]["type"], "integer");
    }
}
