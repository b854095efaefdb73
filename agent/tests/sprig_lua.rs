//! Lua's `require("sprig")` is Sprig itself: the answers Go's Sprig gives (cases from
//! Masterminds/sprig's strings_test.go and huandu/xstrings' tests), the same as a template
//! calling the same function.
#![allow(clippy::unwrap_used)] // test set-up

use serde_json::json;
use sveltos_events_agent::{Limits, LuaRuntime, evaluate_event_source};

/// What `expression` (Lua, with `sprig` in scope) gives as a string.
fn lua(expression: &str) -> String {
    let script = format!(
        "local sprig = require(\"sprig\")\nfunction evaluate()\n  return {{matching = true, message = tostring({expression})}}\nend"
    );
    let source = serde_json::from_value(json!({
        "metadata": {"name": "sprig"},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Service",
                 "evaluate": script}]}
    }))
    .unwrap();
    let service = json!({"apiVersion": "v1", "kind": "Service",
                         "metadata": {"name": "s", "namespace": "default"}});
    let runtime = LuaRuntime::new(Limits::default()).unwrap();
    let evaluation = evaluate_event_source(&runtime, &source, &[service]).unwrap();
    evaluation.outcomes[0].message.clone()
}

/// What a template calling the same function gives.
fn template(action: &str) -> String {
    let funcs = std::sync::Arc::new(template::sprig::sprig_funcs());
    let parsed = template::Template::parse("t", action, funcs, Default::default()).unwrap();
    parsed.execute(&template::Value::Null).unwrap()
}

#[test]
fn case_functions_split_words_as_go_does() {
    for (function, input, go) in [
        ("snakecase", "FooBar", "foo_bar"),
        ("snakecase", "HTTPServer", "http_server"),
        ("snakecase", "foo-bar baz", "foo_bar_baz"),
        ("kebabcase", "HelloWorld_x", "hello-world-x"),
        ("camelcase", "foo_bar", "FooBar"),
        ("camelcase", "http_server", "HttpServer"),
    ] {
        let from_lua = lua(&format!("sprig.{function}({input:?})"));
        assert_eq!(from_lua, go, "sprig.{function}({input:?}) in Lua");
        assert_eq!(
            template(&format!("{{{{ {function} {input:?} }}}}")),
            go,
            "{function} in a template"
        );
    }
}

#[test]
fn quoting_escapes_as_go_fmt_q_does() {
    for (input, go) in [
        ("a", r#""a""#),
        ("say \"hi\"\t", r#""say \"hi\"\t""#),
        ("\u{7f}é", r#""\x7fé""#),
    ] {
        let lua_literal = input
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\t', "\\t")
            .replace('\u{7f}', "\\127");
        assert_eq!(
            lua(&format!("sprig.quote(\"{lua_literal}\")")),
            go,
            "quote {input:?}"
        );
    }
    assert_eq!(lua("sprig.squote(\"a\")"), "'a'");
}

#[test]
fn the_other_functions_answer_as_templates_do() {
    for (expression, action) in [
        ("sprig.trunc(3, \"abcdef\")", "{{ trunc 3 \"abcdef\" }}"),
        ("sprig.trunc(-3, \"abcdef\")", "{{ trunc -3 \"abcdef\" }}"),
        (
            "sprig.substr(1, 3, \"abcdef\")",
            "{{ substr 1 3 \"abcdef\" }}",
        ),
        ("sprig.nospace(\" a b \")", "{{ nospace \" a b \" }}"),
        ("sprig.b64enc(\"hello\")", "{{ b64enc \"hello\" }}"),
        ("sprig.b64dec(\"aGVsbG8=\")", "{{ b64dec \"aGVsbG8=\" }}"),
        ("sprig.b64dec(\"!\")", "{{ b64dec \"!\" }}"),
        ("sprig.indent(2, \"a\\nb\")", "{{ indent 2 \"a\\nb\" }}"),
        ("sprig.base(\"/a/b.txt\")", "{{ base \"/a/b.txt\" }}"),
        (
            "sprig.ternary(\"y\", \"n\", true)",
            "{{ ternary \"y\" \"n\" true }}",
        ),
        ("sprig.empty(\"\")", "{{ empty \"\" }}"),
        ("sprig.empty(0)", "{{ empty 0 }}"),
        (
            "table.concat(sprig.sortAlpha({\"b\", \"a\"}), \",\")",
            "{{ sortAlpha (list \"b\" \"a\") | join \",\" }}",
        ),
        (
            "table.concat(sprig.uniq({\"a\", \"a\", \"b\"}), \",\")",
            "{{ uniq (list \"a\" \"a\" \"b\") | join \",\" }}",
        ),
    ] {
        assert_eq!(lua(expression), template(action), "{expression}");
    }
}

#[test]
fn bytes_nil_and_integers_keep_their_lua_meaning() {
    // Binary data survives a round trip (Lua strings, like Go's, are bytes).
    assert_eq!(
        lua("sprig.b64dec(sprig.b64enc('\\255\\0\\254')) == '\\255\\0\\254'"),
        "true"
    );
    assert_eq!(lua("sprig.b64enc('\\255')"), "/w==");
    // A nil chosen is nil, not a truthy placeholder.
    assert_eq!(lua("sprig.ternary(nil, 'x', true) == nil"), "true");
    // A float with a fraction is not an integer.
    let said = lua("select(2, sprig.trunc(2.9, 'abc'))");
    assert_eq!(said, "sprig.trunc: argument 1: 2.9 is not an integer");
    assert_eq!(lua("sprig.trunc(2.0, 'abc')"), "ab");
}

#[test]
fn wrong_calls_are_said_not_raised() {
    let said = lua("select(2, sprig.trunc(\"x\"))");
    assert_eq!(said, "sprig.trunc wants 2 arguments, got 1");
    let said = lua("select(2, sprig.trunc({}, \"abc\"))");
    assert!(said.starts_with("sprig.trunc: argument 1: "), "{said}");
}
