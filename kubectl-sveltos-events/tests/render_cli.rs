//! `render` offline, as a user meets it: the example renders without a cluster; bad input is
//! one sentence and exit 2; a trigger that cannot produce for the cluster says why, exit 1.
#![allow(clippy::unwrap_used)] // test code

use std::path::{Path, PathBuf};
use std::process::Command;

fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/network-policy")
        .join(path)
}

/// Exit code, stdout and stderr of `render ARGS`.
fn render(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-sveltos_events"))
        .arg("render")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_renders_its_profile_and_instantiated_policy_offline() {
    let folder = example("");
    let folder = folder.to_str().unwrap();
    let (code, out, err) = render(&["-f", folder, "--cluster-labels", "env=fv"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kind: ClusterProfile"), "{out}");
    assert!(out.contains("name: front-my-service"), "{out}");
    assert!(
        out.contains("eventtrigger.lib.projectsveltos.io/clustername: cluster"),
        "{out}"
    );
    // Without the label the trigger wants, no cluster is a source: said, exit 1.
    let (code, out, err) = render(&["-f", folder]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("no cluster in the files matches its sourceClusterSelector"),
        "{err}"
    );
}

#[test]
fn a_missing_event_source_is_named() {
    let trigger = example("eventtrigger.yaml");
    let template = example("configmap.yaml");
    let (code, _, err) = render(&[
        "-f",
        trigger.to_str().unwrap(),
        "-f",
        template.to_str().unwrap(),
        "--cluster-labels",
        "env=fv",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("EventSource sveltos-service is not in the files"),
        "{err}"
    );
}

#[test]
fn bad_input_is_one_sentence_and_exit_2() {
    let source = example("eventsource.yaml");
    let source = source.to_str().unwrap();
    let trigger = example("eventtrigger.yaml");
    let trigger = trigger.to_str().unwrap();
    for (args, said) in [
        (vec!["-f", source], "no EventTrigger or EventBasedAddOn"),
        (
            vec!["-f", "/no/such/file.yaml"],
            "cannot read /no/such/file.yaml",
        ),
        (
            vec!["-f", trigger, "--cluster-labels", "env"],
            "\"env\" is not key=value",
        ),
        (
            vec!["-f", trigger, "--cluster", "nameonly"],
            "namespace/name",
        ),
    ] {
        let (code, out, err) = render(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.starts_with("error: ") && err.contains(said),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_template_written_without_a_namespace_is_in_default_and_a_folder_named_twice_counts_once() {
    let dir = std::env::temp_dir().join(format!("render-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for file in [
        "eventsource.yaml",
        "eventtrigger.yaml",
        "managed/service.yaml",
    ] {
        let text = std::fs::read_to_string(example(file)).unwrap();
        std::fs::write(dir.join(file.replace('/', "-")), text).unwrap();
    }
    // As written for `kubectl apply -n default`: no namespace in the template.
    let template = std::fs::read_to_string(example("configmap.yaml")).unwrap();
    let template = template.replace("  namespace: default\n", "");
    assert!(!template.contains("namespace: default"), "{template}");
    std::fs::write(dir.join("configmap.yaml"), template).unwrap();
    let folder = dir.to_str().unwrap();
    let trigger = dir.join("eventtrigger.yaml");
    let (code, out, err) = render(&[
        "-f",
        folder,
        "-f",
        trigger.to_str().unwrap(),
        "--cluster-labels",
        "env=fv",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("kind: ClusterProfile").count(), 1, "{out}");
    assert!(out.contains("name: front-my-service"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two SveltosClusters, as `kubectl get sveltosclusters -o yaml` would give them (no status:
/// render counts every cluster as ready).
fn clusters(dir: &Path) -> PathBuf {
    let file = dir.join("clusters.yaml");
    std::fs::write(
        &file,
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {name: cluster-1, namespace: default, labels: {federationid: cluster-a, env: fv}}\n\
         spec: {}\n---\n\
         apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {name: cluster-2, namespace: default, labels: {federationid: cluster-b, env: production}}\n\
         spec: {}\n",
    )
    .unwrap();
    file
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("render-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn examples(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(path)
        .display()
        .to_string()
}

#[test]
fn addons_are_rendered_for_the_destination_with_template_resources_from_files_and_generators() {
    let dir = scratch("addons");
    let clusters = clusters(&dir);
    let (code, out, err) = render(&[
        "-f",
        &examples("kubeconfig-secret"),
        "-f",
        clusters.to_str().unwrap(),
        "--cluster",
        "default/cluster-1",
        "--addons",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    let items = list["items"].as_array().unwrap();
    let secret = items
        .iter()
        .find(|o| o["metadata"]["name"] == "remote-cluster-secret-name")
        .unwrap_or_else(|| panic!("no kubeconfig Secret rendered: {out}"));
    // The deployer's metadata, for cluster-2 (federationid=cluster-b), not the source.
    let annotations = &secret["metadata"]["annotations"];
    let summary = annotations["projectsveltos.io/clustersummary"]
        .as_str()
        .unwrap();
    assert!(summary.ends_with("-sveltos-cluster-2"), "{summary}");
    assert_eq!(
        annotations["projectsveltos.io/reference-name"],
        "calico-remote-cluster-config"
    );
    assert!(annotations["projectsveltos.io/hash"].is_string());
    // The kubeconfig holds the token of the generated ConfigMap (from the Secret's
    // stringData, stored as data) and the address of the ConfigMap in the files.
    let kubeconfig = secret["data"]["kubeconfig"].as_str().unwrap();
    use base64::Engine;
    let kubeconfig = base64::engine::general_purpose::STANDARD
        .decode(kubeconfig)
        .unwrap();
    let kubeconfig = String::from_utf8(kubeconfig).unwrap();
    assert!(
        kubeconfig.contains("token: eyJhbGciOiJSUzI1NiJ9.sandbox-federation-token"),
        "{kubeconfig}"
    );
    assert!(
        kubeconfig.contains("server: https://cluster-1.example.com:6443"),
        "{kubeconfig}"
    );

    // In YAML, each add-on says where it goes.
    let (code, out, err) = render(&[
        "-f",
        &examples("kubeconfig-secret"),
        "-f",
        clusters.to_str().unwrap(),
        "--cluster",
        "default/cluster-1",
        "--addons",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("---\n# cluster default/cluster-2: from ClusterProfile sveltos-"),
        "{out}"
    );

    // Without the cluster's own ConfigMap, the template resource is missing: named, exit 1.
    let trigger = examples("kubeconfig-secret/eventtrigger.yaml");
    let mut args = vec!["-f".to_owned(), trigger];
    for file in [
        "eventsource.yaml",
        "remote-cluster-config.yaml",
        "token-template.yaml",
        "managed",
    ] {
        args.extend([
            "-f".to_owned(),
            examples(&format!("kubeconfig-secret/{file}")),
        ]);
    }
    args.extend(
        [
            "-f",
            clusters.to_str().unwrap(),
            "--cluster",
            "default/cluster-1",
            "--addons",
        ]
        .map(str::to_owned),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = render(&args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "cluster default/cluster-2: templateResourceRef ConfigData: ConfigMap cluster-1 does not exist in the files"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_cluster_set_selects_the_source_and_the_destination() {
    let dir = scratch("set");
    let clusters = clusters(&dir);
    let files = |source: &str| {
        let mut args: Vec<String> = Vec::new();
        for file in [
            "cluster-set",
            "network-policy/eventsource.yaml",
            "network-policy/configmap.yaml",
            "network-policy/managed",
        ] {
            args.extend(["-f".to_owned(), examples(file)]);
        }
        args.extend(
            [
                "-f",
                clusters.to_str().unwrap(),
                "--cluster",
                source,
                "--addons",
            ]
            .map(str::to_owned),
        );
        render(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // The set (maxReplicas 1) selects the first of its pool: cluster-1 is watched and gets
    // the policy.
    let (code, out, err) = files("default/cluster-1");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("# cluster default/cluster-1: from ClusterProfile"),
        "{out}"
    );
    assert!(out.contains("kind: NetworkPolicy"), "{out}");
    // cluster-2 is in the pool but not selected: its resources are no event.
    let (code, out, err) = files("default/cluster-2");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(
            "EventTrigger failover-network-policy: it watches default/cluster-1, not the source cluster default/cluster-2"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_repeated_key_is_read_as_kubectl_reads_it_and_said() {
    let dir = scratch("repeated");
    let trigger = std::fs::read_to_string(example("eventtrigger.yaml")).unwrap();
    // The trigger says oneForEvent twice: false, then true (the value kubectl keeps).
    let twice = trigger.replace(
        "  oneForEvent: true",
        "  oneForEvent: false\n  oneForEvent: true",
    );
    assert_ne!(twice, trigger);
    let file = dir.join("trigger.yaml");
    std::fs::write(&file, twice).unwrap();
    let (code, out, err) = render(&[
        "-f",
        file.to_str().unwrap(),
        "-f",
        example("eventsource.yaml").to_str().unwrap(),
        "-f",
        example("configmap.yaml").to_str().unwrap(),
        "-f",
        example("managed").to_str().unwrap(),
        "--cluster-labels",
        "env=fv",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("trigger.yaml: line ")
            && err.contains(
                "key \"oneForEvent\" appears twice in one mapping; the last value is used"
            ),
        "{err}"
    );
    // oneForEvent true: the profile names the resource.
    assert!(
        out.contains("eventtrigger.lib.projectsveltos.io/resourcename: my-service"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
