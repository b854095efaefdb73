//! Resource endpoints: list, get, create, update, patch, delete (+ `/status`, `/scale`).

use super::list_options::Read;
use super::{Req, partial, response, table, watch};
use crate::auth::Attributes;
use crate::error::{Error, Result};
use crate::meta::meta_str;
use crate::patch::{self, PatchType};
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Admission, DeleteOptions, Deleted, ListQuery, Store, WriteOptions};
use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;

/// What a path addresses.
#[derive(Debug)]
struct Target<'a> {
    info: Arc<ResourceInfo>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    sub: &'a str,
}

fn not_found() -> Error {
    Error::NotFound("the server could not find the requested resource".into())
}

fn parse_target<'a>(
    store: &Store,
    group: &str,
    version: &str,
    rest: &'a [&'a str],
) -> Result<Target<'a>> {
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..]
            if !(group.is_empty()
                && tail.is_empty()
                && matches!(*plural, "status" | "finalize")) =>
        {
            (Some(*ns), {
                let start = rest.len() - tail.len() - 1;
                &rest[start..]
            })
        }
        _ => (None, rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (*p, None, ""),
        [p, n] => (*p, Some(*n), ""),
        [p, n, s] => (*p, Some(*n), *s),
        _ => return Err(not_found()),
    };
    let info = store
        .resolve(group, version, plural)
        .ok_or_else(not_found)?;
    if namespace.is_some() && !info.namespaced {
        return Err(not_found());
    }
    if info.namespaced && namespace.is_none() && name.is_some() {
        return Err(not_found());
    }
    match sub {
        "" => {}
        "status" if info.status => {}
        "scale" if info.scale => {}
        "finalize" if info.plural == "namespaces" && info.group.is_empty() => {}
        _ => return Err(not_found()),
    }
    Ok(Target {
        info,
        namespace,
        name,
        sub,
    })
}

/// Handle a request below `/api/v1` or `/apis/<group>/<version>`.
pub async fn handle(
    store: &Arc<Store>,
    req: &Req,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Response {
    if group == "authorization.k8s.io" {
        return super::authz::review(store, req, rest);
    }
    if let ("", ["namespaces", namespace, "serviceaccounts", name, "token"]) = (group, rest) {
        return super::authz::token_request(store, req, namespace, name);
    }
    let target = match parse_target(store, group, version, rest) {
        Ok(t) => t,
        Err(e) => return response::error(&e, Some(json!({}))),
    };
    let is_watch = matches!(req.q("watch"), Some("true" | "1"));
    let result = match (&req.method, target.name) {
        (&Method::GET, None) if is_watch => {
            return watch::serve(store, req, &target.info, target.namespace);
        }
        (&Method::GET, None) => list(store, req, &target).await,
        (&Method::GET, Some(_)) if is_watch => Err(Error::MethodNotAllowed(
            "watch of a single object: use a fieldSelector".into(),
        )),
        (&Method::GET, Some(n)) => get(store, req, &target, n),
        (&Method::POST, None) => create(store, req, &target),
        (&Method::PUT, Some(n)) => update(store, req, &target, n),
        (&Method::PATCH, Some(n)) => patch_object(store, req, &target, n),
        (&Method::DELETE, Some(n)) => delete(store, req, &target, n),
        // kube-apiserver serves no deletecollection for Services.
        (&Method::DELETE, None)
            if target.info.group.is_empty() && target.info.plural == "services" =>
        {
            Err(Error::MethodNotAllowed(
                "the server does not allow this method on the requested resource".to_string(),
            ))
        }
        (&Method::DELETE, None) => delete_collection(store, req, &target),
        _ => Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".to_string(),
        )),
    };
    match result {
        Ok(r) => r,
        Err(e) => {
            // Only these errors name the object; a create names it in its body alone.
            let named = matches!(
                e,
                Error::NotFound(_)
                    | Error::AlreadyExists(_)
                    | Error::Conflict { .. }
                    | Error::Forbidden(_)
            );
            let name = target.name.map(str::to_owned).or_else(|| {
                named
                    .then(|| decode_body(req).ok())
                    .flatten()
                    .map(|b| meta_str(&b, "name").to_owned())
                    .filter(|n| !n.is_empty())
            });
            let details = error_details(&e, &target.info, name.as_deref());
            response::error(&e, details)
        }
    }
}

/// The `details` kube-apiserver gives an error about `name` of `info`.
pub(super) fn error_details(e: &Error, info: &ResourceInfo, name: Option<&str>) -> Option<Value> {
    let object = |kind: &str| object_details(info, name, kind);
    match e {
        // The object not found may be another than the one addressed (a namespace, the role
        // a binding names): the message says which.
        Error::NotFound(message) if not_found_details(message).is_some() => {
            not_found_details(message)
        }
        Error::NotFound(_) | Error::AlreadyExists(_) if name.is_some() => {
            Some(object(&info.plural))
        }
        Error::Conflict { fields, .. } if !fields.is_empty() => None,
        Error::Conflict { message, .. } if name.is_some() => {
            let precondition = message.contains("in the precondition");
            Some(object(if precondition {
                &info.kind
            } else {
                &info.plural
            }))
        }
        Error::Invalid(message) => Some(invalid_details(message)),
        Error::InvalidFields { subject, causes } => Some(fields_details(subject, causes)),
        Error::Forbidden(message) if message.contains("because it is being terminated") => {
            let namespace = message.rsplit("namespace ").next().unwrap_or_default();
            let namespace = namespace.split(' ').next().unwrap_or_default();
            let mut details = object(&info.plural);
            details["causes"] = json!([{
                "reason": "NamespaceTerminating", "field": "metadata.namespace",
                "message": format!("namespace {namespace} is being terminated"),
            }]);
            Some(details)
        }
        Error::Forbidden(message) if message.contains(" is forbidden: ") => {
            Some(object(&info.plural))
        }
        Error::UnsupportedMediaType(message) if message != UNKNOWN_MEDIA_TYPE => None,
        Error::BadRequest(_)
        | Error::Expired(_)
        | Error::ContinueExpired { .. }
        | Error::TooLargeResourceVersion { .. }
        | Error::Internal(_)
        | Error::Storage(_)
        | Error::Io(_) => None,
        _ => Some(json!({})),
    }
}

/// `{name, group, kind}` read back from `<resource>[.<group>] "<name>" not found`.
fn not_found_details(message: &str) -> Option<Value> {
    let (subject, rest) = message.split_once(" \"")?;
    let name = rest.strip_suffix("\" not found")?;
    if subject.contains(' ') || name.contains('"') {
        return None;
    }
    let (kind, group) = subject.split_once('.').unwrap_or((subject, ""));
    let mut details = json!({"name": name, "kind": kind});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    Some(details)
}

/// Details of a 422 as kube-apiserver gives them, read back from its message
/// `<Kind>[.<group>] "<name>" is invalid: <field>: <reason>: <text>`: the Kind (not the
/// resource), its group, the name, and the field error as a cause, which kubectl prints as
/// `The Kind "name" is invalid: field: message`.
pub(super) fn invalid_details(message: &str) -> Value {
    let Some((subject, rest)) = message.split_once(" is invalid: ") else {
        return json!({});
    };
    let (kind, quoted) = subject.split_once(' ').unwrap_or((subject, ""));
    let (kind, group) = kind.split_once('.').unwrap_or((kind, ""));
    let mut details = json!({});
    if !kind.is_empty() {
        details["kind"] = json!(kind);
    }
    let name = quoted.trim_matches('"');
    if !name.is_empty() {
        details["name"] = json!(name);
    }
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    if let Some((field, text)) = rest.split_once(": ") {
        details["causes"] = json!([cause(field, text)]);
    }
    details
}

/// Details of a 422 with field errors: the subject's kind, group and name, and each error
/// as a cause.
fn fields_details(subject: &str, causes: &[(String, String)]) -> Value {
    let mut details = invalid_details(&format!("{subject} is invalid: "));
    details["causes"] = causes.iter().map(|(f, t)| cause(f, t)).collect();
    details
}

/// One field error as a `details.causes` entry, its reason read from its text.
fn cause(field: &str, text: &str) -> Value {
    let reason = if text.starts_with("Required value") {
        "FieldValueRequired"
    } else if text.starts_with("Forbidden") {
        "FieldValueForbidden"
    } else if text.starts_with("Unsupported value") {
        "FieldValueNotSupported"
    } else if text.starts_with("Duplicate value") {
        "FieldValueDuplicate"
    } else {
        "FieldValueInvalid"
    };
    json!({"reason": reason, "message": text, "field": field})
}

fn ns_of<'a>(t: &Target<'a>) -> &'a str {
    t.namespace.unwrap_or("")
}

/// The request's field selector, its paths in the stored form of `info`'s objects.
pub(super) fn field_selector(req: &Req, info: &ResourceInfo) -> Result<FieldSelector> {
    let selector = FieldSelector::parse(req.q("fieldSelector").unwrap_or(""))?;
    crate::field_labels::check(info, selector.paths())?;
    Ok(if crate::events::is_events_api(info) {
        selector.renamed(crate::events::core_field)
    } else {
        selector
    })
}

async fn list(store: &Store, req: &Req, t: &Target<'_>) -> Result<Response> {
    let options = super::list_options::parse(req)?;
    let at = match options.read {
        Read::Latest => None,
        Read::Exact(rv) => Some(rv),
        Read::NotOlderThan { rv, wait } => {
            super::list_options::reached(store, rv, wait).await?;
            None
        }
    };
    let q = ListQuery {
        labels: LabelSelector::parse(req.q("labelSelector").unwrap_or(""))?,
        fields: field_selector(req, &t.info)?,
        limit: options.limit,
        continue_token: options.continue_token,
        at,
    };
    let page = store.list(&t.info, t.namespace, &q)?;
    if table::wanted(req) {
        let objects = page
            .items
            .iter()
            .map(|item| store.to_version(&t.info, item).map(Cow::into_owned))
            .collect::<Result<Vec<Value>>>()?;
        let rv = page.resource_version.to_string();
        let body = table::table(
            &t.info,
            &objects,
            &rv,
            page.continue_token.as_deref(),
            req.q("includeObject"),
        );
        return Ok(response::json(200, &body));
    }
    let mut meta = json!({"resourceVersion": page.resource_version.to_string()});
    if let Some(c) = &page.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = page.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    if partial::wanted_list(req) {
        let items = page
            .items
            .iter()
            .map(|item| store.to_version(&t.info, item).map(Cow::into_owned))
            .collect::<Result<Vec<Value>>>()?;
        return Ok(response::json(
            200,
            &partial::list(&meta, items.into_iter()),
        ));
    }
    if page.continue_token.is_none() && t.info.custom {
        // Custom resource lists always carry it, empty on the last page.
        meta["continue"] = json!("");
    }
    let av = t.info.api_version();
    let mut out = Vec::with_capacity(256 + page.items.len() * 512);
    out.extend_from_slice(
        format!(
            "{{\"kind\":\"{}List\",\"apiVersion\":\"{av}\",\"metadata\":",
            t.info.kind
        )
        .as_bytes(),
    );
    serde_json::to_writer(&mut out, &meta).map_err(|e| Error::Internal(e.to_string()))?;
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, &*store.to_version(&t.info, item)?)
            .map_err(|e| Error::Internal(e.to_string()))?;
    }
    out.extend_from_slice(b"]}");
    let mut resp = Response::new(Body::from(out));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn get(store: &Store, req: &Req, t: &Target<'_>, name: &str) -> Result<Response> {
    let obj = store.get(&t.info, ns_of(t), name)?;
    if t.sub == "scale" {
        return Ok(response::json(200, &scale_of(&t.info, &obj)));
    }
    let obj = store.to_version(&t.info, &obj)?;
    let obj = obj.as_ref();
    if t.sub.is_empty() && table::wanted(req) {
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let body = table::table(
            &t.info,
            std::slice::from_ref(obj),
            &rv,
            None,
            req.q("includeObject"),
        );
        return Ok(response::json(200, &body));
    }
    if t.sub.is_empty() && partial::wanted(req) {
        return Ok(response::json(200, &partial::object(obj)));
    }
    Ok(response::json(200, obj))
}

fn scale_of(info: &ResourceInfo, obj: &Value) -> Value {
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta_str(obj, "name"), "namespace": meta_str(obj, "namespace"),
            "uid": meta_str(obj, "uid"), "resourceVersion": meta_str(obj, "resourceVersion"),
            "creationTimestamp": meta_str(obj, "creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(if info.kind.is_empty() { 0 } else { 1 }))},
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector,
        }
    })
}

/// The request's body as JSON, whatever it was sent as (JSON, YAML, protobuf).
pub(super) fn decode_body(req: &Req) -> Result<Value> {
    let ct = req.header("content-type");
    if ct.starts_with("application/vnd.kubernetes.protobuf") {
        return super::protobuf::decode(&req.body);
    }
    if ct.contains("yaml") {
        // JSON is YAML, and kube clients send apply patches as JSON: parsing those as JSON
        // gives the same object at a fraction of a YAML parser's cost.
        if req.body.trim_ascii_start().starts_with(b"{")
            && let Ok(object) = serde_json::from_slice(&req.body)
        {
            return Ok(object);
        }
        let text = std::str::from_utf8(&req.body)
            .map_err(|e| Error::BadRequest(format!("body is not UTF-8: {e}")))?;
        return serde_saphyr::from_str(text)
            .map_err(|e| Error::BadRequest(format!("error decoding YAML: {e}")));
    }
    serde_json::from_slice(&req.body)
        .map_err(|e| Error::BadRequest(format!("error decoding JSON body: {e}")))
}

/// The options of a write to `t`: dry run, field manager, subresource, and the escalation
/// check when it writes an RBAC object.
fn write_options(store: &Store, req: &Req, t: &Target<'_>, sub: &str) -> Result<WriteOptions> {
    let dry_run = match req.q("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(Error::BadRequest(format!(
                "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
            )));
        }
    };
    let manager = match req.q("fieldManager") {
        Some(m) if !m.is_empty() => m.to_owned(),
        _ => {
            let ua = req.header("user-agent");
            let prefix = ua.split('/').next().unwrap_or("").trim();
            if prefix.is_empty() {
                "unknown".to_owned()
            } else {
                prefix.to_owned()
            }
        }
    };
    Ok(WriteOptions {
        dry_run,
        manager,
        subresource: sub.to_owned(),
        applied: false,
        admit: escalation_check(store, req, t),
        field_validation: crate::typed::FieldValidation::parse(req.q("fieldValidation"))?,
        warnings: Default::default(),
    })
}

/// `response` with a `Warning` header for each warning the write gave, as kube-apiserver
/// sends them (`299 - "text"`), which kubectl prints as `Warning: text`.
fn warned(mut response: Response, opts: &WriteOptions) -> Response {
    let warnings = opts.warnings.lock().map(|w| w.clone()).unwrap_or_default();
    for warning in warnings {
        let quoted = format!("299 - {}", serde_json::Value::String(warning));
        if let Ok(value) = axum::http::HeaderValue::from_str(&quoted) {
            response.headers_mut().append("Warning", value);
        }
    }
    response
}

/// For writes of Roles and bindings by users outside `system:masters`: the rules they may
/// grant are the rules they hold.
fn escalation_check(store: &Store, req: &Req, t: &Target<'_>) -> Option<Admission> {
    if t.info.group != crate::auth::RBAC_GROUP || req.user.is_master() {
        return None;
    }
    let policy = store.policy();
    let user = req.user.clone();
    let resource = t.info.plural.clone();
    let namespace = ns_of(t).to_owned();
    Some(Admission::new(move |old, new| {
        crate::auth::escalation::admit(&policy, &user, &resource, &namespace, old, new)
    }))
}

fn create(store: &Store, req: &Req, t: &Target<'_>) -> Result<Response> {
    let body = decode_body(req)?;
    check_kind(&t.info, &body)?;
    let opts = write_options(store, req, t, "")?;
    let obj = store.create(&t.info, ns_of(t), body, &opts)?;
    Ok(warned(
        response::json(201, &*store.to_version(&t.info, &obj)?),
        &opts,
    ))
}

fn check_kind(info: &ResourceInfo, body: &Value) -> Result<()> {
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() && info.custom {
        return Err(Error::BadRequest(format!(
            "{} in version \"{}\" cannot be handled as a {}: Object 'Kind' is missing",
            info.kind, info.version, info.kind
        )));
    }
    if !kind.is_empty() && kind != info.kind {
        return Err(Error::BadRequest(format!(
            "the kind of the object ({kind}) does not match the resource ({})",
            info.kind
        )));
    }
    Ok(())
}

fn update(store: &Store, req: &Req, t: &Target<'_>, name: &str) -> Result<Response> {
    let body = decode_body(req)?;
    let opts = write_options(store, req, t, t.sub)?;
    if t.sub == "scale" {
        let replicas = body.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
        let want_rv = meta_str(&body, "resourceVersion").to_owned();
        let obj = store.modify(&t.info, ns_of(t), name, &opts, |old| {
            let mut new = old.clone();
            if !want_rv.is_empty() {
                new["metadata"]["resourceVersion"] = json!(want_rv);
            }
            new["spec"]["replicas"] = replicas;
            Ok(new)
        })?;
        return Ok(response::json(200, &scale_of(&t.info, &obj)));
    }
    check_kind(&t.info, &body)?;
    let obj = store.update(&t.info, ns_of(t), name, body, &opts)?;
    Ok(warned(
        response::json(200, &*store.to_version(&t.info, &obj)?),
        &opts,
    ))
}

/// An apply that creates its object is also a `create` of that name, authorized as
/// kube-apiserver's patch handler does (`createAuthorizerAttributes`): a grant of `patch` alone
/// cannot make new objects.
fn authorize_create(store: &Store, req: &Req, t: &Target<'_>, name: &str) -> Result<()> {
    let attrs = Attributes::resource("create", &t.info.group, &t.info.plural, ns_of(t), name);
    let decision = crate::auth::rbac::authorize(&store.policy(), &req.user, &attrs);
    if decision.allowed {
        return Ok(());
    }
    let qualified = if t.info.group.is_empty() {
        t.info.plural.clone()
    } else {
        format!("{}.{}", t.info.plural, t.info.group)
    };
    Err(Error::Forbidden(format!(
        "{qualified} {name:?} is forbidden: {}",
        decision.reason
    )))
}

/// kube-apiserver's answer to a PATCH of a content type it has no patcher for.
const UNKNOWN_MEDIA_TYPE: &str = "415: Unsupported Media Type";

fn patch_object(store: &Store, req: &Req, t: &Target<'_>, name: &str) -> Result<Response> {
    let ct = req.header("content-type");
    let ptype = PatchType::from_content_type(ct)
        .ok_or_else(|| Error::UnsupportedMediaType(UNKNOWN_MEDIA_TYPE.to_string()))?;
    let force = matches!(req.q("force"), Some("true" | "1"));
    if force && ptype != PatchType::Apply {
        return Err(Error::Invalid(
            "force: Forbidden: may not be specified for non-apply patch".into(),
        ));
    }
    let opts = write_options(store, req, t, if t.sub == "scale" { "" } else { t.sub })?;
    let ns = ns_of(t);
    if ptype == PatchType::Apply {
        if req.q("fieldManager").is_none_or(str::is_empty) {
            return Err(Error::Invalid("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".into()));
        }
        let body = decode_body(req)?;
        let (obj, created) = store.apply(&t.info, ns, name, (&body, force), &opts, || {
            authorize_create(store, req, t, name)
        })?;
        return Ok(warned(
            response::json(
                if created { 201 } else { 200 },
                &*store.to_version(&t.info, &obj)?,
            ),
            &opts,
        ));
    }
    if ptype == PatchType::Strategic && t.info.custom {
        return Err(Error::UnsupportedMediaType("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".to_string()));
    }
    let body: Value = serde_json::from_slice(&req.body)
        .map_err(|e| Error::BadRequest(format!("error decoding patch: {e}")))?;
    let scale = t.sub == "scale";
    let info = t.info.clone();
    let obj = store.modify(&t.info, ns, name, &opts, |old| {
        let mut doc = if scale {
            scale_of(&info, old)
        } else {
            old.clone()
        };
        match ptype {
            PatchType::Json => patch::json(&mut doc, &body)?,
            PatchType::Strategic => crate::smp::strategic(&mut doc, &body)?,
            _ => patch::merge(&mut doc, &body),
        }
        if scale {
            let mut new = old.clone();
            new["spec"]["replicas"] = doc.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
            return Ok(new);
        }
        Ok(doc)
    })?;
    if scale {
        return Ok(response::json(200, &scale_of(&t.info, &obj)));
    }
    Ok(warned(
        response::json(200, &*store.to_version(&t.info, &obj)?),
        &opts,
    ))
}

fn delete_options(req: &Req) -> Result<DeleteOptions> {
    let body: Value = if req.body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&req.body)
            .map_err(|e| Error::BadRequest(format!("error decoding DeleteOptions: {e}")))?
    };
    let s = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut propagation =
        s("propagationPolicy").or_else(|| req.q("propagationPolicy").map(str::to_owned));
    if propagation.is_none() && body.get("orphanDependents").and_then(Value::as_bool) == Some(true)
    {
        propagation = Some("Orphan".into());
    }
    if let Some(p) = &propagation
        && !matches!(p.as_str(), "Background" | "Foreground" | "Orphan")
    {
        return Err(Error::Invalid(format!(
            "propagationPolicy: Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
        )));
    }
    let dry = body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "All"))
        || req.q("dryRun") == Some("All");
    let pre = body.get("preconditions");
    Ok(DeleteOptions {
        dry_run: dry,
        propagation,
        uid: pre
            .and_then(|p| p.get("uid"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        resource_version: pre
            .and_then(|p| p.get("resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

fn delete(store: &Store, req: &Req, t: &Target<'_>, name: &str) -> Result<Response> {
    let opts = delete_options(req)?;
    match store.delete(&t.info, ns_of(t), name, &opts)? {
        Deleted::Pending(obj) => Ok(response::json(200, &*store.to_version(&t.info, &obj)?)),
        // These registries answer a delete with the deleted object (`ReturnDeletedObject`;
        // Services from 1.23, whose storage was rewritten).
        Deleted::Gone(obj)
            if t.info.group.is_empty()
                && matches!(
                    t.info.plural.as_str(),
                    "serviceaccounts"
                        | "pods"
                        | "persistentvolumeclaims"
                        | "resourcequotas"
                        | "services"
                ) =>
        {
            Ok(response::json(200, &*store.to_version(&t.info, &obj)?))
        }
        Deleted::Gone(obj) => Ok(response::json(
            200,
            &json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": deleted_details(&t.info, name, meta_str(&obj, "uid")),
            }),
        )),
    }
}

/// The `details` of a successful delete: name, group (when not core), resource and uid.
fn deleted_details(info: &ResourceInfo, name: &str, uid: &str) -> Value {
    let mut details = object_details(info, Some(name), &info.plural);
    details["uid"] = json!(uid);
    details
}

/// `details` naming an object: its name, `kind` as given, and the group unless core.
fn object_details(info: &ResourceInfo, name: Option<&str>, kind: &str) -> Value {
    let mut details = json!({"name": name, "kind": kind});
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    details
}

fn delete_collection(store: &Store, req: &Req, t: &Target<'_>) -> Result<Response> {
    let opts = delete_options(req)?;
    let q = ListQuery {
        labels: LabelSelector::parse(req.q("labelSelector").unwrap_or(""))?,
        fields: field_selector(req, &t.info)?,
        ..ListQuery::default()
    };
    let page = store.list(&t.info, t.namespace, &q)?;
    let mut items = Vec::new();
    for obj in &page.items {
        let ns = meta_str(obj, "namespace");
        match store.delete(&t.info, ns, meta_str(obj, "name"), &opts) {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => items.push(o),
            Err(Error::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    let mut metadata = json!({"resourceVersion": store.resource_version().to_string()});
    if t.info.custom {
        metadata["continue"] = json!("");
    }
    Ok(response::json(
        200,
        &json!({"kind": format!("{}List", t.info.kind), "apiVersion": t.info.api_version(),
                "metadata": metadata, "items": items}),
    ))
}
