//! Which fields a field selector may name, kind by kind, as kube-apiserver indexes them:
//! `metadata.name` and `metadata.namespace` everywhere, a few more for the kinds that register
//! their own field labels (Pods, Events, Secrets, ...). Anything else is refused as the real
//! server refuses it, in its words (two different sentences, depending on the kind).

use crate::error::{Error, Result};
use crate::registry::ResourceInfo;

/// The fields a kind indexes beyond `metadata.name` and `metadata.namespace`, for the kinds
/// that register field labels (custom resources register none); `None` for the others.
fn registered(info: &ResourceInfo) -> Option<&'static [&'static str]> {
    if info.custom {
        return Some(&[]);
    }
    Some(match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("events.k8s.io", "events") => &[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        ],
        ("", "secrets") => &["type"],
        ("", "namespaces") => &["status.phase"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "replicationcontrollers") => &["status.replicas"],
        ("batch", "jobs") => &["status.successful"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["spec.signerName"],
        _ => return None,
    })
}

/// Refuses a field selector naming a field `info`'s kind does not index.
pub fn check<'a>(info: &ResourceInfo, mut fields: impl Iterator<Item = &'a str>) -> Result<()> {
    let extra = registered(info);
    let known = |field: &str| {
        matches!(field, "metadata.name" | "metadata.namespace")
            || extra.is_some_and(|extra| extra.contains(&field))
    };
    match fields.find(|field| !known(field)) {
        None => Ok(()),
        Some(field) if extra.is_some() => Err(Error::BadRequest(format!(
            "field label not supported: {field}"
        ))),
        Some(field) => Err(Error::BadRequest(format!(
            "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        ))),
    }
}
