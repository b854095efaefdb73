//! kube-apiserver's validation of Pods and of the workloads that carry a pod template
//! (Deployments, ReplicaSets, StatefulSets, DaemonSets): containers named, unique and with an
//! image; a selector that is there and matches the template's labels. Every error is told,
//! in kube-apiserver's order and words.

use serde_json::Value;

use super::unsupported;
use crate::selector::LabelSelector;

/// The field errors of `object` of resource `group/plural`: `(field, text)` in order.
pub fn errors(group: &str, plural: &str, object: &Value) -> Vec<(String, String)> {
    let spec = &object["spec"];
    let mut errors = Vec::new();
    match (group, plural) {
        ("", "pods") => pod_spec(spec, "spec", &mut errors),
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            selector(spec, &mut errors);
            let pod = &spec["template"]["spec"];
            pod_spec(pod, "spec.template.spec", &mut errors);
            // Their pods are restarted, whatever happens.
            if pod["restartPolicy"] != "Always" && !pod["restartPolicy"].is_null() {
                errors.push((
                    "spec.template.spec.restartPolicy".into(),
                    unsupported(&pod["restartPolicy"], &["Always"]),
                ));
            }
        }
        _ => {}
    }
    errors
}

/// A workload's selector is required and must select its template's labels.
fn selector(spec: &Value, errors: &mut Vec<(String, String)>) {
    if spec["selector"].is_null() {
        errors.push(("spec.selector".into(), "Required value".into()));
    }
    selects_template(spec, "spec", errors);
}

/// The error of a selector that does not select the template's labels (no selector selects
/// nothing, as Go's `labels.Nothing()`).
pub(super) fn selects_template(spec: &Value, here: &str, errors: &mut Vec<(String, String)>) {
    let selector = &spec["selector"];
    let labels = &spec["template"]["metadata"]["labels"];
    if selector.is_null() || !matches(selector, labels) {
        errors.push((
            format!("{here}.template.metadata.labels"),
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_map(labels)
            ),
        ));
    }
}

/// Whether a `LabelSelector` (matchLabels and matchExpressions) selects `labels` (one with
/// an unknown operator selects nothing).
pub(super) fn matches(selector: &Value, labels: &Value) -> bool {
    let object = serde_json::json!({"metadata": {"labels": labels}});
    LabelSelector::from_object(selector).is_some_and(|selector| selector.matches(&object))
}

/// A map of labels as Go's `%#v` prints a `map[string]string`.
pub(super) fn go_map(labels: &Value) -> String {
    let Some(map) = labels.as_object() else {
        return "map[string]string(nil)".to_owned();
    };
    let mut pairs: Vec<(&String, &str)> = map
        .iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    let each: Vec<String> = pairs.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    format!("map[string]string{{{}}}", each.join(", "))
}

/// A pod spec's containers (at least one, each named once and with an image), its restart
/// policy and its DNS policy.
pub(super) fn pod_spec(spec: &Value, path: &str, errors: &mut Vec<(String, String)>) {
    containers(spec, path, errors);
    let restart = ["Always", "OnFailure", "Never"];
    if let Some(policy) = spec["restartPolicy"].as_str()
        && !restart.contains(&policy)
    {
        errors.push((
            format!("{path}.restartPolicy"),
            unsupported(&spec["restartPolicy"], &restart),
        ));
    }
    let dns = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
    if let Some(policy) = spec["dnsPolicy"].as_str()
        && !dns.contains(&policy)
    {
        errors.push((
            format!("{path}.dnsPolicy"),
            unsupported(&spec["dnsPolicy"], &dns),
        ));
    }
}

fn containers(spec: &Value, path: &str, errors: &mut Vec<(String, String)>) {
    let containers = spec["containers"].as_array().map_or(&[][..], Vec::as_slice);
    if containers.is_empty() {
        errors.push((format!("{path}.containers"), "Required value".into()));
        return;
    }
    let mut names = std::collections::HashSet::new();
    for (i, container) in containers.iter().enumerate() {
        let at = format!("{path}.containers[{i}]");
        let name = container["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            errors.push((format!("{at}.name"), "Required value".into()));
        }
        if !names.insert(name) {
            errors.push((format!("{at}.name"), format!("Duplicate value: {name:?}")));
        }
        if container["image"].as_str().is_none_or(str::is_empty) {
            errors.push((format!("{at}.image"), "Required value".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(selector: Value, labels: Value) -> Value {
        json!({"spec": {"selector": selector, "template": {"metadata": {"labels": labels},
               "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    }

    #[test]
    fn a_selector_must_be_there_and_select_the_template() {
        let ok = deployment(
            json!({"matchLabels": {"app": "a"}}),
            json!({"app": "a", "t": "w"}),
        );
        assert!(errors("apps", "deployments", &ok).is_empty());
        let off = deployment(json!({"matchLabels": {"app": "a"}}), json!({"app": "b"}));
        assert_eq!(
            errors("apps", "deployments", &off),
            [(
                "spec.template.metadata.labels".to_owned(),
                "Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match \
                 template `labels`"
                    .to_owned()
            )]
        );
        let none = deployment(Value::Null, json!({"app": "a"}));
        let fields: Vec<String> = errors("apps", "deployments", &none)
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(fields, ["spec.selector", "spec.template.metadata.labels"]);
        let expressions = json!({"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["a", "b"]},
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
            {"key": "zone", "operator": "DoesNotExist"},
            {"key": "app", "operator": "Exists"}]});
        assert!(
            errors(
                "apps",
                "statefulsets",
                &deployment(expressions.clone(), json!({"app": "b"}))
            )
            .is_empty()
        );
        assert_eq!(
            errors(
                "apps",
                "daemonsets",
                &deployment(expressions, json!({"app": "b", "tier": "db"}))
            )
            .len(),
            1
        );
    }

    #[test]
    fn containers_are_required_named_once_and_given_an_image() {
        let pod = |containers: Value| json!({"spec": {"containers": containers}});
        assert_eq!(
            errors("", "pods", &json!({"spec": {}})),
            [("spec.containers".to_owned(), "Required value".to_owned())]
        );
        assert_eq!(
            errors("", "pods", &pod(json!([{}]))),
            [
                (
                    "spec.containers[0].name".to_owned(),
                    "Required value".to_owned()
                ),
                (
                    "spec.containers[0].image".to_owned(),
                    "Required value".to_owned()
                )
            ]
        );
        assert_eq!(
            errors(
                "",
                "pods",
                &pod(json!([{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]))
            ),
            [(
                "spec.containers[1].name".to_owned(),
                "Duplicate value: \"c\"".to_owned()
            )]
        );
    }
}
