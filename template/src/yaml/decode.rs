//! YAML read as sigs.k8s.io/yaml reads it for libsveltos' `fromYaml` and `fromYamlArray`:
//! go-yaml v2 reads the first document (a later duplicate key wins), the JSON round trip makes
//! every number a float64, and a failure reads as Go's does:
//! `error converting YAML to JSON: yaml: line N: ...`.

use serde_saphyr::{DuplicateKeyPolicy, Error, Options};

use crate::sprig::json::floats;
use crate::value::Value;
use crate::yaml::errors::go_yaml_message;

/// What sigs.k8s.io/yaml prefixes to a go-yaml failure.
const CONVERTING: &str = "error converting YAML to JSON: ";

/// The first document of `text` as a value (`Null` when empty), or Go's error text.
pub fn decode(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    // libyaml's reader refuses these before the scanner sees anything.
    if text.chars().any(is_control) {
        return Err(format!(
            "{CONVERTING}yaml: control characters are not allowed"
        ));
    }
    let json = match parse(text) {
        Err(Error::MultipleDocuments { .. }) => {
            // go-yaml's Unmarshal reads the first document and never looks further.
            parse(&text[..first_document_end(text)])
        }
        other => other,
    };
    json.map(|json| floats(&json))
        .map_err(|error| format!("{CONVERTING}{}", go_yaml_message(text, &error)))
}

fn parse(text: &str) -> Result<serde_json::Value, Error> {
    let mut options = Options::default();
    options.duplicate_keys = DuplicateKeyPolicy::LastWins;
    options.with_snippet = false;
    // YAML 1.1, as go-yaml v2: 0777 is octal.
    options.legacy_octal_numbers = true;
    serde_saphyr::from_str_with_options(text, options)
}

/// Characters libyaml's reader rejects: controls other than tab, LF, CR and NEL, the
/// surrogate range's neighbours U+FFFE/U+FFFF.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r' | '\u{85}' | '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{d7ff}'
        | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

/// Where the first document ends: at the first `---` or `...` line after content or after
/// the `---` that opened it.
fn first_document_end(text: &str) -> usize {
    let mut offset = 0;
    let mut open = false;
    for line in text.split_inclusive('\n') {
        let marker = ["---", "..."].iter().any(|m| {
            line.strip_prefix(m)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\n', '\r']))
        });
        if marker && open {
            return offset;
        }
        let trimmed = line.trim_start();
        open |= line.starts_with("---")
            || (!marker && !trimmed.is_empty() && !trimmed.starts_with(['#', '%']));
        offset += line.len();
    }
    text.len()
}
