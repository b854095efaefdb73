//! Defaults of the workloads that carry a pod template: Deployments, ReplicaSets,
//! StatefulSets, DaemonSets, Jobs and CronJobs.

use serde_json::{Map, Value, json};

use super::{fill, fill_text, object_entry, pods, text};

/// The annotation through which apps/v1 shows a DaemonSet's template generation.
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The `spec` of a workload (created when absent), after giving the workload `status` when
/// it has none: Go's encoding of the zero status its controller has not written yet.
fn spec_of(obj: &mut Value, status: Value) -> Option<&mut Map<String, Value>> {
    let root = obj.as_object_mut()?;
    root.entry("status").or_insert(status);
    object_entry(root, "spec")
}

/// The defaults of the pod template under `spec.template`.
fn pod_template(spec: &mut Map<String, Value>) {
    if let Some(template) = object_entry(spec, "template") {
        pods::template(template);
    }
}

/// Whether `map`'s `field` is unset, as Go reads a pointer: absent or null.
fn unset(map: &Map<String, Value>, field: &str) -> bool {
    map.get(field).is_none_or(Value::is_null)
}

/// A rolling update strategy's parameters: `rollingUpdate` (created when unset) filled.
fn rolling(strategy: &mut Map<String, Value>, defaults: &[(&str, Value)]) {
    if text(strategy, "type") == "RollingUpdate"
        && let Some(rolling) = object_entry(strategy, "rollingUpdate")
    {
        fill(rolling, defaults);
    }
}

/// A Deployment: one replica, a RollingUpdate strategy of 25%/25%, 10 revisions kept, a 600 s
/// progress deadline, and the pod template's defaults.
pub(super) fn deployment(obj: &mut Value) {
    let Some(spec) = spec_of(obj, json!({})) else {
        return;
    };
    fill(
        spec,
        &[
            ("replicas", json!(1)),
            ("revisionHistoryLimit", json!(10)),
            ("progressDeadlineSeconds", json!(600)),
        ],
    );
    if let Some(strategy) = object_entry(spec, "strategy") {
        fill_text(strategy, &[("type", "RollingUpdate")]);
        rolling(
            strategy,
            &[("maxUnavailable", json!("25%")), ("maxSurge", json!("25%"))],
        );
    }
    pod_template(spec);
}

/// A ReplicaSet: one replica and the pod template's defaults.
pub(super) fn replica_set(obj: &mut Value) {
    let Some(spec) = spec_of(obj, json!({"replicas": 0})) else {
        return;
    };
    fill(spec, &[("replicas", json!(1))]);
    pod_template(spec);
}

/// A StatefulSet: one replica, pods managed `OrderedReady`, a RollingUpdate strategy from
/// partition 0 (when no strategy is given), 10 revisions kept, claims retained, and the
/// defaults of the pod template and of each claim template.
pub(super) fn stateful_set(obj: &mut Value) {
    let Some(spec) = spec_of(obj, json!({"replicas": 0, "availableReplicas": 0})) else {
        return;
    };
    fill(
        spec,
        &[("replicas", json!(1)), ("revisionHistoryLimit", json!(10))],
    );
    fill_text(spec, &[("podManagementPolicy", "OrderedReady")]);
    if let Some(strategy) = object_entry(spec, "updateStrategy") {
        // Only a strategy of no type gets a rolling update's parameters made for it.
        if text(strategy, "type").is_empty() {
            strategy.insert("type".into(), json!("RollingUpdate"));
            fill(strategy, &[("rollingUpdate", json!({}))]);
        }
        if text(strategy, "type") == "RollingUpdate"
            && let Some(rolling) = strategy
                .get_mut("rollingUpdate")
                .and_then(Value::as_object_mut)
        {
            fill(rolling, &[("partition", json!(0))]);
        }
    }
    if let Some(retention) = object_entry(spec, "persistentVolumeClaimRetentionPolicy") {
        fill_text(
            retention,
            &[("whenDeleted", "Retain"), ("whenScaled", "Retain")],
        );
    }
    let claims = spec
        .get_mut("volumeClaimTemplates")
        .and_then(Value::as_array_mut);
    for claim in claims.into_iter().flatten() {
        if let Some(fields) = claim.as_object_mut() {
            // apps/v1's conversion writes them whatever the request said.
            fields.insert("apiVersion".into(), json!("v1"));
            fields.insert("kind".into(), json!("PersistentVolumeClaim"));
            pods::zero_creation_time(fields);
        }
        pods::claim(claim);
    }
    pod_template(spec);
}

/// A DaemonSet: a RollingUpdate strategy of one unavailable and no surge (when rolling), 10
/// revisions kept, and the pod template's defaults.
pub(super) fn daemon_set(obj: &mut Value) {
    let status = json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
        "desiredNumberScheduled": 0, "numberReady": 0});
    let Some(spec) = spec_of(obj, status) else {
        return;
    };
    fill(spec, &[("revisionHistoryLimit", json!(10))]);
    if let Some(strategy) = object_entry(spec, "updateStrategy") {
        fill_text(strategy, &[("type", "RollingUpdate")]);
        rolling(
            strategy,
            &[("maxUnavailable", json!(1)), ("maxSurge", json!(0))],
        );
    }
    pod_template(spec);
}

/// A Job: one completion at a time (when neither count is given), 6 retries (unbounded per
/// index when counted per index), non-indexed, not suspended, no manual selector, pods
/// replaced once terminated or failed (failed only, under a pod failure policy whose
/// conditions default to `True`), the template's labels as its own when it has none, and
/// the pod template's defaults.
pub(super) fn job(obj: &mut Value) {
    copy_template_labels(obj);
    let Some(spec) = spec_of(obj, json!({})) else {
        return;
    };
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    let retries = if unset(spec, "backoffLimitPerIndex") {
        6
    } else {
        i32::MAX
    };
    let failure_policy = !unset(spec, "podFailurePolicy");
    let replacement = if failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    fill(
        spec,
        &[
            ("parallelism", json!(1)),
            ("backoffLimit", json!(retries)),
            ("completionMode", json!("NonIndexed")),
            ("suspend", json!(false)),
            ("manualSelector", json!(false)),
            ("podReplacementPolicy", json!(replacement)),
        ],
    );
    if failure_policy {
        let rules = spec
            .get_mut("podFailurePolicy")
            .and_then(|policy| policy.get_mut("rules"))
            .and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten() {
            let conditions = rule
                .get_mut("onPodConditions")
                .and_then(Value::as_array_mut);
            for condition in conditions
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                fill_text(condition, &[("status", "True")]);
            }
        }
    }
    pod_template(spec);
}

/// A Job without labels of its own takes its pod template's, as the defaulting of every
/// read of a Job does.
fn copy_template_labels(obj: &mut Value) {
    let labels = &obj["spec"]["template"]["metadata"]["labels"];
    let own = &obj["metadata"]["labels"];
    if labels.is_object() && own.as_object().is_none_or(Map::is_empty) {
        let labels = labels.clone();
        if let Some(meta) = obj
            .as_object_mut()
            .and_then(|root| object_entry(root, "metadata"))
        {
            meta.insert("labels".into(), labels);
        }
    }
}

/// A CronJob: concurrent runs allowed, not suspended, 3 successful and 1 failed Job kept, and
/// the defaults of its Job template's pod template.
pub(super) fn cron_job(obj: &mut Value) {
    let Some(spec) = spec_of(obj, json!({})) else {
        return;
    };
    fill_text(spec, &[("concurrencyPolicy", "Allow")]);
    fill(
        spec,
        &[
            ("suspend", json!(false)),
            ("successfulJobsHistoryLimit", json!(3)),
            ("failedJobsHistoryLimit", json!(1)),
        ],
    );
    if let Some(job) = object_entry(spec, "jobTemplate") {
        pods::zero_creation_time(job);
        if let Some(job_spec) = object_entry(job, "spec") {
            pod_template(job_spec);
        }
    }
}

/// A new Job's selector, unless it asks to choose its own (`manualSelector`): its pod
/// template is labelled with the Job's name and uid (each under its legacy key too) and the
/// selector selects the uid; labels and selector terms already there are kept (validation
/// refuses what then does not match).
pub(super) fn generate_selector(obj: &mut Value) {
    let name = obj["metadata"]["name"].clone();
    let uid = obj["metadata"]["uid"].clone();
    let Some(spec) = obj
        .as_object_mut()
        .and_then(|root| object_entry(root, "spec"))
    else {
        return;
    };
    if spec.get("manualSelector") == Some(&json!(true)) {
        return;
    }
    let labels = object_entry(spec, "template")
        .and_then(|template| object_entry(template, "metadata"))
        .and_then(|meta| object_entry(meta, "labels"));
    if let Some(labels) = labels {
        // A label set to "" is there: Go looks for the key.
        for (key, value) in [
            ("job-name", &name),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("batch.kubernetes.io/controller-uid", &uid),
        ] {
            labels.entry(key).or_insert_with(|| value.clone());
        }
    }
    let terms =
        object_entry(spec, "selector").and_then(|selector| object_entry(selector, "matchLabels"));
    if let Some(terms) = terms {
        terms
            .entry("batch.kubernetes.io/controller-uid")
            .or_insert(uid);
    }
}

/// The template generation a DaemonSet's annotation says (`None`: absent; an annotation
/// that is not a number was refused when the request was read).
fn template_generation(obj: &Value) -> Option<i64> {
    obj["metadata"]["annotations"][TEMPLATE_GENERATION]
        .as_str()
        .and_then(|g| g.parse().ok())
}

/// Writes `generation` into the DaemonSet's annotation, as apps/v1's conversion does.
fn set_template_generation(obj: &mut Value, generation: i64) {
    let annotations = obj
        .as_object_mut()
        .and_then(|root| object_entry(root, "metadata"))
        .and_then(|meta| object_entry(meta, "annotations"));
    if let Some(annotations) = annotations {
        annotations.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
}

/// A new DaemonSet's template generation: 1, unless the request carries a later one.
pub(super) fn first_template_generation(obj: &mut Value) {
    let generation = template_generation(obj).unwrap_or(0).max(1);
    set_template_generation(obj, generation);
}

/// An updated DaemonSet's template generation: the stored one, plus one when the template
/// changed; what the request says is not heard.
pub(super) fn next_template_generation(old: &Value, new: &mut Value) {
    let changed = old["spec"]["template"] != new["spec"]["template"];
    let generation = template_generation(old).unwrap_or(0) + i64::from(changed);
    set_template_generation(new, generation);
}

#[cfg(test)]
mod tests {
    use super::super::{apply, prepare_create, prepare_update};
    use crate::registry::{Registry, ResourceInfo};
    use serde_json::json;
    use std::sync::Arc;

    fn info(group: &str, plural: &str) -> Arc<ResourceInfo> {
        Registry::builtin()
            .get(group, "v1", plural)
            .unwrap_or_else(|| panic!("{plural} are built in"))
    }

    #[test]
    fn a_new_job_is_given_a_selector_and_shows_its_templates_labels() {
        let jobs = info("batch", "jobs");
        let mut job = json!({"metadata": {"name": "j", "uid": "u1"}, "spec": {"template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}});
        prepare_create(&jobs, &mut job);
        apply(&jobs, &mut job);
        let labels = json!({"app": "a", "job-name": "j", "controller-uid": "u1",
            "batch.kubernetes.io/job-name": "j", "batch.kubernetes.io/controller-uid": "u1"});
        assert_eq!(job["spec"]["template"]["metadata"]["labels"], labels);
        assert_eq!(job["metadata"]["labels"], labels);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
        );
        let spec = &job["spec"];
        assert_eq!(
            (
                &spec["completions"],
                &spec["parallelism"],
                &spec["backoffLimit"]
            ),
            (&json!(1), &json!(1), &json!(6))
        );
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(job["status"], json!({}));

        let mut manual = json!({"metadata": {"name": "m", "uid": "u2", "labels": {"own": "x"}},
            "spec": {"manualSelector": true, "parallelism": 3,
                "template": {"metadata": {"labels": {"app": "a"}}}}});
        prepare_create(&jobs, &mut manual);
        apply(&jobs, &mut manual);
        assert!(manual["spec"].get("selector").is_none());
        assert_eq!(manual["metadata"]["labels"], json!({"own": "x"}));
        assert_eq!(
            manual["spec"]["template"]["metadata"]["labels"],
            json!({"app": "a"})
        );
        assert!(manual["spec"].get("completions").is_none());
    }

    #[test]
    fn null_is_unset_everywhere_and_an_empty_string_only_where_a_plain_string_goes() {
        let mut job = json!({"metadata": {"name": "j", "uid": "u"}, "spec": {
            "completions": null, "backoffLimitPerIndex": null, "completionMode": "",
            "podFailurePolicy": {"rules": [{"onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {"metadata": {"labels": {"job-name": ""}},
                "spec": {"dnsPolicy": "", "restartPolicy": null}}}});
        let jobs = info("batch", "jobs");
        prepare_create(&jobs, &mut job);
        apply(&jobs, &mut job);
        let spec = &job["spec"];
        assert_eq!(spec["completions"], 1);
        assert_eq!(spec["backoffLimit"], 6);
        // A pointer to "" is set: validation refuses it, as kube-apiserver's does.
        assert_eq!(spec["completionMode"], "");
        assert_eq!(spec["manualSelector"], false);
        assert_eq!(spec["podReplacementPolicy"], "Failed");
        assert_eq!(
            spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
        assert_eq!(spec["template"]["metadata"]["labels"]["job-name"], "");
        assert_eq!(spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");

        let mut set = json!({"spec": {"updateStrategy": {"type": "", "rollingUpdate": null}}});
        apply(&info("apps", "statefulsets"), &mut set);
        assert_eq!(
            set["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        let mut deployment = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": ""}}}});
        apply(&info("apps", "deployments"), &mut deployment);
        assert_eq!(
            deployment["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": "", "maxUnavailable": "25%"})
        );
    }

    #[test]
    fn a_daemon_sets_template_generation_counts_changes_of_its_template_only() {
        let daemon_sets = info("apps", "daemonsets");
        let generation = |ds: &serde_json::Value| {
            ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone()
        };
        let mut first = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {}}}});
        prepare_create(&daemon_sets, &mut first);
        apply(&daemon_sets, &mut first);
        assert_eq!(generation(&first), "1");
        let mut later = json!({"metadata": {"name": "d", "annotations": {
            "deprecated.daemonset.template.generation": "007"}}});
        prepare_create(&daemon_sets, &mut later);
        assert_eq!(generation(&later), "7");
        assert_eq!(
            first["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        let mut second = first.clone();
        second["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = json!(5);
        second["metadata"]["annotations"] = json!({});
        apply(&daemon_sets, &mut second);
        prepare_update(&daemon_sets, &first, &mut second);
        assert_eq!(generation(&second), "2");
        let mut third = second.clone();
        third["spec"]["revisionHistoryLimit"] = json!(3);
        third["metadata"]["annotations"] = json!({"deprecated.daemonset.template.generation": "9"});
        prepare_update(&daemon_sets, &second, &mut third);
        assert_eq!(generation(&third), "2");
    }

    #[test]
    fn a_stateful_sets_claim_templates_are_claims_and_a_cron_jobs_template_a_pods() {
        let mut set = json!({"spec": {"updateStrategy": {"type": "OnDelete"},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}]}});
        apply(&info("apps", "statefulsets"), &mut set);
        assert_eq!(set["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        assert_eq!(
            set["spec"]["volumeClaimTemplates"][0],
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "creationTimestamp": null},
                "spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}})
        );
        let mut cron = json!({"spec": {"schedule": "@daily", "concurrencyPolicy": "",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}});
        apply(&info("batch", "cronjobs"), &mut cron);
        assert_eq!(cron["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(
            cron["spec"]["jobTemplate"]["metadata"]["creationTimestamp"],
            json!(null)
        );
        let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert!(
            cron["spec"]["jobTemplate"]["spec"]
                .get("completions")
                .is_none()
        );
    }

    #[test]
    fn a_bare_deployment_gets_the_api_servers_defaults() {
        let info = Registry::builtin()
            .get("apps", "v1", "deployments")
            .unwrap_or_else(|| panic!("deployments are built in"));
        let mut deployment = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "registry:5000/tools:1.2"},
        ]}}}});
        apply(&info, &mut deployment);
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(spec["revisionHistoryLimit"], 10);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "IfNotPresent");
        let mut recreate = json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}});
        apply(&info, &mut recreate);
        assert_eq!(recreate["spec"]["replicas"], 0);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
    }
}
