//! End to end: the seed documents' Calico federation scenario. A token Secret in cluster-1
//! (federationid=cluster-a) becomes a generated ConfigMap in the management cluster
//! (configMapGenerator), which a ClusterProfile's templateResourceRefs hand, with the
//! cluster's address ConfigMap, to the template of a kubeconfig Secret deployed in cluster-2
//! (federationid=cluster-b). The kubeconfig is checked by parsing it with kubectl.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use sveltos_events_e2e as common;

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::{apply_example, eventually, items, kubectl, profiles_of, start};
use serde_json::Value;

const TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.sandbox-federation-token";

/// The kubeconfig Secret in cluster-2, decoded and read back by `kubectl config view`.
fn deployed_kubeconfig(dir: &Path) -> Option<Value> {
    let secret = items(dir, "cluster-2", &["get", "secrets", "-n", "calico-system"])
        .into_iter()
        .find(|s| s["metadata"]["name"] == "remote-cluster-secret-name")?;
    assert_eq!(
        STANDARD
            .decode(secret["data"]["datastoreType"].as_str().unwrap())
            .unwrap(),
        b"kubernetes"
    );
    let text = STANDARD
        .decode(secret["data"]["kubeconfig"].as_str().unwrap())
        .unwrap();
    let file = dir.join("federation.kubeconfig");
    std::fs::write(&file, text).unwrap();
    let out = std::process::Command::new("kubectl")
        .args(["config", "view", "--raw", "-o", "json", "--kubeconfig"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the deployed kubeconfig does not parse: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn token_of(config: &Value) -> &str {
    config["users"][0]["user"]["token"].as_str().unwrap()
}

#[test]
fn a_token_in_one_cluster_becomes_a_kubeconfig_secret_in_another() {
    let sandbox = start(2);
    let dir = sandbox.dir.clone();
    apply_example(&dir, "mgmt", "kubeconfig-secret", "");
    apply_example(
        &dir,
        "cluster-1",
        "kubeconfig-secret",
        "managed/token-secret.yaml",
    );

    let config = eventually("the kubeconfig Secret in cluster-2", || {
        deployed_kubeconfig(&dir)
    });
    assert_eq!(token_of(&config), TOKEN);
    let cluster = &config["clusters"][0]["cluster"];
    assert_eq!(cluster["server"], "https://cluster-1.example.com:6443");
    assert!(
        cluster["certificate-authority-data"]
            .as_str()
            .unwrap()
            .starts_with("LS0t")
    );
    assert_eq!(
        config["current-context"],
        "tigera-federation-remote-cluster-ctx"
    );
    // The EventReport carries the Secret without its data (nor kubectl's last-applied copy of
    // it); the data sits in the report's companion Secret.
    let report = items(&dir, "mgmt", &["get", "eventreports", "-n", "default"])
        .pop()
        .expect("the EventReport");
    let collected = STANDARD
        .decode(report["spec"]["resources"].as_str().unwrap())
        .unwrap();
    let collected = String::from_utf8(collected).unwrap();
    assert!(collected.contains("tigera-federation-remote-cluster"));
    for secret in [TOKEN.to_owned(), STANDARD.encode(TOKEN)] {
        assert!(!collected.contains(&secret), "{collected}");
        assert!(!report.to_string().contains(&secret));
    }
    let companion = format!(
        "{}--secret-data",
        report["metadata"]["name"].as_str().unwrap()
    );
    assert!(
        items(&dir, "mgmt", &["get", "secrets", "-n", "default"])
            .iter()
            .any(|s| s["metadata"]["name"] == companion.as_str())
    );
    // The generator's output, in the management cluster only.
    let generated = items(&dir, "mgmt", &["get", "configmaps", "-n", "projectsveltos"])
        .into_iter()
        .find(|c| c["metadata"]["name"] == "cluster-1-token")
        .expect("the generated token ConfigMap");
    assert_eq!(generated["data"]["token"], TOKEN);
    // The source cluster gets nothing.
    assert!(
        !items(&dir, "cluster-1", &["get", "namespaces"])
            .iter()
            .any(|n| n["metadata"]["name"] == "calico-system")
    );

    // The token rotates: the kubeconfig in cluster-2 follows.
    kubectl(
        &dir,
        "cluster-1",
        &[
            "patch",
            "secret",
            "tigera-federation-remote-cluster",
            "-n",
            "kube-system",
            "--type=merge",
            "-p",
            r#"{"stringData":{"token":"rotated-token"}}"#,
        ],
    );
    eventually("the rotated token in cluster-2", || {
        deployed_kubeconfig(&dir)
            .filter(|c| token_of(c) == "rotated-token")
            .map(|_| ())
    });

    // The token Secret goes: so do the generated ConfigMap, the profile and the kubeconfig.
    kubectl(
        &dir,
        "cluster-1",
        &[
            "delete",
            "secret",
            "tigera-federation-remote-cluster",
            "-n",
            "kube-system",
        ],
    );
    eventually("everything the token caused removed", || {
        let secrets = items(
            &dir,
            "cluster-2",
            &["get", "secrets", "-n", "calico-system"],
        );
        let generated = items(&dir, "mgmt", &["get", "configmaps", "-n", "projectsveltos"]);
        let profiles = profiles_of(&dir, "tigera-federation-service-cluster-a");
        let companion_left = items(&dir, "mgmt", &["get", "secrets", "-n", "default"])
            .iter()
            .any(|s| s["metadata"]["name"] == companion.as_str());
        (secrets.is_empty()
            && profiles.is_empty()
            && !companion_left
            && !generated
                .iter()
                .any(|c| c["metadata"]["name"] == "cluster-1-token"))
        .then_some(())
    });
}
