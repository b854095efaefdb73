//! kube-apiserver's validation of Jobs and CronJobs: counts, restart policies, the selector
//! a Job is given, schedules and time zones, in its words and order.

use serde_json::{Value, json};

use super::cron;
use super::kinds::go_strings;
use super::unsupported;
use super::workloads::{go_map, matches, pod_spec, selects_template};
use crate::meta::is_dns1123_label;

/// Field errors, `(field, text)`, in kube-apiserver's order.
type Errors = Vec<(String, String)>;

/// The field errors of a Job or CronJob `object` (replacing `old` on an update).
pub fn errors(plural: &str, old: Option<&Value>, object: &Value) -> Errors {
    let mut errors = Vec::new();
    match plural {
        "jobs" => job(object, &mut errors),
        "cronjobs" => cron_job(old, object, &mut errors),
        _ => {}
    }
    errors
}

fn push(errors: &mut Errors, field: impl Into<String>, text: impl Into<String>) {
    errors.push((field.into(), text.into()));
}

fn job(object: &Value, errors: &mut Errors) {
    let spec = &object["spec"];
    if spec["manualSelector"] != true {
        generated_selector(object, errors);
    }
    job_spec(spec, "spec", errors);
    if spec["selector"].is_null() {
        push(errors, "spec.selector", "Required value");
    }
    selects_template(spec, "spec", errors);
    // An indexed Job's last pod is named `<job>-<completions - 1>`.
    if spec["completionMode"] == "Indexed"
        && let Some(completions) = spec["completions"].as_i64().filter(|n| *n > 0)
    {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let last = format!("{name}-{}", completions - 1);
        if !is_dns1123_label(&last) {
            push(
                errors,
                "metadata.name",
                format!(
                    "Invalid value: {name:?}: will not able to create pod with invalid DNS \
                     label: {last}"
                ),
            );
        }
    }
}

/// A Job that did not ask to choose its selector has the one generated for it: its
/// template labelled with its uid and name, its selector the uid alone.
fn generated_selector(object: &Value, errors: &mut Errors) {
    let labels = &object["spec"]["template"]["metadata"]["labels"];
    let selector = &object["spec"]["selector"];
    if labels.is_null() || selector.is_null() {
        return;
    }
    let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    for (key, wanted) in [
        ("controller-uid", uid),
        ("job-name", name),
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
    ] {
        let field = format!("spec.template.metadata.labels[{key}]");
        match labels[key].as_str() {
            None => push(errors, field, format!("Required value: must be '{wanted}'")),
            Some(value) if value != wanted => push(
                errors,
                field,
                format!("Invalid value: {}: must be '{wanted}'", go_map(labels)),
            ),
            Some(_) => {}
        }
    }
    // Whatever else it says, it must select the labels it would have been generated for.
    let expected = json!({"controller-uid": uid, "job-name": name,
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name});
    if !matches(selector, &expected) {
        push(
            errors,
            "spec.selector",
            format!(
                "Invalid value: {}: `selector` not auto-generated",
                go_selector(selector)
            ),
        );
    }
}

/// What a Job and a CronJob's Job template share: counts, completion mode, the pod template,
/// and a restart policy that lets a pod end.
fn job_spec(spec: &Value, here: &str, errors: &mut Errors) {
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ] {
        non_negative(spec, here, field, errors);
    }
    match spec["completionMode"].as_str() {
        None | Some("NonIndexed") => {}
        Some("Indexed") => {
            if spec["completions"].is_null() {
                push(
                    errors,
                    format!("{here}.completions"),
                    "Required value: when completion mode is Indexed",
                );
            }
        }
        Some(_) => push(
            errors,
            format!("{here}.completionMode"),
            unsupported(&spec["completionMode"], &["NonIndexed", "Indexed"]),
        ),
    }
    let pod = &spec["template"]["spec"];
    pod_spec(pod, &format!("{here}.template.spec"), errors);
    let field = format!("{here}.template.spec.restartPolicy");
    match pod["restartPolicy"].as_str() {
        Some("OnFailure" | "Never") => {}
        None | Some("" | "Always") => push(
            errors,
            field,
            "Required value: valid values: \"OnFailure\", \"Never\"",
        ),
        Some(_) => push(
            errors,
            field,
            unsupported(&pod["restartPolicy"], &["OnFailure", "Never"]),
        ),
    }
}

fn non_negative(spec: &Value, here: &str, field: &str, errors: &mut Errors) {
    if let Some(n) = spec[field].as_i64().filter(|n| *n < 0) {
        push(
            errors,
            format!("{here}.{field}"),
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        );
    }
}

fn cron_job(old: Option<&Value>, object: &Value, errors: &mut Errors) {
    let spec = &object["spec"];
    let old_spec = old.map(|old| &old["spec"]);
    match spec["schedule"].as_str().unwrap_or_default() {
        "" => push(errors, "spec.schedule", "Required value"),
        schedule => {
            if let Err(why) = cron::parse(schedule) {
                push(
                    errors,
                    "spec.schedule",
                    format!("Invalid value: {schedule:?}: {why}"),
                );
            }
            // A schedule stored with a zone before the field existed may keep it.
            let grandfathered = old_spec
                .and_then(|old| old["schedule"].as_str())
                .is_some_and(|old| old.contains("TZ"));
            let why = match (grandfathered, spec["timeZone"].is_string()) {
                (true, true) => "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                (false, _) => "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                (true, false) => "",
            };
            if schedule.contains("TZ") && !why.is_empty() {
                push(
                    errors,
                    "spec.schedule",
                    format!("Invalid value: {schedule:?}: {why}"),
                );
            }
        }
    }
    non_negative(spec, "spec", "startingDeadlineSeconds", errors);
    if old_spec.is_none_or(|old| old["timeZone"] != spec["timeZone"]) {
        time_zone(&spec["timeZone"], errors);
    }
    let policies = ["Allow", "Forbid", "Replace"];
    match spec["concurrencyPolicy"].as_str() {
        Some(policy) if policies.contains(&policy) => {}
        None | Some("") => push(errors, "spec.concurrencyPolicy", "Required value"),
        Some(_) => push(
            errors,
            "spec.concurrencyPolicy",
            unsupported(&spec["concurrencyPolicy"], &policies),
        ),
    }
    let job = &spec["jobTemplate"]["spec"];
    job_spec(job, "spec.jobTemplate.spec", errors);
    if !job["selector"].is_null() {
        push(
            errors,
            "spec.jobTemplate.spec.selector",
            format!(
                "Invalid value: {}: `selector` will be auto-generated",
                go_selector(&job["selector"])
            ),
        );
    }
    if job["manualSelector"] == true {
        push(
            errors,
            "spec.jobTemplate.spec.manualSelector",
            "Unsupported value: true: supported values: \"nil\", \"false\"",
        );
    }
    non_negative(spec, "spec", "successfulJobsHistoryLimit", errors);
    non_negative(spec, "spec", "failedJobsHistoryLimit", errors);
    // The controller names each Job `<cronjob>-<11 characters>`, within 63.
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if old.is_none() && name.len() > 52 {
        push(
            errors,
            "metadata.name",
            format!("Invalid value: {name:?}: must be no more than 52 characters"),
        );
    }
}

/// A CronJob's time zone: unset, or a name of the IANA database other than `Local`.
fn time_zone(zone: &Value, errors: &mut Errors) {
    let Some(name) = zone.as_str() else {
        return;
    };
    let invalid = |why: String| {
        (
            "spec.timeZone".to_owned(),
            format!("Invalid value: {name:?}: {why}"),
        )
    };
    if name.is_empty() {
        errors.push(invalid("timeZone must be nil or non-empty string".into()));
        return;
    }
    let well_formed = name.split('/').all(|part| {
        part != "."
            && part != ".."
            && !part.starts_with('-')
            && (1..=14).contains(&part.len())
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
    });
    if !well_formed {
        errors.push(invalid(format!("unknown time zone {name}")));
        return;
    }
    if name.eq_ignore_ascii_case("Local") {
        errors.push(invalid(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                .into(),
        ));
    }
    if let Err(why) = cron::load_location(name) {
        errors.push(invalid(why));
    }
}

/// A label selector as Go's `%#v` prints a `v1.LabelSelector`.
fn go_selector(selector: &Value) -> String {
    let expressions = match selector["matchExpressions"].as_array() {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(list) => {
            let each: Vec<String> = list
                .iter()
                .map(|r| {
                    let values = if r["values"].is_array() {
                        go_strings(&r["values"])
                    } else {
                        "[]string(nil)".to_owned()
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:{values}}}",
                        r["key"].as_str().unwrap_or_default(),
                        r["operator"].as_str().unwrap_or_default()
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", each.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{expressions}}}",
        go_map(&selector["matchLabels"])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cron_job(spec: Value) -> Value {
        let template = json!({"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "x"}]}}}});
        let mut spec = spec;
        if spec.get("jobTemplate").is_none() {
            spec["jobTemplate"] = template;
        }
        json!({"metadata": {"name": "c"}, "spec": spec})
    }

    fn fields(errors: &Errors) -> Vec<&str> {
        errors.iter().map(|(field, _)| field.as_str()).collect()
    }

    #[test]
    fn a_cron_job_is_checked_field_by_field_in_kube_apiservers_order() {
        let ok = cron_job(
            json!({"schedule": "*/5 * * * *", "concurrencyPolicy": "Allow",
            "timeZone": "Etc/UTC"}),
        );
        assert_eq!(errors("cronjobs", None, &ok), []);
        let bad = cron_job(json!({"schedule": "* * *", "concurrencyPolicy": "Often",
            "startingDeadlineSeconds": -1, "successfulJobsHistoryLimit": -1,
            "jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}));
        let found = errors("cronjobs", None, &bad);
        assert_eq!(
            fields(&found),
            [
                "spec.schedule",
                "spec.startingDeadlineSeconds",
                "spec.concurrencyPolicy",
                "spec.jobTemplate.spec.template.spec.restartPolicy",
                "spec.jobTemplate.spec.selector",
                "spec.successfulJobsHistoryLimit",
            ]
        );
        assert_eq!(
            found[0].1,
            "Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]"
        );
        assert_eq!(
            found[4].1,
            "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, \
             MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be \
             auto-generated"
        );
    }

    #[test]
    fn a_cron_jobs_zone_is_a_field_of_its_own_and_its_name_leaves_room_for_a_suffix() {
        let zoned = cron_job(json!({"schedule": "TZ=UTC 0 * * * *", "concurrencyPolicy": "Allow"}));
        assert_eq!(
            errors("cronjobs", None, &zoned),
            [(
                "spec.schedule".to_owned(),
                "Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use \
                 timeZone field instead"
                    .to_owned()
            )]
        );
        // Stored before the field existed, it may stay.
        assert_eq!(errors("cronjobs", Some(&zoned), &zoned), []);
        for (zone, why) in [
            ("", "timeZone must be nil or non-empty string"),
            ("../etc", "unknown time zone ../etc"),
            (
                "Local",
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            ),
        ] {
            let job = cron_job(json!({"schedule": "@daily", "concurrencyPolicy": "Allow",
                "timeZone": zone}));
            let found = errors("cronjobs", None, &job);
            assert_eq!(fields(&found), ["spec.timeZone"], "{zone}");
            assert!(found[0].1.ends_with(why), "{found:?}");
        }
        let mut long = cron_job(json!({"schedule": "@daily", "concurrencyPolicy": "Allow"}));
        long["metadata"]["name"] = json!("n".repeat(53));
        assert_eq!(fields(&errors("cronjobs", None, &long)), ["metadata.name"]);
    }

    #[test]
    fn a_job_keeps_the_selector_generated_for_it_or_chooses_its_own() {
        let job = |spec: Value| json!({"metadata": {"name": "j", "uid": "u1"}, "spec": spec});
        let template = |labels: Value| {
            json!({"metadata": {"labels": labels}, "spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "x"}]}})
        };
        let generated = json!({"controller-uid": "u1", "job-name": "j",
            "batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "j"});
        let ok = job(
            json!({"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
            "template": template(generated.clone())}),
        );
        assert_eq!(errors("jobs", None, &ok), []);
        let mut renamed = generated.clone();
        renamed["job-name"] = json!("other");
        let found = errors(
            "jobs",
            None,
            &job(json!({"selector": {"matchLabels": {"app": "a",
                "batch.kubernetes.io/controller-uid": "u1"}},
                "template": template(renamed)})),
        );
        assert_eq!(
            fields(&found),
            [
                "spec.template.metadata.labels[job-name]",
                "spec.selector",
                "spec.template.metadata.labels"
            ]
        );
        assert_eq!(
            found[0].1,
            "Invalid value: map[string]string{\"batch.kubernetes.io/controller-uid\":\"u1\", \
             \"batch.kubernetes.io/job-name\":\"j\", \"controller-uid\":\"u1\", \
             \"job-name\":\"other\"}: must be 'j'"
        );
        assert_eq!(
            found[1].1,
            "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"a\", \
             \"batch.kubernetes.io/controller-uid\":\"u1\"}, \
             MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` not auto-generated"
        );
        // A selector that selects what it would have been generated for passes, whatever
        // else it says; expressions are printed as Go prints them.
        let narrower = job(json!({"selector": {"matchLabels": {"job-name": "j",
            "batch.kubernetes.io/controller-uid": "u1"}}, "template": template(generated.clone())}));
        assert_eq!(errors("jobs", None, &narrower), []);
        let expressions = job(json!({"selector": {"matchLabels": {"controller-uid": "u1"},
            "matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]},
            "template": template(generated.clone())}));
        let found = errors("jobs", None, &expressions);
        assert_eq!(
            found[0],
            (
                "spec.selector".to_owned(),
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"controller-uid\":\
                 \"u1\"}, MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement\
                 {Key:\"a\", Operator:\"In\", Values:[]string{\"x\"}}}}: `selector` not \
                 auto-generated"
                    .to_owned()
            )
        );
        let manual = errors(
            "jobs",
            None,
            &job(json!({"manualSelector": true, "template": template(json!({"app": "a"}))})),
        );
        assert_eq!(
            fields(&manual),
            ["spec.selector", "spec.template.metadata.labels"]
        );
        let mut always = template(generated.clone());
        always["spec"]["restartPolicy"] = json!("Sometimes");
        let found = errors(
            "jobs",
            None,
            &job(
                json!({"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                "template": always}),
            ),
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[1]
                .1
                .ends_with("supported values: \"OnFailure\", \"Never\"")
        );
    }
}
