//! go-yaml's leniency with quoted values that span lines. YAML wants the continuation lines of
//! a quoted value indented deeper than the mapping or sequence holding it; go-yaml (so kubectl
//! and Sveltos) takes them at any indentation, even at column 0 or led by a tab:
//!
//! ```yaml
//! metadata:
//!   annotations:
//!     note: 'first line
//!     second line'
//! ```
//!
//! Leading white space of a continuation line is not part of the value (both readers fold the
//! line break into a space and drop it), so moving such lines right of the opening quote reads
//! the same value that go-yaml reads. Only the value the parser refused is touched, and only
//! when the parser's own events place its opening quote.

use serde_saphyr::granit_parser::{ErrorKind, Options, Parser};

/// Most quoted values re-indented in one input (each costs one more pass of the parser, and
/// the deployer reads cluster data on every pass).
const MAX_REINDENTED: usize = 32;
/// Most bytes the parser passes over while re-indenting one input (a few large files with
/// many such values would otherwise take seconds).
const MAX_PASSED_BYTES: usize = 32 << 20;
/// Most bytes one re-indentation may add: the lines move right of their key, not of the
/// quote, but a line may still start far right.
const MAX_ADDED_BYTES: usize = 1 << 20;

/// `text` with the continuation lines of each quoted value the parser refuses for their
/// indentation moved right of the value's opening quote; `None` when the parser refuses
/// something else first, or that value cannot be placed with certainty.
pub fn reindent(text: &str) -> Option<String> {
    let mut fixed = reindent_first(text)?;
    let mut passed = text.len() + fixed.len();
    for _ in 1..MAX_REINDENTED {
        passed += fixed.len();
        if passed > MAX_PASSED_BYTES {
            break;
        }
        match reindent_first(&fixed) {
            Some(again) => fixed = again,
            None => break,
        }
    }
    Some(fixed)
}

/// [`reindent`] of the first value the parser refuses.
fn reindent_first(text: &str) -> Option<String> {
    let (after, refused_line) = refusal(text)?;
    let open = opening_quote(text, after)?;
    let close = closing_quote(text, open)?;
    let open_line = line_of(text, open);
    let close_line = line_of(text, close);
    if !(open_line < refused_line && refused_line <= close_line) {
        return None;
    }
    let line_start = text[..open].rfind('\n').map_or(0, |i| i + 1);
    // Right of the key (past the line's indentation and sequence dashes) is as deep as the
    // value's continuation lines must be; right of the quote could be anywhere.
    let key_column = key_column(&text[line_start..open]);
    let inside = |number: usize, line: &str| {
        let blank = line.trim_matches([' ', '\t', '\r', '\n']).is_empty();
        number > open_line && number <= close_line && !blank
    };
    let mut added = 0usize;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if inside(index + 1, line) && indent <= key_column {
            added = added.saturating_add(key_column + 1 - indent);
        }
    }
    if added > MAX_ADDED_BYTES {
        return None;
    }
    let mut fixed = String::with_capacity(text.len() + added);
    let mut changed = false;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if inside(index + 1, line) {
            let indent = line.len() - line.trim_start_matches(' ').len();
            if indent == 0 && is_document_marker(line) {
                // go-yaml refuses a document marker inside a quoted value too.
                return None;
            }
            if indent <= key_column {
                fixed.extend(std::iter::repeat_n(' ', key_column + 1 - indent));
                changed = true;
            }
        }
        fixed.push_str(line);
    }
    changed.then_some(fixed)
}

/// The column where the content of a line starts, given the line up to a quoted value:
/// past its indentation and any sequence dashes (`- - key: 'x` has its key at column 4).
fn key_column(prefix: &str) -> usize {
    let mut column = 0;
    let mut rest = prefix;
    loop {
        let trimmed = rest.trim_start_matches(' ');
        column += rest.len() - trimmed.len();
        match trimmed.strip_prefix('-') {
            Some(after) if after.starts_with(' ') => {
                column += 1;
                rest = after;
            }
            _ => return column,
        }
    }
}

/// Where the parser stopped on a quoted value's continuation line: the byte just after the
/// last event it gave, and the (1-based) line it refused.
fn refusal(text: &str) -> Option<(usize, usize)> {
    let mut options = Options::default();
    options.emit_comments = false;
    let mut after = 0;
    for event in Parser::new_from_str_with_options(text, options) {
        match event {
            Ok((_, span)) => after = after.max(span.end.byte_offset()?),
            Err(error) => {
                let wanted = matches!(
                    error.kind(),
                    ErrorKind::InvalidQuotedScalarIndent | ErrorKind::TabInIndentation
                );
                return wanted.then(|| (after, error.marker().line()));
            }
        }
    }
    None
}

/// The byte of the quote opening the next value after `from`, past only what may stand between
/// a node and the next value (indicators, white space, comments, an anchor or a tag).
fn opening_quote(text: &str, from: usize) -> Option<usize> {
    let rest = text.get(from..)?;
    let mut chars = rest.char_indices().peekable();
    let mut previous = text[..from].chars().next_back().unwrap_or('\n');
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' | '"' => return Some(from + at),
            ' ' | '\t' | '\r' | '\n' | ':' | '-' | '?' | ',' | '[' | '{' => {}
            '#' if previous.is_whitespace() => {
                while chars.next_if(|&(_, c)| c != '\n').is_some() {}
            }
            '&' | '!' => while chars.next_if(|&(_, c)| !c.is_whitespace()).is_some() {},
            _ => return None,
        }
        previous = c;
    }
    None
}

/// The byte of the quote closing the value opened at `open` (`''` is a quote inside single
/// quotes; a backslash escapes the next character inside double quotes).
fn closing_quote(text: &str, open: usize) -> Option<usize> {
    let quote = text[open..].chars().next()?;
    let mut chars = text[open + 1..].char_indices();
    while let Some((at, c)) = chars.next() {
        match (quote, c) {
            ('"', '\\') => {
                chars.next();
            }
            ('\'', '\'') => {
                if text[open + 1 + at + 1..].starts_with('\'') {
                    chars.next();
                } else {
                    return Some(open + 1 + at);
                }
            }
            ('"', '"') => return Some(open + 1 + at),
            _ => {}
        }
    }
    None
}

/// The 1-based line of byte `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Whether `line` starts with `---` or `...` followed by white space or its end.
fn is_document_marker(line: &str) -> bool {
    ["---", "..."].iter().any(|marker| {
        line.strip_prefix(marker)
            .is_some_and(|rest| rest.chars().next().is_none_or(char::is_whitespace))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value, json};

    use crate::load::documents_noting;

    fn read(text: &str) -> Value {
        let (mut documents, notes) =
            documents_noting(text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(documents.len(), 1, "{documents:?}");
        documents.remove(0)
    }

    // Every expected value below is what go-yaml reads from the same text (sigs.k8s.io/yaml
    // v1.4.0, the YAML reader of kubectl 1.32: `yaml.YAMLToJSON`).

    #[test]
    fn a_continuation_line_at_the_key_indentation_is_read_as_go_yaml_reads_it() {
        let text = "metadata:\n  annotations:\n    note: 'first line\n    second line'\n";
        assert_eq!(
            read(text),
            json!({"metadata": {"annotations": {"note": "first line second line"}}})
        );
    }

    #[test]
    fn continuation_lines_at_column_0_and_deeper_ones_fold_the_same() {
        let text = "a:\n  b: 'one\ntwo\n   three'\n  c: 1\n";
        assert_eq!(read(text), json!({"a": {"b": "one two three", "c": 1}}));
    }

    #[test]
    fn double_quotes_keep_their_escapes_and_escaped_line_breaks() {
        let text = "a:\n  b: \"one \\\"q\\\"\n  two\\\n  three\\tx\"\n  c: 1\n";
        assert_eq!(
            read(text),
            json!({"a": {"b": "one \"q\" twothree\tx", "c": 1}})
        );
    }

    #[test]
    fn in_a_sequence_a_continuation_line_that_looks_like_an_item_stays_in_the_value() {
        assert_eq!(
            read("l:\n- 'one\n- two'\n- x\n"),
            json!({"l": ["one - two", "x"]})
        );
        assert_eq!(
            read("l:\n- k: 'one\n  two'\n  j: 2\n"),
            json!({"l": [{"k": "one two", "j": 2}]})
        );
    }

    #[test]
    fn blank_lines_escaped_quotes_comments_anchors_and_tabs_read_as_go_yaml_reads_them() {
        assert_eq!(
            read("a:\n  b: 'one\n\n  two\n\n\n  three'\n"),
            json!({"a": {"b": "one\ntwo\n\nthree"}})
        );
        assert_eq!(
            read("a:\n  b: 'it''s\n  two' # c\n  c: 3\n"),
            json!({"a": {"b": "it's two", "c": 3}})
        );
        assert_eq!(
            read("a:\n  b: # it's a comment\n    'one\n  two'\n"),
            json!({"a": {"b": "one two"}})
        );
        assert_eq!(
            read("a:\n  b: &x 'one\n  two'\n  c: *x\n"),
            json!({"a": {"b": "one two", "c": "one two"}})
        );
        assert_eq!(
            read("a:\n  b: 'one\n\ttabbed'\n"),
            json!({"a": {"b": "one tabbed"}})
        );
        assert_eq!(
            read("a:\n  b: 'one\n  ...\n  x'\n"),
            json!({"a": {"b": "one ... x"}})
        );
    }

    #[test]
    fn several_values_in_several_documents_are_each_read() {
        let text = "a: 'x\ny'\n---\nb:\n  c: \"1\n  2\"\n  d: 'p\n  q'\n";
        let (documents, _) = documents_noting(text).unwrap();
        assert_eq!(
            documents,
            [json!({"a": "x y"}), json!({"b": {"c": "1 2", "d": "p q"}})]
        );
    }

    #[test]
    fn what_go_yaml_refuses_stays_refused() {
        // A document marker inside a quoted value.
        let error = documents_noting("a:\n  b: 'one\n---\n  two'\n")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("cannot parse YAML: line "), "{error}");
        // A quote never closed.
        let error = documents_noting("a:\n  b: 'one\n  two\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("line "), "{error}");
        // A tab indenting a mapping is not a quoted value's line.
        let error = documents_noting("a:\n\tb: 1\n").unwrap_err().to_string();
        assert!(error.contains("tab"), "{error}");
    }

    #[test]
    fn a_value_that_closed_before_the_refused_line_is_not_touched() {
        assert_eq!(super::reindent("a: 'x'\n\tb: 1\n"), None);
        assert_eq!(super::reindent("a: 'x'\nb: 1\n"), None);
    }

    #[test]
    fn many_values_in_one_file_are_each_read() {
        let values = |n: usize| -> String {
            (0..n)
                .map(|i| format!("k{i}:\n  v: 'line {i}\n  continued'\n"))
                .collect()
        };
        let (documents, _) = documents_noting(&values(32)).unwrap();
        assert_eq!(documents[0]["k31"]["v"], "line 31 continued");
        // Beyond 32 such values (a pass of the parser each), the reader says where it stopped.
        let error = documents_noting(&values(33)).unwrap_err().to_string();
        assert_eq!(
            error,
            "cannot parse YAML: line 99 column 3: invalid indentation in multiline quoted scalar"
        );
    }

    #[test]
    fn lines_move_right_of_their_key_never_far_right() {
        // Far from its key, the quote does not decide how far the lines move.
        let far = format!("a:{}'x\n{}'\n", " ".repeat(500_000), "y\n".repeat(250_000));
        let (documents, _) = documents_noting(&far).unwrap();
        // "x", then " y" per line, then the space the last line break folds into.
        assert_eq!(documents[0]["a"].as_str().map(str::len), Some(500_002));
        // A key that far right would add too much: refused as the parser refused it.
        let deep = format!("{}a: 'x\n{}'\n", " ".repeat(500_000), "y\n".repeat(250_000));
        let error = documents_noting(&deep).unwrap_err().to_string();
        assert!(error.contains("invalid indentation"), "{error}");
        assert_eq!(super::key_column("  - - key: "), 6);
    }
}
