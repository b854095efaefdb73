//! Prints ns per Lua evaluation for go-baseline's `labels` and `https` scripts and for one
//! EventSource pass over 1,000 Services shaped like go-baseline's generator (its inputs,
//! reproduced in Rust: labels, selector, ports, managedFields; addresses not random).

use std::time::Instant;

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

fn main() {
    let services: Vec<Value> = (0..1000).map(service).collect();
    let Ok(runtime) = LuaRuntime::new(Limits::default()) else {
        eprintln!("cannot create the Lua runtime");
        return;
    };
    for (name, source) in [("labels", LABELS), ("https", HTTPS)] {
        let Ok(script) = runtime.script(name, source) else {
            eprintln!("cannot compile {name}");
            return;
        };
        let rounds = 20;
        let start = Instant::now();
        let mut matches = 0usize;
        for _ in 0..rounds {
            for service in &services {
                if evaluate_object(&runtime, &script, service).is_ok_and(|v| v.matching) {
                    matches += 1;
                }
            }
        }
        let elapsed = start.elapsed();
        let per = elapsed.as_nanos() / (rounds * services.len()) as u128;
        println!("lua_eval_{name}_ns_per_eval={per}");
        println!(
            "agent_pass_{name}_1000_services_us={}",
            elapsed.as_micros() / rounds as u128
        );
        println!("{name}_matches_per_pass={}", matches / rounds);
    }
}
