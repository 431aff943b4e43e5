//! The OpenAPI 3.1 document (`GET /v1/openapi.json`): every route of
//! [`ROUTES`](crate::routes::ROUTES), and for each deployed function a
//! path of its own whose request body is its parameters' JSON Schemas
//! (`prefixItems`, JSON Schema 2020-12, which OpenAPI 3.1 uses) and whose
//! answer is its return schema.

use serde_json::{json, Map, Value};
use wray_host::{ComponentRecord, FunctionKind};

use crate::routes::ROUTES;

/// The document for the routes and `components`.
pub fn document(components: &[ComponentRecord]) -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let params: Vec<Value> = route
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } }))
            .collect();
        let mut op = json!({
            "summary": route.summary,
            "parameters": params,
            "responses": {
                "200": { "description": "success (201 for a create, 202 for an async call)" },
                "4XX": { "description": "a bad request", "content": error_content() },
                "503": { "description": "busy: retry after `Retry-After` seconds", "content": error_content() },
            },
        });
        if route.path == "/healthz" {
            op["security"] = json!([]);
        }
        entry(&mut paths, route.path)[route.method.to_ascii_lowercase()] = op;
    }
    for c in components {
        for f in c
            .functions
            .iter()
            .filter(|f| f.kind == FunctionKind::Function)
        {
            let items: Vec<Value> = f.params.iter().map(|p| schema(&p.schema)).collect();
            let n = items.len();
            let returns = match f.returns.as_slice() {
                [one] => schema(one),
                many => {
                    json!({ "type": "array", "prefixItems": many.iter().map(|s| schema(s)).collect::<Vec<_>>() })
                }
            };
            let path = format!("/v1/functions/{}/{}", c.name, f.name);
            entry(&mut paths, &path)["post"] = json!({
                "summary": format!("{}/{} ({})", c.name, f.name, f.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")),
                "requestBody": {
                    "required": true,
                    "content": { "application/json": { "schema": {
                        "type": "array", "prefixItems": items, "minItems": n, "maxItems": n,
                    } } },
                },
                "responses": {
                    "200": { "description": "the result", "content": { "application/json": { "schema": returns } } },
                    "4XX": { "description": "a bad request, or the task failed on it", "content": error_content() },
                    "5XX": { "description": "the task failed", "content": error_content() },
                },
            });
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": { "title": "wray", "version": env!("CARGO_PKG_VERSION") },
        "components": {
            "securitySchemes": { "token": { "type": "http", "scheme": "bearer" } },
            "schemas": { "Error": {
                "type": "object",
                "properties": { "error": { "type": "object", "properties": {
                    "code": { "type": "string" },
                    "message": { "type": "string" },
                    "task": { "type": "object" },
                }, "required": ["code", "message"] } },
            } },
        },
        "security": [ { "token": [] } ],
        "paths": paths,
    })
}

fn entry<'m>(paths: &'m mut Map<String, Value>, path: &str) -> &'m mut Value {
    paths.entry(path.to_string()).or_insert_with(|| json!({}))
}

fn error_content() -> Value {
    json!({ "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } })
}

/// A schema as `describe` gave it (JSON text, checked at deploy).
fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_in_the_document() {
        let doc = document(&[]);
        for route in ROUTES {
            let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
            assert_eq!(
                op["summary"], route.summary,
                "{} {}",
                route.method, route.path
            );
        }
        assert_eq!(doc["openapi"], "3.1.0");
    }
}
