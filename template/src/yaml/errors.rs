//! A YAML syntax error worded as go-yaml v2 words it: `yaml: line N: PROBLEM`, with
//! libyaml's problem texts and go-yaml's line rule (`parser.fail` in decode.go): a scanner
//! error names the 1-based line of the problem, a parser error the 0-based line of the token
//! it stopped at (one less), and a problem on the first line falls back to the context's
//! line, or to no line at all. The failure comes from our parser (serde-saphyr, a libyaml
//! descendant); where libyaml finds the problem elsewhere (`could not find expected ':'` is
//! noticed at the next token, an unclosed flow collection at the end of the stream), the
//! position is recomputed from the text.

use serde_saphyr::granit_parser::{ErrorKind, ScanError};
use serde_saphyr::{Error, ExternalMessageSource};

use crate::yaml::position::{
    alias_name, bad_escape_line, end_line, last_significant, quote_closes, stale_key_line,
    stream_end_line, tab_line,
};

/// Which half of libyaml fails, which decides how go-yaml numbers the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Scanner,
    Parser,
}

/// A libyaml error: the problem, where it was found and where its context started (0-based
/// lines).
struct GoError {
    problem: String,
    stage: Stage,
    line: usize,
    context_line: usize,
}

impl GoError {
    fn scanner(problem: &str, line: usize, context_line: usize) -> Self {
        GoError {
            problem: problem.to_owned(),
            stage: Stage::Scanner,
            line,
            context_line,
        }
    }

    fn parser(problem: &str, line: usize, context_line: usize) -> Self {
        GoError {
            problem: problem.to_owned(),
            stage: Stage::Parser,
            line,
            context_line,
        }
    }

    /// go-yaml's `parser.fail`.
    fn message(&self) -> String {
        let line = if self.line != 0 {
            self.line + usize::from(self.stage == Stage::Scanner)
        } else {
            self.context_line
        };
        if line == 0 {
            format!("yaml: {}", self.problem)
        } else {
            format!("yaml: line {line}: {}", self.problem)
        }
    }
}

/// Go's text for `error` from reading `text` (without sigs.k8s.io/yaml's prefix).
pub(super) fn go_yaml_message(text: &str, error: &Error) -> String {
    let chars: Vec<char> = text.chars().collect();
    match error {
        Error::ExternalMessage { source, .. } => match source.as_ref() {
            ExternalMessageSource::Parser(scan) => match translate(&chars, scan) {
                Some(go) => go.message(),
                None => fallback(scan.marker().line(), &scan.info()),
            },
            _ => fallback(0, &error.to_string()),
        },
        Error::UnknownAnchor { location } => {
            let name = alias_name(&chars, location.line(), location.column());
            format!("yaml: unknown anchor '{name}' referenced")
        }
        Error::RecursiveReferencesRequireWeakTypes { location } => {
            let name = alias_name(&chars, location.line(), location.column());
            format!("yaml: anchor '{name}' value contains itself")
        }
        other => {
            let line = other.location().map_or(0, |l| l.line() as usize);
            fallback(line, &other.to_string())
        }
    }
}

/// Our own words where go-yaml's are not known, in go-yaml's shape.
fn fallback(line: usize, message: &str) -> String {
    let message = message.lines().next().unwrap_or_default();
    if line > 1 {
        format!("yaml: line {line}: {message}")
    } else {
        format!("yaml: {message}")
    }
}

/// libyaml's words and positions for the error kinds templates meet.
fn translate(chars: &[char], scan: &ScanError) -> Option<GoError> {
    let marker = scan.marker();
    let line = marker.line().saturating_sub(1);
    let index = marker.index();
    Some(match scan.kind() {
        ErrorKind::MappingValueNotAllowed => {
            GoError::scanner("mapping values are not allowed in this context", line, line)
        }
        ErrorKind::BlockSequenceEntryNotAllowed => GoError::scanner(
            "block sequence entries are not allowed in this context",
            line,
            line,
        ),
        ErrorKind::MappingKeyNotAllowed => {
            GoError::scanner("mapping keys are not allowed in this context", line, line)
        }
        ErrorKind::UnexpectedCharacter { .. }
        | ErrorKind::TabInBlockIndentation
        | ErrorKind::TabInIndentation
        | ErrorKind::TabNotAllowed => {
            GoError::scanner("found character that cannot start any token", line, line)
        }
        ErrorKind::MissingAnchorOrAliasName => GoError::scanner(
            "did not find expected alphabetic or numeric character",
            line,
            line,
        ),
        ErrorKind::TabInPlainScalar => GoError::scanner(
            "found a tab character that violates indentation",
            tab_line(chars, index),
            line,
        ),
        ErrorKind::SimpleKeyExpected => GoError::scanner(
            "could not find expected ':'",
            stale_key_line(chars, index, marker.col()),
            line,
        ),
        ErrorKind::UnclosedQuotedScalar | ErrorKind::InvalidQuotedScalarIndent
            if !quote_closes(chars, index) =>
        {
            GoError::scanner("found unexpected end of stream", end_line(chars), line)
        }
        ErrorKind::DocumentIndicatorInQuotedScalar => {
            GoError::scanner("found unexpected document indicator", line, line)
        }
        ErrorKind::UnknownQuotedScalarEscape => GoError::scanner(
            "found unknown escape character",
            bad_escape_line(chars, index),
            line,
        ),
        ErrorKind::InvalidQuotedScalarHexEscape => GoError::scanner(
            "did not find expected hexdecimal number",
            bad_escape_line(chars, index),
            line,
        ),
        ErrorKind::InvalidUnicodeEscape => GoError::scanner(
            "found invalid Unicode character escape code",
            bad_escape_line(chars, index),
            line,
        ),
        ErrorKind::ExpectedBlockMappingKey => {
            GoError::parser("did not find expected key", line, line)
        }
        ErrorKind::ExpectedBlockSequenceEntry => {
            GoError::parser("did not find expected '-' indicator", line, line)
        }
        ErrorKind::ExpectedNodeContent => {
            GoError::parser("did not find expected node content", line, line)
        }
        ErrorKind::ExpectedFlowSequenceSeparator => {
            GoError::parser("did not find expected ',' or ']'", line, line)
        }
        ErrorKind::ExpectedFlowMappingSeparator => {
            GoError::parser("did not find expected ',' or '}'", line, line)
        }
        ErrorKind::ExpectedDocumentStart => {
            GoError::parser("did not find expected <document start>", line, line)
        }
        ErrorKind::UndeclaredTagHandle => GoError::parser("found undefined tag handle", line, line),
        ErrorKind::UnclosedFlowCollection { open } => {
            // The parser meets the end of the stream inside the collection.
            let problem = match (last_significant(chars, index), open) {
                (Some('[' | '{' | ',' | ':'), _) => "did not find expected node content",
                (_, '{') => "did not find expected ',' or '}'",
                _ => "did not find expected ',' or ']'",
            };
            GoError::parser(problem, stream_end_line(chars), line)
        }
        _ => return None,
    })
}
