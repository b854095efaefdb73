//! Positions in YAML text as libyaml's scanner counts them (lines broken by LF, CR, CR LF,
//! NEL, LS, PS), and the places where libyaml notices the problems our parser reports
//! elsewhere: the end of a stale key's scan, a bad escape, a tab in indentation, the stream
//! end.

/// A line break as libyaml counts lines (CR LF is one).
fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// A cursor over the text that keeps libyaml's line and column.
struct Cursor<'c> {
    chars: &'c [char],
    at: usize,
    line: usize,
    column: usize,
}

impl<'c> Cursor<'c> {
    /// At char `index`, counting lines from the start.
    fn new(chars: &'c [char], index: usize) -> Self {
        let mut cursor = Cursor {
            chars,
            at: 0,
            line: 0,
            column: 0,
        };
        while cursor.at < index.min(chars.len()) {
            cursor.advance();
        }
        cursor
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    /// Blank, break or the end (libyaml's `is_blankz`).
    fn blankz(&self, ahead: usize) -> bool {
        self.peek(ahead).is_none_or(|c| is_blank(c) || is_break(c))
    }

    fn advance(&mut self) {
        let Some(c) = self.peek(0) else { return };
        self.at += 1;
        if c == '\r' && self.peek(0) == Some('\n') {
            self.at += 1;
        }
        if is_break(c) {
            self.line += 1;
            self.column = 0;
        } else {
            self.column += 1;
        }
    }

    /// Skips blanks, comments and breaks (libyaml's `scan_to_next_token`).
    fn skip_to_next_token(&mut self) {
        loop {
            match self.peek(0) {
                Some(c) if is_blank(c) || is_break(c) => self.advance(),
                Some('#') => {
                    while self.peek(0).is_some_and(|c| !is_break(c)) {
                        self.advance();
                    }
                }
                _ => return,
            }
        }
    }

    /// The line of the stream end token: a last line without a break counts as ended.
    fn stream_end_line(&self) -> usize {
        self.line + usize::from(self.column != 0)
    }
}

/// Where libyaml notices that the required simple key at `index` (column `column`) has no
/// `:`: after the scalar (a plain one may run on over more-indented lines) once a later line
/// is reached, else at the next token or the stream's end.
pub(super) fn stale_key_line(chars: &[char], index: usize, column: usize) -> usize {
    let mut cursor = Cursor::new(chars, index);
    let key_line = cursor.line;
    match cursor.peek(0) {
        Some(quote @ ('"' | '\'')) => {
            cursor.advance();
            skip_quoted(&mut cursor, quote);
        }
        _ => skip_plain(&mut cursor, column + 1),
    }
    if cursor.line > key_line {
        return cursor.line;
    }
    cursor.skip_to_next_token();
    if cursor.peek(0).is_none() {
        return cursor.stream_end_line();
    }
    cursor.line
}

/// libyaml's plain scalar scan in the block context, continuation lines needing `indent`.
fn skip_plain(cursor: &mut Cursor<'_>, indent: usize) {
    loop {
        let document_indicator = cursor.column == 0
            && matches!(
                (cursor.peek(0), cursor.peek(1), cursor.peek(2)),
                (Some('-'), Some('-'), Some('-')) | (Some('.'), Some('.'), Some('.'))
            )
            && cursor.blankz(3);
        if document_indicator || cursor.peek(0) == Some('#') {
            return;
        }
        while !cursor.blankz(0) {
            if cursor.peek(0) == Some(':') && cursor.blankz(1) {
                return;
            }
            cursor.advance();
        }
        if cursor.peek(0).is_none() {
            return;
        }
        while cursor.peek(0).is_some_and(|c| is_blank(c) || is_break(c)) {
            cursor.advance();
        }
        if cursor.column < indent {
            return;
        }
    }
}

/// Moves past a quoted scalar's closing quote (the cursor just after the opening one);
/// false when the text ends first.
fn skip_quoted(cursor: &mut Cursor<'_>, quote: char) -> bool {
    while let Some(c) = cursor.peek(0) {
        cursor.advance();
        if quote == '"' && c == '\\' {
            cursor.advance();
        } else if c == quote {
            if quote == '\'' && cursor.peek(0) == Some('\'') {
                cursor.advance();
            } else {
                return true;
            }
        }
    }
    false
}

/// Whether the quoted scalar whose opening quote is the last one at or before `index` has
/// its closing quote.
pub(super) fn quote_closes(chars: &[char], index: usize) -> bool {
    let Some(start) = chars
        .iter()
        .take(index + 1)
        .rposition(|&c| c == '"' || c == '\'')
    else {
        return false;
    };
    let mut cursor = Cursor::new(chars, start);
    let quote = chars[start];
    cursor.advance();
    skip_quoted(&mut cursor, quote)
}

/// The line of the first escape libyaml refuses in the double-quoted scalar at `index`.
pub(super) fn bad_escape_line(chars: &[char], index: usize) -> usize {
    const ESCAPES: &str = "0abt\tnvfre \"'/\\N_LPxuU";
    let mut cursor = Cursor::new(chars, index + 1);
    while let Some(c) = cursor.peek(0) {
        if c == '"' {
            break;
        }
        if c == '\\' {
            match cursor.peek(1) {
                Some(next) if is_break(next) => {}
                Some(next @ ('x' | 'u' | 'U')) => {
                    let digits = match next {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    if !(2..2 + digits)
                        .all(|k| cursor.peek(k).is_some_and(|d| d.is_ascii_hexdigit()))
                    {
                        return cursor.line;
                    }
                }
                Some(next) if ESCAPES.contains(next) => {}
                _ => return cursor.line,
            }
            cursor.advance();
        }
        cursor.advance();
    }
    cursor.line
}

/// The first line after the one at `index` whose indentation holds a tab.
pub(super) fn tab_line(chars: &[char], index: usize) -> usize {
    let mut cursor = Cursor::new(chars, index);
    let start = cursor.line;
    while let Some(c) = cursor.peek(0) {
        if cursor.line > start && c == '\t' {
            return cursor.line;
        }
        let indentation = cursor.line > start && c == ' ';
        if !indentation {
            // Skip to the next line.
            while cursor.peek(0).is_some_and(|c| !is_break(c)) {
                cursor.advance();
            }
        }
        cursor.advance();
    }
    start
}

/// The line of the end of the stream, as a position.
pub(super) fn end_line(chars: &[char]) -> usize {
    Cursor::new(chars, chars.len()).line
}

/// The line of the stream end token (libyaml forces a line break at the end).
pub(super) fn stream_end_line(chars: &[char]) -> usize {
    Cursor::new(chars, chars.len()).stream_end_line()
}

/// The last character before the end that is not blank, a break or in a comment, after
/// `from`.
pub(super) fn last_significant(chars: &[char], from: usize) -> Option<char> {
    let mut last = None;
    let mut in_comment = false;
    let mut previous_blank = true;
    for &c in chars.iter().skip(from) {
        if is_break(c) {
            in_comment = false;
        } else if in_comment {
        } else if c == '#' && previous_blank {
            in_comment = true;
        } else if !is_blank(c) {
            last = Some(c);
        }
        previous_blank = is_blank(c) || is_break(c);
    }
    last
}

/// The name of the alias (`*name`) at a 1-based line and column.
pub(super) fn alias_name(chars: &[char], line: u64, column: u64) -> String {
    let start = char_index(chars, line, column);
    chars
        .iter()
        .skip(start)
        .skip_while(|c| **c == '*')
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '-' || **c == '_')
        .collect()
}

/// The char index of a 1-based line and column.
fn char_index(chars: &[char], line: u64, column: u64) -> usize {
    let mut current = 1;
    let mut start = 0;
    for (i, &c) in chars.iter().enumerate() {
        if current >= line {
            break;
        }
        if c == '\n' {
            current += 1;
            start = i + 1;
        }
    }
    start + (column.saturating_sub(1) as usize)
}
