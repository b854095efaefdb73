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
