//! Prints ns per Lua evaluation for go-baseline's `labels` and `https` scripts and for one
//! EventSource pass over 1,000 Services. With `GO_BASELINE=path/to/go-baseline` the inputs are
//! the ones go-baseline dumps (`-dump`), the verdicts are checked against Go's, and Go's own
//! figures are measured in the same run and printed with the ratio. Without it, Services shaped
//! like go-baseline's generator are built here.

#[path = "../../template/benches/support/go_baseline.rs"]
mod go_baseline;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use go_baseline::go_figures;
use serde_json::{Value, json};
use sveltos_events_agent::verdict::evaluate_object;
use sveltos_events_agent::{Limits, LuaRuntime};

const LABELS: &str = r#"function evaluate()
  hs = {}
  hs.matching = false
  hs.message = ""
  if obj.metadata.labels ~= nil then
    for key, value in pairs(obj.metadata.labels) do
      if key == "sveltos" then
        if value == "fv" then
          hs.matching = true
        end
      end
    end
  end
  return hs
end
"#;

const HTTPS: &str = r#"function evaluate()
  hs = {}
  hs.matching = false
  if obj.spec.ports ~= nil then
    for _,p in pairs(obj.spec.ports) do
      if p.port == 443 or p.port == 8443 then
        hs.matching = true
      end
    end
  end
  return hs
end
"#;

fn service(i: usize) -> Value {
    let tiers = ["frontend", "backend", "db"];
    let mut labels = json!({"app": format!("app-{}", i % 50), "tier": tiers[i % 3], "app.kubernetes.io/managed-by": "helm"});
    if i.is_multiple_of(3) {
        labels["sveltos"] = json!("fv");
    } else if i.is_multiple_of(7) {
        labels["sveltos"] = json!("other");
    }
    let mut ports =
        vec![json!({"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080})];
    match i % 5 {
        0 => {
            ports.push(json!({"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443}))
        }
        1 => ports.push(
            json!({"name": "https-alt", "port": 8443, "protocol": "TCP", "targetPort": "https"}),
        ),
        _ => {}
    }
    if i.is_multiple_of(4) {
        ports.push(json!({"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9090}));
    }
    let ip = format!("10.96.{}.{}", i % 250 + 1, (i * 7) % 250 + 1);
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": format!("svc-{i:05}"), "namespace": format!("ns-{:02}", i % 20),
            "labels": labels, "annotations": {"meta.helm.sh/release-name": format!("rel-{}", i % 13)},
            "uid": format!("00000000-0000-0000-0000-{i:012}"), "resourceVersion": format!("{}", 1000 + i),
            "creationTimestamp": "2024-01-10T10:20:30Z",
            "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "helm", "operation": "Update",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:tier": {}}}, "f:spec": {"f:ports": {}}}}]
        },
        "spec": {"clusterIP": ip, "clusterIPs": [ip], "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "ports": ports,
            "selector": {"app.kubernetes.io/name": format!("app-{}", i % 50), "app.kubernetes.io/instance": format!("rel-{}", i % 13)},
            "sessionAffinity": "None", "type": "ClusterIP"},
        "status": {"loadBalancer": {}}
    })
}

/// The inputs of one run: Services and the two scripts, with Go's expected matches if known.
struct Inputs {
    services: Vec<Value>,
    scripts: Vec<(&'static str, String)>,
    expected: Option<Vec<Vec<String>>>,
}

fn builtin_inputs() -> Inputs {
    Inputs {
        services: (0..1000).map(service).collect(),
        scripts: vec![("labels", LABELS.to_owned()), ("https", HTTPS.to_owned())],
        expected: None,
    }
}

/// go-baseline's own inputs (`-dump`): the exact Services and scripts it measures.
fn dumped_inputs(go: &Path, dir: &Path) -> Result<Inputs, String> {
    let status = Command::new(go)
        .arg("-dump")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", go.display()))?;
    if !status.success() {
        return Err(format!("{} -dump failed: {status}", go.display()));
    }
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| format!("cannot read {name}: {e}"))
    };
    let services = read("services.jsonl")?
        .lines()
        .map(|line| serde_json::from_str(line).map_err(|e| format!("services.jsonl: {e}")))
        .collect::<Result<Vec<Value>, String>>()?;
    let mut scripts = Vec::new();
    let mut expected = Vec::new();
    for name in ["labels", "https"] {
        scripts.push((name, read(&format!("{name}.lua"))?));
        let names = read(&format!("expected_{name}_matches.txt"))?;
        expected.push(names.lines().map(str::to_owned).collect());
    }
    Ok(Inputs {
        services,
        scripts,
        expected: Some(expected),
    })
}

/// Passes over the Services measured per script; the median is printed.
const BATCHES: usize = 31;

fn main() {
    let go = std::env::var_os("GO_BASELINE").map(PathBuf::from);
    let dump = std::env::temp_dir().join(format!("lua-eval-inputs-{}", std::process::id()));
    let inputs = match &go {
        Some(go) => match dumped_inputs(go, &dump) {
            Ok(inputs) => {
                println!(
                    "inputs=go-baseline -dump ({} Services)",
                    inputs.services.len()
                );
                inputs
            }
            Err(error) => {
                eprintln!("{error}; using the built-in inputs");
                builtin_inputs()
            }
        },
        None => {
            println!(
                "inputs=built-in (set GO_BASELINE=path/to/go-baseline for its inputs and ratios)"
            );
            builtin_inputs()
        }
    };
    let _ = std::fs::remove_dir_all(&dump);
    let Ok(runtime) = LuaRuntime::new(Limits::default()) else {
        eprintln!("cannot create the Lua runtime");
        return;
    };
    let mut ours = BTreeMap::new();
    for (index, (name, source)) in inputs.scripts.iter().enumerate() {
        let Ok(script) = runtime.script(name, source) else {
            eprintln!("cannot compile {name}");
            return;
        };
        let matched: Vec<String> = inputs
            .services
            .iter()
            .filter(|s| evaluate_object(&runtime, &script, s).is_ok_and(|v| v.matching))
            .filter_map(|s| s.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        println!("{name}_matches_per_pass={}", matched.len());
        if let Some(expected) = inputs.expected.as_ref().and_then(|e| e.get(index)) {
            println!("{name}_same_matches_as_go={}", &matched == expected);
        }
        // Batches of one pass each; the median is what a busy machine still shows steadily.
        let mut batches: Vec<f64> = (0..BATCHES)
            .map(|_| {
                let start = Instant::now();
                for service in &inputs.services {
                    let _ = std::hint::black_box(evaluate_object(&runtime, &script, service));
                }
                start.elapsed().as_nanos() as f64 / inputs.services.len() as f64
            })
            .collect();
        batches.sort_by(f64::total_cmp);
        let per = batches[BATCHES / 2];
        println!("lua_eval_{name}_ns_per_eval={per:.0}");
        println!("lua_eval_{name}_ns_per_eval_min={:.0}", batches[0]);
        println!(
            "agent_pass_{name}_{}_services_us={:.0}",
            inputs.services.len(),
            per * inputs.services.len() as f64 / 1000.0
        );
        ours.insert(*name, per);
    }
    let Some(go) = go else {
        return;
    };
    // As Sveltos does it (`lua_sveltos_`) and with one state and the script compiled once
    // (`lua_reuse_`).
    match go_figures(&go, "lua_sveltos_,lua_reuse_") {
        Ok(figures) => {
            for (name, per) in &ours {
                for way in ["sveltos", "reuse"] {
                    if let Some(theirs) = figures.get(&format!("lua_{way}_{name}")) {
                        println!("go_lua_{way}_{name}_ns_per_eval={theirs:.0}");
                        println!("speedup_vs_go_{way}_{name}={:.1}x", theirs / per);
                    }
                }
            }
        }
        Err(error) => eprintln!("{error}"),
    }
}
