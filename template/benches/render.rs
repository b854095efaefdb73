//! Render benchmark on the seeds' NetworkPolicy and Ingress templates with the inputs of
//! shared/tools/go-baseline (`go-baseline -dump`), printing ns per render cold (parse +
//! execute), cached (execute only) and from JSON (the manager's render: the data converted
//! from JSON, then executed), in go-baseline's `name_ns_per_op=` format.
//!
//! Run: `cargo bench -p sveltos-events-template --bench render [-- MIN_SECONDS [NAME]]` (NAME
//! keeps the measurements whose name contains it, for a profiler); with
//! `GO_BASELINE=path/to/go-baseline` Go's figures for the same templates and inputs are measured
//! in the same run and printed beside these, with the ratio (Go as Sveltos renders, parsing
//! each time, is `go_tmpl_sveltos_*`; Go with a cached parse is `go_tmpl_cached_*`).

#[path = "support/go_baseline.rs"]
mod go_baseline;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use go_baseline::go_figures;
use sveltos_events_template::sprig::sprig_funcs;
use sveltos_events_template::sveltos::sveltos_event_funcs;
use sveltos_events_template::{FuncMap, MissingKey, Options, Template, Value};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/data")
}

fn read(name: &str) -> Result<String, String> {
    std::fs::read_to_string(data_dir().join(name)).map_err(|e| format!("reading {name}: {e}"))
}

fn json(text: &str) -> Result<Value, String> {
    serde_json::from_str::<serde_json::Value>(text)
        .map(Value::from)
        .map_err(|e| e.to_string())
}

fn jsonl(name: &str) -> Result<Vec<Value>, String> {
    read(name)?.lines().map(json).collect()
}

/// `objectRef` of go-baseline: the event-manager's reference to a matching resource.
fn reference(object: &Value) -> Value {
    let field = |path: &[&str]| {
        let mut current = object.clone();
        for key in path {
            current = match &current {
                Value::Map(map) => map.get(key).unwrap_or(Value::Null),
                _ => Value::Null,
            };
        }
        current
    };
    Value::map(BTreeMap::from([
        ("Kind".to_string(), field(&["kind"])),
        ("Namespace".to_string(), field(&["metadata", "namespace"])),
        ("Name".to_string(), field(&["metadata", "name"])),
        ("UID".to_string(), field(&["metadata", "uid"])),
        ("APIVersion".to_string(), field(&["apiVersion"])),
        (
            "ResourceVersion".to_string(),
            field(&["metadata", "resourceVersion"]),
        ),
        ("FieldPath".to_string(), Value::string("")),
    ]))
}

/// Runs `f` repeatedly for at least `min` and returns ns per call.
fn measure(min: Duration, mut f: impl FnMut(usize) -> Result<(), String>) -> Result<f64, String> {
    let start = Instant::now();
    let mut calls = 0usize;
    while start.elapsed() < min || calls < 100 {
        f(calls)?;
        calls += 1;
    }
    Ok(start.elapsed().as_nanos() as f64 / calls as f64)
}

fn run() -> Result<(), String> {
    let mut positional = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let min = Duration::from_secs_f64(
        positional
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or(1.0),
    );
    let only = positional.next();
    let mut funcs = FuncMap::new();
    funcs.extend(&sprig_funcs());
    funcs.extend(&sveltos_event_funcs());
    let funcs = Arc::new(funcs);
    // Sveltos renders event templates with missingkey=error.
    let options = Options {
        missing_key: MissingKey::Error,
        ..Options::default()
    };
    let cluster = json(&read("cluster.json")?)?;
    let services = jsonl("services.jsonl")?;
    let one: Vec<Value> = services
        .iter()
        .map(|service| {
            Value::map(BTreeMap::from([
                ("MatchingResource".to_string(), reference(service)),
                ("Resource".to_string(), service.clone()),
                ("CloudEvent".to_string(), Value::Null),
                ("Cluster".to_string(), cluster.clone()),
            ]))
        })
        .collect();
    let ingress_services = jsonl("ingress-services.jsonl")?;
    let all = Value::map(BTreeMap::from([
        (
            "MatchingResources".to_string(),
            Value::list(ingress_services.iter().map(reference).collect()),
        ),
        (
            "Resources".to_string(),
            Value::list(ingress_services.clone()),
        ),
        ("CloudEvents".to_string(), Value::Null),
        ("Cluster".to_string(), cluster.clone()),
    ]));

    // The manager holds its data as JSON and converts it for each render (controller's
    // `GoTemplates::render`): `tmpl_from_json_*` measures that conversion with the render.
    let all_json = all.to_json().map_err(|e| e.to_string())?;

    let netpol = read("networkpolicy.tmpl")?;
    let ingress = read("ingress.tmpl")?;
    let parse = |name: &str, text: &str| {
        Template::parse(name, text, Arc::clone(&funcs), options.clone()).map_err(|e| e.to_string())
    };

    // Correctness first: the same bytes as Go.
    let netpol_cached = parse("netpol", &netpol)?;
    let first = netpol_cached.execute(&one[0]).map_err(|e| e.to_string())?;
    let ingress_cached = parse("ingress", &ingress)?;
    let ingress_out = ingress_cached.execute(&all).map_err(|e| e.to_string())?;
    let netpol_ok = first == read("expected_networkpolicy_0.yaml")?;
    let ingress_ok = ingress_out == read("expected_ingress.yaml")?;
    println!("netpol_output_matches_go={netpol_ok}");
    println!("ingress_output_matches_go={ingress_ok}");

    let n = one.len();
    type Render<'a> = Box<dyn FnMut(usize) -> Result<(), String> + 'a>;
    let renders: [(&str, Render); 5] = [
        (
            "tmpl_cold_netpol",
            Box::new(|i| {
                let t = parse("netpol", &netpol)?;
                black_box(t.execute(&one[i % n]).map_err(|e| e.to_string())?);
                Ok(())
            }),
        ),
        (
            "tmpl_cached_netpol",
            Box::new(|i| {
                black_box(
                    netpol_cached
                        .execute(&one[i % n])
                        .map_err(|e| e.to_string())?,
                );
                Ok(())
            }),
        ),
        (
            "tmpl_cold_ingress",
            Box::new(|_| {
                let t = parse("ingress", &ingress)?;
                black_box(t.execute(&all).map_err(|e| e.to_string())?);
                Ok(())
            }),
        ),
        (
            "tmpl_cached_ingress",
            Box::new(|_| {
                black_box(ingress_cached.execute(&all).map_err(|e| e.to_string())?);
                Ok(())
            }),
        ),
        (
            "tmpl_from_json_ingress",
            Box::new(|_| {
                let data = Value::from(&all_json);
                black_box(ingress_cached.execute(&data).map_err(|e| e.to_string())?);
                Ok(())
            }),
        ),
    ];
    let mut results = Vec::new();
    for (name, render) in renders {
        if only.as_deref().is_none_or(|only| name.contains(only)) {
            results.push((name, measure(min, render)?));
        }
    }
    for (name, ns) in &results {
        println!("{name}_ns_per_op={ns:.1}");
    }
    if let Some(go) = std::env::var_os("GO_BASELINE") {
        let theirs = go_figures(&PathBuf::from(go), "tmpl_sveltos_,tmpl_cached_")?;
        for (ours, ns) in &results {
            // Go's cold render is the one Sveltos does: parse on every render.
            let go_name = ours.replace("tmpl_cold_", "tmpl_sveltos_");
            if let Some(go_ns) = theirs.get(&go_name) {
                println!("go_{go_name}_ns_per_op={go_ns:.1}");
                println!("speedup_{ours}_vs_go_{go_name}={:.1}x", go_ns / ns);
            }
        }
    }
    if netpol_ok && ingress_ok {
        Ok(())
    } else {
        Err("rendered output differs from Go's".to_string())
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("render benchmark failed: {error}");
            ExitCode::FAILURE
        }
    }
}
