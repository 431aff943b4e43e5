//! Deserializers for a job's lists and maps that refuse the entry past
//! their bound as they read it, before it is stored: a client's body
//! never sizes a table past the bound ([`list`] and [`map`], behind the
//! `deserialize_with` readers of [`JobOptions`](crate::JobOptions) and
//! [`SubmitJob`](crate::SubmitJob)).

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};

/// A JSON array of at most `max` items: `field` and `what` name them in
/// the error past it (`` `args` has more than 4096 arguments ``).
///
/// # Errors
/// Past the bound, naming it; as the deserializer.
pub fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    field: &'static str,
    what: &'static str,
    max: usize,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(List::new(field, what, max))
}

/// A JSON object of at most `max` entries, named as [`list`]'s.
///
/// # Errors
/// Past the bound, naming it; as the deserializer.
pub fn map<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
    d: D,
    field: &'static str,
    what: &'static str,
    max: usize,
) -> Result<BTreeMap<String, V>, D::Error> {
    d.deserialize_map(Map::new(field, what, max))
}

/// What the bound is on, for its error.
struct Bound {
    field: &'static str,
    what: &'static str,
    max: usize,
}

impl Bound {
    fn passed<E: Error>(&self) -> E {
        E::custom(format_args!(
            "{} has more than {} {}, the most a job may have",
            self.field, self.max, self.what
        ))
    }

    fn expecting(&self, f: &mut fmt::Formatter<'_>, shape: &str) -> fmt::Result {
        write!(f, "{shape} of at most {} {}", self.max, self.what)
    }
}

/// A JSON array of at most `bound.max` items.
struct List<T> {
    bound: Bound,
    item: PhantomData<T>,
}

impl<T> List<T> {
    fn new(field: &'static str, what: &'static str, max: usize) -> Self {
        List {
            bound: Bound { field, what, max },
            item: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for List<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.bound.expecting(f, "an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element()? {
            if out.len() >= self.bound.max {
                return Err(self.bound.passed());
            }
            out.push(item);
        }
        Ok(out)
    }
}

/// A JSON object of at most `bound.max` entries.
struct Map<V> {
    bound: Bound,
    value: PhantomData<V>,
}

impl<V> Map<V> {
    fn new(field: &'static str, what: &'static str, max: usize) -> Self {
        Map {
            bound: Bound { field, what, max },
            value: PhantomData,
        }
    }
}

impl<'de, V: Deserialize<'de>> Visitor<'de> for Map<V> {
    type Value = BTreeMap<String, V>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.bound.expecting(f, "an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some((key, value)) = map.next_entry::<String, V>()? {
            if out.len() >= self.bound.max {
                return Err(self.bound.passed());
            }
            out.insert(key, value);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::jobs::{MAX_JOB_ARGS, MAX_JOB_ENV_VARS};

    fn env<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
        map(d, "`env`", "variables", MAX_JOB_ENV_VARS)
    }

    fn args<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        list(d, "`args`", "arguments", MAX_JOB_ARGS)
    }

    #[derive(Debug, serde::Deserialize)]
    struct Body {
        #[serde(default, deserialize_with = "env")]
        env: BTreeMap<String, String>,
        #[serde(default, deserialize_with = "args")]
        args: Vec<String>,
    }

    #[test]
    fn an_entry_past_the_bound_is_refused_as_it_is_read() {
        let within: serde_json::Map<String, serde_json::Value> = (0..MAX_JOB_ENV_VARS)
            .map(|i| (format!("K{i}"), "v".into()))
            .collect();
        let body = serde_json::json!({ "env": within });
        let read: Body = serde_json::from_value(body).unwrap();
        assert_eq!((read.env.len(), read.args.len()), (MAX_JOB_ENV_VARS, 0));
        let mut past = within;
        past.insert("one_more".into(), "v".into());
        let err = serde_json::from_value::<Body>(serde_json::json!({ "env": past }))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`env` has more than 128 variables"), "{err}");
        let many = vec![""; MAX_JOB_ARGS + 1];
        let err = serde_json::from_value::<Body>(serde_json::json!({ "args": many }))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`args` has more than 4096 arguments"), "{err}");
        let err = serde_json::from_str::<Body>(r#"{"env": [1]}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("an object of at most 128 variables"), "{err}");
    }
}
