//! The rendered manifests: complete, labelled, bound, hardened, and following the flags.

use super::*;
use std::collections::BTreeSet;

fn render_default() -> Vec<Value> {
    render(&Values::defaults("1.2.3")).unwrap()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

fn key(o: &Value) -> (String, String, String) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        s(&o["kind"]),
        s(&o["metadata"]["namespace"]),
        s(&o["metadata"]["name"]),
    )
}

#[test]
fn every_object_is_whole_labelled_and_unique() {
    let objects = render_default();
    let mut seen = BTreeSet::new();
    for o in &objects {
        assert!(o["apiVersion"].is_string() && o["kind"].is_string(), "{o}");
        assert!(o["metadata"]["name"].is_string(), "{o}");
        assert_eq!(o["metadata"]["labels"][PART_OF.0], PART_OF.1, "{o}");
        assert_eq!(o["metadata"]["labels"][MANAGED_BY.0], MANAGED_BY.1, "{o}");
        assert!(seen.insert(key(o)), "duplicate {:?}", key(o));
    }
    let crds = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .count();
    assert_eq!(crds, api::crd::all().unwrap().len());
    // CRDs first: the rest may be custom resources one day, and must find their kinds.
    let first_other = objects
        .iter()
        .position(|o| o["kind"] != "CustomResourceDefinition")
        .unwrap();
    assert_eq!(first_other, crds);
}

#[test]
fn every_role_is_bound_and_every_binding_names_a_rendered_role_and_account() {
    let objects = render_default();
    for binding in objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
    {
        let role = &binding["roleRef"];
        let target = find(
            &objects,
            role["kind"].as_str().unwrap(),
            role["name"].as_str().unwrap(),
        )
        .unwrap_or_else(|| panic!("{binding} names a missing role"));
        if binding["kind"] == "RoleBinding" {
            assert_eq!(
                target["metadata"]["namespace"],
                binding["metadata"]["namespace"]
            );
        }
        for subject in binding["subjects"].as_array().unwrap() {
            let account = find(
                &objects,
                "ServiceAccount",
                subject["name"].as_str().unwrap(),
            )
            .unwrap_or_else(|| panic!("{binding} names a missing account"));
            assert_eq!(account["metadata"]["namespace"], subject["namespace"]);
        }
    }
    for role in objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRole" || o["kind"] == "Role")
    {
        let bound = objects.iter().any(|b| {
            b["roleRef"]["name"] == role["metadata"]["name"] && b["roleRef"]["kind"] == role["kind"]
        });
        assert!(
            bound,
            "{} {} is never bound",
            role["kind"], role["metadata"]["name"]
        );
    }
}

#[test]
fn deployments_run_hardened_with_probes_and_the_flags() {
    let mut values = Values::defaults("1.2.3");
    values.shard_key = "eu".into();
    values.replicas = 2;
    values.image = "registry.example/se:dev".into();
    let objects = render(&values).unwrap();
    for name in [MANAGER, AGENT] {
        let deployment = find(&objects, "Deployment", name).unwrap();
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], name);
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        let container = &pod["containers"][0];
        assert_eq!(container["image"], "registry.example/se:dev");
        assert_eq!(container["command"][0], format!("/{name}"));
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(
            container["securityContext"]["allowPrivilegeEscalation"],
            false
        );
        assert_eq!(
            container["securityContext"]["capabilities"]["drop"][0],
            "ALL"
        );
        assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(
            deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
            deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]
        );
    }
    // Every port names its protocol: server-side apply before 1.26 refuses one without it.
    let service = find(&objects, "Service", MANAGER).unwrap();
    for port in service["spec"]["ports"].as_array().unwrap() {
        assert_eq!(port["protocol"], "TCP", "{port}");
    }
    for name in [MANAGER, AGENT] {
        let deployment = find(&objects, "Deployment", name).unwrap();
        let ports = &deployment["spec"]["template"]["spec"]["containers"][0]["ports"];
        for port in ports.as_array().unwrap() {
            assert_eq!(port["protocol"], "TCP", "{port}");
        }
    }
    let manager = find(&objects, "Deployment", MANAGER).unwrap();
    assert_eq!(manager["spec"]["replicas"], 2);
    let args = &manager["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array().unwrap().contains(&json!("--shard-key=eu")),
        "{args}"
    );
    let agent = find(&objects, "Deployment", AGENT).unwrap();
    assert_eq!(agent["spec"]["replicas"], 1);
    assert_eq!(agent["spec"]["strategy"]["type"], "Recreate");
    // The shard's own Lease is the one the manager may update.
    let role = objects
        .iter()
        .find(|o| o["kind"] == "Role" && o["metadata"]["name"] == MANAGER)
        .unwrap();
    assert_eq!(
        role["rules"][0]["resourceNames"][0],
        "sveltos-events-manager-eu"
    );
}

#[test]
fn no_deployer_drops_its_rights_and_tells_the_manager() {
    let mut values = Values::defaults("1.2.3");
    values.deployer = false;
    let objects = render(&values).unwrap();
    assert!(find(&objects, "ClusterRole", "sveltos-events-deployer").is_none());
    assert!(find(&objects, "ClusterRoleBinding", "sveltos-events-deployer").is_none());
    let manager = find(&objects, "Deployment", MANAGER).unwrap();
    let args = &manager["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(args.as_array().unwrap().contains(&json!("--no-deployer")));
    assert!(find(&render_default(), "ClusterRole", "sveltos-events-deployer").is_some());
}

#[test]
fn another_namespace_moves_the_controllers_and_the_webhook_service_reference() {
    let mut values = Values::defaults("1.2.3");
    values.namespace = "platform".into();
    let objects = render(&values).unwrap();
    assert!(find(&objects, "Namespace", "platform").is_some());
    // Sveltos' namespace still holds generated objects.
    assert!(find(&objects, "Namespace", "projectsveltos").is_some());
    let service = find(&objects, "Service", MANAGER).unwrap();
    assert_eq!(service["metadata"]["namespace"], "platform");
    let converted: Vec<&Value> = objects
        .iter()
        .filter(|o| o["spec"]["conversion"]["strategy"] == "Webhook")
        .collect();
    assert!(!converted.is_empty());
    for crd in converted {
        let svc = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
        assert_eq!(svc["namespace"], "platform");
        assert_eq!(svc["name"], MANAGER);
    }
    // The manager may read both namespaces it checks at start-up.
    let role = find(&objects, "ClusterRole", MANAGER).unwrap();
    let namespaces = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resources"][0] == "namespaces")
        .unwrap();
    assert_eq!(
        namespaces["resourceNames"],
        json!(["platform", "projectsveltos"])
    );
    let default_role = find(&render_default(), "ClusterRole", MANAGER)
        .unwrap()
        .clone();
    assert!(
        default_role
            .to_string()
            .contains(r#""resourceNames":["projectsveltos"]"#)
    );
    // Only one namespace object when they coincide.
    let namespaces = render_default()
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .count();
    assert_eq!(namespaces, 1);
}

#[test]
fn values_cannot_change_the_structure() {
    let mut values = Values::defaults("1.2.3");
    values.image = "x\n  hostNetwork: true\n\"".into();
    let objects = render(&values).unwrap();
    let manager = find(&objects, "Deployment", MANAGER).unwrap();
    assert_eq!(
        manager["spec"]["template"]["spec"]["containers"][0]["image"],
        values.image
    );
    assert!(manager["spec"]["template"]["spec"]["hostNetwork"].is_null());
}

#[test]
fn the_export_is_yaml_that_reads_back_to_the_same_objects() {
    let objects = render_default();
    let text = to_yaml(&objects).unwrap();
    let back = api::load::documents(&text).unwrap();
    assert_eq!(back, objects);
}

#[test]
fn the_spoke_agent_is_labelled_bound_hardened_and_named_after_its_cluster() {
    let objects = render_spoke("registry.example/se:v1.2.3", "1.2.3", "edge-1").unwrap();
    for o in &objects {
        assert_eq!(o["metadata"]["labels"][PART_OF.0], PART_OF.1, "{o}");
    }
    let deployment = find(&objects, "Deployment", AGENT).unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], AGENT);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert!(args.contains(&json!("--mode=spoke")), "{args:?}");
    assert!(args.contains(&json!("--cluster-name=edge-1")), "{args:?}");
    assert_eq!(pod["containers"][0]["image"], "registry.example/se:v1.2.3");
    assert!(find(&objects, "ServiceAccount", AGENT).is_some());
    let binding = find(&objects, "ClusterRoleBinding", "sveltos-events-spoke-agent").unwrap();
    assert_eq!(binding["subjects"][0]["name"], AGENT);
    // The spoke agent reads but never writes outside its namespace.
    let role = find(&objects, "ClusterRole", "sveltos-events-spoke-agent").unwrap();
    for rule in role["rules"].as_array().unwrap() {
        for verb in rule["verbs"].as_array().unwrap() {
            assert!(
                ["get", "list", "watch"].contains(&verb.as_str().unwrap()),
                "{rule}"
            );
        }
    }
}

#[test]
fn the_agent_deployment_records_the_agent_mode() {
    let mut values = Values::defaults("1.2.3");
    let mode = |objects: &[Value]| {
        let annotations = &find(objects, "Deployment", AGENT).unwrap()["metadata"]["annotations"];
        annotations[api::labels::AGENT_MODE_ANNOTATION].clone()
    };
    assert_eq!(mode(&render(&values).unwrap()), "hub");
    values.agent_mode = AgentMode::Spoke;
    assert_eq!(mode(&render(&values).unwrap()), "spoke");
}
