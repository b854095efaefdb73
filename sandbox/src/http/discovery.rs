//! `/version` and API discovery: legacy (`APIVersions`, `APIGroupList`, `APIResourceList`)
//! and aggregated (`APIGroupDiscoveryList` v2 / v2beta1, with their exact content types).

use super::{Req, response};
use crate::error::Error;
use crate::registry::ResourceInfo;
use crate::store::Store;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const SUB_VERBS: [&str; 3] = ["get", "patch", "update"];

/// `GET /version`: minor 32, because the kubectl dispatcher picks its binary from it.
pub fn version() -> Response {
    response::json(
        200,
        &json!({
            "major": "1", "minor": "32", "gitVersion": "v1.32.0-sveltos-sandbox",
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
            "platform": "linux/amd64"
        }),
    )
}

/// Which aggregated discovery version the Accept header asks for, if any.
fn aggregated(req: &Req) -> Option<&'static str> {
    let accept = req.header("accept");
    let wants = |v: &str| {
        accept.split(',').any(|part| {
            let p: Vec<&str> = part.split(';').map(str::trim).collect();
            p.contains(&"g=apidiscovery.k8s.io")
                && p.contains(&format!("v={v}").as_str())
                && p.contains(&"as=APIGroupDiscoveryList")
        })
    };
    if wants("v2") {
        Some("v2")
    } else if wants("v2beta1") {
        Some("v2beta1")
    } else {
        None
    }
}

fn content_type(v: &str) -> &'static str {
    if v == "v2" {
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    } else {
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    }
}

fn agg_resource(r: &ResourceInfo) -> Value {
    let mut subs = Vec::new();
    if r.status {
        subs.push(json!({"subresource": "status",
            "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
            "verbs": SUB_VERBS}));
    }
    if r.scale {
        subs.push(json!({"subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": SUB_VERBS}));
    }
    let mut v = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": VERBS,
    });
    if !r.short_names.is_empty() {
        v["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        v["categories"] = json!(r.categories);
    }
    if !subs.is_empty() {
        v["subresources"] = Value::Array(subs);
    }
    v
}

fn aggregated_list(store: &Store, core: bool, version: &str) -> Response {
    let reg = store.registry();
    let items: Vec<Value> = reg
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = reg
                        .all()
                        .filter(|r| r.group == g && &r.version == v)
                        .map(|r| agg_resource(r))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": vs})
        })
        .collect();
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    });
    response::json_with(200, content_type(version), &body)
}

/// `GET /api`.
pub fn api(store: &Arc<Store>, req: &Req) -> Response {
    if let Some(v) = aggregated(req) {
        return aggregated_list(store, true, v);
    }
    response::json(
        200,
        &json!({"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
    )
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `GET /apis`.
pub fn apis(store: &Arc<Store>, req: &Req) -> Response {
    if let Some(v) = aggregated(req) {
        return aggregated_list(store, false, v);
    }
    let groups: Vec<Value> = store
        .registry()
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_json(&g, &vs))
        .collect();
    response::json(
        200,
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
    )
}

/// `GET /apis/<group>`.
pub fn group(store: &Arc<Store>, group: &str) -> Response {
    match store
        .registry()
        .groups()
        .into_iter()
        .find(|(g, _)| g == group)
    {
        Some((g, vs)) => {
            let mut v = group_json(&g, &vs);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            response::json(200, &v)
        }
        None => not_found(),
    }
}

fn not_found() -> Response {
    response::error(
        &Error::NotFound("the server could not find the requested resource".into()),
        None,
    )
}

/// `GET /api/v1` or `/apis/<group>/<version>`: an `APIResourceList`.
pub fn resource_list(store: &Arc<Store>, group: &str, version: &str) -> Response {
    let reg = store.registry();
    let mut resources = Vec::new();
    for r in reg
        .all()
        .filter(|r| r.group == group && r.version == version)
    {
        let mut v = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": VERBS,
        });
        if !r.short_names.is_empty() {
            v["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            v["categories"] = json!(r.categories);
        }
        resources.push(v);
        if r.status {
            resources.push(
                json!({"name": format!("{}/status", r.plural), "singularName": "",
                "namespaced": r.namespaced, "kind": r.kind, "verbs": SUB_VERBS}),
            );
        }
        if r.scale {
            resources.push(
                json!({"name": format!("{}/scale", r.plural), "singularName": "",
                "namespaced": r.namespaced, "group": "autoscaling", "version": "v1",
                "kind": "Scale", "verbs": SUB_VERBS}),
            );
        }
    }
    if resources.is_empty() {
        return not_found();
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    response::json(
        200,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}
