//! The real kubectl (on PATH) against the sandbox: the research note's section 3.1 commands.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::Path;
use sveltos_events_sandbox::{Sandbox, SandboxOptions};

async fn kubectl(dir: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new("kubectl");
    cmd.args(args)
        .env("KUBECONFIG", dir.join("mgmt.kubeconfig"))
        .env("HOME", dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .await
        .unwrap();
    drop(input);
    let out = child.wait_with_output().await.unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A sandbox of the management cluster alone, its kubeconfig in a fresh temporary `name` dir.
async fn start(name: &str) -> (std::path::PathBuf, Sandbox) {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sb = Sandbox::start(SandboxOptions {
        dir: Some(dir.clone()),
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    (dir, sb)
}

/// One kubectl call: its arguments, standard input, whether it succeeds, what it prints.
type Step<'a> = (Vec<&'a str>, Option<&'a str>, bool, &'a str);

/// Runs kubectl calls in order, each expected to succeed or fail and to print its text.
async fn run_steps(dir: &Path, steps: Vec<Step<'_>>) {
    for (args, stdin, ok, want) in steps {
        let (success, out) = kubectl(dir, &args, stdin).await;
        assert_eq!(success, ok, "kubectl {args:?}: {out}");
        assert!(
            out.contains(want),
            "kubectl {args:?}: wanted {want:?} in {out}"
        );
    }
}

const DEPLOY_V1: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers: [{name: c1, image: 'nginx:1'}, {name: c2, image: busybox}]\n";
const DEPLOY_V2: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers: [{name: c1, image: 'nginx:2'}]\n";
const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1, labels: {app: demo, team: a}}\ndata: {a: '1'}\n";
const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  type: NodePort\n  selector: {app: web}\n  ports: [{port: 80}]\n";
const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n    additionalPrinterColumns:\n    - {name: Size, type: integer, jsonPath: .spec.size}\n    - {name: Colour, type: string, jsonPath: .spec.colour}\n";
const WIDGET: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: big}\nspec: {size: 42, colour: teal}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_commands_work() {
    let (dir, sb) = start("sbx-kubectl").await;
    let cm9 = CM.replace("c1", "c9");
    let steps: Vec<Step> = vec![
        (vec!["version"], None, true, "Server Version: v1.32"),
        (vec!["get", "ns"], None, true, "kube-system"),
        // Server-side printing (Table): the columns kubectl shows come from the server.
        (vec!["get", "ns", "default"], None, true, "Active"),
        (
            vec!["create", "-f", "-"],
            Some(SVC),
            true,
            "service/web created",
        ),
        (vec!["get", "svc", "web"], None, true, "10.96.0."),
        (vec!["get", "svc", "web"], None, true, "80:30000/TCP"),
        (
            vec![
                "patch",
                "svc",
                "web",
                "--type=merge",
                "-p",
                r#"{"spec":{"clusterIP":"10.96.5.5"}}"#,
            ],
            None,
            false,
            r#"The Service "web" is invalid: spec.clusterIPs[0]: Invalid value"#,
        ),
        (vec!["apply", "-f", "-"], Some(WIDGET_CRD), true, "created"),
        (
            vec!["apply", "-f", "-"],
            Some(WIDGET),
            true,
            "widget.example.com/big created",
        ),
        (vec!["get", "widgets"], None, true, "COLOUR"),
        (vec!["get", "widgets"], None, true, "teal"),
        (vec!["explain", "widgets"], None, true, "example.com"),
        (vec!["cluster-info"], None, true, "is running at"),
        (
            vec!["create", "-f", "-"],
            Some(CM),
            true,
            "configmap/c1 created",
        ),
        (
            vec!["get", "cm", "-l", "app in (demo),team!=b"],
            None,
            true,
            "c1",
        ),
        (
            vec!["get", "cm", "c1", "-o", "jsonpath={.data.a}"],
            None,
            true,
            "1",
        ),
        (vec!["get", "cm", "-A"], None, true, "default"),
        (
            vec!["apply", "-f", "-"],
            Some(DEPLOY_V1),
            true,
            "deployment.apps/d created",
        ),
        (
            vec!["apply", "-f", "-"],
            Some(DEPLOY_V2),
            true,
            "deployment.apps/d configured",
        ),
        (
            vec![
                "get",
                "deploy",
                "d",
                "-o",
                "jsonpath={.spec.template.spec.containers[*].name}",
            ],
            None,
            true,
            "c1",
        ),
        (
            vec!["scale", "deploy", "d", "--replicas=3"],
            None,
            true,
            "scaled",
        ),
        (
            vec!["get", "deploy", "d", "-o", "jsonpath={.spec.replicas}"],
            None,
            true,
            "3",
        ),
        (
            vec!["set", "image", "deploy/d", "c1=nginx:3"],
            None,
            true,
            "image updated",
        ),
        (vec!["label", "cm", "c1", "x=y"], None, true, "labeled"),
        (vec!["annotate", "cm", "c1", "n=m"], None, true, "annotated"),
        (
            vec![
                "patch",
                "cm",
                "c1",
                "--type=merge",
                "-p",
                "{\"data\":{\"b\":\"2\"}}",
            ],
            None,
            true,
            "patched",
        ),
        (
            vec![
                "patch",
                "cm",
                "c1",
                "--type=json",
                "-p",
                "[{\"op\":\"add\",\"path\":\"/data/c\",\"value\":\"3\"}]",
            ],
            None,
            true,
            "patched",
        ),
        (
            vec![
                "patch",
                "cm",
                "c1",
                "--type=strategic",
                "-p",
                "{\"data\":{\"d\":\"4\"}}",
            ],
            None,
            true,
            "patched",
        ),
        (
            vec!["apply", "--server-side", "-f", "-"],
            Some(CM),
            true,
            "serverside-applied",
        ),
        (vec!["diff", "-f", "-"], Some(CM), true, ""),
        (
            vec!["create", "--dry-run=server", "-f", "-"],
            Some(&cm9),
            true,
            "created (server dry run)",
        ),
        (vec!["get", "cm", "c9"], None, false, "NotFound"),
        (vec!["api-resources"], None, true, "deployments"),
        (vec!["get", "--raw", "/readyz"], None, true, "ok"),
        (vec!["auth", "can-i", "get", "pods"], None, true, "yes"),
        (vec!["delete", "cm", "c1"], None, true, "deleted"),
        (
            vec!["wait", "--for=delete", "cm/c1", "--timeout=5s"],
            None,
            true,
            "",
        ),
        // These send protobuf bodies.
        (
            vec!["create", "namespace", "foo"],
            None,
            true,
            "namespace/foo created",
        ),
        (
            vec!["get", "ns", "foo", "-o", "jsonpath={.status.phase}"],
            None,
            true,
            "Active",
        ),
        (
            vec![
                "create",
                "configmap",
                "lit",
                "-n",
                "foo",
                "--from-literal=a=1",
                "--from-literal=b=two",
            ],
            None,
            true,
            "configmap/lit created",
        ),
        (
            vec!["get", "cm", "lit", "-n", "foo", "-o", "jsonpath={.data.b}"],
            None,
            true,
            "two",
        ),
        (
            vec![
                "create",
                "secret",
                "generic",
                "pw",
                "-n",
                "foo",
                "--from-literal=password=s3cret",
            ],
            None,
            true,
            "secret/pw created",
        ),
        (
            vec![
                "get",
                "secret",
                "pw",
                "-n",
                "foo",
                "-o",
                "jsonpath={.data.password}",
            ],
            None,
            true,
            "czNjcmV0",
        ),
        (
            vec!["create", "serviceaccount", "robot", "-n", "foo"],
            None,
            true,
            "serviceaccount/robot created",
        ),
        (
            vec![
                "create",
                "deployment",
                "web",
                "-n",
                "foo",
                "--image=nginx:1.27",
                "--replicas=2",
                "--port=8080",
            ],
            None,
            true,
            "deployment.apps/web created",
        ),
        (
            vec![
                "get",
                "deploy",
                "web",
                "-n",
                "foo",
                "-o",
                "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort} {.spec.selector.matchLabels.app}",
            ],
            None,
            true,
            "2 nginx:1.27 8080 web",
        ),
        (
            vec![
                "rollout",
                "status",
                "deploy/web",
                "-n",
                "foo",
                "--timeout=10s",
            ],
            None,
            true,
            "successfully rolled out",
        ),
        (
            vec!["rollout", "restart", "deploy/web", "-n", "foo"],
            None,
            true,
            "deployment.apps/web restarted",
        ),
        (
            vec!["describe", "deploy", "web", "-n", "foo"],
            None,
            true,
            "RollingUpdate",
        ),
        (
            vec!["get", "all", "-n", "foo"],
            None,
            true,
            "deployment.apps/web",
        ),
        (
            vec!["run", "p", "--image=nginx", "-n", "foo"],
            None,
            true,
            "pod/p created",
        ),
        (
            vec!["create", "job", "once", "-n", "foo", "--image=busybox"],
            None,
            false,
            "kubectl create -f",
        ),
    ];
    run_steps(&dir, steps).await;
    sb.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Deployment's web container, as a user's file has it.
const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: 'nginx:1', ports: [{containerPort: 80}]}]\n";
/// The same Deployment as a mesh injector applies it: only its sidecar.
const SIDECAR: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: sidecar, image: busybox}]\n";

/// The mesh's configuration once it no longer injects anything.
const MESH_GONE: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n";

/// Server-side apply merges lists by key as kube-apiserver does: `kubectl create` then
/// `kubectl apply --server-side` of the same file succeeds (the creator and the applier share
/// the container's fields), a second manager's container is added beside the first, a change
/// of the first's image by that manager conflicts on that field alone, and a manager that
/// stops applying its container removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_merges_lists_by_key() {
    let (dir, sb) = start("sbx-kubectl-ssa").await;
    let names = [
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[*].name}",
    ];
    let mesh = ["apply", "--server-side", "--field-manager=mesh", "-f", "-"];
    let second = [
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[1].name}",
    ];
    let bumped = SIDECAR.replace("sidecar, image: busybox", "web, image: 'nginx:2'");
    let steps: Vec<Step> = vec![
        (vec!["create", "-f", "-"], Some(WEB), true, "created"),
        (
            vec!["apply", "--server-side", "-f", "-"],
            Some(WEB),
            true,
            "serverside-applied",
        ),
        (mesh.to_vec(), Some(SIDECAR), true, "serverside-applied"),
        (names.to_vec(), None, true, "web sidecar"),
        (
            mesh.to_vec(),
            Some(&bumped),
            false,
            ".spec.template.spec.containers[name=\"web\"].image",
        ),
        // The mesh stops applying its container: it goes, the web container stays.
        (mesh.to_vec(), Some(MESH_GONE), true, "serverside-applied"),
        (names.to_vec(), None, true, "web"),
        (second.to_vec(), None, false, "out of bounds"),
    ];
    run_steps(&dir, steps).await;
    sb.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Deployment with a misspelt field (`replica`) and a misspelt container field.
const DEPLOY_TYPO: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: typo}\nspec:\n  replica: 2\n  selector: {matchLabels: {app: t}}\n  template:\n    metadata: {labels: {app: t}}\n    spec:\n      containers: [{name: c, image: nginx, imagePullPolice: Always}]\n";

/// A misspelt field is refused by `kubectl apply` (which asks for `fieldValidation=Strict`),
/// told as a warning with `--validate=warn` and dropped silently with `--validate=false`, as a
/// 1.32 kube-apiserver does; either way it is not stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_is_told_of_unknown_fields_as_it_asks() {
    let (dir, sb) = start("sbx-kubectl-fields").await;
    let strict = "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding \
                  error: unknown field \"spec.replica\", unknown field \
                  \"spec.template.spec.containers[0].imagePullPolice\"";
    let stored = ["get", "deploy", "typo", "-o", "jsonpath={.spec}"];
    let steps: Vec<Step> = vec![
        (vec!["apply", "-f", "-"], Some(DEPLOY_TYPO), false, strict),
        (
            vec!["apply", "--validate=warn", "-f", "-"],
            Some(DEPLOY_TYPO),
            true,
            "Warning: unknown field \"spec.replica\"",
        ),
        (stored.to_vec(), None, true, "\"replicas\":1"),
        (vec!["delete", "deploy", "typo"], None, true, "deleted"),
        (
            vec!["apply", "--validate=false", "-f", "-"],
            Some(DEPLOY_TYPO),
            true,
            "created",
        ),
    ];
    run_steps(&dir, steps).await;
    let (_, quiet) = kubectl(
        &dir,
        &["apply", "--validate=false", "-f", "-"],
        Some(DEPLOY_TYPO),
    )
    .await;
    assert!(!quiet.contains("Warning"), "{quiet}");
    let (_, spec) = kubectl(&dir, &stored, None).await;
    assert!(
        !spec.contains("replica\"") && !spec.contains("imagePullPolice"),
        "{spec}"
    );
    sb.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CRD whose schema names `spec.size` alone.
const SIZED_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sizeds.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: sizeds, singular: sized, kind: Sized}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"#;

/// A custom resource with a misspelt field.
const SIZED_TYPO: &str = "apiVersion: example.com/v1\nkind: Sized\nmetadata:\n  name: typo\nspec:\n  size: 1\n  sise: 2\n";

/// The same for custom resources: what their schema prunes is refused, told or dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_is_told_of_a_custom_resources_unknown_fields() {
    let (dir, sb) = start("sbx-kubectl-cr-fields").await;
    let (_, created) = kubectl(&dir, &["apply", "-f", "-"], Some(SIZED_CRD)).await;
    assert!(created.contains("created"), "{created}");
    let mut served = false;
    for _ in 0..100 {
        let (ok, _) = kubectl(&dir, &["get", "sizeds"], None).await;
        if ok {
            served = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(served, "the CRD was never served");
    let steps: Vec<Step> = vec![
        (
            vec!["apply", "-f", "-"],
            Some(SIZED_TYPO),
            false,
            "Sized in version \"v1\" cannot be handled as a Sized: strict decoding error: \
             unknown field \"spec.sise\"",
        ),
        (
            vec!["apply", "--validate=warn", "-f", "-"],
            Some(SIZED_TYPO),
            true,
            "Warning: unknown field \"spec.sise\"",
        ),
        (
            vec!["get", "sized", "typo", "-o", "jsonpath={.spec}"],
            None,
            true,
            "{\"size\":1}",
        ),
    ];
    run_steps(&dir, steps).await;
    sb.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Admission policies, flow control and storage capacity, as a 1.32 server serves them.
const POLICY_KINDS: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: demo}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: demo}
spec: {policyName: demo, validationActions: [Deny]}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: demo}
spec: {type: Limited, limited: {nominalConcurrencyShares: 5}}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: demo}
storageClassName: standard
"#;

/// A FlowSchema with a misspelt field.
const FLOWSCHEMA_TYPO: &str = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\n\
    metadata: {name: demo}\nspec: {priorityLevelConfiguration: {name: demo}, colour: red}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_finds_the_policy_flow_control_and_capacity_kinds() {
    let (dir, sb) = start("sbx-kubectl-policy-kinds").await;
    let steps: Vec<Step> = vec![
        (
            vec!["api-resources", "-o", "name"],
            None,
            true,
            "validatingadmissionpolicybindings.admissionregistration.k8s.io",
        ),
        (
            vec!["apply", "-f", "-"],
            Some(POLICY_KINDS),
            true,
            "csistoragecapacity.storage.k8s.io/demo created",
        ),
        (
            vec![
                "get",
                "validatingadmissionpolicy",
                "demo",
                "-o",
                "jsonpath={.metadata.generation}",
            ],
            None,
            true,
            "1",
        ),
        (
            vec!["apply", "-f", "-"],
            Some(FLOWSCHEMA_TYPO),
            false,
            "strict decoding error: unknown field \"spec.colour\"",
        ),
    ];
    run_steps(&dir, steps).await;
    sb.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A ConfigMap the limited account may not create.
const CONFIGMAP_DENIED: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: denied\ndata:\n  a: b\n";
/// The one ConfigMap the limited account may create.
const CONFIGMAP_ALLOWED: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: allowed\ndata:\n  a: b\n";

/// Authentication and RBAC as kubectl users meet them: a ServiceAccount token from
/// `kubectl create token`, `auth can-i` (allowed, denied, impersonated, `--list`), a Forbidden
/// answer in kube-apiserver's words, a refused bogus token, escalation prevention, and
/// server-side apply authorized as a create when it creates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_meets_rbac() {
    let (dir, sb) = start("sbx-kubectl-rbac").await;
    let setup: [&[&str]; 9] = [
        &["create", "ns", "team"],
        &["create", "sa", "limited", "-n", "team"],
        // Server-side apply may patch any ConfigMap but create only the one named `allowed`.
        &[
            "create",
            "role",
            "cm-patcher",
            "--verb=patch",
            "--resource=configmaps",
            "-n",
            "team",
        ],
        &[
            "create",
            "role",
            "cm-creator",
            "--verb=create",
            "--resource=configmaps",
            "--resource-name=allowed",
            "-n",
            "team",
        ],
        &[
            "create",
            "rolebinding",
            "cm-patch",
            "--role=cm-patcher",
            "--serviceaccount=team:limited",
            "-n",
            "team",
        ],
        &[
            "create",
            "rolebinding",
            "cm-create",
            "--role=cm-creator",
            "--serviceaccount=team:limited",
            "-n",
            "team",
        ],
        &[
            "create",
            "role",
            "pod-reader",
            "--verb=get,list",
            "--resource=pods",
            "-n",
            "team",
        ],
        &[
            "create",
            "role",
            "role-writer",
            "--verb=create",
            "--resource=roles.rbac.authorization.k8s.io",
            "-n",
            "team",
        ],
        &[
            "create",
            "rolebinding",
            "read",
            "--role=pod-reader",
            "--serviceaccount=team:limited",
            "-n",
            "team",
        ],
    ];
    for args in setup {
        let (ok, out) = kubectl(&dir, args, None).await;
        assert!(ok, "kubectl {args:?}: {out}");
    }
    let (ok, out) = kubectl(
        &dir,
        &[
            "create",
            "rolebinding",
            "write",
            "--role=role-writer",
            "--serviceaccount=team:limited",
            "-n",
            "team",
        ],
        None,
    )
    .await;
    assert!(ok, "{out}");
    let (ok, token) = kubectl(&dir, &["create", "token", "limited", "-n", "team"], None).await;
    assert!(ok, "create token: {token}");
    let token = format!("--token={}", token.trim());
    let sa = "--as=system:serviceaccount:team:limited";
    let steps: Vec<(Vec<&str>, bool, &str)> = vec![
        (
            vec!["auth", "can-i", "list", "pods", "-n", "team", sa],
            true,
            "yes",
        ),
        (
            vec!["auth", "can-i", "delete", "pods", "-n", "team", sa],
            false,
            "no",
        ),
        (
            vec!["auth", "can-i", "list", "pods", "-n", "default", sa],
            false,
            "no",
        ),
        (
            vec!["auth", "can-i", "list", "pods", "-n", "team", &token],
            true,
            "yes",
        ),
        (
            vec!["auth", "can-i", "--list", "-n", "team", sa],
            true,
            "[get list]",
        ),
        (
            vec!["get", "pods", "-n", "team", &token],
            true,
            "No resources found",
        ),
        (
            vec!["get", "secrets", "-n", "team", &token],
            false,
            "Error from server (Forbidden): secrets is forbidden: User \"system:serviceaccount:team:limited\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\"",
        ),
        (
            vec!["get", "pods", "-n", "team", "--token=not-a-token"],
            false,
            "Unauthorized",
        ),
        (
            vec![
                "create",
                "role",
                "grab",
                "--verb=get",
                "--resource=secrets",
                "-n",
                "team",
                &token,
            ],
            false,
            "is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}",
        ),
        (
            vec![
                "create",
                "role",
                "copy",
                "--verb=get",
                "--resource=pods",
                "-n",
                "team",
                &token,
            ],
            true,
            "role.rbac.authorization.k8s.io/copy created",
        ),
        (
            vec!["get", "pods", "-n", "team", "--as=someone"],
            false,
            "pods is forbidden: User \"someone\" cannot list resource \"pods\"",
        ),
        (
            vec![
                "get",
                "pods",
                "-n",
                "team",
                "--as=someone",
                "--as-group=system:masters",
            ],
            true,
            "No resources found",
        ),
        (
            vec!["get", "pods", "-n", "team", "--as=someone", &token],
            false,
            "users \"someone\" is forbidden: User \"system:serviceaccount:team:limited\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
        ),
    ];
    let mut steps: Vec<_> = steps
        .into_iter()
        .map(|(args, ok, want)| (args, None, ok, want))
        .collect();
    // An apply that creates is also a create, of that name (resourceNames apply to it); a
    // POST create carries no name, so a grant limited by name never allows it.
    let apply = ["apply", "--server-side", "-f", "-", "-n", "team", &token];
    steps.extend([
        (
            apply.to_vec(),
            Some(CONFIGMAP_DENIED),
            false,
            "configmaps \"denied\" is forbidden",
        ),
        (
            apply.to_vec(),
            Some(CONFIGMAP_ALLOWED),
            true,
            "configmap/allowed serverside-applied",
        ),
        (
            vec!["create", "configmap", "allowed", "-n", "team", &token],
            None,
            false,
            "configmaps is forbidden: User \"system:serviceaccount:team:limited\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"team\"",
        ),
    ]);
    run_steps(&dir, steps).await;
    // `auth can-i --list`: one row per rule, the resource first and its verbs last.
    let (ok, listed) = kubectl(&dir, &["auth", "can-i", "--list", "-n", "team", sa], None).await;
    assert!(ok, "{listed}");
    let rows = |resource: &str| -> Vec<Vec<&str>> {
        listed
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(resource))
            .map(|l| l.split_whitespace().collect())
            .collect()
    };
    assert_eq!(
        rows("pods"),
        [["pods", "[]", "[]", "[get", "list]"]],
        "{listed}"
    );
    let mut configmaps = rows("configmaps");
    configmaps.sort();
    assert_eq!(
        configmaps,
        [
            ["configmaps", "[]", "[]", "[patch]"],
            ["configmaps", "[]", "[allowed]", "[create]"]
        ],
        "{listed}"
    );
    assert!(rows("secrets").is_empty(), "{listed}");
    sb.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
