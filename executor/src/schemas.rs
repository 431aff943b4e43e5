//! The JSON Schemas a component's `describe` gave its parameters, compiled
//! once when it is loaded, and the check of a task's JSON arguments against
//! them before the task runs: a caller in any language (or over HTTP) gets
//! an `invalid-argument` error naming the argument and what is wrong with
//! it, and the guest never sees the value.
//!
//! Only `json` arguments are checked (rkyv and raw values carry no JSON
//! form), and only against schemas that say something (`{}` and `true`
//! accept anything and cost nothing). Patterns are compiled with the
//! `regex` crate's engine, whose matching time is linear in the input, so
//! a guest's schema cannot make a check backtrack without end; nothing is
//! fetched (a remote `$ref` does not compile, and the deploy is refused).

use std::collections::HashMap;

use jsonschema::{PatternOptions, Validator};
use wray_control_plane::{ComponentRecord, FunctionKind, FunctionRecord};

use crate::bindings::types;

/// Which export a list of validators belongs to: its kind, class and name.
type Key = (FunctionKind, Option<String>, String);

/// One export's parameters: each one's name, validator (`None`: any
/// value), and schema when it names integer formats (checked exactly:
/// [`integers`](super::integers)).
type ParamChecks = Vec<(String, Option<Validator>, Option<serde_json::Value>)>;

/// A parameter schema `describe` gave that cannot be used: the deploy is
/// refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not JSON.
    #[error("the schema of `{export}`'s parameter `{param}` is not JSON: {reason}")]
    NotJson {
        /// The export's name.
        export: String,
        /// The parameter's name.
        param: String,
        /// What the JSON parser said.
        reason: String,
    },
    /// The validator cannot compile it (a remote `$ref`, a bad keyword).
    #[error("the schema of `{export}`'s parameter `{param}` does not compile: {reason}")]
    DoesNotCompile {
        /// The export's name.
        export: String,
        /// The parameter's name.
        param: String,
        /// What the validator said (the value masked).
        reason: String,
    },
}

/// A task's `json` argument its parameter's schema refuses: the task fails
/// `invalid-argument`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// An integer past its format's range.
    #[error("argument {index} (`{param}`) of `{export}`: {source}")]
    OutOfRange {
        /// The argument's index.
        index: usize,
        /// The parameter's name.
        param: String,
        /// The export's name.
        export: String,
        /// Which integer, where (boxed: the error stays small).
        source: Box<super::integers::OutOfRange>,
    },
    /// The argument is not JSON.
    #[error("argument {index} (`{param}`) of `{export}` is not valid JSON: {reason}")]
    NotJson {
        /// The argument's index.
        index: usize,
        /// The parameter's name.
        param: String,
        /// The export's name.
        export: String,
        /// What the JSON parser said.
        reason: String,
    },
    /// The schema refuses the value.
    #[error(
        "argument {index} (`{param}`) of `{export}` does not match its schema{}: {reason}",
        super::integers::place(.at)
    )]
    Mismatch {
        /// The argument's index.
        index: usize,
        /// The parameter's name.
        param: String,
        /// The export's name.
        export: String,
        /// Where in the value (a JSON pointer; empty at the top).
        at: String,
        /// The schema's complaint (the value masked).
        reason: String,
    },
}

/// The compiled parameter schemas of one component.
#[derive(Default)]
pub struct ArgSchemas {
    exports: HashMap<Key, ParamChecks>,
}

/// Whether `schema` accepts every value (`{}` or `true`, with or without
/// annotations such as `$schema` and `title`).
fn accepts_anything(schema: &serde_json::Value) -> bool {
    match schema {
        serde_json::Value::Bool(true) => true,
        serde_json::Value::Object(map) => map.keys().all(|k| {
            matches!(
                k.as_str(),
                "$schema" | "title" | "description" | "$comment" | "examples" | "default"
            )
        }),
        _ => false,
    }
}

fn key(f: &FunctionRecord) -> Key {
    (f.kind, f.class.clone(), f.name.clone())
}

impl ArgSchemas {
    /// Compiles every parameter schema of `record`.
    ///
    /// # Errors
    /// [`SchemaError`], naming the export and parameter whose schema is
    /// not JSON or not a schema the validator can compile.
    pub fn compile(record: &ComponentRecord) -> Result<Self, SchemaError> {
        let mut exports = HashMap::new();
        for f in &record.functions {
            let mut checks = Vec::with_capacity(f.params.len());
            for p in &f.params {
                let schema: serde_json::Value =
                    serde_json::from_str(&p.schema).map_err(|e| SchemaError::NotJson {
                        export: f.name.clone(),
                        param: p.name.clone(),
                        reason: e.to_string(),
                    })?;
                let validator = if accepts_anything(&schema) {
                    None
                } else {
                    let built = jsonschema::options()
                        .with_pattern_options(PatternOptions::regex())
                        .build(&schema)
                        .map_err(|e| SchemaError::DoesNotCompile {
                            export: f.name.clone(),
                            param: p.name.clone(),
                            reason: e.masked().to_string(),
                        })?;
                    Some(built)
                };
                let integers = super::integers::names_integer_format(&p.schema).then_some(schema);
                checks.push((p.name.clone(), validator, integers));
            }
            exports.insert(key(f), checks);
        }
        Ok(ArgSchemas { exports })
    }

    /// Checks the `json` arguments among `args` of export `kind` `name`
    /// (of `class`, for an actor's) against its parameters' schemas.
    ///
    /// # Errors
    /// [`ArgError`], naming the first argument (index and parameter) that
    /// is not valid JSON or does not match its schema, with the schema's
    /// complaint and where in the value it is (the value itself is not
    /// repeated).
    pub fn check(
        &self,
        kind: FunctionKind,
        class: Option<&str>,
        name: &str,
        args: &[types::Arg],
    ) -> Result<(), ArgError> {
        // The common case, rkyv or raw arguments only, costs one scan and
        // no lookup.
        let has_json = args
            .iter()
            .any(|a| matches!(a, types::Arg::Value(p) if p.codec == types::Codec::Json));
        if !has_json {
            return Ok(());
        }
        let key = (kind, class.map(str::to_string), name.to_string());
        let Some(checks) = self.exports.get(&key) else {
            return Ok(());
        };
        for (index, (arg, (param, validator, integers))) in args.iter().zip(checks).enumerate() {
            let types::Arg::Value(payload) = arg else {
                continue;
            };
            if payload.codec != types::Codec::Json {
                continue;
            }
            if let Some(schema) = integers {
                super::integers::check(schema, &payload.data).map_err(|source| {
                    ArgError::OutOfRange {
                        index,
                        param: param.clone(),
                        export: name.to_string(),
                        source: Box::new(source),
                    }
                })?;
            }
            let Some(validator) = validator else {
                continue;
            };
            let value: serde_json::Value =
                serde_json::from_slice(&payload.data).map_err(|e| ArgError::NotJson {
                    index,
                    param: param.clone(),
                    export: name.to_string(),
                    reason: e.to_string(),
                })?;
            if let Err(e) = validator.validate(&value) {
                return Err(ArgError::Mismatch {
                    index,
                    param: param.clone(),
                    export: name.to_string(),
                    at: e.instance_path().to_string(),
                    reason: e.masked().to_string(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use wray_control_plane::Param;

    use super::*;

    fn record(schema: &str) -> ComponentRecord {
        ComponentRecord {
            name: "c".into(),
            hash: "h".into(),
            size: 0,
            has_main: false,
            sdk: String::new(),
            functions: vec![FunctionRecord {
                kind: FunctionKind::Function,
                name: "f".into(),
                class: None,
                num_returns: 1,
                params: vec![Param {
                    name: "x".into(),
                    schema: schema.into(),
                }],
                returns: vec!["{}".into()],
                declared: Default::default(),
            }],
        }
    }

    fn arg(codec: types::Codec, text: &str) -> types::Arg {
        types::Arg::Value(types::Payload {
            codec,
            data: text.as_bytes().to_vec(),
            refs: Vec::new(),
        })
    }

    fn check(schemas: &ArgSchemas, codec: types::Codec, text: &str) -> Result<(), ArgError> {
        schemas.check(FunctionKind::Function, None, "f", &[arg(codec, text)])
    }

    #[test]
    fn json_arguments_are_checked_and_others_pass_through() {
        let s = ArgSchemas::compile(&record(r#"{"type":"integer","minimum":0}"#)).unwrap();
        assert_eq!(check(&s, types::Codec::Json, "3"), Ok(()));
        let err = check(&s, types::Codec::Json, "-1").unwrap_err().to_string();
        assert!(err.contains("argument 0 (`x`) of `f`"), "{err}");
        assert!(check(&s, types::Codec::Json, "\"x\"").is_err());
        assert!(check(&s, types::Codec::Json, "{")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
        // Not JSON: the guest decodes (or refuses) it.
        assert_eq!(check(&s, types::Codec::Raw, "{"), Ok(()));
        // An export the table does not name: nothing to check here.
        let other = s.check(
            FunctionKind::Function,
            None,
            "g",
            &[arg(types::Codec::Json, "{")],
        );
        assert_eq!(other, Ok(()));
    }

    #[test]
    fn empty_schemas_cost_nothing_and_bad_ones_are_refused() {
        let any = ArgSchemas::compile(&record(r#"{"$schema":"x","title":"T"}"#)).unwrap();
        assert!(any
            .exports
            .values()
            .all(|c| c.iter().all(|(_, v, _)| v.is_none())));
        assert_eq!(check(&any, types::Codec::Json, "{"), Ok(()));
        let err = ArgSchemas::compile(&record("{not json"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is not JSON"), "{err}");
        let err = ArgSchemas::compile(&record(r#"{"type": 7}"#))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("does not compile"), "{err}");
        let err = ArgSchemas::compile(&record(r#"{"$ref":"http://example.invalid/s.json"}"#))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("does not compile"), "{err}");
    }
}
