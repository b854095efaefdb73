//! Synthetic OpenAPI v3: an index of group versions and per-group-version documents whose
//! PATCH operations advertise `fieldValidation` (what `kubectl apply` checks) and whose
//! schemas come from CRDs (what `kubectl explain` reads).

use super::response;
use crate::error::Error;
use crate::registry::ResourceInfo;
use crate::store::Store;
use axum::response::Response;
use serde_json::{Map, Value, json};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn schema_name(r: &ResourceInfo) -> String {
    let group = if r.group.is_empty() {
        "core".to_owned()
    } else {
        r.group.clone()
    };
    let rev: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{}.{}", rev.join("."), r.version, r.kind)
}

fn document(store: &Store, group: &str, version: &str) -> Option<Value> {
    let reg = store.registry();
    let resources: Vec<Arc<ResourceInfo>> = reg
        .all()
        .filter(|r| r.group == group && r.version == version)
        .cloned()
        .collect();
    if resources.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for r in &resources {
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let prefix = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let item = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        let params = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "force", "in": "query", "schema": {"type": "boolean"}}
        ]);
        let op = |verb: &str| {
            json!({"operationId": format!("{verb}{}", r.kind), "parameters": params,
                   "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": gvk,
                   "responses": {"200": {"description": "OK"}}})
        };
        paths.insert(
            item,
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        );
        let mut schema = r.schema.clone().unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(schema_name(r), schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}

fn hash_of(v: &Value) -> String {
    let mut h = DefaultHasher::new();
    v.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// `GET /openapi/v3`: one entry per served group version.
pub fn index(store: &Arc<Store>) -> Response {
    let mut paths = Map::new();
    for (group, versions) in store.registry().groups() {
        for v in versions {
            let path = gv_path(&group, &v);
            let doc = document(store, &group, &v).unwrap_or(Value::Null);
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash_of(&doc))}),
            );
        }
    }
    response::json(200, &json!({"paths": paths}))
}

/// `GET /openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
pub fn group_version(store: &Arc<Store>, rest: &[&str]) -> Response {
    let doc = match rest {
        ["api", v] => document(store, "", v),
        ["apis", g, v] => document(store, g, v),
        _ => None,
    };
    match doc {
        Some(d) => response::json(200, &d),
        None => response::error(
            &Error::NotFound("the server could not find the requested resource".into()),
            None,
        ),
    }
}
