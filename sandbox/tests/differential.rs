//! Differential fidelity: the requests of `tests/differential/scenarios.py`, whose answers a
//! real kube-apiserver gave (`tests/differential/golden/`, recorded by `record.py` against
//! ../shared/tools/kube-oracle), are replayed against the sandbox and the answers compared
//! after volatile fields are normalised. Every remaining difference must be one of the
//! explained ones listed in `EXPLAINED` (and in the crate's README).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test set-up

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::http::{Method, Request};
use http_body_util::BodyExt;
use regex::Regex;
use serde_json::{Map, Value, json};
use sveltos_events_sandbox::auth::ADMIN_TOKEN;
use sveltos_events_sandbox::{Sandbox, SandboxOptions};

/// The User-Agent both recordings use (managedFields name the manager after it).
const USER_AGENT: &str = "differential/1.0";

/// Differences that are understood: (scenario regex, difference regex, why). Each is listed,
/// with the same words, under "Known differences" in the crate's README.
const EXPLAINED: &[(&str, &str, &str)] = &[
    (
        "^(netpol|ingress)-",
        r#"^/(details/group: kube-apiserver "extensions", sandbox "networking.k8s.io"|message: kube-apiserver "(NetworkPolicy|Ingress)\.extensions )"#,
        "1.20 names NetworkPolicies and Ingresses `Kind.extensions` in its 422s whatever group \
         was written to; later servers name the group written to, as the sandbox does",
    ),
    (
        "^job-",
        r"^(/metadata/generation: extra|/spec/(completionMode|suspend|manualSelector|podReplacementPolicy): extra|/(metadata|spec/template/metadata)/labels/batch\.kubernetes\.io/(job-name|controller-uid): extra|/spec/selector/matchLabels/(batch\.kubernetes\.io/)?controller-uid: )",
        "Jobs get the generation, the completion mode, suspend, manual selector and pod \
         replacement defaults and the `batch.kubernetes.io/job-name` and `/controller-uid` \
         labels of later servers, their selector selecting `batch.kubernetes.io/controller-uid` \
         (1.20: `controller-uid`)",
    ),
    (
        "^job-(foreign-selector|selector-expressions)$",
        r"^(/details/causes/\d+)?/message: ",
        "the refusals of a selector that was not generated print the template's labels and \
         the selector, which hold the `batch.kubernetes.io/` labels of later servers (their \
         fields and reasons are compared; their words are held by the validation's unit tests)",
    ),
    (
        "^(statefulset|daemonset)-",
        r"^/(spec/persistentVolumeClaimRetentionPolicy|status/availableReplicas|spec/updateStrategy/rollingUpdate/maxSurge): extra",
        "StatefulSets get the claim retention policy and `status.availableReplicas`, and \
         rolling DaemonSets `maxSurge: 0`, as later servers give them",
    ),
    (
        ".*",
        "/managedFields",
        "managedFields: entries record leaf fields and list items only (no `.` for maps a \
         write created; built-in lists outside the merged table are atomic), defaulted and \
         allocated fields are owned by the writer, and entries carry `subresource` as from 1.22",
    ),
    (
        ".*",
        r"^/items/\d+/(apiVersion|kind): extra",
        "list items carry apiVersion and kind",
    ),
    (
        ".*",
        r"^(/items/\d+)?/spec/(ipFamilies|ipFamilyPolicy|internalTrafficPolicy): extra",
        "Services get the dual-stack and traffic-policy defaults of 1.22+",
    ),
    (
        ".*",
        "kubernetes.io/metadata.name",
        "namespaces carry the kubernetes.io/metadata.name label of 1.21+",
    ),
    (
        "^(svc-update.*|svc-delete-precondition-rv|svc-smp-retain-keys)$",
        "",
        "an update that omits spec.clusterIP keeps the allocated one, as 1.23+ do; 1.20 \
         refuses it (and later steps of the scenario differ accordingly)",
    ),
    (
        "^svc-(dry-run-)?delete$",
        "",
        "DELETE of a Service answers the deleted Service, as 1.23+ do (and clients of 1.32 \
         expect); 1.20 answers a Status",
    ),
    (
        "^svc-dry-run-create$",
        "^/spec/clusterIPs?:",
        "a dry-run Service create shows the cluster IP it would get, as 1.23+ do",
    ),
    (
        "^gadget-invalid-several(-nested)?$",
        "^/message:",
        "several schema errors of a custom resource are listed in the object's order; 1.20 lists \
         them in Go's map order, which varies (their causes are compared as a set)",
    ),
    (
        "^gadget-invalid-several-nested$",
        r"^/details/causes/\d+/(field|message):",
        "an array item's schema error names the item (`spec.parts[0].name`), as later servers \
         do; 1.20 names the array (`spec.parts.name`)",
    ),
    (
        "^rv-(not-older-than|unset-match|zero-limit)$",
        r"^/items/\d+/metadata/name:",
        "a list kube-apiserver serves from its watch cache comes in the cache's hash order; the \
         sandbox answers every list in key order, as storage does",
    ),
    (
        "^(err-bad-json|err-kind-mismatch|err-widget-no-kind|sel-invalid|cm-value-not-a-string|svc-wrong-type)$",
        "^/message:",
        "decoder and parser messages are not Go's",
    ),
    (
        "^(cm|widget)-merge-bad-json$",
        "",
        "a merge patch that is not JSON is 400 BadRequest; 1.20 answers 500 \"Invalid JSON Patch\"",
    ),
    (
        "^err-unknown-(group|version)$",
        "",
        "an unknown group or version is a Status 404; 1.20 serves Go's plain-text 404",
    ),
    (
        "^(cm|widget)-finalizer-no-new$",
        "^/details/causes",
        "the new-finalizer refusal lists its cause once; 1.20 lists it twice",
    ),
    (
        "^authn-account-recreated$",
        "^/secrets: missing",
        "ServiceAccounts get no legacy token Secret of their own, as from 1.24; 1.20's \
         controller makes one and lists it in `secrets`",
    ),
    (
        "^ns-delete-terminating$",
        "^/metadata/deletion(Timestamp|GracePeriodSeconds)",
        "the namespace controller deletes a terminating namespace's content at once",
    ),
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential/golden")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One answer: status and JSON body (a watch: the array of its events).
struct Answer {
    status: u16,
    body: Value,
}

/// Who sends a step: the admin, another bearer token, or nobody; and extra headers.
#[derive(Default)]
struct Credentials {
    /// The bearer token (`None`: the admin's; `Some("")`: none).
    token: Option<String>,
    headers: Vec<(String, String)>,
}

async fn send(client: &kube::Client, step: &Value, path: &str, body: Option<String>) -> Answer {
    send_as(client, step, path, body, &Credentials::default()).await
}

async fn send_as(
    client: &kube::Client,
    step: &Value,
    path: &str,
    body: Option<String>,
    who: &Credentials,
) -> Answer {
    let method = Method::from_bytes(step["method"].as_str().unwrap().as_bytes()).unwrap();
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("User-Agent", USER_AGENT)
        .header(
            "Accept",
            step["accept"].as_str().unwrap_or("application/json"),
        );
    let token = who.token.as_deref().unwrap_or(ADMIN_TOKEN);
    if !token.is_empty() {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    for (key, value) in &who.headers {
        request = request.header(key.as_str(), value.as_str());
    }
    if body.is_some() {
        request = request.header(
            "Content-Type",
            step["contentType"].as_str().unwrap_or("application/json"),
        );
    }
    let request = request
        .body(kube::client::Body::from(
            body.unwrap_or_default().into_bytes(),
        ))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let body = if step["watch"].as_bool() == Some(true) {
        Value::Array(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.to_owned())))
                .collect(),
        )
    } else if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text.into_owned()))
    };
    Answer { status, body }
}

/// The token an answer carries: a TokenRequest's, or a token Secret's (decoded).
fn token_of(answer: &Value) -> String {
    use base64::Engine;
    if let Some(token) = answer["status"]["token"].as_str() {
        return token.to_owned();
    }
    let data = answer["data"]["token"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// Replaces `$NS` and `{{rv|uid|continue|token:N}}` with values of earlier answers.
fn substitute(text: &str, answers: &[Value], namespace: &str) -> String {
    let text = text.replace("$NS", namespace);
    let placeholder = Regex::new(r"\{\{(rv|uid|continue|token):(\d+)\}\}").unwrap();
    placeholder
        .replace_all(&text, |c: &regex::Captures| {
            let index: usize = c[2].parse().unwrap();
            if &c[1] == "token" {
                return token_of(&answers[index]);
            }
            let field = match &c[1] {
                "rv" => "resourceVersion",
                "uid" => "uid",
                _ => "continue",
            };
            let value = answers[index]["metadata"][field]
                .as_str()
                .unwrap_or_default();
            url_encode(value)
        })
        .into_owned()
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every resourceVersion an answer carries (to mask them where messages quote them).
fn versions(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if key == "resourceVersion"
                    && let Some(rv) = item.as_str()
                {
                    out.insert(rv.to_owned());
                }
                versions(item, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| versions(i, out)),
        _ => {}
    }
}

/// Volatile fields replaced by placeholders: uids, resourceVersions, timestamps, continue
/// tokens, generated name suffixes, allocated cluster IPs; uuids, the scenario's
/// resourceVersions and the server's current one inside messages.
fn normalize(value: &Value, rvs: &BTreeSet<String>) -> Value {
    let uuid = Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let current = Regex::new(r"current: \d+").unwrap();
    fn walk(value: &Value, rvs: &BTreeSet<String>, (uuid, current): (&Regex, &Regex)) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, item) in map {
                    let replaced = match key.as_str() {
                        "uid"
                        | "resourceVersion"
                        | "creationTimestamp"
                        | "deletionTimestamp"
                        | "time"
                        | "clusterIP"
                        | "token"
                        | "expirationTimestamp"
                        | "ca.crt"
                            if item.is_string() =>
                        {
                            Value::String(format!("<{key}>"))
                        }
                        "continue" if item.as_str().is_some_and(|s| !s.is_empty()) => {
                            Value::String("<continue>".into())
                        }
                        "clusterIPs" => json!(["<clusterIP>"]),
                        // The rule resolver visits bindings in its cache's order; a custom
                        // resource's schema errors come in Go's map order.
                        "resourceRules" | "nonResourceRules" | "causes" if item.is_array() => {
                            let mut rules: Vec<Value> = item
                                .as_array()
                                .into_iter()
                                .flatten()
                                .map(|r| walk(r, rvs, (uuid, current)))
                                .collect();
                            rules.sort_by_key(canonical);
                            Value::Array(rules)
                        }
                        _ => walk(item, rvs, (uuid, current)),
                    };
                    out.insert(key.clone(), replaced);
                }
                if let Some(prefix) = map.get("generateName").and_then(Value::as_str)
                    && out.contains_key("name")
                {
                    out.insert("name".into(), Value::String(format!("{prefix}<random>")));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| walk(i, rvs, (uuid, current)))
                    .collect(),
            ),
            Value::String(text) => {
                let mut text = uuid.replace_all(text, "<uid>").into_owned();
                text = current.replace_all(&text, "current: <rv>").into_owned();
                for rv in rvs.iter().rev() {
                    text = text.replace(rv.as_str(), "<rv>");
                }
                Value::String(text)
            }
            other => other.clone(),
        }
    }
    walk(value, rvs, (&uuid, &current))
}

/// A value's JSON with object keys sorted, to order values whatever their key order.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: std::collections::BTreeMap<&String, String> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            let fields: Vec<String> = sorted.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// Paths (JSON-pointer-like) where two normalised values differ.
fn differences(expected: &Value, actual: &Value, at: &str, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let here = format!("{at}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => differences(x, y, &here, out),
                    (Some(x), None) => out.push(format!("{here}: missing (kube-apiserver: {x})")),
                    (None, Some(y)) => out.push(format!("{here}: extra {y}")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(x, y, &format!("{at}/{i}"), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{at}: kube-apiserver {a}, sandbox {b}")),
    }
}

async fn run_setup(client: &kube::Client) {
    let setup = read(&golden_dir().join("setup.json"));
    for step in setup["setup"].as_array().unwrap() {
        let body = serde_json::to_string(&step["body"]).unwrap();
        let answer = send(client, step, step["path"].as_str().unwrap(), Some(body)).await;
        assert_eq!(answer.status, 201, "setup: {}", answer.body);
    }
    for step in setup["wait"].as_array().unwrap() {
        let path = step["path"].as_str().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while send(client, step, path, None).await.status != 200 {
            assert!(Instant::now() < deadline, "setup never answered {path}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Whether difference `text` of scenario `name` is one of the explained ones.
fn explained(name: &str, text: &str) -> bool {
    EXPLAINED.iter().any(|(scenario, difference, _)| {
        Regex::new(scenario).unwrap().is_match(name)
            && Regex::new(difference).unwrap().is_match(text)
    })
}

/// Runs one recorded scenario; returns its unexplained differences.
async fn replay(client: &kube::Client, family: &str, scenario: &Value) -> Vec<String> {
    let name = scenario["name"].as_str().unwrap();
    let namespace = format!("d-{name}");
    let create = json!({"method": "POST"});
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    send(client, &create, "/api/v1/namespaces", Some(ns.to_string())).await;
    let mut answers: Vec<Value> = Vec::new();
    let mut found = Vec::new();
    // Every resourceVersion each side has shown so far, masked where messages quote them.
    let (mut theirs, mut ours) = (BTreeSet::new(), BTreeSet::new());
    for (index, step) in scenario["steps"].as_array().unwrap().iter().enumerate() {
        let path = substitute(step["path"].as_str().unwrap(), &answers, &namespace);
        let body = match &step["body"] {
            Value::Null => None,
            Value::String(text) => Some(substitute(text, &answers, &namespace)),
            other => Some(substitute(&other.to_string(), &answers, &namespace)),
        };
        let until = step["until"].as_u64();
        let until_path = step["untilPath"].as_str();
        let who = Credentials {
            token: step["as"]
                .as_str()
                .map(|t| substitute(t, &answers, &namespace)),
            headers: step["headers"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let v = substitute(v.as_str().unwrap_or_default(), &answers, &namespace);
                    (k.clone(), v)
                })
                .collect(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let answer = loop {
            let answer = send_as(client, step, &path, body.clone(), &who).await;
            let done = until.is_none_or(|u| u == u64::from(answer.status))
                && until_path.is_none_or(|p| answer.body.pointer(p).is_some());
            if done || Instant::now() > deadline {
                break answer;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        if let Some(seconds) = step["sleep"].as_f64() {
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        }
        let recorded = &step["response"];
        let mut step_differences = Vec::new();
        if recorded["status"].as_u64() != Some(u64::from(answer.status)) {
            step_differences.push(format!(
                "status: kube-apiserver {}, sandbox {}",
                recorded["status"], answer.status
            ));
        }
        versions(&recorded["body"], &mut theirs);
        versions(&answer.body, &mut ours);
        differences(
            &normalize(&recorded["body"], &theirs),
            &normalize(&answer.body, &ours),
            "",
            &mut step_differences,
        );
        found.extend(
            step_differences
                .into_iter()
                .filter(|d| !explained(name, d))
                .map(|d| {
                    format!(
                        "{family}/{name} step {index} ({} {}): {d}",
                        step["method"].as_str().unwrap_or_default(),
                        step["path"].as_str().unwrap_or_default()
                    )
                }),
        );
        answers.push(if answer.body.is_object() {
            answer.body
        } else {
            Value::Null
        });
    }
    let delete = json!({"method": "DELETE"});
    send(
        client,
        &delete,
        &format!("/api/v1/namespaces/{namespace}"),
        None,
    )
    .await;
    for cleanup in scenario["cleanup"].as_array().into_iter().flatten() {
        let path = substitute(cleanup.as_str().unwrap(), &answers, &namespace);
        send(client, &delete, &path, None).await;
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_answers_as_kube_apiserver_did() {
    let sandbox = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    // Every request carries its own credentials (or none).
    let mut config = sandbox.clusters()[0].config().unwrap();
    config.auth_info = Default::default();
    // Each answer as the server gave it: kube's client would retry a 504 or 429.
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    run_setup(&client).await;
    let mut files: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "setup.json"))
        .collect();
    files.sort();
    let mut scenarios = 0;
    let mut found = Vec::new();
    for file in &files {
        let family = file.file_stem().unwrap().to_string_lossy().into_owned();
        for scenario in read(file)["scenarios"].as_array().unwrap() {
            scenarios += 1;
            found.extend(replay(&client, &family, scenario).await);
        }
    }
    sandbox.shutdown().await;
    assert!(scenarios >= 200, "only {scenarios} scenarios recorded");
    assert!(
        found.is_empty(),
        "{} unexplained differences from kube-apiserver in {scenarios} scenarios:\n{}",
        found.len(),
        found.join("\n")
    );
}
