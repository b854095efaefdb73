//! What a request does, in the terms authorization speaks (kube-apiserver's RequestInfo):
//! verb, API group, resource, subresource, namespace and name, or a non-resource path.

use crate::selector::FieldSelector;
use std::collections::HashMap;

/// The attributes of a request that the authorizer decides on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `impersonate`, `bind`, `escalate`...; for non-resource requests the lowercased method.
    pub verb: String,
    /// Whether this is a request for a resource (else for a non-resource path).
    pub resource_request: bool,
    /// API group ("" for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource, or empty.
    pub subresource: String,
    /// Namespace, or empty.
    pub namespace: String,
    /// Object name, or empty.
    pub name: String,
    /// The URL path (non-resource requests).
    pub path: String,
}

impl Attributes {
    /// A resource request.
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    /// `resource/subresource`, or the resource alone.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// The attributes of an HTTP request: `method`, the path's segments and its query.
    pub fn of_request(method: &str, segments: &[String], query: &HashMap<String, String>) -> Self {
        let path = format!("/{}", segments.join("/"));
        let non_resource = || Attributes {
            verb: method.to_ascii_lowercase(),
            path: path.clone(),
            ..Attributes::default()
        };
        let (prefix, rest) = match segments {
            [prefix, rest @ ..] if segments.len() >= 3 => (prefix.as_str(), rest),
            _ => return non_resource(),
        };
        let (group, rest) = match prefix {
            "api" => ("", rest),
            "apis" if rest.len() >= 3 => (rest[0].as_str(), &rest[1..]),
            _ => return non_resource(),
        };
        let mut attrs = Attributes {
            resource_request: true,
            group: group.into(),
            version: rest[0].clone(),
            path: path.clone(),
            ..Attributes::default()
        };
        let mut parts = &rest[1..];
        let special = parts.first().map(String::as_str);
        if matches!(special, Some("watch" | "proxy")) && parts.len() >= 2 {
            attrs.verb = parts[0].clone();
            parts = &parts[1..];
        } else {
            attrs.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .into();
        }
        if parts.first().map(String::as_str) == Some("namespaces")
            && let Some(namespace) = parts.get(1)
        {
            attrs.namespace = namespace.clone();
            if parts.len() > 2 && !matches!(parts[2].as_str(), "status" | "finalize") {
                parts = &parts[2..];
            }
        }
        attrs.resource = parts.first().cloned().unwrap_or_default();
        if parts.len() >= 2 {
            attrs.name = parts[1].clone();
        }
        if parts.len() >= 3 && attrs.verb != "proxy" {
            attrs.subresource = parts[2].clone();
        }
        if attrs.name.is_empty() && attrs.verb == "get" {
            let watch = query
                .get("watch")
                .is_some_and(|w| !matches!(w.to_ascii_lowercase().as_str(), "false" | "0" | ""));
            attrs.verb = if watch { "watch" } else { "list" }.into();
            let selector = query.get("fieldSelector").map(String::as_str).unwrap_or("");
            if let Ok(fields) = FieldSelector::parse(selector)
                && let Some(name) = fields.pinned_name()
                && !matches!(name, "." | "..")
                && !name.contains(['/', '%'])
            {
                attrs.name = name.to_owned();
            }
        }
        if attrs.name.is_empty() && attrs.verb == "delete" {
            attrs.verb = "deletecollection".into();
        }
        attrs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(method: &str, path: &str, query: &[(&str, &str)]) -> Attributes {
        let segments: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let query = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Attributes::of_request(method, &segments, &query)
    }

    #[test]
    fn reads_requests_as_kube_apiserver_does() {
        let a = of("GET", "/api/v1/namespaces/ns/pods", &[]);
        assert_eq!((a.verb.as_str(), a.resource.as_str()), ("list", "pods"));
        assert_eq!(a.namespace, "ns");
        let a = of("GET", "/api/v1/pods", &[("watch", "true")]);
        assert_eq!(a.verb, "watch");
        let a = of(
            "GET",
            "/apis/apps/v1/namespaces/ns/deployments",
            &[("fieldSelector", "metadata.name=web")],
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "web"));
        assert_eq!(a.group, "apps");
        let a = of("DELETE", "/api/v1/namespaces/ns/secrets", &[]);
        assert_eq!(a.verb, "deletecollection");
        let a = of(
            "POST",
            "/api/v1/namespaces/ns/serviceaccounts/sa/token",
            &[],
        );
        assert_eq!(
            (
                a.verb.as_str(),
                a.combined_resource().as_str(),
                a.name.as_str()
            ),
            ("create", "serviceaccounts/token", "sa")
        );
        let a = of("PUT", "/api/v1/namespaces/ns/finalize", &[]);
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.subresource.as_str()),
            ("namespaces", "ns", "finalize")
        );
        let a = of("GET", "/api/v1/namespaces/ns", &[]);
        assert_eq!((a.verb.as_str(), a.namespace.as_str()), ("get", "ns"));
    }

    #[test]
    fn discovery_and_other_paths_are_not_resources() {
        for path in [
            "/version",
            "/api",
            "/api/v1",
            "/apis/apps/v1",
            "/healthz/ping",
        ] {
            let a = of("GET", path, &[]);
            assert!(!a.resource_request, "{path}");
            assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", path));
        }
        assert!(of("GET", "/apis/apps/v1/deployments", &[]).resource_request);
    }
}
