//! The manager's script check (syntax, without a Lua VM) against the agent's (the Lua VM
//! loading the script) on every EventSource of the fixture suites: both must call the same
//! scripts valid, apart from the differences written below.

#![allow(clippy::unwrap_used)] // test set-up

use std::path::{Path, PathBuf};

use agent::{Limits, LuaRuntime, evaluate};
use controller::manager::scripts;

fn event_sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            event_sources(&path, found);
        } else if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("eventsource"))
        {
            found.push(path);
        }
    }
}

#[test]
fn the_syntax_check_agrees_with_the_lua_vm_on_every_fixture() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    event_sources(&root.join("../../agent/tests/fixtures"), &mut paths);
    event_sources(&root.join("../../../shared/conformance"), &mut paths);
    // The agent's own fixtures and the shared conformance suites (beside the repository).
    assert!(paths.len() >= 83, "only {} EventSources found", paths.len());
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let mut disagreements = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let source = api::load::event_source_from_yaml(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let by_syntax = scripts::check(&source);
        let by_vm = evaluate::validate(&runtime, &source);
        // The VM runs the script's top level too: a script whose top level loops forever or
        // exhausts memory fails there and is valid syntax (its clusters then say so).
        let runs_badly = matches!(&by_vm, Err(e) if e.to_string().contains("budget")
            || e.to_string().contains("memory"));
        if by_syntax.is_ok() != by_vm.is_ok() && !(by_syntax.is_ok() && runs_badly) {
            disagreements.push(format!(
                "{}: syntax {:?}, vm {:?}",
                path.display(),
                by_syntax,
                by_vm.map_err(|e| e.to_string())
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// What the syntax check and the Lua VM say of an EventSource whose one script is `script`.
fn both(runtime: &LuaRuntime, script: &str) -> (Result<(), String>, Result<(), String>) {
    let source: api::v1beta1::EventSource = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "es"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Service",
                 "evaluate": script}]}
    }))
    .unwrap();
    let by_vm = evaluate::validate(runtime, &source).map_err(|e| e.to_string());
    (scripts::check(&source), by_vm)
}

#[test]
fn both_offer_the_same_modules() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    for module in ["json", "strings", "runes", "sprig", "socket", "os", "io"] {
        let script =
            format!("local m = require(\"{module}\")\nfunction evaluate() return {{}} end");
        assert_alike(&runtime, &script);
    }
}

/// Both call `script` valid, or both refuse it and the VM's message says the check's.
fn assert_alike(runtime: &LuaRuntime, script: &str) {
    let (by_syntax, by_vm) = both(runtime, script);
    assert_eq!(
        by_syntax.is_ok(),
        by_vm.is_ok(),
        "{script}: {by_syntax:?} {by_vm:?}"
    );
    if let (Err(syntax), Err(vm)) = (&by_syntax, &by_vm) {
        // "...evaluate: [line N: ]what" here, "...evaluate:N: what [at line N]" from Lua.
        let what = syntax
            .split_once(": ")
            .map_or(syntax.as_str(), |(_, rest)| rest);
        let what = match what.split_once(": ") {
            Some((line, rest)) if line.starts_with("line ") => rest,
            _ => what,
        };
        assert!(vm.contains(what), "{script}: {vm} / {syntax}");
    }
}

#[test]
fn both_refuse_what_nests_deeper_than_lua_allows() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let body = |depth: usize| {
        [
            format!("return {}1{}", "(".repeat(depth), ")".repeat(depth)),
            format!("return {}1{}", "{".repeat(depth), "}".repeat(depth)),
            format!("return 'a'{}", " .. 'a'".repeat(depth)),
            format!("return {}1", "- ".repeat(depth)),
            format!(
                "{}return {{}} {}",
                "do ".repeat(depth),
                "end ".repeat(depth)
            ),
        ]
    };
    for depth in [50, 150, 190, 260, 1_000] {
        for (form, body) in body(depth).into_iter().enumerate() {
            let script = format!("function evaluate() {body} end");
            let (by_syntax, by_vm) = both(&runtime, &script);
            assert_eq!(
                by_syntax.is_ok(),
                by_vm.is_ok(),
                "depth {depth}, form {form}: {by_syntax:?} / {by_vm:?}"
            );
            assert_eq!(
                by_vm.is_ok(),
                depth < 200,
                "depth {depth}, form {form}: {by_vm:?}"
            );
        }
    }
}

/// Lua's compiler refuses some scripts that parse (lparser.c's semantic errors); the check
/// refuses the same ones, in Lua's words.
#[test]
fn what_lua_refuses_after_parsing_is_refused_alike() {
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    // The rules of the Lua 5.4 manual (3.3.4 goto and labels, 3.3.7 attributes, 3.4.11 varargs).
    let cases = [
        "while true do break; local x = 1 end",
        "break",
        "if true then break end",
        "goto nowhere",
        "do goto done end ::done::",
        "goto later; local y = 1; ::later:: print(y)",
        "::a:: ::a::",
        "local x <const> = 1; x = 2",
        "local x <close> = nil; x = 2",
        "local x <what> = 1",
        "local a <close>, b <close> = nil, nil",
        "local function f() return ... end",
        "local t = {...}",
        "for i = 1, 2 do local function g() goto cont end ::cont:: end",
        "repeat local z = 1; goto out until z ::out::",
        "local x <const> = 1; local function f() x = 3 end",
        "local x <const> = 1; do local x = 2; x = 3 end",
        "repeat local a = 1; if a then goto continue end; local b = 1 ::continue:: until b",
        "local x <const> = 1; repeat local x = 2 until (function() x = 3 return true end)()",
        "repeat local x <const> = 1 until (function() x = 2 end)",
        "local f <const> = 1; function f() end",
        "local f <const> = 1; local t = {}; function t.f() end",
    ];
    for case in cases {
        assert_alike(
            &runtime,
            &format!("{case}\nfunction evaluate() return {{}} end"),
        );
    }
}
