//! The output side of go-yaml's emitter: text with the column, "after whitespace" and "in
//! indentation" state its decisions depend on (where a line breaks, whether a space is needed
//! before an indicator).

use crate::yaml::Flavour;

/// The document being written and the emitter state go-yaml keeps while writing it.
pub(super) struct Writer {
    /// The text so far.
    pub(super) out: String,
    /// Characters on the current line.
    pub(super) column: usize,
    /// The last thing written was whitespace (or the line start).
    pub(super) whitespace: bool,
    /// Only indentation is on the current line so far.
    pub(super) indention: bool,
    /// The encoder being imitated.
    pub(super) flavour: Flavour,
}

impl Writer {
    pub(super) fn new(flavour: Flavour) -> Self {
        Writer {
            out: String::new(),
            column: 0,
            whitespace: true,
            indention: true,
            flavour,
        }
    }

    pub(super) fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    pub(super) fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.indention = true;
    }

    /// A line break from the value: `\n` as a newline, other break characters as themselves.
    pub(super) fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
            self.indention = true;
        }
    }

    /// Moves to column `indent`, starting a new line unless only indentation precedes.
    pub(super) fn write_indent(&mut self, indent: usize) {
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    /// An indicator (`-`, `:`, `?`, quotes, `|`), after a space when one is needed.
    pub(super) fn write_indicator(
        &mut self,
        text: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in text.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }
}
