//! YAML (or JSON) text into documents, read as kubectl reads it: a key repeated in one mapping
//! keeps its last value (and is said), a quoted value whose continuation lines sit no deeper
//! than its key is taken as go-yaml takes it, and what breaks the reader's limits or syntax is
//! said in words with its line.

use std::borrow::Cow;

use serde_json::Value;
use serde_saphyr::{DuplicateKeyPolicy, ExternalMessageSource, MessageFormatter};

use super::{limits, quoted};
use crate::{Error, Result};

/// Largest YAML/JSON input accepted from users.
pub const MAX_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// Splits text into its YAML (or JSON) documents, skipping empty ones, with what the reader let
/// pass that a user should know (a repeated key: the last value wins, as in kubectl).
pub fn documents_noting(text: &str) -> Result<(Vec<Value>, Vec<String>)> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(Error::TooLarge {
            size: text.len(),
            limit: MAX_INPUT_BYTES,
        });
    }
    let mut text = Cow::Borrowed(text);
    let mut duplicates = DuplicateKeyPolicy::Error;
    let mut notes = Vec::new();
    let mut reindented = false;
    loop {
        let error = match parse(&text, duplicates) {
            Ok(documents) => {
                let documents = documents.into_iter().filter(|d| !d.is_null()).collect();
                return Ok((documents, notes));
            }
            Err(error) => error,
        };
        let error = error.without_snippet();
        if let serde_saphyr::Error::DuplicateMappingKey { key, location } = error
            && matches!(duplicates, DuplicateKeyPolicy::Error)
        {
            duplicates = DuplicateKeyPolicy::LastWins;
            notes.push(repeated_key(key.as_deref(), location.line()));
            continue;
        }
        if is_quoted_indentation(error)
            && !reindented
            && let Some(fixed) = quoted::reindent(&text)
        {
            text = Cow::Owned(fixed);
            reindented = true;
            continue;
        }
        return Err(in_words(error));
    }
}

/// Every document of `text`, under this reader's limits and `duplicates` policy.
fn parse(
    text: &str,
    duplicates: DuplicateKeyPolicy,
) -> std::result::Result<Vec<Value>, serde_saphyr::Error> {
    let options = serde_saphyr::options! {
        budget: Some(limits::budget()),
        duplicate_keys: duplicates,
    };
    serde_saphyr::from_multiple_with_options::<Value>(text, options)
}

/// `line N: key "K" appears twice in one mapping; the last value is used, as kubectl does`.
fn repeated_key(key: Option<&str>, line: u64) -> String {
    let key = key.map_or_else(|| "a key".to_owned(), |key| format!("key {key:?}"));
    format!(
        "line {line}: {key} appears twice in one mapping; the last value is used, as kubectl does"
    )
}

/// Whether the parser refused a quoted value's continuation line for its indentation (or for a
/// tab leading it), which go-yaml, and so kubectl, accepts.
fn is_quoted_indentation(error: &serde_saphyr::Error) -> bool {
    use serde_saphyr::granit_parser::ErrorKind;
    let serde_saphyr::Error::ExternalMessage { source, .. } = error else {
        return false;
    };
    let ExternalMessageSource::Parser(scan) = source.as_ref() else {
        return false;
    };
    matches!(
        scan.kind(),
        ErrorKind::InvalidQuotedScalarIndent | ErrorKind::TabInIndentation
    )
}

/// The reader's error as one line: a limit in words (`line 65: nested deeper than 64 levels`),
/// anything else as where and what (`line 4 column 9: unclosed bracket '['`).
fn in_words(error: &serde_saphyr::Error) -> Error {
    let location = error.location();
    if let serde_saphyr::Error::Budget { breach, .. } = innermost(error) {
        let said = limits::describe(breach);
        return Error::YamlLimit(match location {
            Some(at) => format!("line {}: {said}", at.line()),
            None => said,
        });
    }
    let said = serde_saphyr::UserMessageFormatter.format_message(error);
    // The reader may quote the input; a control character must not reach a terminal.
    let said: String = said
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    Error::Yaml(match location {
        Some(at) => format!("line {} column {}: {said}", at.line(), at.column()),
        None => said,
    })
}

/// The error under the reader's wrappings (a snippet of the input, the alias that led to it).
fn innermost(error: &serde_saphyr::Error) -> &serde_saphyr::Error {
    match error {
        serde_saphyr::Error::WithSnippet { error, .. }
        | serde_saphyr::Error::AliasError { error, .. } => innermost(error),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_repeated_key_is_read_as_kubectl_reads_it_and_said() {
        let (read, notes) = documents_noting("a: 1\nb:\n  c: 2\n  c: 3\n").unwrap();
        assert_eq!(read, [serde_json::json!({"a": 1, "b": {"c": 3}})]);
        assert_eq!(
            notes,
            [
                "line 4: key \"c\" appears twice in one mapping; the last value is used, as kubectl does"
            ]
        );
        let (_, none) = documents_noting("a: 1\n").unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn a_syntax_error_is_where_and_what_on_one_line() {
        let error = documents_noting("kind: ConfigMap\nmetadata:\n  name: [x\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "cannot parse YAML: line 3 column 9: unclosed bracket '['"
        );
    }

    #[test]
    fn a_control_character_in_a_message_is_escaped() {
        let said = in_words(&serde_saphyr::Error::Message {
            msg: "bad\u{1b}[31m".to_owned(),
            location: serde_saphyr::Location::UNKNOWN,
        })
        .to_string();
        assert_eq!(said, "cannot parse YAML: bad\\u{1b}[31m");
    }
}
