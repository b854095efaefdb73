//! Server-side printing: what `kubectl get` asks for with
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`. Columns are a CRD's
//! `additionalPrinterColumns` (simple JSONPath), the usual ones for Services, ConfigMaps,
//! Secrets and Namespaces, and Name and Age for everything else.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::http::Req;
use crate::registry::ResourceInfo;

/// Whether the client asked for a `meta.k8s.io/v1` Table.
pub fn wanted(req: &Req) -> bool {
    super::partial::wants_as(req, "Table")
}

/// One column: its definition and how a cell is computed.
struct Column {
    definition: Value,
    cell: Cell,
}

enum Cell {
    Name,
    Age,
    /// A JSONPath of a CRD's printer column, with the column's type.
    Path(Vec<Step>, String),
    /// A built-in kind's computed cell, from the object in its stored form and the time now.
    Computed(fn(&Value, Timestamp) -> Value),
}

fn column(name: &str, kind: &str, format: &str, description: &str, cell: Cell) -> Column {
    Column {
        definition: json!({"name": name, "type": kind, "format": format, "description": description, "priority": 0}),
        cell,
    }
}

fn name_column() -> Column {
    column(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
        Cell::Name,
    )
}

fn age_column() -> Column {
    column(
        "Age",
        "date",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        Cell::Age,
    )
}

fn columns(info: &ResourceInfo) -> Vec<Column> {
    if info.group_resource() == crate::events::storage() {
        return event_columns();
    }
    let mut columns = vec![name_column()];
    if !info.printer_columns.is_empty() {
        for printer in &info.printer_columns {
            let text = |key: &str| printer.get(key).and_then(Value::as_str).unwrap_or("");
            let path = parse_path(text("jsonPath"));
            let mut definition = json!({
                "name": text("name"), "type": text("type"), "format": text("format"),
                "description": text("description"),
                "priority": printer.get("priority").cloned().unwrap_or(json!(0)),
            });
            if definition["type"] == "" {
                definition["type"] = json!("string");
            }
            let kind = text("type").to_owned();
            columns.push(Column {
                definition,
                cell: Cell::Path(path, kind),
            });
        }
        return columns;
    }
    if info.group.is_empty() {
        let computed = |name: &str, cell: fn(&Value, Timestamp) -> Value| {
            column(name, "string", "", "", Cell::Computed(cell))
        };
        match info.plural.as_str() {
            "services" => {
                columns.push(computed("Type", |o, _| o["spec"]["type"].clone()));
                columns.push(computed("Cluster-IP", |o, _| {
                    o["spec"]["clusterIP"].clone()
                }));
                columns.push(computed("External-IP", |o, _| external_ips(o)));
                columns.push(computed("Port(s)", |o, _| service_ports(o)));
            }
            "configmaps" => columns.push(computed("Data", |o, _| json!(data_count(o)))),
            "secrets" => {
                columns.push(computed("Type", |o, _| o["type"].clone()));
                columns.push(computed("Data", |o, _| json!(data_count(o))));
            }
            "namespaces" => columns.push(computed("Status", |o, _| o["status"]["phase"].clone())),
            _ => {}
        }
    }
    columns.push(age_column());
    columns
}

/// kube-apiserver's Event columns (its printers' `printEvent`, always generated wide; kubectl
/// shows the priority 1 columns with `-o wide`), computed from the core form both Events APIs
/// store.
fn event_columns() -> Vec<Column> {
    let cell = |name: &str, priority: u8, cell: fn(&Value, Timestamp) -> Value| {
        let mut column = column(name, "string", "", "", Cell::Computed(cell));
        column.definition["priority"] = json!(priority);
        column
    };
    let mut name = cell("Name", 1, |o, _| o["metadata"]["name"].clone());
    name.definition["format"] = json!("name");
    vec![
        cell("Last Seen", 0, event_last_seen),
        cell("Type", 0, |o, _| o["type"].clone()),
        cell("Reason", 0, |o, _| o["reason"].clone()),
        cell("Object", 0, |o, _| json!(event_target(o))),
        cell("Subobject", 1, |o, _| {
            json!(
                o["involvedObject"]["fieldPath"]
                    .as_str()
                    .unwrap_or_default()
            )
        }),
        cell("Source", 1, |o, _| json!(event_source(o))),
        cell("Message", 0, |o, _| {
            json!(o["message"].as_str().unwrap_or_default().trim())
        }),
        cell("First Seen", 1, event_first_seen),
        cell("Count", 1, |o, _| json!(event_count(o))),
        name,
    ]
}

fn event_first_seen(event: &Value, now: Timestamp) -> Value {
    match event.get("firstTimestamp").filter(|t| t.is_string()) {
        Some(first) => age(first, now),
        None => age(&event["eventTime"], now),
    }
}

fn event_last_seen(event: &Value, now: Timestamp) -> Value {
    if let Some(observed) = event["series"].get("lastObservedTime") {
        return age(observed, now);
    }
    match event.get("lastTimestamp").filter(|t| t.is_string()) {
        Some(last) => age(last, now),
        None => event_first_seen(event, now),
    }
}

fn event_count(event: &Value) -> i64 {
    match event["series"].get("count") {
        Some(count) => count.as_i64().unwrap_or_default(),
        None => match event["count"].as_i64().unwrap_or_default() {
            // Singleton events of the new API carry no count.
            0 => 1,
            count => count,
        },
    }
}

fn event_target(event: &Value) -> String {
    let object = &event["involvedObject"];
    let kind = object["kind"].as_str().unwrap_or_default().to_lowercase();
    match object["name"].as_str().filter(|n| !n.is_empty()) {
        Some(name) => format!("{kind}/{name}"),
        None => kind,
    }
}

fn event_source(event: &Value) -> String {
    let first = |a: &Value, b: &Value| {
        a.as_str()
            .filter(|s| !s.is_empty())
            .or(b.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let component = first(&event["source"]["component"], &event["reportingComponent"]);
    let instance = first(&event["source"]["host"], &event["reportingInstance"]);
    if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    }
}

fn data_count(object: &Value) -> usize {
    ["data", "binaryData"]
        .iter()
        .filter_map(|k| object.get(*k).and_then(Value::as_object))
        .map(serde_json::Map::len)
        .sum()
}

fn external_ips(service: &Value) -> Value {
    let mut ips = crate::meta::strings(&service["spec"]["externalIPs"]);
    for ingress in service["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(address) = ingress["ip"].as_str().or(ingress["hostname"].as_str()) {
            ips.push(address.to_owned());
        }
    }
    match (ips.is_empty(), service["spec"]["type"].as_str()) {
        (true, Some("LoadBalancer")) => json!("<pending>"),
        (true, Some("ExternalName")) => service["spec"]["externalName"].clone(),
        (true, _) => json!("<none>"),
        (false, _) => json!(ips.join(",")),
    }
}

fn service_ports(service: &Value) -> Value {
    let ports: Vec<String> = service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match p.get("nodePort") {
                Some(node) => format!("{}:{node}/{protocol}", p["port"]),
                None => format!("{}/{protocol}", p["port"]),
            }
        })
        .collect();
    if ports.is_empty() {
        json!("<none>")
    } else {
        json!(ports.join(","))
    }
}

/// The Table of `objects` (already in the requested version).
pub fn table(
    info: &ResourceInfo,
    objects: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    include_object: Option<&str>,
) -> Value {
    let columns = columns(info);
    let now = Timestamp::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            // Events read through events.k8s.io print from the core form they are stored in.
            let stored = if crate::events::is_events_api(info) {
                std::borrow::Cow::Owned(crate::events::to_core(object))
            } else {
                std::borrow::Cow::Borrowed(object)
            };
            let cells: Vec<Value> = columns
                .iter()
                .map(|c| match &c.cell {
                    Cell::Name => object["metadata"]["name"].clone(),
                    Cell::Age => age(&object["metadata"]["creationTimestamp"], now),
                    Cell::Path(path, kind) => path_cell(object, path, kind, now),
                    Cell::Computed(cell) => cell(&stored, now),
                })
                .collect();
            let mut row = json!({"cells": cells});
            match include_object.unwrap_or("Metadata") {
                "None" => {}
                "Object" => row["object"] = object.clone(),
                _ => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": object["metadata"],
                    });
                }
            }
            row
        })
        .collect();
    let mut metadata = json!({"resourceVersion": resource_version});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
        "columnDefinitions": columns.iter().map(|c| c.definition.clone()).collect::<Vec<_>>(),
        "rows": rows,
    })
}

fn age(timestamp: &Value, now: Timestamp) -> Value {
    let Some(created) = timestamp.as_str().and_then(|t| t.parse::<Timestamp>().ok()) else {
        return json!("<unknown>");
    };
    json!(human_duration(now.as_second() - created.as_second()))
}

/// A duration as kubectl prints ages (`duration.HumanDuration` in apimachinery).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        let d = days % 365;
        return if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        };
    }
    format!("{years}y")
}

/// One step of a printer column's JSONPath.
#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    /// `[?(@.key.path=="value")]`
    Filter(Vec<String>, Value),
}

/// Parses the simple JSONPath of printer columns (`.a.b`, `.a[0]`, `.a['b.c']`, `.a[*]`,
/// `.a[?(@.k=="v")]`); what it does not understand selects nothing.
fn parse_path(path: &str) -> Vec<Step> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let path = path.strip_prefix('$').unwrap_or(path);
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end > 0 {
                steps.push(Step::Field(after[..end].to_owned()));
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let Some(end) = closing_bracket(after) else {
                return vec![Step::Filter(Vec::new(), Value::Null)];
            };
            steps.push(bracket_step(&after[..end]));
            rest = &after[end + 1..];
        } else {
            return vec![Step::Filter(Vec::new(), Value::Null)];
        }
    }
    steps
}

/// Index of the `]` closing a bracket whose content starts `text`, skipping quoted parts.
fn closing_bracket(text: &str) -> Option<usize> {
    let mut quote = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (_, _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn unquote(text: &str) -> String {
    let text = text.trim();
    let inner = text
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .or_else(|| text.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
        .unwrap_or(text);
    inner.replace("\\.", ".")
}

fn bracket_step(inside: &str) -> Step {
    let inside = inside.trim();
    if inside == "*" {
        return Step::All;
    }
    if let Ok(index) = inside.parse::<usize>() {
        return Step::Index(index);
    }
    if let Some(filter) = inside.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        if let Some((left, right)) = filter.split_once("==") {
            let key = left.trim().strip_prefix("@.").unwrap_or("");
            let keys = key.split('.').map(str::to_owned).collect();
            let right = right.trim();
            let value = serde_json::from_str(right).unwrap_or_else(|_| json!(unquote(right)));
            return Step::Filter(keys, value);
        }
        return Step::Filter(Vec::new(), Value::Null);
    }
    Step::Field(unquote(inside))
}

fn select<'a>(values: Vec<&'a Value>, step: &Step) -> Vec<&'a Value> {
    values
        .into_iter()
        .flat_map(|value| -> Vec<&'a Value> {
            match step {
                Step::Field(name) => value.get(name).into_iter().collect(),
                Step::Index(index) => value.get(*index).into_iter().collect(),
                Step::All => match value {
                    Value::Array(items) => items.iter().collect(),
                    Value::Object(map) => map.values().collect(),
                    _ => Vec::new(),
                },
                Step::Filter(keys, wanted) => {
                    let items: Vec<&Value> = value.as_array().into_iter().flatten().collect();
                    items
                        .into_iter()
                        .filter(|item| {
                            !keys.is_empty()
                                && keys
                                    .iter()
                                    .try_fold(*item, |v, k| v.get(k))
                                    .is_some_and(|v| v == wanted)
                        })
                        .collect()
                }
            }
        })
        .collect()
}

fn path_cell(object: &Value, path: &[Step], kind: &str, now: Timestamp) -> Value {
    let found = path.iter().fold(vec![object], select);
    let Some(value) = found.first() else {
        return Value::Null;
    };
    match kind {
        "date" => age(value, now),
        "integer" | "number" | "boolean" => (*value).clone(),
        _ => match value {
            Value::String(text) => json!(text),
            other => json!(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_print_as_kubectl_prints_them() {
        assert_eq!(human_duration(-5), "<invalid>");
        assert_eq!(human_duration(59), "59s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(400 * 86400), "400d");
        assert_eq!(human_duration(800 * 86400), "2y70d");
    }

    #[test]
    fn printer_column_paths_select_like_kubernetes() {
        let object = json!({
            "metadata": {"annotations": {"sharding.projectsveltos.io/key": "s1"}},
            "status": {"ready": true, "featureSummaries": [
                {"featureID": "Helm", "status": "Provisioning"},
                {"featureID": "Resources", "status": "Provisioned"}
            ]},
            "spec": {"ports": [{"port": 80}, {"port": 443}]}
        });
        let now = Timestamp::now();
        let cell = |path: &str, kind: &str| path_cell(&object, &parse_path(path), kind, now);
        assert_eq!(cell(".status.ready", "boolean"), json!(true));
        assert_eq!(cell(".spec.ports[1].port", "integer"), json!(443));
        assert_eq!(
            cell(
                r".metadata.annotations['sharding\.projectsveltos\.io/key']",
                "string"
            ),
            json!("s1")
        );
        assert_eq!(
            cell(
                r#".status.featureSummaries[?(@.featureID=="Resources")].status"#,
                "string"
            ),
            json!("Provisioned")
        );
        assert_eq!(cell(".status.missing", "string"), Value::Null);
        assert_eq!(cell(".spec.ports[*].port", "integer"), json!(80));
    }
}
