//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), which kubectl sends for
//! `create namespace|configmap|secret|serviceaccount|deployment` and `auth can-i`: the
//! `k8s\0` envelope (a `runtime.Unknown` holding the type and the raw message), decoded into
//! the JSON object the rest of the server handles. Only the kinds those commands send have a
//! schema here; the field numbers are those of Kubernetes' `generated.proto` files.
//!
//! Go's encoder writes every non-pointer field, zero values included, so a zero string,
//! number or boolean means "unset" unless the field is a pointer in Go (`keep_zero`).

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

/// How one field's bytes become JSON.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Int,
    Bool,
    Msg(&'static [Field]),
    /// `map<string, string>`.
    MapStr,
    /// `map<string, bytes>`.
    MapBytes,
    /// `map<string, Quantity>`.
    MapQuantity,
    /// `IntOrString`.
    IntOrString,
}

/// One field of a message.
struct Field {
    number: u64,
    name: &'static str,
    ty: Ty,
    repeated: bool,
    /// A pointer in Go: a zero value was set on purpose.
    keep_zero: bool,
}

const fn f(number: u64, name: &'static str, ty: Ty) -> Field {
    Field {
        number,
        name,
        ty,
        repeated: false,
        keep_zero: false,
    }
}

const fn list(number: u64, name: &'static str, ty: Ty) -> Field {
    Field {
        number,
        name,
        ty,
        repeated: true,
        keep_zero: false,
    }
}

const fn pointer(number: u64, name: &'static str, ty: Ty) -> Field {
    Field {
        number,
        name,
        ty,
        repeated: false,
        keep_zero: true,
    }
}

static OWNER_REFERENCE: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
    f(5, "apiVersion", Ty::Str),
    pointer(6, "controller", Ty::Bool),
    pointer(7, "blockOwnerDeletion", Ty::Bool),
];

/// ObjectMeta, without the fields the server sets (uid, timestamps, resourceVersion, ...).
static OBJECT_META: &[Field] = &[
    f(1, "name", Ty::Str),
    f(2, "generateName", Ty::Str),
    f(3, "namespace", Ty::Str),
    f(11, "labels", Ty::MapStr),
    f(12, "annotations", Ty::MapStr),
    list(13, "ownerReferences", Ty::Msg(OWNER_REFERENCE)),
    list(14, "finalizers", Ty::Str),
];

static NAMESPACE_SPEC: &[Field] = &[list(1, "finalizers", Ty::Str)];
static NAMESPACE: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(NAMESPACE_SPEC)),
];

static CONFIG_MAP: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "data", Ty::MapStr),
    f(3, "binaryData", Ty::MapBytes),
    pointer(4, "immutable", Ty::Bool),
];

static SECRET: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "data", Ty::MapBytes),
    f(3, "type", Ty::Str),
    f(4, "stringData", Ty::MapStr),
    pointer(5, "immutable", Ty::Bool),
];

static OBJECT_REFERENCE: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "namespace", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
    f(5, "apiVersion", Ty::Str),
    f(6, "resourceVersion", Ty::Str),
    f(7, "fieldPath", Ty::Str),
];
static LOCAL_OBJECT_REFERENCE: &[Field] = &[f(1, "name", Ty::Str)];
static SERVICE_ACCOUNT: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    list(2, "secrets", Ty::Msg(OBJECT_REFERENCE)),
    list(3, "imagePullSecrets", Ty::Msg(LOCAL_OBJECT_REFERENCE)),
    pointer(4, "automountServiceAccountToken", Ty::Bool),
];

static SELECTOR_REQUIREMENT: &[Field] = &[
    f(1, "key", Ty::Str),
    f(2, "operator", Ty::Str),
    list(3, "values", Ty::Str),
];
static LABEL_SELECTOR: &[Field] = &[
    f(1, "matchLabels", Ty::MapStr),
    list(2, "matchExpressions", Ty::Msg(SELECTOR_REQUIREMENT)),
];
static CONTAINER_PORT: &[Field] = &[
    f(1, "name", Ty::Str),
    f(2, "hostPort", Ty::Int),
    f(3, "containerPort", Ty::Int),
    f(4, "protocol", Ty::Str),
    f(5, "hostIP", Ty::Str),
];
static ENV_VAR: &[Field] = &[f(1, "name", Ty::Str), f(2, "value", Ty::Str)];
static RESOURCES: &[Field] = &[
    f(1, "limits", Ty::MapQuantity),
    f(2, "requests", Ty::MapQuantity),
];
static CONTAINER: &[Field] = &[
    f(1, "name", Ty::Str),
    f(2, "image", Ty::Str),
    list(3, "command", Ty::Str),
    list(4, "args", Ty::Str),
    f(5, "workingDir", Ty::Str),
    list(6, "ports", Ty::Msg(CONTAINER_PORT)),
    list(7, "env", Ty::Msg(ENV_VAR)),
    f(8, "resources", Ty::Msg(RESOURCES)),
    f(13, "terminationMessagePath", Ty::Str),
    f(14, "imagePullPolicy", Ty::Str),
    f(16, "stdin", Ty::Bool),
    f(17, "stdinOnce", Ty::Bool),
    f(18, "tty", Ty::Bool),
    f(20, "terminationMessagePolicy", Ty::Str),
];
static POD_SPEC: &[Field] = &[
    list(2, "containers", Ty::Msg(CONTAINER)),
    f(3, "restartPolicy", Ty::Str),
    pointer(4, "terminationGracePeriodSeconds", Ty::Int),
    f(6, "dnsPolicy", Ty::Str),
    f(7, "nodeSelector", Ty::MapStr),
    f(8, "serviceAccountName", Ty::Str),
    f(10, "nodeName", Ty::Str),
    list(15, "imagePullSecrets", Ty::Msg(LOCAL_OBJECT_REFERENCE)),
    f(19, "schedulerName", Ty::Str),
    list(20, "initContainers", Ty::Msg(CONTAINER)),
];
static POD_TEMPLATE: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(POD_SPEC)),
];
static ROLLING_UPDATE: &[Field] = &[
    f(1, "maxUnavailable", Ty::IntOrString),
    f(2, "maxSurge", Ty::IntOrString),
];
static STRATEGY: &[Field] = &[
    f(1, "type", Ty::Str),
    f(2, "rollingUpdate", Ty::Msg(ROLLING_UPDATE)),
];
static DEPLOYMENT_SPEC: &[Field] = &[
    pointer(1, "replicas", Ty::Int),
    f(2, "selector", Ty::Msg(LABEL_SELECTOR)),
    f(3, "template", Ty::Msg(POD_TEMPLATE)),
    f(4, "strategy", Ty::Msg(STRATEGY)),
    f(5, "minReadySeconds", Ty::Int),
    pointer(6, "revisionHistoryLimit", Ty::Int),
    f(7, "paused", Ty::Bool),
    pointer(9, "progressDeadlineSeconds", Ty::Int),
];
static DEPLOYMENT: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(DEPLOYMENT_SPEC)),
];

static RESOURCE_ATTRIBUTES: &[Field] = &[
    f(1, "namespace", Ty::Str),
    f(2, "verb", Ty::Str),
    f(3, "group", Ty::Str),
    f(4, "version", Ty::Str),
    f(5, "resource", Ty::Str),
    f(6, "subresource", Ty::Str),
    f(7, "name", Ty::Str),
];
static NON_RESOURCE_ATTRIBUTES: &[Field] = &[f(1, "path", Ty::Str), f(2, "verb", Ty::Str)];
static ACCESS_REVIEW_SPEC: &[Field] = &[
    f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
    f(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
];
static SELF_SUBJECT_ACCESS_REVIEW: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(ACCESS_REVIEW_SPEC)),
];

static SUBJECT_ACCESS_REVIEW_SPEC: &[Field] = &[
    f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
    f(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
    f(3, "user", Ty::Str),
    list(4, "groups", Ty::Str),
    f(6, "uid", Ty::Str),
];
static SUBJECT_ACCESS_REVIEW: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(SUBJECT_ACCESS_REVIEW_SPEC)),
];
static RULES_REVIEW_SPEC: &[Field] = &[f(1, "namespace", Ty::Str)];
static SELF_SUBJECT_RULES_REVIEW: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(RULES_REVIEW_SPEC)),
];
static BOUND_OBJECT_REFERENCE: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "apiVersion", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
];
static TOKEN_REQUEST_SPEC: &[Field] = &[
    list(1, "audiences", Ty::Str),
    f(3, "boundObjectRef", Ty::Msg(BOUND_OBJECT_REFERENCE)),
    pointer(4, "expirationSeconds", Ty::Int),
];
static TOKEN_REQUEST: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(TOKEN_REQUEST_SPEC)),
];

static POLICY_RULE: &[Field] = &[
    list(1, "verbs", Ty::Str),
    list(2, "apiGroups", Ty::Str),
    list(3, "resources", Ty::Str),
    list(4, "resourceNames", Ty::Str),
    list(5, "nonResourceURLs", Ty::Str),
];
static ROLE: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    list(2, "rules", Ty::Msg(POLICY_RULE)),
];
static AGGREGATION_RULE: &[Field] = &[list(1, "clusterRoleSelectors", Ty::Msg(LABEL_SELECTOR))];
static CLUSTER_ROLE: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    list(2, "rules", Ty::Msg(POLICY_RULE)),
    f(3, "aggregationRule", Ty::Msg(AGGREGATION_RULE)),
];
static SUBJECT: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "apiGroup", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "namespace", Ty::Str),
];
static ROLE_REF: &[Field] = &[
    f(1, "apiGroup", Ty::Str),
    f(2, "kind", Ty::Str),
    f(3, "name", Ty::Str),
];
static ROLE_BINDING: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    list(2, "subjects", Ty::Msg(SUBJECT)),
    f(3, "roleRef", Ty::Msg(ROLE_REF)),
];

/// The schema of a top-level kind, by apiVersion and kind.
fn schema_of(api_version: &str, kind: &str) -> Option<&'static [Field]> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Secret") => SECRET,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("apps/v1", "Deployment") => DEPLOYMENT,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => {
            SUBJECT_ACCESS_REVIEW
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => SELF_SUBJECT_RULES_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => TOKEN_REQUEST,
        ("rbac.authorization.k8s.io/v1", "Role") => ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => ROLE_BINDING,
        _ => return None,
    })
}

/// Decodes a Kubernetes protobuf body into the JSON object it stands for.
pub fn decode(body: &[u8]) -> Result<Value> {
    let unsupported = |what: String| {
        Error::UnsupportedMediaType(format!(
            "{what}; the sandbox decodes protobuf for Namespaces, ConfigMaps, Secrets, \
             ServiceAccounts, Deployments, RBAC objects, access and rules reviews and TokenRequests only: use \
             `kubectl create -f` or `kubectl apply -f` with YAML/JSON"
        ))
    };
    let envelope = body
        .strip_prefix(b"k8s\0")
        .ok_or_else(|| Error::BadRequest("protobuf body without the k8s envelope".into()))?;
    let mut type_meta = (String::new(), String::new());
    let mut raw: &[u8] = &[];
    for (number, value) in Wire::new(envelope) {
        match (number, value?) {
            (1, Item::Bytes(bytes)) => {
                for (number, value) in Wire::new(bytes) {
                    let text = match value? {
                        Item::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                        Item::Varint(_) => continue,
                    };
                    match number {
                        1 => type_meta.0 = text,
                        2 => type_meta.1 = text,
                        _ => {}
                    }
                }
            }
            (2, Item::Bytes(bytes)) => raw = bytes,
            _ => {}
        }
    }
    let (api_version, kind) = type_meta;
    let schema = schema_of(&api_version, &kind)
        .ok_or_else(|| unsupported(format!("a protobuf {kind} ({api_version}) body")))?;
    let mut object = message(raw, schema)?;
    object.insert("apiVersion".into(), json!(api_version));
    object.insert("kind".into(), json!(kind));
    Ok(Value::Object(object))
}

/// One wire-format value.
enum Item<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// Iterator over `(field number, value)` of one message's bytes.
struct Wire<'a> {
    bytes: &'a [u8],
    failed: bool,
}

impl<'a> Wire<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Wire {
            bytes,
            failed: false,
        }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self
                .bytes
                .split_first()
                .ok_or_else(|| malformed("truncated varint"))?;
            self.bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("varint longer than 10 bytes"))
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        if len > self.bytes.len() {
            return Err(malformed("field longer than its message"));
        }
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(taken)
    }

    fn next_field(&mut self) -> Result<(u64, Option<Item<'a>>)> {
        let key = self.varint()?;
        let number = key >> 3;
        let item = match key & 7 {
            0 => Some(Item::Varint(self.varint()?)),
            1 => {
                self.take(8)?;
                None
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| malformed("length does not fit"))?;
                Some(Item::Bytes(self.take(len)?))
            }
            5 => {
                self.take(4)?;
                None
            }
            other => return Err(malformed(&format!("unsupported wire type {other}"))),
        };
        Ok((number, item))
    }
}

impl<'a> Iterator for Wire<'a> {
    type Item = (u64, Result<Item<'a>>);

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed && !self.bytes.is_empty() {
            match self.next_field() {
                Ok((number, Some(item))) => return Some((number, Ok(item))),
                Ok((_, None)) => continue,
                Err(e) => {
                    self.failed = true;
                    return Some((0, Err(e)));
                }
            }
        }
        None
    }
}

fn malformed(why: &str) -> Error {
    Error::BadRequest(format!("malformed protobuf body: {why}"))
}

/// Decodes one message of `schema`. Nesting follows the static schemas only (fields they do
/// not name are skipped), so a hostile body cannot recurse deeper than they do.
fn message(bytes: &[u8], schema: &[Field]) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for (number, item) in Wire::new(bytes) {
        let item = item?;
        let Some(field) = schema.iter().find(|f| f.number == number) else {
            continue;
        };
        let value = match (field.ty, item) {
            (Ty::Str, Item::Bytes(b)) => Value::String(String::from_utf8_lossy(b).into_owned()),
            (Ty::Int, Item::Varint(v)) => json!(v as i64),
            (Ty::Bool, Item::Varint(v)) => Value::Bool(v != 0),
            (Ty::Msg(inner), Item::Bytes(b)) => Value::Object(message(b, inner)?),
            (Ty::IntOrString, Item::Bytes(b)) => int_or_string(b)?,
            (Ty::MapStr | Ty::MapBytes | Ty::MapQuantity, Item::Bytes(b)) => {
                let (key, value) = map_entry(b, field.ty)?;
                let map = out
                    .entry(field.name)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(map) = map.as_object_mut() {
                    map.insert(key, value);
                }
                continue;
            }
            _ => {
                return Err(malformed(&format!(
                    "field {} has the wrong type",
                    field.name
                )));
            }
        };
        if !field.keep_zero && !field.repeated && is_zero(&value) {
            continue;
        }
        if field.repeated {
            if let Some(items) = out
                .entry(field.name)
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
            {
                items.push(value);
            }
        } else {
            out.insert(field.name.into(), value);
        }
    }
    Ok(out)
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Bool(b) => !b,
        _ => false,
    }
}

fn map_entry(bytes: &[u8], ty: Ty) -> Result<(String, Value)> {
    let mut key = String::new();
    let mut value = Value::String(String::new());
    for (number, item) in Wire::new(bytes) {
        let Item::Bytes(b) = item? else { continue };
        match number {
            1 => key = String::from_utf8_lossy(b).into_owned(),
            2 => {
                value = match ty {
                    Ty::MapBytes => {
                        Value::String(base64::engine::general_purpose::STANDARD.encode(b))
                    }
                    // Quantity { string = 1 }.
                    Ty::MapQuantity => Wire::new(b)
                        .find_map(|(n, i)| match (n, i) {
                            (1, Ok(Item::Bytes(s))) => {
                                Some(Value::String(String::from_utf8_lossy(s).into_owned()))
                            }
                            _ => None,
                        })
                        .unwrap_or(Value::String(String::new())),
                    _ => Value::String(String::from_utf8_lossy(b).into_owned()),
                };
            }
            _ => {}
        }
    }
    Ok((key, value))
}

/// `IntOrString { type = 1 (0 int, 1 string), intVal = 2, strVal = 3 }`.
fn int_or_string(bytes: &[u8]) -> Result<Value> {
    let (mut is_string, mut int, mut text) = (false, 0i64, String::new());
    for (number, item) in Wire::new(bytes) {
        match (number, item?) {
            (1, Item::Varint(v)) => is_string = v == 1,
            (2, Item::Varint(v)) => int = v as i64,
            (3, Item::Bytes(b)) => text = String::from_utf8_lossy(b).into_owned(),
            _ => {}
        }
    }
    Ok(if is_string { json!(text) } else { json!(int) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn bytes_field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
        varint(number << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut type_meta = Vec::new();
        bytes_field(1, api_version.as_bytes(), &mut type_meta);
        bytes_field(2, kind.as_bytes(), &mut type_meta);
        let mut unknown = Vec::new();
        bytes_field(1, &type_meta, &mut unknown);
        bytes_field(2, raw, &mut unknown);
        let mut out = b"k8s\0".to_vec();
        out.extend(unknown);
        out
    }

    #[test]
    fn a_config_map_with_zero_fields_and_a_map() {
        let mut meta = Vec::new();
        bytes_field(1, b"c1", &mut meta);
        bytes_field(2, b"", &mut meta); // generateName, written empty by Go
        let mut entry = Vec::new();
        bytes_field(1, b"k", &mut entry);
        bytes_field(2, b"v", &mut entry);
        let mut raw = Vec::new();
        bytes_field(1, &meta, &mut raw);
        bytes_field(2, &entry, &mut raw);
        let object = decode(&envelope("v1", "ConfigMap", &raw)).unwrap();
        assert_eq!(
            object,
            json!({"metadata": {"name": "c1"}, "data": {"k": "v"},
                   "apiVersion": "v1", "kind": "ConfigMap"})
        );
    }

    #[test]
    fn pointers_keep_their_zero_and_secrets_get_base64() {
        let mut spec = Vec::new();
        varint(1 << 3, &mut spec);
        varint(0, &mut spec); // replicas: 0, set on purpose
        let mut raw = Vec::new();
        bytes_field(2, &spec, &mut raw);
        let object = decode(&envelope("apps/v1", "Deployment", &raw)).unwrap();
        assert_eq!(object["spec"]["replicas"], 0);

        let mut entry = Vec::new();
        bytes_field(1, b"token", &mut entry);
        bytes_field(2, b"\x00\xff", &mut entry);
        let mut raw = Vec::new();
        bytes_field(2, &entry, &mut raw);
        let object = decode(&envelope("v1", "Secret", &raw)).unwrap();
        assert_eq!(object["data"]["token"], "AP8=");
    }

    #[test]
    fn unknown_kinds_and_broken_bodies_are_refused_in_words() {
        let err = decode(&envelope("batch/v1", "Job", &[])).unwrap_err();
        assert_eq!(err.code(), 415);
        assert!(err.to_string().contains("kubectl create -f"));
        let mut truncated = envelope("v1", "ConfigMap", &[]);
        truncated.extend([0x0a, 0x05, b'x']);
        assert_eq!(decode(&truncated).unwrap_err().code(), 400);
        assert_eq!(decode(b"not an envelope").unwrap_err().code(), 400);
    }
}
