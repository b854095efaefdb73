//! Lexer of Go's text/template: splits text and actions into items, honouring custom
//! delimiters, `{{-`/`-}}` trim markers and comments.

/// Kind of a lexed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Plain text outside actions.
    Text,
    /// Opening delimiter.
    LeftDelim,
    /// Closing delimiter.
    RightDelim,
    /// A comment action (ignored by the parser except for position).
    Comment,
    /// Spaces inside an action.
    Space,
    /// `=`.
    Assign,
    /// `:=`.
    Declare,
    /// `|`.
    Pipe,
    /// `(`.
    LeftParen,
    /// `)`.
    RightParen,
    /// Any other single printable character, such as `,`.
    Char,
    /// `true` or `false`.
    Bool,
    /// Character constant.
    CharConstant,
    /// Number.
    Number,
    /// Interpreted string (with quotes).
    String,
    /// Raw string (with backquotes).
    RawString,
    /// `.Field`.
    Field,
    /// `$name` or `$`.
    Variable,
    /// Function name.
    Identifier,
    /// `.` alone.
    Dot,
    /// `nil`.
    Nil,
    /// Keyword `block`.
    Block,
    /// Keyword `break`.
    Break,
    /// Keyword `continue`.
    Continue,
    /// Keyword `define`.
    Define,
    /// Keyword `else`.
    Else,
    /// Keyword `end`.
    End,
    /// Keyword `if`.
    If,
    /// Keyword `range`.
    Range,
    /// Keyword `template`.
    Template,
    /// Keyword `with`.
    With,
    /// End of input.
    Eof,
    /// A lexing error; the text is the message.
    Error,
}

/// A lexed item with its byte offset and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What it is.
    pub kind: Kind,
    /// Its text (for `Error`, the message).
    pub text: String,
    /// Byte offset in the input.
    pub pos: usize,
    /// 1-based line of its start.
    pub line: usize,
}

/// Splits `input` into items; stops after the first error.
pub fn lex(input: &str, left: &str, right: &str) -> Vec<Item> {
    let mut lexer = Lexer {
        input,
        left: if left.is_empty() { "{{" } else { left },
        right: if right.is_empty() { "}}" } else { right },
        pos: 0,
        start: 0,
        line: 1,
        start_line: 1,
        items: Vec::new(),
        paren_depth: 0,
    };
    lexer.run();
    lexer.items
}

struct Lexer<'a> {
    input: &'a str,
    left: &'a str,
    right: &'a str,
    pos: usize,
    start: usize,
    line: usize,
    start_line: usize,
    items: Vec<Item>,
    paren_depth: usize,
}

const TRIM_MARKER: char = '-';

/// What followed a left delimiter.
enum Delim {
    /// An action to lex.
    Action,
    /// A comment, already consumed.
    Comment,
    /// A lexing error was emitted.
    Failed,
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn backup(&mut self, c: char) {
        self.pos -= c.len_utf8();
        if c == '\n' {
            self.line -= 1;
        }
    }

    fn emit(&mut self, kind: Kind) {
        let text = self.input[self.start..self.pos].to_string();
        self.items.push(Item {
            kind,
            text,
            pos: self.start,
            line: self.start_line,
        });
        self.ignore();
    }

    fn ignore(&mut self) {
        self.start_line = self.line;
        self.start = self.pos;
    }

    fn error(&mut self, message: impl Into<String>) {
        self.items.push(Item {
            kind: Kind::Error,
            text: message.into(),
            pos: self.start,
            line: self.start_line,
        });
    }

    /// Runs the text/action state machine; returns when done or after an error.
    fn run(&mut self) {
        loop {
            if !self.lex_text() {
                return;
            }
            match self.lex_left_delim() {
                Delim::Action => {
                    if !self.lex_inside_action() {
                        return;
                    }
                }
                Delim::Comment => {}
                Delim::Failed => return,
            }
        }
    }

    /// Text up to the next left delimiter. False at end of input.
    fn lex_text(&mut self) -> bool {
        match self.rest().find(self.left) {
            Some(offset) => {
                let delim_at = self.pos + offset;
                let mut text_end = delim_at;
                if self.has_left_trim_marker(delim_at) {
                    text_end = self.input[self.pos..delim_at]
                        .trim_end_matches(is_space)
                        .len()
                        + self.pos;
                }
                self.advance_to(text_end);
                if self.pos > self.start {
                    self.emit(Kind::Text);
                }
                self.advance_to(delim_at);
                self.ignore();
                true
            }
            None => {
                let end = self.input.len();
                self.advance_to(end);
                if self.pos > self.start {
                    self.emit(Kind::Text);
                }
                self.items.push(Item {
                    kind: Kind::Eof,
                    text: String::new(),
                    pos: self.pos,
                    line: self.line,
                });
                false
            }
        }
    }

    fn advance_to(&mut self, pos: usize) {
        self.line += self.input[self.pos..pos].matches('\n').count();
        self.pos = pos;
    }

    fn has_left_trim_marker(&self, delim_at: usize) -> bool {
        let after = &self.input[delim_at + self.left.len()..];
        let mut chars = after.chars();
        chars.next() == Some(TRIM_MARKER) && chars.next().is_some_and(is_space)
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = self.rest();
        if rest.starts_with(self.right) {
            return (true, false);
        }
        let mut chars = rest.chars();
        if chars.next().is_some_and(is_space)
            && chars.next() == Some(TRIM_MARKER)
            && rest[2..].starts_with(self.right)
        {
            return (true, true);
        }
        (false, false)
    }

    /// The left delimiter, a trim marker, and a comment if one follows.
    fn lex_left_delim(&mut self) -> Delim {
        let trim = self.has_left_trim_marker(self.pos);
        let after_marker = self.pos + self.left.len() + if trim { 2 } else { 0 };
        if self.input[after_marker..].starts_with("/*") {
            self.advance_to(after_marker);
            self.ignore();
            return if self.lex_comment() {
                Delim::Comment
            } else {
                Delim::Failed
            };
        }
        self.advance_to(self.pos + self.left.len());
        self.emit(Kind::LeftDelim);
        if trim {
            self.advance_to(self.pos + 2);
            self.ignore();
        }
        self.paren_depth = 0;
        Delim::Action
    }

    fn lex_comment(&mut self) -> bool {
        let Some(end) = self.rest().find("*/") else {
            self.error("unclosed comment");
            return false;
        };
        self.advance_to(self.pos + end + 2);
        let (at, trim) = self.at_right_delim();
        if !at {
            self.error("comment ends before closing delimiter");
            return false;
        }
        self.emit(Kind::Comment);
        if trim {
            self.advance_to(self.pos + 2);
        }
        self.advance_to(self.pos + self.right.len());
        self.ignore();
        if trim {
            self.trim_following_space();
        }
        true
    }

    fn trim_following_space(&mut self) {
        let skip = self.rest().len() - self.rest().trim_start_matches(is_space).len();
        self.advance_to(self.pos + skip);
        self.ignore();
    }

    /// Items inside an action, up to and including the right delimiter.
    fn lex_inside_action(&mut self) -> bool {
        loop {
            let (at, trim) = self.at_right_delim();
            if at {
                if self.paren_depth > 0 {
                    self.error("unclosed left paren");
                    return false;
                }
                if trim {
                    self.advance_to(self.pos + 2);
                    self.ignore();
                }
                self.advance_to(self.pos + self.right.len());
                self.emit(Kind::RightDelim);
                if trim {
                    self.trim_following_space();
                }
                return true;
            }
            let Some(c) = self.next() else {
                self.error("unclosed action");
                return false;
            };
            let ok = match c {
                c if is_space(c) => {
                    // A space followed by a trim marker and the delimiter ends the action.
                    self.backup(c);
                    self.lex_space()
                }
                '=' => {
                    self.emit(Kind::Assign);
                    true
                }
                ':' => {
                    if self.next() != Some('=') {
                        self.error("expected :=");
                        return false;
                    }
                    self.emit(Kind::Declare);
                    true
                }
                '|' => {
                    self.emit(Kind::Pipe);
                    true
                }
                '"' => self.lex_quote(),
                '`' => self.lex_raw_quote(),
                '$' => self.lex_variable(),
                '\'' => self.lex_char(),
                '.' => {
                    if self.peek().is_some_and(|d| d.is_ascii_digit()) {
                        self.backup('.');
                        self.lex_number()
                    } else {
                        self.lex_field()
                    }
                }
                '+' | '-' | '0'..='9' => {
                    self.backup(c);
                    self.lex_number()
                }
                c if is_alphanumeric(c) => {
                    self.backup(c);
                    self.lex_identifier()
                }
                '(' => {
                    self.paren_depth += 1;
                    self.emit(Kind::LeftParen);
                    true
                }
                ')' => {
                    if self.paren_depth == 0 {
                        self.error("unexpected right paren");
                        return false;
                    }
                    self.paren_depth -= 1;
                    self.emit(Kind::RightParen);
                    true
                }
                c if c.is_ascii() && !c.is_ascii_control() => {
                    self.emit(Kind::Char);
                    true
                }
                c => {
                    self.error(format!("unrecognized character in action: {c:?}"));
                    false
                }
            };
            if !ok {
                return false;
            }
        }
    }

    fn lex_space(&mut self) -> bool {
        while self.peek().is_some_and(is_space) {
            // A space that starts a ` -}}` trim marker belongs to the closing delimiter.
            if self.at_right_delim().1 {
                break;
            }
            self.next();
        }
        self.emit(Kind::Space);
        true
    }

    fn lex_identifier(&mut self) -> bool {
        while self.peek().is_some_and(is_alphanumeric) {
            self.next();
        }
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            self.error(format!("bad character {c:?}"));
            return false;
        }
        let kind = match &self.input[self.start..self.pos] {
            "block" => Kind::Block,
            "break" => Kind::Break,
            "continue" => Kind::Continue,
            "define" => Kind::Define,
            "else" => Kind::Else,
            "end" => Kind::End,
            "if" => Kind::If,
            "range" => Kind::Range,
            "template" => Kind::Template,
            "with" => Kind::With,
            "nil" => Kind::Nil,
            "true" | "false" => Kind::Bool,
            _ => Kind::Identifier,
        };
        self.emit(kind);
        true
    }

    fn lex_field(&mut self) -> bool {
        if self.at_terminator() {
            self.emit(Kind::Dot);
            return true;
        }
        self.lex_field_or_variable(Kind::Field)
    }

    fn lex_variable(&mut self) -> bool {
        if self.at_terminator() {
            self.emit(Kind::Variable);
            return true;
        }
        self.lex_field_or_variable(Kind::Variable)
    }

    fn lex_field_or_variable(&mut self, kind: Kind) -> bool {
        while self.peek().is_some_and(is_alphanumeric) {
            self.next();
        }
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            self.error(format!("bad character {c:?}"));
            return false;
        }
        self.emit(kind);
        true
    }

    fn at_terminator(&self) -> bool {
        let Some(c) = self.peek() else { return true };
        if is_space(c) || matches!(c, '.' | ',' | '|' | ':' | ')' | '(' | '=') {
            return true;
        }
        self.rest().starts_with(self.right)
    }

    fn lex_char(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => {
                    if self.next().is_none() {
                        self.error("unterminated character constant");
                        return false;
                    }
                }
                None | Some('\n') => {
                    self.error("unterminated character constant");
                    return false;
                }
                Some('\'') => break,
                Some(_) => {}
            }
        }
        self.emit(Kind::CharConstant);
        true
    }

    fn lex_number(&mut self) -> bool {
        if !self.scan_number() {
            let text = &self.input[self.start..self.pos.max(self.start)];
            let shown = format!(
                "{}{}",
                text,
                self.peek().map(String::from).unwrap_or_default()
            );
            self.error(format!("bad number syntax: {shown:?}"));
            return false;
        }
        self.emit(Kind::Number);
        true
    }

    fn accept(&mut self, valid: &str) -> bool {
        if self.peek().is_some_and(|c| valid.contains(c)) {
            self.next();
            return true;
        }
        false
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        !self.peek().is_some_and(is_alphanumeric)
    }

    fn lex_quote(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => {
                    if matches!(self.next(), None | Some('\n')) {
                        self.error("unterminated quoted string");
                        return false;
                    }
                }
                None | Some('\n') => {
                    self.error("unterminated quoted string");
                    return false;
                }
                Some('"') => break,
                Some(_) => {}
            }
        }
        self.emit(Kind::String);
        true
    }

    fn lex_raw_quote(&mut self) -> bool {
        match self.rest().find('`') {
            Some(end) => {
                self.advance_to(self.pos + end + 1);
                self.emit(Kind::RawString);
                true
            }
            None => {
                self.error("unterminated raw quoted string");
                false
            }
        }
    }
}
