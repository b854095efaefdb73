//! Objects reach scripts as shells filled on first touch; no script can tell them from the
//! tables a whole conversion makes. Each script here writes what it saw into its message, and
//! the verdict must equal the one of the same call on an eagerly converted object.
#![allow(clippy::unwrap_used)] // test set-up

use mlua::Value as LuaValue;
use serde_json::{Value, json};
use sveltos_events_agent::convert::to_lua;
use sveltos_events_agent::verdict::{Verdict, evaluate_aggregated, evaluate_object};
use sveltos_events_agent::{Limits, LuaRuntime};

/// The verdict of `script` over `object` converted whole before the call, as before shells.
/// `source` differs from the lazy run's only by a trailing newline, so that each run has a
/// script of its own, compiled under the same `name`.
fn eager(
    runtime: &LuaRuntime,
    name: &str,
    source: &str,
    object: &Value,
) -> Result<Verdict, String> {
    let script = runtime.script(name, &format!("{source}\n"))?;
    let arg = runtime.guarded(|lua| to_lua(lua, object))?;
    let LuaValue::Table(out) = runtime.call_evaluate(&script, "obj", arg)? else {
        return Err("lua script output is not a lua table".into());
    };
    let matching = out.raw_get::<Option<bool>>("matching").unwrap_or_default();
    let message = out.raw_get::<Option<String>>("message").unwrap_or_default();
    Ok(Verdict {
        matching: matching.unwrap_or(false),
        message: message.unwrap_or_default(),
    })
}

fn objects() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "apps", "uid": "u1", "resourceVersion": "7",
                "labels": {"app": "web", "sveltos": "fv", "tier": "front"},
                "annotations": {"a": "1"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:ports": {".": {}}}}}]},
            "spec": {"clusterIPs": ["10.0.0.2", "10.0.0.1"], "type": "ClusterIP",
                "ports": [{"name": "https", "port": 443, "targetPort": "https"},
                          {"name": "http", "port": 80, "targetPort": 8080}],
                "selector": {}, "weights": [1.5, 2.0, -3], "gaps": [null, 1, null]},
            "status": {"loadBalancer": {}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "empty", "namespace": "apps", "labels": null},
            "data": {}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "deep", "namespace": "apps"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "nginx:1", "env": [{"name": "A", "value": "x"}]}]}}}}),
    ]
}

/// Scripts that reach objects in every way Lua offers: indexing, iteration, the raw
/// functions, metatables, the table library, helpers that read tables, writes and deletes.
const SCRIPTS: &[&str] = &[
    r#"function evaluate() local hs = {} hs.matching = obj.metadata.labels ~= nil and obj.metadata.labels.sveltos == "fv" return hs end"#,
    r#"function evaluate()
  local keys = {}
  for k, v in pairs(obj) do keys[#keys + 1] = k .. "=" .. type(v) end
  table.sort(keys)
  return {message = table.concat(keys, ",")}
end"#,
    r#"function evaluate()
  local seen = {}
  for k, v in pairs(obj.metadata) do seen[#seen + 1] = k end
  return {message = table.concat(seen, ",")}
end"#,
    r#"function evaluate()
  local labels = obj.metadata.labels or {}
  return {message = tostring(next(labels) ~= nil) .. " " .. tostring(next(obj.status or {}))}
end"#,
    r#"function evaluate()
  local spec = obj.spec or {}
  return {message = tostring(rawget(obj.metadata, "name")) .. " " .. tostring(rawlen(spec.ports or {})) .. " " .. tostring(#(spec.clusterIPs or {}))}
end"#,
    r#"function evaluate()
  return {message = tostring(getmetatable(obj)) .. tostring(getmetatable(obj.metadata)), matching = rawequal(obj.metadata, obj.metadata)}
end"#,
    r#"function evaluate()
  if obj.metadata.labels then obj.metadata.labels.app = nil end
  local labels = obj.metadata.labels or {}
  return {message = tostring(labels.app) .. " " .. tostring(labels.tier)}
end"#,
    r#"function evaluate()
  if obj.metadata.labels then rawset(obj.metadata.labels, "tier", nil) end
  local labels = obj.metadata.labels or {}
  return {message = tostring(labels.tier) .. tostring(labels.app)}
end"#,
    r#"function evaluate()
  local spec = obj.spec or {}
  setmetatable(spec, {__index = function(t, k) return "default-" .. k end})
  return {message = tostring(spec.type) .. " " .. tostring(spec.missing)}
end"#,
    r#"function evaluate()
  local json = require("json")
  return {message = json.encode(obj)}
end"#,
    r#"function evaluate()
  local ports = (obj.spec or {}).ports or {}
  local out = {}
  for i, p in ipairs(ports) do out[#out + 1] = i .. ":" .. tostring(p.port) .. ":" .. tostring(p.targetPort) end
  table.insert(ports, {port = 9})
  out[#out + 1] = tostring(#ports)
  return {message = table.concat(out, " "), matching = #ports > 2}
end"#,
    r#"function evaluate()
  local ips = (obj.spec or {}).clusterIPs
  if ips == nil then return {message = "none"} end
  table.sort(ips)
  return {message = table.concat(ips, "|")}
end"#,
    r#"function evaluate()
  local w = (obj.spec or {}).weights or {}
  local g = (obj.spec or {}).gaps or {}
  local parts = {}
  for i = 1, #w do parts[#parts + 1] = tostring(w[i]) .. math.type(w[i]) end
  parts[#parts + 1] = tostring(#g) .. tostring(g[1] == require("json").null)
  return {message = table.concat(parts, " ")}
end"#,
    r#"function evaluate()
  local sprig = require("sprig")
  local name = obj.metadata.name
  obj.metadata.name = "renamed"
  return {message = sprig.quote(name) .. obj.metadata.name .. tostring(obj.metadata.namespace)}
end"#,
    r#"function evaluate()
  local c = ((((obj.spec or {}).template or {}).spec or {}).containers or {})[1]
  if c == nil then return {} end
  return {message = c.image .. c.env[1].name .. tostring((table.unpack(c.env)).value), matching = true}
end"#,
    r#"function evaluate()
  local n = 0
  for k in pairs(obj.data or {}) do n = n + 1 end
  return {message = tostring(n) .. type(obj.data) .. type(obj.metadata.labels)}
end"#,
];

#[test]
fn every_script_sees_the_object_as_a_whole_conversion_shows_it() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    for (s, source) in SCRIPTS.iter().enumerate() {
        for object in objects() {
            let name = format!("s{s}");
            let script = runtime.script(&name, source).unwrap();
            let lazy = evaluate_object(&runtime, &script, &object);
            let reference = eager(&runtime, &name, source, &object);
            assert_eq!(
                lazy, reference,
                "script {s} over {}",
                object["metadata"]["name"]
            );
        }
    }
}

#[test]
fn errors_read_the_same_whether_or_not_the_object_was_touched() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let cases = [
        "function evaluate() next() end",
        "function evaluate() rawget() end",
        "function evaluate() return {matching = obj.spec.nothing.deeper} end",
        "function evaluate() return obj.metadata end",
        "function evaluate() getmetatable() end",
    ];
    for source in cases {
        let script = runtime.script("e", source).unwrap();
        for object in objects() {
            let lazy = evaluate_object(&runtime, &script, &object);
            let reference = eager(&runtime, "e", source, &object);
            assert_eq!(
                lazy, reference,
                "{source} over {}",
                object["metadata"]["name"]
            );
        }
    }
}

#[test]
fn objects_of_any_depth_are_read_and_only_turning_them_back_into_json_is_bounded() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let mut deep = json!("bottom");
    for _ in 0..300 {
        deep = json!({ "d": deep });
    }
    let object = json!({"metadata": {"name": "x"}, "spec": deep});
    let walk = r#"function evaluate()
  local node = obj.spec
  while type(node) == "table" do node = node.d end
  return {message = node}
end"#;
    let script = runtime.script("walk", walk).unwrap();
    let verdict = evaluate_object(&runtime, &script, &object).unwrap();
    assert_eq!(verdict.message, "bottom");
    let encode = r#"function evaluate()
  local text, err = require("json").encode(obj)
  return {message = tostring(text) .. ": " .. tostring(err)}
end"#;
    let script = runtime.script("encode", encode).unwrap();
    let verdict = evaluate_object(&runtime, &script, &object).unwrap();
    assert!(verdict.message.contains("nested too deeply"), "{verdict:?}");
}

#[test]
fn an_object_kept_past_its_call_is_an_error_when_read_not_a_stale_read() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let source = r#"
local kept
function evaluate()
  local hs = {matching = true}
  if kept ~= nil then hs.message = kept.metadata.name end
  kept = obj
  return hs
end"#;
    let script = runtime.script("k", source).unwrap();
    let objects = objects();
    let first = evaluate_object(&runtime, &script, &objects[0]).unwrap();
    assert!(first.matching);
    let second = evaluate_object(&runtime, &script, &objects[1]).unwrap_err();
    assert!(
        second.contains("can be read only during that call"),
        "{second}"
    );
    // The runtime goes on: the next call reads its own object.
    let fresh = runtime
        .script(
            "f",
            "function evaluate() return {message = obj.metadata.name} end",
        )
        .unwrap();
    assert_eq!(
        evaluate_object(&runtime, &fresh, &objects[2])
            .unwrap()
            .message,
        "deep"
    );
}

#[test]
fn aggregated_scripts_return_the_objects_they_were_given_whole() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let source = r#"
function evaluate()
  local hs = {resources = {}}
  for _, r in ipairs(resources) do
    if r.kind ~= "ConfigMap" then table.insert(hs.resources, r) end
  end
  hs.resources[1].metadata.labels.added = "yes"
  hs.message = tostring(#resources)
  return hs
end"#;
    let script = runtime.script("a", source).unwrap();
    let objects = objects();
    let out = evaluate_aggregated(&runtime, &script, &objects).unwrap();
    assert_eq!(out.message, "3");
    let mut expected = objects[0].clone();
    expected["metadata"]["labels"]["added"] = json!("yes");
    // Lua keeps no difference between 2.0 and 2 that survives the way back (as before).
    expected["spec"]["weights"] = json!([1.5, 2, -3]);
    assert_eq!(out.resources, [expected, objects[2].clone()]);
}
