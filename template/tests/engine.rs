//! Behaviour beyond Go's own vectors: limits against hostile templates, sharing across
//! threads, and the number typing the seeds depend on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use sveltos_events_template::{Error, FuncMap, Limits, MissingKey, Options, Template, Value};

fn json(text: &str) -> Value {
    Value::from(serde_json::from_str::<serde_json::Value>(text).unwrap())
}

fn options(limits: Limits) -> Options {
    Options {
        limits,
        ..Options::default()
    }
}

fn render(text: &str, data: &Value, options: Options) -> Result<String, Error> {
    Template::parse("t", text, Arc::new(FuncMap::new()), options)?.execute(data)
}

#[test]
fn output_is_bounded() {
    let limits = Limits {
        max_output_bytes: 1000,
        ..Limits::default()
    };
    let text = r#"{{range $i := .}}{{range $j := $}}0123456789{{end}}{{end}}"#;
    let data = json(&format!("[{}]", vec!["0"; 100].join(",")));
    let error = render(text, &data, options(limits)).unwrap_err();
    assert!(matches!(error, Error::Limit(_)), "{error}");
    assert!(
        error.to_string().contains("output exceeds 1000 bytes"),
        "{error}"
    );
}

#[test]
fn steps_are_bounded() {
    let limits = Limits {
        max_steps: 10_000,
        ..Limits::default()
    };
    // 10^6 iterations of nested ranges over 100 ints, printing nothing.
    let text = "{{range .}}{{range $}}{{range $}}{{end}}{{end}}{{end}}";
    let data = json(&format!("[{}]", vec!["1"; 100].join(",")));
    let error = render(text, &data, options(limits)).unwrap_err();
    assert!(matches!(error, Error::Limit(_)), "{error}");
    assert!(
        error.to_string().contains("10000 evaluation steps"),
        "{error}"
    );
}

#[test]
fn wall_time_is_bounded() {
    let limits = Limits {
        max_steps: u64::MAX,
        timeout: Duration::from_millis(50),
        ..Limits::default()
    };
    let text = "{{range .}}{{range $}}{{range $}}{{range $}}{{end}}{{end}}{{end}}{{end}}";
    let data = json(&format!("[{}]", vec!["1"; 1000].join(",")));
    let error = render(text, &data, options(limits)).unwrap_err();
    assert!(matches!(error, Error::Limit(_)), "{error}");
    assert!(error.to_string().contains("ran longer than"), "{error}");
}

#[test]
fn recursion_through_templates_is_bounded() {
    let text = r#"{{define "loop"}}{{template "loop" .}}{{end}}{{template "loop" .}}"#;
    let error = render(text, &Value::Null, Options::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("exceeded maximum template depth (200)"),
        "{error}"
    );
}

#[test]
fn parse_nesting_is_bounded() {
    let deep = format!("{}x{}", "{{if 1}}".repeat(500), "{{end}}".repeat(500));
    let error = render(&deep, &Value::Null, Options::default()).unwrap_err();
    assert!(matches!(error, Error::Parse(_)), "{error}");
    assert!(
        error.to_string().contains("nesting deeper than 200"),
        "{error}"
    );
    let parens = format!("{{{{{}1{}}}}}", "(".repeat(500), ")".repeat(500));
    assert!(matches!(
        render(&parens, &Value::Null, Options::default()),
        Err(Error::Parse(_))
    ));
}

#[test]
fn a_parsed_template_is_shared_across_threads() {
    let template = Arc::new(
        Template::parse(
            "t",
            "{{.name}}-{{len .items}}",
            Arc::new(FuncMap::new()),
            Options::default(),
        )
        .unwrap(),
    );
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let template = Arc::clone(&template);
            std::thread::spawn(move || {
                let data = json(&format!(
                    r#"{{"name":"n{i}","items":[{}]}}"#,
                    vec!["1"; i].join(",")
                ));
                template.execute(&data).unwrap()
            })
        })
        .collect();
    let outputs: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(outputs, ["n0-0", "n1-1", "n2-2", "n3-3"]);
}

#[test]
fn json_integers_compare_with_integer_literals() {
    // The seeds' Ingress example: `eq .port 443` must hold for a JSON 443.
    let text =
        "{{range .spec.ports}}{{if or (eq .port 443) (eq .port 8443)}}{{.port}} {{end}}{{end}}";
    let data = json(r#"{"spec":{"ports":[{"port":80},{"port":443},{"port":8443}]}}"#);
    assert_eq!(
        render(text, &data, Options::default()).unwrap(),
        "443 8443 "
    );
    // A float in the data is a different type, as in Go.
    let floats = json(r#"{"spec":{"ports":[{"port":443.0}]}}"#);
    let error = render(text, &floats, Options::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("incompatible types for comparison"),
        "{error}"
    );
}

#[test]
fn missing_keys_follow_the_option() {
    let data = json(r#"{"a":{}}"#);
    assert_eq!(
        render("{{.a.b}}", &data, Options::default()).unwrap(),
        "<no value>"
    );
    let strict = Options {
        missing_key: MissingKey::Error,
        ..Options::default()
    };
    let error = render("{{.a.b}}", &data, strict).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"template: t:1:4: executing "t" at <.a.b>: map has no entry for key "b""#
    );
}

#[test]
fn ranges_over_integers_like_current_go() {
    assert_eq!(
        render(
            "{{range $i := 3}}{{$i}}{{end}}",
            &Value::Null,
            Options::default()
        )
        .unwrap(),
        "012"
    );
    let go123 = Options {
        range_over_int: false,
        ..Options::default()
    };
    assert!(render("{{range 3}}{{end}}", &Value::Null, go123).is_err());
}

fn sprig(text: &str) -> Result<String, Error> {
    let mut funcs = sveltos_events_template::sprig::sprig_funcs();
    funcs.extend(&sveltos_events_template::sveltos::sveltos_event_funcs());
    Template::parse("t", text, Arc::new(funcs), Options::default())?.execute(&Value::Null)
}

/// A loop can nest a map far deeper than any stack could recurse: 100,000 levels here.
fn deep(name: &str, bottom: &str) -> String {
    format!(
        r#"{{{{ ${name} := {bottom} }}}}{{{{ range until 100000 }}}}{{{{ ${name} = dict "a" ${name} }}}}{{{{ end }}}}"#
    )
}

#[test]
fn values_nested_deeper_than_the_stack_are_freed_printed_and_compared() {
    let d = deep("d", "dict");
    assert_eq!(sprig(&format!("{d}freed")).unwrap(), "freed");
    let printed = sprig(&format!("{d}{{{{ $d }}}}")).unwrap();
    assert!(
        printed == format!("{}map[]{}", "map[a:".repeat(100_000), "]".repeat(100_000)),
        "printed {} bytes",
        printed.len()
    );
    let (a, b, c) = (
        deep("a", "dict"),
        deep("b", "dict"),
        deep("c", r#"dict "z" 1"#),
    );
    assert_eq!(
        sprig(&format!(
            "{a}{b}{c}{{{{ has $a (list $b) }}}} {{{{ has $a (list $c) }}}}"
        ))
        .unwrap(),
        "true false"
    );
    let lists =
        r#"{{ $l := list }}{{ range until 100000 }}{{ $l = list $l }}{{ end }}{{ len $l }}"#;
    assert_eq!(sprig(lists).unwrap(), "1");
}

#[test]
fn recursive_walks_refuse_values_nested_deeper_than_their_limit() {
    let d = deep("d", "dict");
    // sprig's and libsveltos' encoders give "" when encoding fails.
    assert_eq!(
        sprig(&format!("{d}[{{{{ toJson $d }}}}][{{{{ toYaml $d }}}}]")).unwrap(),
        "[][]"
    );
    for call in [
        "deepCopy $d",
        "mergeOverwrite (dict) $d $d",
        r#"chainSetField (dict) "x" $d"#,
    ] {
        let error = sprig(&format!("{d}{{{{ {call} }}}}"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("value nested deeper than 200 levels"),
            "{call}: {error}"
        );
    }
    // Kubernetes objects nest far less: 150 levels still work.
    let shallow = r#"{{ $d := dict }}{{ range until 150 }}{{ $d = dict "a" $d }}{{ end }}"#;
    assert!(
        sprig(&format!("{shallow}{{{{ toJson (deepCopy $d) }}}}"))
            .unwrap()
            .starts_with(r#"{"a":{"a":"#)
    );
}

#[test]
fn a_map_cannot_be_made_to_hold_itself() {
    for change in [
        r#"set $d "me" $d"#,
        r#"set $d "l" (list (dict "in" $d))"#,
        r#"merge $d (dict "x" $d)"#,
    ] {
        let text = format!(r#"{{{{ $d := dict "k" 1 }}}}{{{{ $_ := {change} }}}}"#);
        let error = sprig(&text).unwrap_err().to_string();
        assert!(
            error.contains("a map cannot contain itself"),
            "{change}: {error}"
        );
    }
    // The same map twice, or merged into itself, is no cycle.
    assert_eq!(
        sprig(r#"{{ $d := dict "k" 1 }}{{ $e := dict "a" $d "b" $d }}{{ $_ := mergeOverwrite $d $d }}{{ $e }}"#).unwrap(),
        "map[a:map[k:1] b:map[k:1]]"
    );
}

#[test]
fn a_map_held_in_many_places_is_walked_once_or_refused() {
    // 64 levels, each holding the level below twice: 2^64 paths through 65 maps.
    let wide = |name: &str| {
        format!(
            r#"{{{{ ${name} := dict }}}}{{{{ range until 64 }}}}{{{{ ${name} = dict "a" ${name} "b" ${name} }}}}{{{{ end }}}}"#
        )
    };
    let (a, b) = (wide("a"), wide("b"));
    assert_eq!(
        sprig(&format!("{a}{{{{ $_ := set (dict) \"k\" $a }}}}set")).unwrap(),
        "set"
    );
    assert_eq!(
        sprig(&format!("{a}{b}{{{{ has $a (list $b) }}}}")).unwrap(),
        "true"
    );
    for call in ["deepCopy $a", "toJson $a", "toYaml $a", "$a"] {
        let outcome = sprig(&format!("{a}{{{{ {call} }}}}"));
        assert!(
            outcome.as_ref().is_err() || outcome.as_ref().is_ok_and(String::is_empty),
            "{call}: {:?}",
            outcome.map(|s| s.len())
        );
    }
}
