//! The OpenAPI 3.1 documents, generated from the API's types
//! ([`wray_api`], through `utoipa`) and the route table
//! ([`crate::routes`], whose declarations carry each route's paths):
//!
//! - `GET /v1/openapi.json` ([`document`]): every route of
//!   [`ROUTES`](crate::routes::ROUTES) with its query parameters, request
//!   body and answers, and the API's types. Its size does not grow with
//!   what is deployed; it is built once.
//! - `GET /v1/components/{name}/openapi.json` ([`component_document`]):
//!   one component's functions, a path each, whose request body is its
//!   parameters' JSON Schemas (`prefixItems`, JSON Schema 2020-12, which
//!   OpenAPI 3.1 uses) and whose answer is its return schema; the
//!   schemas' own definitions hoisted into `components/schemas`
//!   ([`schemas`]).

mod schemas;

use std::sync::OnceLock;

use serde_json::{json, Map, Value};
use utoipa::OpenApi as _;
use wray_host::{ComponentRecord, FunctionKind};

use crate::routes::ROUTES;

/// The API's own types every document refers to for its errors.
const ERROR_SCHEMAS: [&str; 5] = [
    "ErrorBody",
    "ErrorDetail",
    "ErrorCode",
    "TaskFailure",
    "TaskCause",
];

/// The main document (built once).
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

fn build() -> Value {
    let mut doc = serde_json::to_value(crate::routes::openapi_paths::Api::openapi())
        .unwrap_or_else(|_| json!({}));
    doc["info"] = info("wray", "A wray node's HTTP API. Each deployed component's functions are described by GET /v1/components/{name}/openapi.json.");
    doc["components"]["securitySchemes"] = security_schemes();
    doc["security"] = json!([{ "token": [] }]);
    for route in ROUTES {
        let method = route.method.to_ascii_lowercase();
        let Some(op) = doc["paths"]
            .get_mut(route.path)
            .and_then(|p| p.get_mut(&method))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        op.insert("summary".into(), route.summary.into());
        op.insert(
            "operationId".into(),
            format!("{method}{}", route.path.replace(['/', '{', '}', '.'], "_")).into(),
        );
        let responses = op
            .entry("responses")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(responses) = responses {
            // OpenAPI requires a description of every answer.
            for (status, response) in responses.iter_mut() {
                if let Some(r) = response.as_object_mut() {
                    r.entry("description").or_insert_with(|| {
                        match status.as_str() {
                            "200" => "success",
                            "201" => "created",
                            "202" => "accepted",
                            _ => "an error",
                        }
                        .into()
                    });
                }
            }
            let shared = [
                (
                    "400",
                    "a malformed request: `bad_query`, `bad_path`, `bad_json`, ...",
                ),
                (
                    "401",
                    "`no_token` or `bad_token` (with `WWW-Authenticate: Bearer`)",
                ),
                ("503", "`busy`: retry after `Retry-After` seconds"),
            ];
            for (status, description) in shared {
                if status == "401" && route.path == "/healthz" {
                    continue;
                }
                responses
                    .entry(status)
                    .or_insert_with(|| error_response(description));
            }
        }
        if route.path == "/healthz" {
            op.insert("security".into(), json!([]));
        }
    }
    doc
}

fn info(title: &str, description: &str) -> Value {
    json!({ "title": title, "description": description, "version": env!("CARGO_PKG_VERSION") })
}

fn security_schemes() -> Value {
    json!({ "token": { "type": "http", "scheme": "bearer" } })
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } },
    })
}

/// The document of `record`'s functions (see the module docs).
pub fn component_document(record: &ComponentRecord) -> Value {
    let mut hoisted = schemas::Hoisted::default();
    for name in ERROR_SCHEMAS {
        if let Some(s) = document()["components"]["schemas"].get(name) {
            hoisted.schemas.insert(name.to_string(), s.clone());
        }
    }
    let mut paths = Map::new();
    let component = wray_api::encode(&record.name);
    for f in record
        .functions
        .iter()
        .filter(|f| f.kind == FunctionKind::Function)
    {
        let items: Vec<Value> = f
            .params
            .iter()
            .map(|p| hoisted.embed(&format!("{}.{}", f.name, p.name), &p.schema))
            .collect();
        let n = items.len();
        let returns: Vec<Value> = f
            .returns
            .iter()
            .enumerate()
            .map(|(i, s)| hoisted.embed(&format!("{}.return{i}", f.name), s))
            .collect();
        let result = match <[Value; 1]>::try_from(returns) {
            Ok([one]) => one,
            Err(many) => json!({ "type": "array", "prefixItems": many, "items": false }),
        };
        let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
        let path = format!("/v1/functions/{component}/{}", wray_api::encode(&f.name));
        paths.insert(
            path,
            json!({ "post": {
                "summary": format!("{}/{}({})", record.name, f.name, params.join(", ")),
                "operationId": f.name.clone(),
                "requestBody": {
                    "required": false,
                    "description": "the JSON array of the arguments (an empty body is `[]`)",
                    "content": { "application/json": { "schema": {
                        "type": "array", "prefixItems": items, "minItems": n, "maxItems": n, "items": false,
                    } } },
                },
                "responses": {
                    "200": { "description": "the result", "content": { "application/json": { "schema": result } } },
                    "202": { "description": "with `?async=true`: the ids of the results", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Accepted" } } } },
                    "4XX": error_response("a bad request, or the task failed on it (`task_failed`)"),
                    "5XX": error_response("the task failed, or the node is busy"),
                },
            } }),
        );
    }
    if let Some(s) = document()["components"]["schemas"].get("Accepted") {
        hoisted.schemas.insert("Accepted".into(), s.clone());
    }
    json!({
        "openapi": "3.1.0",
        "info": info(&format!("wray component {}", record.name), &format!("The functions of component `{}` (sha256 {}), called with POST; see /v1/openapi.json for the rest of the API.", record.name, record.hash)),
        "components": { "securitySchemes": security_schemes(), "schemas": hoisted.schemas },
        "security": [ { "token": [] } ],
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_document_has_every_route_and_no_other() {
        let doc = document();
        let mut in_doc = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                in_doc.insert((method.to_ascii_uppercase(), path.clone()));
            }
        }
        let in_table: BTreeSet<_> = ROUTES
            .iter()
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        assert_eq!(in_doc, in_table);
        for route in ROUTES {
            let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
            assert_eq!(
                op["summary"], route.summary,
                "{} {}",
                route.method, route.path
            );
            assert!(op["responses"]["503"].is_object(), "{op}");
        }
        assert_eq!(doc["openapi"], "3.1.0");
    }

    #[test]
    fn queries_bodies_and_answers_are_described() {
        let doc = document();
        let invoke = &doc["paths"]["/v1/functions/{component}/{function}"]["post"];
        let names: Vec<&str> = invoke["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(names, ["component", "function", "timeout", "async"]);
        for status in ["200", "202", "400", "401", "404", "504", "507"] {
            assert!(
                invoke["responses"][status].is_object(),
                "{status}: {invoke}"
            );
        }
        let list = &doc["paths"]["/v1/components"]["get"];
        assert!(list["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "after"));
        let created = &doc["paths"]["/v1/actors"]["post"];
        assert!(created["requestBody"].is_object() && created["responses"]["201"].is_object());
        let schemas = &doc["components"]["schemas"];
        for name in [
            "ErrorBody",
            "ComponentList",
            "NewActor",
            "JobInfo",
            "Accepted",
        ] {
            assert!(schemas[name].is_object(), "{name} missing");
        }
        let detail = &schemas["ErrorDetail"];
        assert!(
            detail["properties"]["code"].is_object() && detail["properties"]["message"].is_object()
        );
    }
}
