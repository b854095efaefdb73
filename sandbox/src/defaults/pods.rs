//! Pods' defaults (their spec's, their containers', and a status that stays `Pending`), pod
//! templates' and PersistentVolumeClaims'.

use serde_json::{Map, Value, json};

use super::{fill, fill_text, object_entry, text};

/// A Pod: its spec's defaults, and a status that says `Pending` with its QoS class (no
/// kubelet ever runs it).
pub(super) fn pod(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = object_entry(root, "spec") {
        pod_spec(spec);
    }
    let qos = qos_class(root.get("spec").unwrap_or(&Value::Null));
    if let Some(status) = object_entry(root, "status") {
        status.entry("phase").or_insert_with(|| json!("Pending"));
        status.entry("qosClass").or_insert_with(|| json!(qos));
    }
}

/// A pod template (of a workload): Go's zero creation time written as null, and the pod
/// spec's defaults.
pub(super) fn template(template: &mut Map<String, Value>) {
    zero_creation_time(template);
    if let Some(spec) = object_entry(template, "spec") {
        pod_spec(spec);
    }
}

/// An embedded object's metadata as Go writes it: its zero creation time is `null`.
pub(super) fn zero_creation_time(embedded: &mut Map<String, Value>) {
    if let Some(meta) = object_entry(embedded, "metadata") {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
}

/// A PersistentVolumeClaim (or a StatefulSet's claim template): a `Filesystem` volume mode
/// and, until a binder binds it, `status.phase: Pending`.
pub(super) fn claim(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = object_entry(root, "spec") {
        fill(spec, &[("volumeMode", json!("Filesystem"))]);
    }
    if let Some(status) = object_entry(root, "status") {
        fill_text(status, &[("phase", "Pending")]);
    }
}

/// The QoS class of a pod spec: `Guaranteed` when every container limits CPU and memory and
/// requests what it limits, `BestEffort` when none requests or limits either, else
/// `Burstable`.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|list| spec[*list].as_array().into_iter().flatten())
        .collect();
    let resources = ["cpu", "memory"];
    let set = |c: &Value, kind: &str, r: &str| {
        c["resources"][kind][r].is_string() || c["resources"][kind][r].is_number()
    };
    let any = containers.iter().any(|c| {
        resources
            .iter()
            .any(|r| set(c, "requests", r) || set(c, "limits", r))
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        resources.iter().all(|r| {
            let limit = &c["resources"]["limits"][*r];
            let request = &c["resources"]["requests"][*r];
            set(c, "limits", r) && (request.is_null() || request == limit)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A pod spec's defaults: restart policy, grace period, DNS policy, scheduler, security
/// context, and per container the termination message and pull policy (`Always` for an
/// untagged or `latest` image) and each port's protocol.
pub(super) fn pod_spec(spec: &mut Map<String, Value>) {
    fill_text(
        spec,
        &[
            ("restartPolicy", "Always"),
            ("dnsPolicy", "ClusterFirst"),
            ("schedulerName", "default-scheduler"),
        ],
    );
    fill(
        spec,
        &[
            ("terminationGracePeriodSeconds", json!(30)),
            ("securityContext", json!({})),
        ],
    );
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let image = text(container, "image");
            let last = image.rsplit('/').next().unwrap_or_default();
            let tag = last.split_once(':').map(|(_, tag)| tag);
            let pull = if image.contains('@') || tag.is_some_and(|t| t != "latest") {
                "IfNotPresent"
            } else {
                "Always"
            };
            fill_text(
                container,
                &[
                    ("terminationMessagePath", "/dev/termination-log"),
                    ("terminationMessagePolicy", "File"),
                    ("imagePullPolicy", pull),
                ],
            );
            fill(container, &[("resources", json!({}))]);
            if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
                for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                    fill_text(port, &[("protocol", "TCP")]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::apply;
    use crate::registry::Registry;
    use serde_json::{Value, json};

    #[test]
    fn a_pod_gets_its_spec_defaults_and_stays_pending_with_its_qos_class() {
        let reg = Registry::builtin();
        let info = reg.get("", "v1", "pods").unwrap();
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        apply(&info, &mut pod);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        let limited = |requests: Value| {
            let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": requests}}]}});
            apply(&info, &mut pod);
            pod["status"]["qosClass"].clone()
        };
        assert_eq!(limited(json!({})), "Guaranteed");
        assert_eq!(limited(json!({"cpu": "500m"})), "Burstable");
    }
}
